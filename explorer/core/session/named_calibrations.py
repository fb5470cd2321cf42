"""Named calibrations of a device (issue 21): several fitted calibrations of one device, each with its
provenance, and the one the calibrated time model uses.

A :class:`NamedCalibration` is a device's whole calibration (``DeviceCalibration``: matrix curves per precision and
the vector curve) fitted to one measurement file (a kernel CSV, a PyTorch profiler trace or an Nsight Compute CSV,
read by the importers of ``hwexplorer calibrate kernels``), under a name the user chose ("H100 cluster A,
2026-11"), with its source key ``fit-<name>`` (the key the CLI's ``--save --name`` uses). :class:`Calibrations`
holds the project's choice per device (by name, ``in_use``) and any calibrations the project carries itself
(``named``); a device without a choice uses its catalog calibration (the shipped one, or what ``calibrate kernels
--save`` stored).

Since project format 9 the named calibrations live in the catalog database beside their device (a
:class:`CalibrationStore`, ``explorer/store/calibration_repository.py``; exported and imported with the device),
and a project names the one it uses: ``in_use`` may name a catalog calibration. A format-8 project still carries
its calibrations whole (``named``); they keep working, and win over a catalog calibration of the same name
(:meth:`Calibrations.resolve`). The workspace applies the choice to the catalog's device on every read
(:func:`apply_calibration`). Pure, Qt-free.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import date
from pathlib import Path
from types import MappingProxyType
from typing import Protocol

from explorer.core.calibration.model import DeviceCalibration, Fit
from explorer.core.hardware.device import Device, Source
from explorer.core.precision import BYTES_PER_ELEMENT, PRECISIONS

from .link_calibrations import LinkCalibrations, slug, source_key

FORMATS = ("csv", "torch", "nsight")  # the measurement files a calibration is imported from
KINDS = ("matrix", "vector")


@dataclass(frozen=True)
class NamedCalibration:
    """One named calibration of a device: the curves, and where they come from. ``mape`` is each fitted kind's
    mean absolute percentage error on the fitted kernels (a fraction), ``measurements`` the kernels fitted."""

    name: str
    calibration: DeviceCalibration
    file: str  # the measurement file's name, as imported (for display: the curves are kept whole)
    format: str  # csv | torch | nsight
    precision: str  # the precision the matrix curve was measured at
    date: str  # ISO date of the import
    measurements: int
    mape: Mapping[str, float] = field(default_factory=dict)

    def __post_init__(self):
        object.__setattr__(self, "mape", MappingProxyType(dict(sorted(self.mape.items()))))

    def checked(self, where: str = "calibration") -> NamedCalibration:
        if not isinstance(self.name, str) or not slug(self.name):
            raise ValueError(f"{where}.name: expected a name with letters or digits, got {self.name!r}")
        if self.format not in FORMATS:
            raise ValueError(f"{where}.format: expected {', '.join(FORMATS)}, got {self.format!r}")
        if self.precision not in PRECISIONS:
            raise ValueError(f"{where}.precision: expected one of {', '.join(PRECISIONS)}, got {self.precision!r}")
        if isinstance(self.measurements, bool) or not isinstance(self.measurements, int) or self.measurements < 1:
            raise ValueError(f"{where}.measurements: expected a whole number >= 1, got {self.measurements!r}")
        for kind, v in self.mape.items():
            if kind not in KINDS or isinstance(v, bool) or not isinstance(v, (int, float)) or not \
                    (math.isfinite(v) and v >= 0):
                raise ValueError(f"{where}.mape.{kind}: expected matrix or vector with a fraction >= 0, got {v!r}")
        return self

    @property
    def key(self) -> str:
        return source_key(self.name)

    def describe(self) -> str:
        """``'H100 cluster A' (fit-h100-cluster-a): 24 kernels of trace.json, 2026-11-27, MAPE matrix 4.1 %``."""
        errors = ", ".join(f"{k} {v * 100:.1f} %" for k, v in self.mape.items())
        return (f"'{self.name}' ({self.key}): {self.measurements} kernels of {self.file} at {self.precision}, "
                f"{self.date}" + (f", MAPE {errors}" if errors else ""))

    def to_dict(self) -> dict:
        from explorer.core.hardware.calibration_file import calibration_to_dict

        return {"name": self.name, "file": self.file, "format": self.format, "precision": self.precision,
                "date": self.date, "measurements": self.measurements, "mape": dict(self.mape),
                "curves": calibration_to_dict(self.calibration) or {}}

    @classmethod
    def from_dict(cls, data, where: str) -> NamedCalibration:
        # the calibration file's reader (and yaml) on use: a session without named calibrations never needs it
        from explorer.core.hardware.calibration_file import read_calibration
        from explorer.core.hardware.cited_reader import Reader

        if not isinstance(data, Mapping):
            raise ValueError(f"{where}: expected an object")  # noqa: TRY004 - one-line file error
        keys = {"name", "file", "format", "precision", "date", "measurements", "mape", "curves"}
        unknown, missing = sorted(set(data) - keys), sorted(keys - set(data))
        if unknown or missing:
            raise ValueError(f"{where}: " + (f"unknown keys {', '.join(unknown)}" if unknown else
                                               f"missing keys {', '.join(missing)}"))
        for name in ("name", "file", "date"):
            if not isinstance(data[name], str):
                raise ValueError(f"{where}.{name}: expected text, got {data[name]!r:.40}")  # noqa: TRY004
        if not isinstance(data["mape"], Mapping):
            raise ValueError(f"{where}.mape: expected an object of fractions by kind")  # noqa: TRY004
        curves = data["curves"]
        reader = Reader(where, require_sources=False)
        reader.owner = "curves"
        if isinstance(curves, Mapping):  # each curve cites a key of its device's sources or this calibration's
            reader.source_keys = {str(c.get("source")) for c in [curves.get("vector"), *(
                (curves.get("matrix") or {}).values() if isinstance(curves.get("matrix"), Mapping) else ())]
                if isinstance(c, Mapping)}
        cal = read_calibration(reader, curves) if curves else DeviceCalibration()
        if reader.problems:
            raise ValueError(reader.problems[0].split(": ", 1)[1].replace("curves: ", f"{where}.curves.", 1))
        return cls(data["name"], cal or DeviceCalibration(), data["file"], data["format"], data["precision"],
                   data["date"], data["measurements"], data["mape"]).checked(where)


def canonical(cal: DeviceCalibration) -> DeviceCalibration:
    """``cal`` as a project file stores it (4 digits), so that saving and opening gives back the same curves."""
    from explorer.core.hardware.calibration_file import calibration_to_dict, read_calibration
    from explorer.core.hardware.cited_reader import Reader

    raw = calibration_to_dict(cal)
    if raw is None:
        return DeviceCalibration()
    reader = Reader("calibration", require_sources=False)
    reader.source_keys = {str(c.source) for c in [cal.vector, *cal.matrix.values()] if c is not None}
    out = read_calibration(reader, raw)
    if reader.problems or out is None:  # pragma: no cover - the writer's output always reads back
        raise ValueError(reader.problems[0] if reader.problems else "calibration: empty")
    return out


@dataclass(frozen=True)
class Calibrations:
    """The project's named calibrations by device id, and the name in use per device (absent: the catalog's);
    ``links``: the named link fits of the project's systems and the one in use per level (:mod:`.link_calibrations`,
    saved as the project's ``link_calibrations``)."""

    named: Mapping[str, tuple[NamedCalibration, ...]] = field(default_factory=dict)
    in_use: Mapping[str, str] = field(default_factory=dict)
    links: LinkCalibrations = field(default_factory=LinkCalibrations)

    def __post_init__(self):
        named = {dev: tuple(cals) for dev, cals in sorted(self.named.items()) if cals}
        object.__setattr__(self, "named", MappingProxyType(named))
        object.__setattr__(self, "in_use", MappingProxyType(dict(sorted(self.in_use.items()))))

    def checked(self) -> Calibrations:
        for dev, cals in self.named.items():
            if not isinstance(dev, str) or not dev:
                raise ValueError(f"calibrations: expected device ids as keys, got {dev!r}")
            seen = set()
            for i, c in enumerate(cals):
                c.checked(f"calibrations.{dev}.named[{i}]")
                if c.key in seen:
                    raise ValueError(f"calibrations.{dev}.named[{i}].name: '{c.name}' is the name of another "
                                     "calibration of this device")
                seen.add(c.key)
        for dev, name in self.in_use.items():  # a name the project does not carry names a catalog calibration
            if not isinstance(name, str) or not slug(name):
                raise ValueError(f"calibrations.{dev}.in_use: expected a calibration's name, got {name!r}")
        self.links.checked()
        return self

    def of(self, device_id: str) -> tuple[NamedCalibration, ...]:
        return self.named.get(device_id, ())

    def find(self, device_id: str, name: str) -> NamedCalibration | None:
        return next((c for c in self.of(device_id) if c.key == source_key(name)), None)

    def used(self, device_id: str) -> NamedCalibration | None:
        """The calibration the project carries and uses on ``device_id``; None: none of its own (see
        :meth:`resolve` for a choice of the catalog's named calibrations)."""
        return self.resolve(device_id)

    def resolve(self, device_id: str, catalog: tuple[NamedCalibration, ...] = ()) -> NamedCalibration | None:
        """The calibration the calibrated model uses on ``device_id``: the one named ``in_use``, the project's own
        first, else the catalog's named calibration of that name (``catalog``); None: the catalog's calibration."""
        name = self.in_use.get(device_id)
        if name is None:
            return None
        return self.find(device_id, name) or next((c for c in catalog if c.key == source_key(name)), None)

    def missing(self, device_id: str, catalog: tuple[NamedCalibration, ...] = ()) -> str | None:
        """The name in use on ``device_id`` that neither the project nor ``catalog`` holds (a project opened on
        another catalog): the catalog's calibration is used instead."""
        name = self.in_use.get(device_id)
        return name if name is not None and self.resolve(device_id, catalog) is None else None

    def choose(self, device_id: str, name: str | None, catalog: tuple[NamedCalibration, ...] = ()) -> Calibrations:
        """Use the calibration named ``name`` on ``device_id`` (None: the catalog's), one the project carries or
        one of ``catalog`` (the device's named calibrations in the catalog database)."""
        found = None if name is None else (self.find(device_id, name) or
                                           next((c for c in catalog if c.key == source_key(name)), None))
        if name is not None and found is None:
            raise ValueError(f"calibration: no calibration named {name!r} of {device_id}")
        in_use = {k: v for k, v in self.in_use.items() if k != device_id}
        if found is not None:
            in_use[device_id] = found.name
        return replace(self, in_use=in_use)

    def without(self, device_id: str, name: str) -> Calibrations:
        """The project's own calibration named ``name`` dropped, the choice kept (it may name a catalog one)."""
        kept = tuple(c for c in self.of(device_id) if c.key != source_key(name))
        return replace(self, named={**self.named, device_id: kept})

    def add(self, device_id: str, cal: NamedCalibration, use: bool = True) -> Calibrations:
        """Add ``cal`` (one of the same name is replaced) and, with ``use``, put it in use."""
        cal.checked()
        kept = tuple(c for c in self.of(device_id) if c.key != cal.key)
        out = replace(self, named={**self.named, device_id: (*kept, cal)})
        return out.choose(device_id, cal.name) if use else out

    def remove(self, device_id: str, name: str) -> Calibrations:
        kept = tuple(c for c in self.of(device_id) if c.key != source_key(name))
        in_use = {k: v for k, v in self.in_use.items() if not (k == device_id and source_key(v) == source_key(name))}
        return replace(self, named={**self.named, device_id: kept}, in_use=in_use)

    def to_dict(self) -> dict:
        devices = sorted(set(self.named) | set(self.in_use))
        return {dev: {"in_use": self.in_use.get(dev), "named": [c.to_dict() for c in self.of(dev)]}
                for dev in devices}

    @classmethod
    def from_dict(cls, data, where: str = "calibrations") -> Calibrations:
        if not isinstance(data, Mapping):
            raise ValueError(f"{where}: expected an object of calibrations by device id")  # noqa: TRY004
        named, in_use = {}, {}
        for dev, entry in data.items():
            if not isinstance(entry, Mapping) or set(entry) - {"in_use", "named"}:
                raise ValueError(f"{where}.{dev}: expected an object with in_use and named")
            cals = entry.get("named", [])
            if not isinstance(cals, list):
                raise ValueError(f"{where}.{dev}.named: expected a list of calibrations")  # noqa: TRY004
            named[dev] = tuple(NamedCalibration.from_dict(c, f"{where}.{dev}.named[{i}]") for i, c in enumerate(cals))
            if entry.get("in_use") is not None:
                if not isinstance(entry["in_use"], str):
                    raise ValueError(f"{where}.{dev}.in_use: expected a calibration's name or null")
                in_use[dev] = entry["in_use"]
        return cls(named, in_use).checked()


class CalibrationStore(Protocol):
    """Where the named calibrations of devices are kept (the catalog database: ``CatalogRepository``)."""

    def calibrations(self, device_id: str) -> tuple[NamedCalibration, ...]: ...

    def save_calibration(self, device_id: str, cal: NamedCalibration) -> NamedCalibration | None: ...

    def delete_calibration(self, device_id: str, name: str) -> NamedCalibration | None: ...


@dataclass(frozen=True)
class StoreEdit:
    """One write of a command to the calibration store, with what undoes it: ``save`` (``previous``: the calibration
    of the same name it replaced, None if new) or ``delete``."""

    action: str  # save | delete
    device_id: str
    calibration: NamedCalibration
    previous: NamedCalibration | None = None

    def run(self, store: CalibrationStore, forward: bool = True) -> None:
        cal = self.calibration
        if (self.action == "save") == forward:
            store.save_calibration(self.device_id, cal)
        elif self.action == "save" and self.previous is not None:  # undo a replacing save
            store.save_calibration(self.device_id, self.previous)
        else:
            store.delete_calibration(self.device_id, cal.name)


def apply_calibration(device: Device, cal: NamedCalibration | None) -> Device:
    """``device`` with ``cal``'s curves as its calibration, citing ``fit-<name>`` (``device`` itself for None)."""
    if cal is None:
        return device
    source = Source(cal.key, f"calibration '{cal.name}' fitted to {cal.measurements} kernels of {cal.file} "
                             f"({cal.format}), at {cal.precision}", cal.file, cal.date)
    return replace(device, calibration=cal.calibration, sources={**device.sources, cal.key: source})


def catalog_calibration_text(device: Device) -> str:
    """What the calibrated model uses on ``device`` without a named choice: its catalog calibration."""
    cal = device.calibration
    if cal is None or not (cal.matrix or cal.vector is not None):
        return "none (no measured curves: the calibrated time is the ideal one)"
    keys = sorted({c.source for c in [cal.vector, *cal.matrix.values()] if c is not None and c.source})
    fitted = [k for k in keys if k.startswith("fit-")]
    if fitted:
        return f"the catalog's, saved by 'hwexplorer calibrate kernels --save' ({', '.join(fitted)})"
    return "the catalog's (shipped" + (f", sources {', '.join(keys)})" if keys else ")")


def import_calibration(path: str | Path, device: Device, precision: str, name: str, fmt: str = "auto",
                       today: str | None = None) -> NamedCalibration:
    """Fit ``device`` at ``precision`` to the kernels of the measurement file ``path`` (``fmt``: csv, torch,
    nsight or auto) and name the result; the fit starts from the device's catalog calibration (a file of GEMMs
    only keeps its vector curve). Raise ValueError in one line naming the problem."""
    from explorer.core.analysis.calibration_fit import fit_device
    from explorer.core.analysis.trace_kernels import detect_format, read_nsight_kernels, read_torch_trace
    from explorer.core.calibration.user_csv import read_kernel_csv

    path = Path(path)
    if not slug(name or ""):
        raise ValueError(f"name: expected letters or digits, got {name!r}")
    if not path.is_file():
        raise ValueError(f"file: no such file: {path}")
    if precision not in PRECISIONS:
        raise ValueError(f"precision: expected one of {', '.join(PRECISIONS)}, got {precision!r}")
    peak = device.peak_flops(precision)
    if not (math.isfinite(peak) and peak > 0) or not device.bandwidth:
        raise ValueError(f"{device.id}: no {precision} peak or no memory bandwidth to calibrate against")
    key, today = source_key(name), today or date.today().isoformat()
    fmt = detect_format(path) if fmt == "auto" else fmt
    if fmt not in FORMATS:
        raise ValueError(f"format: expected auto, {', '.join(FORMATS)}, got {fmt!r}")
    if fmt == "csv":
        rows = read_kernel_csv(path, device.id, key, precision, BYTES_PER_ELEMENT[precision])
    else:
        found = (read_torch_trace if fmt == "torch" else read_nsight_kernels)(path, device.id, key, precision)
        rows = list(found.rows)
        if not rows:
            why = "; ".join(f"{n} {reason}" for reason, n in found.skipped.items()) or "none"
            raise ValueError(f"{path}: no kernels to fit among {found.kernels} (left out: {why})")
    cal, results = fit_device(rows, device, precision, Fit(path.name, 0, date=today))
    return NamedCalibration(name.strip(), canonical(cal), path.name, fmt, precision, today, len(rows),
                            {kind: round(float(r.mape), 4) for kind, r in results.items()}).checked()
