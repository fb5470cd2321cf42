"""Shared pieces of the calculators: input checking, array handling and named presets.

Every calculator is a pure function of plain SI floats (or numpy arrays where a sweep makes sense) that
returns a frozen dataclass. Inputs are checked here so that a bad value raises
:class:`CalculatorInputError` naming the offending field.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import numpy as np


class CalculatorInputError(ValueError):
    """An input of a calculator is out of range; ``field`` names it."""

    def __init__(self, field_name: str, message: str):
        super().__init__(f"{field_name}: {message}")
        self.field = field_name
        self.reason = message


Number = float | np.ndarray


def as_number(value: object, field_name: str) -> Number:
    """A float for scalars, a float64 array otherwise; reject bools, strings and NaN."""
    if isinstance(value, (bool, np.bool_)) or isinstance(value, (str, bytes)):
        raise CalculatorInputError(field_name, f"expected a number, got {value!r}")
    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise CalculatorInputError(field_name, f"expected a number, got {value!r}") from None
    if np.any(np.isnan(arr)):
        raise CalculatorInputError(field_name, "is not a number (NaN)")
    return float(arr) if arr.ndim == 0 else arr


def positive(value: object, field_name: str, allow_inf: bool = False) -> Number:
    x = as_number(value, field_name)
    if np.any(np.asarray(x) <= 0):
        raise CalculatorInputError(field_name, f"must be > 0, got {_show(x)}")
    if not allow_inf and np.any(np.isinf(x)):
        raise CalculatorInputError(field_name, "must be finite")
    return x


def non_negative(value: object, field_name: str) -> Number:
    x = as_number(value, field_name)
    if np.any(np.asarray(x) < 0):
        raise CalculatorInputError(field_name, f"must be >= 0, got {_show(x)}")
    if np.any(np.isinf(x)):
        raise CalculatorInputError(field_name, "must be finite")
    return x


def fraction(value: object, field_name: str, *, allow_zero: bool = True, allow_one: bool = True) -> Number:
    """A number in [0, 1]; the ends are excluded on request."""
    x = as_number(value, field_name)
    arr = np.asarray(x)
    low_ok = np.all(arr >= 0) if allow_zero else np.all(arr > 0)
    high_ok = np.all(arr <= 1) if allow_one else np.all(arr < 1)
    if not (low_ok and high_ok):
        lo = "[0" if allow_zero else "(0"
        hi = "1]" if allow_one else "1)"
        raise CalculatorInputError(field_name, f"must lie in {lo}, {hi}, got {_show(x)}")
    return x


def positive_int(value: object, field_name: str, minimum: int = 1) -> int:
    """An integer >= ``minimum`` (floats that are whole numbers are accepted)."""
    if isinstance(value, (bool, np.bool_)):
        raise CalculatorInputError(field_name, f"expected an integer, got {value!r}")
    try:
        as_float = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise CalculatorInputError(field_name, f"expected an integer, got {value!r}") from None
    if not math.isfinite(as_float) or as_float != int(as_float):
        raise CalculatorInputError(field_name, f"expected a whole number, got {value!r}")
    n = int(as_float)
    if n < minimum:
        raise CalculatorInputError(field_name, f"must be >= {minimum}, got {n}")
    return n


def _show(x: Number) -> str:
    arr = np.asarray(x)
    return f"{float(arr):g}" if arr.ndim == 0 else f"an array with min {float(arr.min()):g}"


def scalar_or_array(x: Any) -> Number:
    """Return a float for 0-d results so scalar calls give scalar dataclass fields."""
    arr = np.asarray(x, dtype=float)
    return float(arr) if arr.ndim == 0 else arr


@dataclass(frozen=True)
class Preset:
    """A named input set reproducing a worked example of the chapter.

    ``inputs`` are the keyword arguments of ``function`` (SI units). ``source`` points at the chapter
    (rendered-text line ``R:nnn`` or the example id in the reference notes) and ``printed`` is what the
    chapter prints, for the user to compare against; it is never used in a computation.
    """

    name: str
    function: Callable[..., Any]
    inputs: Mapping[str, Any]
    source: str
    printed: str = ""
    notes: str = ""
    _frozen_inputs: Mapping[str, Any] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_frozen_inputs", MappingProxyType(dict(self.inputs)))
        object.__setattr__(self, "inputs", self._frozen_inputs)

    def run(self) -> Any:
        return self.function(**self.inputs)
