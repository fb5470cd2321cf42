"""Import and export the catalog as YAML, JSON or CSV.

* YAML and JSON exports hold ``{format: 1, devices: [...], count: N}``: device-file mappings
  (``docs/device-file.md``) with the device count written last, so a truncated file is detected. Imports
  also accept one device mapping or a plain list of them. YAML is read with the safe loader.
* CSV: one row per device, see :mod:`explorer.store.csv_columns`.
* Named calibrations (issue 21) travel with their device in YAML and JSON: a device mapping of an export may end
  in ``named_calibrations``, a list of calibrations in the project file's form (``docs/catalog.md``); an import
  writes them with the devices, in the same transaction. A malformed one stops the whole import with one line
  naming the device and the field (:class:`ImportFileError`). CSV carries none.

An import checks every row first and writes nothing unless all rows are valid; the writes happen in one
transaction (all or nothing). The :class:`ImportReport` lists every rejected row and field.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from explorer.core.files import NestingError, parse_nested, single_line
from explorer.core.hardware.device import Device
from explorer.core.hardware.device_file import FORMAT, check_device_dict, device_to_dict
from explorer.core.session.named_calibrations import NamedCalibration

from .csv_columns import devices_to_csv, read_csv
from .rows import ID_LENGTH

if TYPE_CHECKING:  # the repository imports SQLAlchemy, which the main window does not need to start
    from .repository import CatalogRepository

FORMATS = {".yaml": "yaml", ".yml": "yaml", ".json": "json", ".csv": "csv"}
CALIBRATIONS_KEY = "named_calibrations"  # a device mapping's named calibrations in a YAML or JSON export
Calibrated = Mapping[str, Sequence[NamedCalibration]]  # named calibrations by device id


class ImportFileError(ValueError):
    """The file cannot be read at all (missing, not YAML/JSON/CSV, truncated, wrong shape)."""


@dataclass(frozen=True)
class Rejection:
    where: str  # "devices[3]" (YAML/JSON) or "line 7" (CSV)
    device: str  # the row's id, or "?" when it has none
    field: str  # device-file field path, a CSV column, or "(row)"
    message: str

    def __str__(self) -> str:
        return single_line(f"{self.where}: {self.device}: {self.field}: {self.message}")


@dataclass(frozen=True)
class ImportReport:
    file: str
    format: str
    rows: int
    added: tuple[str, ...] = ()
    replaced: tuple[str, ...] = ()
    rejected: tuple[Rejection, ...] = ()
    committed: bool = False  # False for a rejected import and for a dry run
    noun: str = "device"  # what the file holds: "device" or "system"

    @property
    def ok(self) -> bool:
        return not self.rejected

    def summary(self) -> str:
        if self.rejected:
            rows = len({r.where for r in self.rejected if r.where != "header"})
            return (
                f"{self.file}: nothing imported: {len(self.rejected)} problem(s) in {rows} of {self.rows} "
                f"row(s)"
            )
        verb = "imported" if self.committed else "would import (dry run)"
        return f"{self.file}: {verb} {len(self.added)} new and {len(self.replaced)} replaced {self.noun}(s)"

    def lines(self) -> list[str]:
        return [str(r) for r in self.rejected] + [self.summary()]


def detect_format(path: str | Path, fmt: str | None = None) -> str:
    if fmt:
        fmt = fmt.lower()
        if fmt not in ("yaml", "json", "csv"):
            raise ImportFileError(f"unknown format '{fmt}'; use yaml, json or csv")
        return fmt
    suffix = Path(path).suffix.lower()
    if suffix not in FORMATS:
        raise ImportFileError(
            f"{Path(path).name}: cannot tell the format from '{suffix or '(no suffix)'}'; "
            "use .yaml, .yml, .json or .csv, or give the format"
        )
    return FORMATS[suffix]


# ------------------------------------------------------------------------------------------------ export
def export_text(devices: Sequence[Device], fmt: str, calibrations: Calibrated | None = None) -> str:
    """The devices as an export; in YAML and JSON each device's named calibrations (``calibrations``) follow it."""
    mappings = [device_to_dict(d) for d in devices]
    if fmt == "csv":
        return devices_to_csv(mappings)
    cals = calibrations or {}
    body = [{**{k: v for k, v in m.items() if k != "format"},
             **({CALIBRATIONS_KEY: [c.to_dict() for c in cals[d.id]]} if cals.get(d.id) else {})}
            for d, m in zip(devices, mappings, strict=True)]
    document = {"format": FORMAT, "devices": body, "count": len(body)}
    if fmt == "json":
        return json.dumps(document, indent=2, ensure_ascii=False, allow_nan=False) + "\n"
    import yaml  # on use: the app paints its first window without it (issue 22)

    return yaml.safe_dump(document, sort_keys=False, allow_unicode=True, width=110)


def export_file(devices: Sequence[Device], path: str | Path, fmt: str | None = None,
                calibrations: Calibrated | None = None) -> int:
    """Write the devices (and, YAML or JSON, their named ``calibrations``) to ``path`` (replaced atomically);
    returns the number of devices written."""
    path = Path(path)
    write_export(path, export_text(devices, detect_format(path, fmt), calibrations))
    return len(devices)


def write_export(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a ``.partial`` file renamed over it (a failed write leaves no file)."""
    partial = path.with_name(path.name + ".partial")
    try:
        partial.write_text(text, encoding="utf-8", newline="")
        os.replace(partial, path)
    except OSError as exc:
        partial.unlink(missing_ok=True)
        raise ImportFileError(f"{path}: cannot write ({exc.strerror})") from None


# ------------------------------------------------------------------------------------------------ import
def _entries(
    text: str, fmt: str, name: str
) -> tuple[list[tuple[str, Any, list[tuple[str, str]]]], list[Rejection]]:
    """Split the file into ``(where, mapping, problems)`` entries, plus file-level rejections."""
    if fmt == "csv":
        entries, header = read_csv(text)
        return entries, [Rejection("header", "?", column, message) for column, message in header]
    return _split_document(parse_document(text, fmt, name), name, "devices", "device"), []


def parse_document(text: str, fmt: str, name: str) -> Any:
    """The YAML or JSON document in ``text``; ImportFileError (one line naming the file and line) otherwise."""
    import yaml  # on use: the app paints its first window without it (issue 22)

    if not text.strip():
        raise ImportFileError(f"{name}: the file is empty")
    try:
        return parse_nested(json.loads if fmt == "json" else yaml.safe_load, text)
    except NestingError as exc:
        raise ImportFileError(f"{name}: {exc}") from None
    except json.JSONDecodeError as exc:
        hint = _truncation_hint(text, exc.lineno, exc.msg.startswith("Unterminated"))
        raise ImportFileError(f"{name}: line {exc.lineno}: invalid JSON ({exc.msg}){hint}") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}: " if mark is not None else ""
        hint = _truncation_hint(text, mark.line + 1) if mark is not None else ""
        raise ImportFileError(
            f"{name}: {where}invalid YAML ({getattr(exc, 'problem', None) or exc}){hint}"
        ) from None


def _split_document(
    data: Any, name: str, key: str, noun: str
) -> list[tuple[str, Any, list[tuple[str, str]]]]:
    """The entries of an export (``{format, <key>: [...], count}``), one mapping, or a plain list of them."""
    if isinstance(data, dict) and key in data:
        items = data[key]
        if not isinstance(items, list):
            raise ImportFileError(f"{name}: '{key}' must be a list of {noun} mappings")
        if "count" not in data:
            raise ImportFileError(
                f"{name}: no 'count' after the {noun} list; the file looks truncated "
                f"({len(items)} {noun}(s) read)"
            )
        if data["count"] != len(items):
            raise ImportFileError(
                f"{name}: the file says count {data['count']!r} but holds {len(items)} "
                f"{noun}(s); it looks truncated or edited"
            )
        unknown = set(data) - {"format", key, "count"}
        if unknown or data.get("format", FORMAT) != FORMAT:
            raise ImportFileError(
                f"{name}: expected format {FORMAT} with keys format, {key}, count; got "
                f"format {data.get('format')!r} and {sorted(unknown) or 'no other keys'}"
            )
    elif isinstance(data, dict):
        items = [data]
    elif isinstance(data, list):
        items = data
    else:
        raise ImportFileError(
            f"{name}: expected a {noun} mapping, a list of them, or an export "
            f"(format, {key}, count); got {type(data).__name__}"
        )
    return [(f"{key}[{i}]", d, []) for i, d in enumerate(items)]


def _truncation_hint(text: str, line: int, unterminated: bool = False) -> str:
    last_line = text.rstrip().count("\n") + 1
    return "; the file looks truncated" if unterminated or line >= last_line else ""


def _split_problem(problem: str, where: str, device: str) -> Rejection:
    prefix = f"{where}: {device}: "
    rest = problem.removeprefix(prefix)
    field, _, message = rest.partition(": ")
    return Rejection(where, device, field, message or rest)


def read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise ImportFileError(f"{path.name}: not UTF-8 text") from None
    except OSError as exc:
        raise ImportFileError(f"{path}: cannot read ({exc.strerror})") from None


def new_id(item_id: str, where: str, first_row: dict[str, str], rejected: list[Rejection]) -> bool:
    """True for an id short enough and not seen earlier in the file (recorded in ``first_row``); otherwise the
    rejection is appended to ``rejected``."""
    if len(item_id) > ID_LENGTH:
        rejected.append(Rejection(where, item_id[:20] + "...", "id", f"longer than {ID_LENGTH} characters"))
        return False
    if item_id in first_row:
        rejected.append(Rejection(where, item_id, "id", f"duplicate of the id in {first_row[item_id]}"))
        return False
    first_row[item_id] = where
    return True


def read_import(
    path: str | Path, fmt: str | None = None
) -> tuple[str, int, list[tuple[str, Device]], list[Rejection]]:
    """Parse and check every row of a file; returns (format, rows, [(where, valid device)], rejections)."""
    return read_import_calibrated(path, fmt)[:4]


def _calibrations_of(data: Any, where: str, device_id: str, name: str) -> tuple[Any, list[NamedCalibration]]:
    """``data`` without its named calibrations, and them read; ImportFileError (one line) for a malformed one."""
    if not isinstance(data, dict) or CALIBRATIONS_KEY not in data:
        return data, []
    raw = data[CALIBRATIONS_KEY]
    if not isinstance(raw, list):
        raise ImportFileError(f"{name}: {where}: {device_id}: {CALIBRATIONS_KEY}: expected a list of calibrations")
    cals, seen = [], set()
    for i, item in enumerate(raw):
        try:
            cal = NamedCalibration.from_dict(item, f"{CALIBRATIONS_KEY}[{i}]")
        except ValueError as exc:
            raise ImportFileError(single_line(f"{name}: {where}: {device_id}: {exc}")) from None
        if cal.key in seen:
            raise ImportFileError(f"{name}: {where}: {device_id}: {CALIBRATIONS_KEY}[{i}].name: '{cal.name}' is "
                                  "the name of another calibration of this device")
        seen.add(cal.key)
        cals.append(cal)
    return {k: v for k, v in data.items() if k != CALIBRATIONS_KEY}, cals


def read_import_calibrated(
    path: str | Path, fmt: str | None = None
) -> tuple[str, int, list[tuple[str, Device]], list[Rejection], dict[str, tuple[NamedCalibration, ...]]]:
    """:func:`read_import`, and the named calibrations of the valid devices by id."""
    path = Path(path)
    fmt = detect_format(path, fmt)
    entries, rejected = _entries(read_text(path), fmt, path.name)
    devices: list[tuple[str, Device]] = []
    calibrations: dict[str, tuple[NamedCalibration, ...]] = {}
    first_row: dict[str, str] = {}
    for where, raw, problems in entries:
        device_id = str(raw.get("id", "?")) if isinstance(raw, dict) else "?"
        data, cals = _calibrations_of(raw, where, device_id, path.name)
        if cals:
            calibrations[device_id] = tuple(cals)
        rejected.extend(Rejection(where, device_id, f, m) for f, m in problems)
        if data is None or any(f == "(row)" for f, _ in problems):
            continue
        device, found = check_device_dict(data, where)
        rejected.extend(_split_problem(p, where, device_id) for p in found)
        if device is None or found or problems:
            continue
        if new_id(device.id, where, first_row, rejected):
            devices.append((where, device))
    valid = {d.id for _, d in devices}
    return fmt, len(entries), devices, rejected, {k: v for k, v in calibrations.items() if k in valid}


def import_file(
    repo: CatalogRepository,
    path: str | Path,
    fmt: str | None = None,
    replace: bool = False,
    dry_run: bool = False,
) -> ImportReport:
    """Check the whole file, then add every device in one transaction, or nothing if any row is rejected.

    Ids already in the catalog are rejected unless ``replace``; replacing a shipped device counts as an
    edit of it (the changed fields become overrides).
    """
    fmt, rows, checked, rejected, calibrations = read_import_calibrated(path, fmt)
    devices = [d for _, d in checked]
    existing = set(repo.ids())
    if not replace:
        rejected.extend(
            Rejection(where, d.id, "id", "already in the catalog (import with --replace to overwrite it)")
            for where, d in checked
            if d.id in existing
        )
    name = Path(path).name
    if rejected:
        order = {r: i for i, r in enumerate(rejected)}
        rejected.sort(key=lambda r: (_row_number(r.where), order[r]))
        return ImportReport(name, fmt, rows, rejected=tuple(rejected))
    if dry_run:
        new = tuple(d.id for d in devices if d.id not in existing)
        return ImportReport(name, fmt, rows, new, tuple(d.id for d in devices if d.id in existing))
    added, replaced = repo.import_devices(devices, replace_existing=replace, validate=False,
                                          calibrations=calibrations)
    return ImportReport(name, fmt, rows, added, replaced, committed=True)


def _row_number(where: str) -> int:
    digits = "".join(ch for ch in where if ch.isdigit())
    return int(digits) if digits else -1
