"""Read and write device files (``docs/device-file.md``), reporting every problem with file, device and field."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import yaml

from explorer.core.files import NestingError, parse_nested, single_line
from explorer.core.hardware import fields as F
from explorer.core.hardware.device import (
    DATAFLOWS,
    DIRECTIONS,
    ENGINE_TYPES,
    KINDS,
    ROLES,
    TIERS,
    Cited,
    Conflict,
    Device,
    Link,
    MatrixEngine,
    MemoryLevel,
    Source,
)
from explorer.core.precision import PRECISIONS
from explorer.core.units import UnitError, parse_si

FORMAT = 1
#: Suffixes of device files (YAML or JSON); the command line and the catalog tell a path from an id by them.
DEVICE_FILE_SUFFIXES = (".yaml", ".yml", ".json")
ID_PATTERN = re.compile(r"^[a-z0-9][a-z0-9-]*$")
TOP_LEVEL = {"format", *F.FIELD_NAMES}
#: The plausible range in SI units of each kind of figure, for range checks
RANGES = {kind: (low, high) for kind, (low, high, _unit) in F.FIGURE_KINDS.items()}


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


class _Reader:
    def __init__(self, where: str, require_sources: bool):
        self.where = where
        self.device = "?"
        self.require_sources = require_sources
        self.problems: list[str] = []
        self.source_keys: set[str] = set()

    def problem(self, field: str, message: str) -> None:
        self.problems.append(single_line(f"{self.where}: {self.device}: {field}: {message}"))

    def text(self, data: dict, key: str, field: str, required: bool = False) -> str | None:
        value = data.get(key)
        if value is None:
            if required:
                self.problem(field, "is required")
            return None
        if not isinstance(value, (str, int, float)) or isinstance(value, bool):
            self.problem(field, f"expected text, got {type(value).__name__}")
            return None
        if required and not str(value).strip():
            self.problem(field, "is required (it is empty)")
            return None
        return str(value)

    def choice(self, data: dict, key: str, field: str, options: tuple, required: bool = False) -> str | None:
        value = self.text(data, key, field, required)
        if value is not None and value not in options:
            self.problem(field, f"'{value}' is not one of {', '.join(options)}")
            return None
        return value

    def cited(self, raw: Any, kind: str | None, field: str) -> Cited | None:
        """``kind`` None means a positive count."""
        if raw is None:
            return None
        source = note = None
        if isinstance(raw, dict):
            unknown = set(raw) - {"value", "source", "note", "date"}
            if unknown:
                self.problem(field, f"unknown keys {sorted(unknown)}")
            source, note, value = raw.get("source"), raw.get("note"), raw.get("value")
            if note is not None and not isinstance(note, str):
                self.problem(f"{field}.note", f"expected text, got {type(note).__name__}")
                note = None
            if value is None:
                self.problem(f"{field}.value", "is required")
                return None
        else:
            value = raw
        if source is None and self.require_sources:
            self.problem(field, "has no source (every figure in the catalog must cite one)")
        elif source is not None and str(source) not in self.source_keys:
            self.problem(f"{field}.source", f"'{source}' is not a key of 'sources'")
        if kind is None:
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0 or value != int(value):
                self.problem(field, f"expected a positive whole number, got {value!r}")
                return None
            return Cited(float(value), str(value), None if source is None else str(source), note)
        try:
            si = parse_si(value, kind, field)
        except UnitError as exc:
            self.problems.append(single_line(f"{self.where}: {self.device}: {exc}"))
            return None
        low, high = RANGES.get(kind, (-math.inf, math.inf))
        if not (low <= si <= high):
            self.problem(field, f"'{value}' is outside the plausible range for a {kind}")
            return None
        return Cited(si, str(value), None if source is None else str(source), note)


def _dims(reader: _Reader, raw: Any, keys: tuple[str, ...], field: str) -> tuple[int, ...] | None:
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


def _link(reader: _Reader, raw: Any, field: str) -> Link | None:
    if raw is None:
        return None
    if not isinstance(raw, dict):
        reader.problem(field, "expected a mapping with name, bandwidth, direction")
        return None
    name = reader.text(raw, "name", f"{field}.name", required=True) or "?"
    direction = reader.choice(raw, "direction", f"{field}.direction", DIRECTIONS) or "per_direction"
    return Link(name, direction=direction, **_cited_parts(reader, raw, _LINK, field))


def _cited_parts(reader: _Reader, raw: dict, record: F.Field, field: str) -> dict[str, Cited | None]:
    """The cited figures and counts among the parts of ``record``, read from ``raw``."""
    return {
        p.name: reader.cited(raw.get(p.name), p.unit, f"{field}.{p.name}")
        for p in record.parts
        if p.shape in (F.FIGURE, F.COUNT)
    }


def _memory(reader: _Reader, raw: Any) -> tuple[MemoryLevel, ...]:
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


def _engine(reader: _Reader, raw: Any) -> MatrixEngine | None:
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


def _figures(reader: _Reader, data: dict) -> dict[str, Any]:
    """The top-level cited figures (``clock``, ``tdp``...) and the dates of the dated ones (``price_date``)."""
    out: dict[str, Any] = {}
    for f in F.FIELDS:
        if f.shape == F.FIGURE:
            raw = data.get(f.name)
            out[f.name] = reader.cited(raw, f.unit, f.name)
            if f.dated:
                out[f"{f.name}_date"] = str(raw["date"]) if isinstance(raw, dict) and raw.get("date") else None
    return out


def _per_precision(reader: _Reader, data: dict, field: str) -> dict[str, Cited]:
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
    r = _Reader(where, require_sources)
    if not isinstance(data, dict):
        r.problem("(file)", "expected a mapping at the top level")
        return None, r.problems
    r.device = str(data.get("id", "?"))
    if data.get("format", FORMAT) != FORMAT:
        r.problem("format", f"this version reads format {FORMAT}, the file says {data.get('format')!r}")
        return None, r.problems
    unknown = set(data) - TOP_LEVEL
    if unknown:
        r.problem("(top level)", f"unknown keys {sorted(unknown)}")
    device_id = r.text(data, "id", "id", required=True)
    if device_id is not None and not ID_PATTERN.match(device_id):
        r.problem("id", f"'{device_id}' must be lowercase letters, digits and '-'")
    sources = {}
    raw_sources = data.get("sources") or {}
    if not isinstance(raw_sources, dict):
        r.problem("sources", "expected a mapping from key to {title, url, date}")
        raw_sources = {}
    for key, s in raw_sources.items():
        if not isinstance(s, dict) or not all(s.get(k) for k in ("title", "url", "date")):
            r.problem(f"sources.{key}", "needs title, url and date")
            continue
        sources[str(key)] = Source(str(key), str(s["title"]), str(s["url"]), str(s["date"]))
    r.source_keys = set(sources)
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
    conflicts = []
    raw_conflicts = data.get("conflicts") or []
    if not isinstance(raw_conflicts, list):
        r.problem("conflicts", "expected a list of {field, note}")
        raw_conflicts = []
    for i, c in enumerate(raw_conflicts):
        if not isinstance(c, dict) or "field" not in c or "note" not in c:
            r.problem(f"conflicts[{i}]", "needs field and note")
            continue
        conflicts.append(Conflict(str(c["field"]), str(c["note"])))
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
        conflicts=tuple(conflicts),
    )
    return device, r.problems


def device_from_dict(data: Any, where: str = "<data>", require_sources: bool = False) -> Device:
    device, problems = check_device_dict(data, where, require_sources)
    if problems or device is None:
        raise DeviceFileError(problems)
    return device


def read_device_data(path: str | Path) -> Any:
    """Parse a YAML or JSON file into plain data; syntax errors name the file and line."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise DeviceFileError([f"{path}: cannot read ({exc.strerror})"]) from None
    try:
        return parse_nested(json.loads if path.suffix.lower() == ".json" else yaml.safe_load, text)
    except NestingError as exc:
        raise DeviceFileError([f"{path}: {exc}"]) from None
    except json.JSONDecodeError as exc:
        raise DeviceFileError([f"{path}: line {exc.lineno}: invalid JSON ({exc.msg})"]) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f"line {mark.line + 1}: " if mark is not None else ""
        raise DeviceFileError([f"{path}: {line}invalid YAML ({getattr(exc, 'problem', exc)})"]) from None


def load_device_file(path: str | Path, require_sources: bool = False) -> Device:
    return device_from_dict(read_device_data(path), str(path), require_sources)


# ----------------------------------------------------------------------------------------------- writing
def _cited_out(c: Cited | None, count: bool = False) -> Any:
    if c is None:
        return None
    value: Any = int(c.value) if count else c.text
    if c.source is None and c.note is None:
        return value
    out: dict[str, Any] = {"value": value}
    if c.source is not None:
        out["source"] = c.source
    if c.note is not None:
        out["note"] = c.note
    return out


def _drop_none(d: dict, keep: frozenset[str] = frozenset()) -> dict:
    return {k: v for k, v in d.items() if k in keep or (v is not None and v != {} and v != [] and v != "")}


def _out(owner: Any, f: F.Field) -> Any:
    """The file form of field ``f`` of ``owner`` (a device or one of its records); None when left out."""
    value = getattr(owner, f.name)
    if f.shape in (F.FIGURE, F.COUNT):
        out = _cited_out(value, f.shape == F.COUNT)
        date = getattr(owner, f"{f.name}_date") if f.dated else None
        if out is not None and date:
            out = {"value": out} if not isinstance(out, dict) else dict(out)
            out["date"] = date
        return out
    if f.shape == F.BY_PRECISION:
        return {k: _cited_out(v) for k, v in value.items()}
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
    return _drop_none({p.name: _out(record, p) for p in parts}, required)


def device_to_dict(device: Device) -> dict:
    """The inverse of :func:`device_from_dict`: values keep the text the vendor wrote."""
    out = {}
    for f in F.FIELDS:
        if f.shape == F.RECORD and all(p.shape == F.NUMBER for p in f.parts):  # efficiency
            numbers = {p.name: getattr(device, f"{f.name}_{p.name}") for p in f.parts}
            out[f.name] = None if all(numbers[p.name] == p.default for p in f.parts) else numbers
        else:
            out[f.name] = _out(device, f)
    return _drop_none({"format": FORMAT, **out})


def dump_device_yaml(device: Device) -> str:
    return yaml.safe_dump(device_to_dict(device), sort_keys=False, allow_unicode=True, width=110)
