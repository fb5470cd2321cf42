"""The machinery shared by the device and system file readers: cited figures with units, the ``sources:`` and
``conflicts:`` blocks, reading YAML/JSON safely, and writing figures back as the text they were read from."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from explorer.core.files import NestingError, parse_nested, single_line
from explorer.core.hardware import fields as F
from explorer.core.hardware.device import Cited, Conflict, Source
from explorer.core.units import UnitError, parse_si

#: The plausible range in SI units of each kind of figure, for range checks
RANGES = {kind: (low, high) for kind, (low, high, _unit) in F.FIGURE_KINDS.items()}


class Reader:
    """Reads the parts of a file, collecting every problem as ``where: owner: field: message`` (the owner is a
    device's or a system's id)."""

    def __init__(self, where: str, require_sources: bool):
        self.where = where
        self.owner = "?"
        self.require_sources = require_sources
        self.problems: list[str] = []
        self.source_keys: set[str] = set()

    def problem(self, field: str, message: str) -> None:
        self.problems.append(single_line(f"{self.where}: {self.owner}: {field}: {message}"))

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
            if (isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value)
                    or value <= 0 or value != int(value)):
                self.problem(field, f"expected a positive whole number, got {value!r}")
                return None
            return Cited(float(value), str(value), None if source is None else str(source), note)
        try:
            si = parse_si(value, kind, field)
        except UnitError as exc:
            self.problems.append(single_line(f"{self.where}: {self.owner}: {exc}"))
            return None
        low, high = RANGES.get(kind, (-math.inf, math.inf))
        if not (low <= si <= high):
            self.problem(field, f"'{value}' is outside the plausible range for a {kind}")
            return None
        return Cited(si, str(value), None if source is None else str(source), note)


def read_sources(r: Reader, data: dict) -> dict[str, Source]:
    """The ``sources:`` block (also read by system files); its keys are what ``source:`` may name."""
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
    return sources


def read_conflicts(r: Reader, data: dict) -> tuple[Conflict, ...]:
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
    return tuple(conflicts)


def read_data(path: str | Path, error: type[Exception]) -> Any:
    """Parse a YAML or JSON file into plain data; ``error([one line])`` names the file (and line) when it cannot."""
    import yaml  # on use: the app paints its first window without it (issue 22)

    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise error([f"{path}: cannot read ({exc.strerror})"]) from None
    except UnicodeDecodeError:
        raise error([f"{path}: cannot read (not UTF-8 text)"]) from None
    try:
        return parse_nested(json.loads if path.suffix.lower() == ".json" else yaml.safe_load, text)
    except NestingError as exc:
        raise error([f"{path}: {exc}"]) from None
    except json.JSONDecodeError as exc:
        raise error([f"{path}: line {exc.lineno}: invalid JSON ({exc.msg})"]) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f"line {mark.line + 1}: " if mark is not None else ""
        raise error([f"{path}: {line}invalid YAML ({getattr(exc, 'problem', exc)})"]) from None


# ----------------------------------------------------------------------------------------------- writing
def cited_out(c: Cited | None, count: bool = False) -> Any:
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


def drop_none(d: dict, keep: frozenset[str] = frozenset()) -> dict:
    return {k: v for k, v in d.items() if k in keep or (v is not None and v != {} and v != [] and v != "")}
