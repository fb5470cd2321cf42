"""Device overrides saved with the project (issue 23): a user's edited figures for a device travel with the project
file, so a project opened on another machine (whose catalog lacks the edit) shows the same numbers.

An override is a figure by device id and field, in SI units: ``peak.<precision>`` (dense FLOP/s, or OP/s for the
integer formats), ``bandwidth`` (main-memory B/s: the level :attr:`Device.bandwidth` reads), ``capacity`` (main
memory B), ``tdp`` (W), ``price`` (USD per unit, the catalog's list price) and ``cloud_price`` (USD per second per
unit). A quote in the requirements (``requirements.price``, ``requirements.cloud_price``) still wins over a price
here, as it wins over the catalog's. The session applies them to the catalog's device on every read
(:func:`apply_overrides`); a figure an override sets cites "project override" as its source note. Pure, Qt-free.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import replace
from types import MappingProxyType

from explorer.core.hardware.device import Cited, Device, MemoryLevel
from explorer.core.precision import PRECISIONS
from explorer.core.units import format_si

#: the fields an override may set, with their SI unit
FIELDS: dict[str, str] = {"bandwidth": "B/s", "capacity": "B", "tdp": "W", "price": "USD", "cloud_price": "USD/s",
                          **{f"peak.{p}": "FLOP/s" for p in PRECISIONS}}
NOTE = "project override: a figure edited by the user, saved with the project"

DeviceOverrides = Mapping[str, Mapping[str, float]]  # device id -> field -> SI value


def freeze(overrides: DeviceOverrides) -> DeviceOverrides:
    """A read-only copy, with fields in a stable order (so equal overrides compare and save alike)."""
    return MappingProxyType({dev: MappingProxyType(dict(sorted(values.items())))
                             for dev, values in sorted(overrides.items()) if values})


def check_overrides(data, where: str = "device_overrides") -> DeviceOverrides:
    """Validate ``{device id: {field: number}}`` (a project file's ``device_overrides``); raise ValueError naming
    the field: an unknown field, or a value that is not a positive finite number."""
    if not isinstance(data, Mapping):
        raise ValueError(f"{where}: expected an object of figures by device id")  # noqa: TRY004 - one-line file error
    for dev, values in data.items():
        if not isinstance(dev, str) or not dev:
            raise ValueError(f"{where}: expected device ids as keys, got {dev!r}")
        if not isinstance(values, Mapping):
            raise ValueError(f"{where}.{dev}: expected an object of figures by field")  # noqa: TRY004 - as above
        for name, value in values.items():
            if name not in FIELDS:
                raise ValueError(f"{where}.{dev}.{name}: unknown field; expected one of bandwidth, capacity, tdp, "
                                 f"price, cloud_price or peak.<precision> ({', '.join(PRECISIONS)})")
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
                    or value <= 0:
                raise ValueError(f"{where}.{dev}.{name}: expected a positive number in {FIELDS[name]}, "
                                 f"got {value!r}")
    return freeze({dev: {k: float(v) for k, v in values.items()} for dev, values in data.items()})


def text(name: str, value: float) -> str:
    """One override's value as written: money in USD (rent per hour), the rest in SI units."""
    if name == "price":
        return f"{value:,.2f} USD"
    if name == "cloud_price":
        return f"{value * 3600:.6g} USD/h"
    return format_si(value, FIELDS[name], 4)


def _cited(name: str, value: float) -> Cited:
    return Cited(value=float(value), text=text(name, value), source=None, note=NOTE)


def _main_level(device: Device, figure: str) -> int:
    """The index of the memory level ``figure`` (bandwidth or capacity) of ``device`` is read from; -1: none."""
    levels = device.memory
    if figure == "capacity":
        return next((i for i, lv in enumerate(levels) if lv.role == "offchip"), -1)
    for want in (lambda lv: lv.role == "offchip" and lv.bandwidth is not None, lambda lv: lv.bandwidth is not None,
                 lambda lv: lv.role == "offchip"):
        i = next((i for i, lv in enumerate(levels) if want(lv)), -1)
        if i >= 0:
            return i
    return -1


def apply_overrides(device: Device, values: Mapping[str, float] | None) -> Device:
    """``device`` with the figures of ``values`` (field -> SI value) in place of its own; ``device`` itself
    when there are none. A device without a main-memory level gets one for a bandwidth or capacity override."""
    if not values:
        return device
    changes: dict = {}
    peak = dict(device.peak)
    memory = list(device.memory)
    for name, value in values.items():
        if name.startswith("peak."):
            peak[name[5:]] = _cited(name, value)
        elif name in ("bandwidth", "capacity"):
            i = _main_level(device, name)
            if i < 0:
                memory.append(MemoryLevel(name="main memory", role="offchip"))
                i = len(memory) - 1
            memory[i] = replace(memory[i], **{name: _cited(name, value)})
        elif name in ("tdp", "price", "cloud_price"):
            changes[name] = _cited(name, value)
        else:
            raise ValueError(f"device_overrides.{device.id}.{name}: unknown field")
    return replace(device, peak=peak, memory=tuple(memory), **changes)


def figures(device: Device) -> dict[str, float]:
    """The overridable figures of ``device`` (SI; NaN when unknown)."""
    out = {"bandwidth": device.bandwidth, "capacity": device.memory_capacity,
           **{name: (getattr(device, name).value if getattr(device, name) is not None else math.nan)
              for name in ("tdp", "price", "cloud_price")}}
    out.update({f"peak.{p}": c.value for p, c in device.peak.items()})
    return out


def overrides_between(base: Device, edited: Device) -> dict[str, float]:
    """The overrides that turn ``base`` into ``edited`` on the overridable figures (the figures ``edited`` has and
    ``base`` has not, or has with another value). A figure ``edited`` drops is not an override (it cannot be
    removed by one)."""
    before, after = figures(base), figures(edited)
    return {k: v for k, v in after.items()
            if math.isfinite(v) and v > 0 and not (k in before and math.isclose(before[k], v, rel_tol=1e-12))}


def describe(values: Mapping[str, float]) -> str:
    """``"bandwidth 2 TB/s, price 30,000.00 USD"``: one device's overrides for people."""
    return ", ".join(f"{name} {text(name, v)}" for name, v in values.items())
