"""Read and write device files (``docs/device-file.md``), reporting every problem with file, device and field."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from explorer.core.hardware import fields as F
from explorer.core.hardware.calibration_file import calibration_to_dict, read_calibration
from explorer.core.hardware.cited_reader import (  # noqa: F401 - RANGES is re-exported (quantity editor)
    RANGES,
    Reader,
    cited_out,
    drop_none,
    read_conflicts,
    read_data,
    read_sources,
)
from explorer.core.hardware.device import (
    DATAFLOWS,
    DIRECTIONS,
    ENGINE_TYPES,
    KINDS,
    ROLES,
    TIERS,
    Cited,
    Device,
    Link,
    MatrixEngine,
    MemoryLevel,
)
from explorer.core.precision import PRECISIONS

FORMAT = 1
#: Suffixes of device files (YAML or JSON); the command line and the catalog tell a path from an id by them.
DEVICE_FILE_SUFFIXES = (".yaml", ".yml", ".json")
ID_PATTERN = re.compile(r"^[a-z0-9][a-z0-9-]*$")
#: ``calibration`` is read by :mod:`.calibration_file` (a block of fitted curves, not a cited figure)
TOP_LEVEL = {"format", *F.FIELD_NAMES, "calibration"}


_MEMORY, _ENGINE, _LINK = F.FIELD["memory"], F.FIELD["matrix_engine"], F.FIELD["host_link"]


class DeviceFileError(ValueError):
    """One or more problems in a device file; ``problems`` lists ``file: device: field: message`` lines. The
    message's first line is the first problem (it names the file), with how many more follow; the whole list is
    kept below it, one problem a line (issue 24: a reader's error starts with one line that says what is wrong)."""

    def __init__(self, problems: list[str]):
        self.problems = problems
        more = len(problems) - 1
        super().__init__(problems[0] if not more else f"{problems[0]} (1 of {len(problems)} problems, all listed "
                         "below)\n  " + "\n  ".join(problems))


def _dims(reader: Reader, raw: Any, keys: tuple[str, ...], field: str) -> tuple[int, ...] | None:
    if raw is None:
        return None
    if not isinstance(raw, dict) or any(k not in raw for k in keys):
        reader.problem(field, f"expected a mapping with {', '.join(keys)}")
        return None
    out = []
    for k in keys:
        v = raw[k]
        if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
            reader.problem(f"{field}.{k}", f"expected a positive whole number, got {v!r}")
            return None
        out.append(v)
    return tuple(out)


def _link(reader: Reader, raw: Any, field: str) -> Link | None:
    if raw is None:
        return None
    if not isinstance(raw, dict):
        reader.problem(field, "expected a mapping with name, bandwidth, direction")
        return None
    name = reader.text(raw, "name", f"{field}.name", required=True) or "?"
    direction = reader.choice(raw, "direction", f"{field}.direction", DIRECTIONS) or "per_direction"
    return Link(name, direction=direction, **_cited_parts(reader, raw, _LINK, field))


def _cited_parts(reader: Reader, raw: dict, record: F.Field, field: str) -> dict[str, Cited | None]:
    """The cited figures and counts among the parts of ``record``, read from ``raw``."""
    return {
        p.name: reader.cited(raw.get(p.name), p.unit, f"{field}.{p.name}")
        for p in record.parts
        if p.shape in (F.FIGURE, F.COUNT)
    }


def _memory(reader: Reader, raw: Any) -> tuple[MemoryLevel, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        reader.problem("memory", "expected a list of levels, off-chip first")
        return ()
    levels = []
    for i, item in enumerate(raw):
        f = f"memory[{i}]"
        if not isinstance(item, dict):
            reader.problem(f, "expected a mapping")
            continue
        unknown = set(item) - {*_MEMORY.parts_of(*F.SHAPES), "note"}
        if unknown:
            reader.problem(f, f"unknown keys {sorted(unknown)}")
        instances = item.get("instances", 1)
        if isinstance(instances, bool) or not isinstance(instances, int) or instances < 1:
            reader.problem(f"{f}.instances", f"expected a whole number >= 1, got {instances!r}")
            instances = 1
        levels.append(
            MemoryLevel(
                name=reader.text(item, "name", f"{f}.name", required=True) or f"level {i}",
                role=reader.choice(item, "role", f"{f}.role", ROLES) or "offchip",
                instances=instances,
                **_cited_parts(reader, item, _MEMORY, f),
            )
        )
    return tuple(levels)


def _engine(reader: Reader, raw: Any) -> MatrixEngine | None:
    if raw is None:
        return None
    if not isinstance(raw, dict):
        reader.problem("matrix_engine", "expected a mapping")
        return None
    etype = reader.choice(raw, "type", "matrix_engine.type", ENGINE_TYPES, required=True)
    if etype is None:
        return None
    engine = MatrixEngine(
        type=etype,
        **_cited_parts(reader, raw, _ENGINE, "matrix_engine"),
        dataflow=reader.choice(raw, "dataflow", "matrix_engine.dataflow", DATAFLOWS),
        tile=_dims(reader, raw.get("tile"), _ENGINE.part("tile").parts_of(F.WHOLE), "matrix_engine.tile"),
        block_tile=_dims(
            reader, raw.get("block_tile"), _ENGINE.part("block_tile").parts_of(F.WHOLE), "matrix_engine.block_tile"
        ),
    )
    if etype == "systolic" and (engine.rows is None or engine.cols is None):
        reader.problem("matrix_engine", "a systolic array needs rows and cols")
    return engine


def _figures(reader: Reader, data: dict) -> dict[str, Any]:
    """The top-level cited figures (``clock``, ``tdp``...) and the dates of the dated ones (``price_date``)."""
    out: dict[str, Any] = {}
    for f in F.FIELDS:
        if f.shape == F.FIGURE:
            raw = data.get(f.name)
            out[f.name] = reader.cited(raw, f.unit, f.name)
            if f.dated:
                out[f"{f.name}_date"] = str(raw["date"]) if isinstance(raw, dict) and raw.get("date") else None
    return out


def _per_precision(reader: Reader, data: dict, field: str) -> dict[str, Cited]:
    raw, kind = data.get(field), F.FIELD[field].unit
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        reader.problem(field, "expected a mapping from precision to value")
        return {}
    out = {}
    for key, value in raw.items():
        if key not in PRECISIONS:
            reader.problem(f"{field}.{key}", f"unknown precision; expected one of {', '.join(PRECISIONS)}")
            continue
        c = reader.cited(value, kind, f"{field}.{key}")
        if c is not None:
            out[key] = c
    return out


def check_device_dict(data: Any, where: str = "<data>", require_sources: bool = False) -> tuple[Device | None, list[str]]:
    """Parse a device mapping; return the device (None if unusable) and every problem found."""
    r = Reader(where, require_sources)
    if not isinstance(data, dict):
        r.problem("(file)", "expected a mapping at the top level")
        return None, r.problems
    r.owner = str(data.get("id", "?"))
    if data.get("format", FORMAT) != FORMAT:
        r.problem("format", f"this version reads format {FORMAT}, the file says {data.get('format')!r}")
        return None, r.problems
    unknown = set(data) - TOP_LEVEL
    if unknown:
        r.problem("(top level)", f"unknown keys {sorted(unknown)}")
    device_id = r.text(data, "id", "id", required=True)
    if device_id is not None and not ID_PATTERN.match(device_id):
        r.problem("id", f"'{device_id}' must be lowercase letters, digits and '-'")
    sources = read_sources(r, data)
    efficiency = data.get("efficiency") or {}
    etas = {}
    for k in ("compute", "memory"):
        v = efficiency.get(k, 1.0) if isinstance(efficiency, dict) else 1.0
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 < v <= 1:
            r.problem(f"efficiency.{k}", f"expected a number in (0, 1], got {v!r}")
            v = 1.0
        etas[k] = float(v)
    year = data.get("year")
    if year is not None and (isinstance(year, bool) or not isinstance(year, int) or not 1950 <= year <= 2100):
        r.problem("year", f"expected a year, got {year!r}")
        year = None
    interconnects = data.get("interconnects") or []
    if not isinstance(interconnects, list):
        r.problem("interconnects", "expected a list")
        interconnects = []
    device = Device(
        id=device_id or "?",
        name=r.text(data, "name", "name", required=True) or "?",
        vendor=r.text(data, "vendor", "vendor", required=True) or "?",
        kind=r.choice(data, "kind", "kind", KINDS, required=True) or "other",
        tier=r.choice(data, "tier", "tier", TIERS),
        family=r.text(data, "family", "family"),
        year=year,
        sources=sources,
        peak=_per_precision(r, data, "peak"),
        peak_sparse=_per_precision(r, data, "peak_sparse"),
        memory=_memory(r, data.get("memory")),
        energy_per_mac=_per_precision(r, data, "energy_per_mac"),
        matrix_engine=_engine(r, data.get("matrix_engine")),
        **_figures(r, data),
        host_link=_link(r, data.get("host_link"), "host_link"),
        interconnects=tuple(
            link for i, x in enumerate(interconnects) if (link := _link(r, x, f"interconnects[{i}]")) is not None
        ),
        efficiency_compute=etas["compute"],
        efficiency_memory=etas["memory"],
        notes=r.text(data, "notes", "notes") or "",
        conflicts=read_conflicts(r, data),
        calibration=read_calibration(r, data.get("calibration")),
    )
    return device, r.problems


def device_from_dict(data: Any, where: str = "<data>", require_sources: bool = False) -> Device:
    device, problems = check_device_dict(data, where, require_sources)
    if problems or device is None:
        raise DeviceFileError(problems)
    return device


def read_device_data(path: str | Path) -> Any:
    """Parse a YAML or JSON file into plain data; syntax errors name the file and line."""
    return read_data(path, DeviceFileError)


def load_device_file(path: str | Path, require_sources: bool = False) -> Device:
    return device_from_dict(read_device_data(path), str(path), require_sources)


# ----------------------------------------------------------------------------------------------- writing
def _out(owner: Any, f: F.Field) -> Any:
    """The file form of field ``f`` of ``owner`` (a device or one of its records); None when left out."""
    value = getattr(owner, f.name)
    if f.shape in (F.FIGURE, F.COUNT):
        out = cited_out(value, f.shape == F.COUNT)
        date = getattr(owner, f"{f.name}_date") if f.dated else None
        if out is not None and date:
            out = {"value": out} if not isinstance(out, dict) else dict(out)
            out["date"] = date
        return out
    if f.shape == F.BY_PRECISION:
        return {k: cited_out(v) for k, v in value.items()}
    if f.shape == F.BY_KEY:
        return {k: {p.name: getattr(v, p.name) for p in f.parts} for k, v in value.items()}
    if f.shape == F.RECORDS:
        return [_record_out(item, f.parts) for item in value]
    if f.shape == F.RECORD:
        return None if value is None else _record_out(value, f.parts)
    return None if f.default is not None and value == f.default else value


def _record_out(record: Any, parts: tuple[F.Field, ...]) -> dict:
    if isinstance(record, tuple):  # dimensions, e.g. a tile (m, n, k)
        return dict(zip((p.name for p in parts), record))
    required = frozenset(p.name for p in parts if p.required)
    return drop_none({p.name: _out(record, p) for p in parts}, required)


def device_to_dict(device: Device) -> dict:
    """The inverse of :func:`device_from_dict`: values keep the text the vendor wrote."""
    out = {}
    for f in F.FIELDS:
        if f.shape == F.RECORD and all(p.shape == F.NUMBER for p in f.parts):  # efficiency
            numbers = {p.name: getattr(device, f"{f.name}_{p.name}") for p in f.parts}
            out[f.name] = None if all(numbers[p.name] == p.default for p in f.parts) else numbers
        else:
            out[f.name] = _out(device, f)
    out["calibration"] = calibration_to_dict(device.calibration)
    return drop_none({"format": FORMAT, **out})


def dump_device_yaml(device: Device) -> str:
    import yaml  # on use: the app paints its first window without it (issue 22)

    return yaml.safe_dump(device_to_dict(device), sort_keys=False, allow_unicode=True, width=110)
