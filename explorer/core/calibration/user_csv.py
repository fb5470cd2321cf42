"""A user's own measured kernels, as a plain CSV of shapes and times (``docs/calibration.md``).

Columns (a header row; names in any order, unknown columns ignored):

* ``kind``: ``gemm`` or ``elementwise``;
* ``m``, ``n``, ``k`` (GEMMs, whole numbers > 0) and ``batch`` (optional, default 1: GEMMs run as one batched
  kernel);
* ``bytes`` (element-wise kernels: the bytes moved, each tensor once: a copy of a 1 MiB buffer moves 2 MiB);
* ``time``: the measured time of one kernel: seconds as a plain number, or a quantity with its unit
  (``12.5 us``, ``0.8 ms``);
* ``op`` (optional): a name shown in the residuals.

Each row becomes a :class:`~.measurements.Measurement` of ``device`` (split ``calibration``: the whole file is
fitted), whose FLOPs are ``2 batch m n k`` (GEMMs) and 0 (copies). A problem names the file, the line and the
column, in one line (``ValueError``).
"""

from __future__ import annotations

import csv
import math
from pathlib import Path

from explorer.core.files import single_line
from explorer.core.units import UnitError, parse_si

from .measurements import Measurement

REQUIRED = ("kind", "time")
MAX_ROWS = 100_000


def _whole(row: dict, name: str, default: int | None = None) -> int:
    text = (row.get(name) or "").strip()
    if not text:
        if default is not None:
            return default
        raise ValueError(f"{name}: expected a whole number > 0, got nothing")
    try:
        value = int(text)
    except ValueError:
        raise ValueError(f"{name}: expected a whole number > 0, got {text!r}") from None
    if value <= 0:
        raise ValueError(f"{name}: expected a whole number > 0, got {text!r}")
    return value


def _quantity(text: str, kind: str) -> float:
    """A plain number (SI: seconds, bytes) or a quantity with its unit."""
    text = text.strip()
    try:
        return float(text)
    except ValueError:
        return parse_si(text, kind, kind)


def _time(text: str) -> float:
    text = (text or "").strip()
    value = _quantity(text, "time")
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"time: expected a positive time (seconds, or with a unit: 12 us), got {text!r}")
    return value


def _row(row: dict, device: str, source: str, dtype: str, bpe: float) -> Measurement:
    kind = (row.get("kind") or "").strip().lower()
    op = (row.get("op") or "").strip()
    t = _time(row.get("time") or "")
    if kind == "gemm":
        b, m, n, k = _whole(row, "batch", 1), _whole(row, "m"), _whole(row, "n"), _whole(row, "k")
        return Measurement(device, source, kind, op or "matmul", dtype, b, m, n, k, 2.0 * b * m * n * k,
                           bpe * b * (m * k + k * n + m * n), row.get("time", ""), t, "calibration")
    if kind == "elementwise":
        nbytes = _quantity(row.get("bytes") or "", "bytes")
        if not (math.isfinite(nbytes) and nbytes > 0):
            raise ValueError(f"bytes: expected the bytes moved (> 0), got {row.get('bytes')!r}")
        return Measurement(device, source, kind, op or "copy", dtype, 1, 0, 0, 0, 0.0, nbytes, row.get("time", ""),
                           t, "calibration")
    raise ValueError(f"kind: expected gemm or elementwise, got {row.get('kind')!r}")


def read_kernel_csv(path: str | Path, device: str, source: str, dtype: str, bytes_per_element: float
                    ) -> list[Measurement]:
    """The rows of a user's kernel CSV as measurements of ``device`` from ``source`` (a key for the provenance)."""
    path = Path(path)
    try:
        with path.open(newline="", encoding="utf-8-sig") as fh:
            reader = csv.DictReader(fh)
            names = [(n or "").strip().lower() for n in (reader.fieldnames or ())]
            missing = [c for c in REQUIRED if c not in names]
            if missing:
                raise ValueError(f"{path}: missing column {', '.join(missing)} (expected kind, m, n, k or bytes, "
                                 "time)")
            reader.fieldnames = names
            out = []
            for line, row in enumerate(reader, start=2):
                if line > MAX_ROWS + 1:
                    raise ValueError(f"{path}: more than {MAX_ROWS} rows")
                if not any((v or "").strip() for v in row.values() if isinstance(v, str)):
                    continue
                try:
                    out.append(_row(row, device, source, dtype, bytes_per_element))
                except (UnitError, ValueError) as exc:
                    raise ValueError(f"{path}: line {line}: {single_line(str(exc))}") from None  # the cell's text
    except UnicodeDecodeError:
        raise ValueError(f"{path}: not UTF-8 text") from None
    except csv.Error as exc:
        raise ValueError(f"{path}: not a CSV file ({exc})") from None
    except OSError as exc:
        raise ValueError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    if not out:
        raise ValueError(f"{path}: no kernels (a header row, then one row per measured kernel)")
    return out
