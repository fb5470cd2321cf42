"""The CSV form of device files: one row per device, columns named by device-file field paths.

A figure's column carries its unit in the header (``memory[0].bandwidth [GB/s]``) and its cells are numbers
in that unit. Where the vendor wrote a figure in another unit (``80 GiB`` under ``[GB]``), the exporter
writes that text with its unit so nothing is converted and an export re-imports exactly; the importer
accepts such cells and checks their dimension. ``<figure>.source`` and ``<figure>.note`` columns hold the
citation. Lists are numbered from 0 (``memory[1].name``, ``sources[0].key``); an empty cell is "not given".
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Iterable
from typing import Any

from explorer.core.files import SafeCsvWriter, spreadsheet_unsafe
from explorer.core.hardware import fields as F
from explorer.core.precision import PRECISIONS
from explorer.core.units import UnitError, parse_si

#: The unit written in the header of each kind of figure.
HEADER_UNITS = {kind: unit for kind, (_low, _high, unit) in F.FIGURE_KINDS.items()}
COUNT = "count"
#: The device file's ``calibration:`` block travels whole, as JSON in one cell (it is a block of fitted curves,
#: not a set of cited figures).
JSON_COLUMN = "calibration"
_FIGURE: dict[str, str] = {}  # column template -> kind of figure (or COUNT)
_PLAIN: dict[str, type] = {}  # column template -> type of the cell
_SIBLINGS: dict[str, tuple[str, ...]] = {"": F.FIELD_NAMES}  # template -> the order of its children's columns
_KEYED = F.named(F.BY_PRECISION)
_CITATION = ("source", "date", "note")
_TYPES = {F.TEXT: str, F.WHOLE: int, F.NUMBER: float}


def _columns(fields: tuple[F.Field, ...], prefix: str) -> None:
    """Fill the tables above with the columns of ``fields`` under the template ``prefix``."""
    for f in fields:
        path = f"{prefix}{f.name}"
        if f.shape in _TYPES:
            _PLAIN[path] = _TYPES[f.shape]
        elif f.shape in (F.FIGURE, F.COUNT):
            _FIGURE[path] = f.unit if f.shape == F.FIGURE else COUNT
            _SIBLINGS[path] = _CITATION
            if f.dated:
                _PLAIN[f"{path}.date"] = str
        elif f.shape == F.BY_PRECISION:
            _FIGURE[f"{path}.*"] = f.unit
            _SIBLINGS[path] = PRECISIONS
            _SIBLINGS[f"{path}.*"] = _CITATION
        elif f.shape == F.BY_KEY:  # written as a list of records with their key first
            _PLAIN[f"{path}[].key"] = str
            _SIBLINGS[f"{path}[]"] = ("key",) + tuple(p.name for p in f.parts)
            _columns(f.parts, f"{path}[].")
        else:
            record = f"{path}[]" if f.shape == F.RECORDS else path
            _SIBLINGS[record] = f.csv_order or tuple(p.name for p in f.parts)
            _columns(f.parts, f"{record}.")


_columns(F.FIELDS, "")
_NUMBER = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$")
_HEADER = re.compile(r"^(?P<path>\S+?)(\s+\[(?P<unit>[^\]]*)\])?\s*$")
_TOKEN = re.compile(r"([^.\[\]]+)|\[(\d+)\]")


def template(path: str) -> str:
    """``memory[2].capacity`` -> ``memory[].capacity``; ``peak.fp16`` -> ``peak.*``."""
    out = re.sub(r"\[\d+\]", "[]", path)
    top, dot, rest = out.partition(".")
    if top in _KEYED and dot and "." not in rest:
        return f"{top}.*"
    return out


def header_unit(path: str, kind: str) -> str | None:
    if kind == COUNT:
        return None
    if kind == "throughput" and path.rsplit(".", 1)[-1].startswith("int"):
        return "TOP/s"
    return HEADER_UNITS[kind]


def _tokens(path: str) -> list[str | int]:
    return [int(index) if index else name for name, index in _TOKEN.findall(path)]


def _rank(path: str) -> tuple:
    """Sort key of a column: each name ranks among its siblings as listed in ``_SIBLINGS``, lists by index."""
    key, parent = [], ""
    for token in _tokens(path):
        if isinstance(token, int):
            key.append((0, token, ""))
            parent += f"[{token}]"
        else:
            siblings = _SIBLINGS.get(template(parent), ())
            key.append((1, siblings.index(token) if token in siblings else len(siblings), token))
            parent = f"{parent}.{token}" if parent else token
    return tuple(key)


# ------------------------------------------------------------------------------------------------ export
def _flatten(data: dict) -> dict[str, str]:
    """``{header: cell}`` for one device mapping (``device_to_dict`` form)."""
    data = {k: v for k, v in data.items() if k != "format"}
    calibration = data.pop(JSON_COLUMN, None)
    if "sources" in data:
        data["sources"] = [{"key": k, **v} for k, v in data["sources"].items()]
    cells: dict[str, str] = {}

    def walk(node: Any, path: str) -> None:
        t = template(path) if path else ""
        if t in _FIGURE:
            _figure(cells, path, _FIGURE[t], node)
        elif isinstance(node, dict):
            for key, value in node.items():
                walk(value, f"{path}.{key}" if path else key)
        elif isinstance(node, list):
            for i, item in enumerate(node):
                walk(item, f"{path}[{i}]")
        else:
            cells[path] = str(node)

    walk(data, "")
    if calibration is not None:
        cells[JSON_COLUMN] = json.dumps(calibration, separators=(",", ":"))
    return cells


def _figure(cells: dict[str, str], path: str, kind: str, node: Any) -> None:
    attrs = node if isinstance(node, dict) else {"value": node}
    unit = header_unit(path, kind)
    text = str(attrs["value"])
    number, _, written_unit = text.partition(" ")
    cell = number if unit is None or (written_unit == unit and _NUMBER.match(number)) else text
    cells[f"{path} [{unit}]" if unit else path] = cell
    for attr in ("source", "note", "date"):
        if attr in attrs:
            cells[f"{path}.{attr}"] = str(attrs[attr])


def devices_to_csv(mappings: Iterable[dict]) -> str:
    rows = [_flatten(m) for m in mappings]
    headers = sorted({h for row in rows for h in row}, key=lambda h: _rank(_HEADER.match(h).group("path")))
    out = io.StringIO()
    writer = SafeCsvWriter(out)
    writer.writerow(headers)
    for row in rows:
        writer.writerow([row.get(h, "") for h in headers])
    return out.getvalue()


# ------------------------------------------------------------------------------------------------ import
class Column:
    def __init__(self, header: str):
        self.header = header
        match = _HEADER.match(header.strip())
        self.path = match.group("path") if match else header
        self.unit = (match.group("unit") or "").strip() or None if match else None
        self.tokens = _tokens(self.path)
        t = template(self.path)
        base, _, attr = self.path.rpartition(".")
        self.kind: Any = None
        self.problem = None
        if t in _FIGURE:
            self.kind = _FIGURE[t]
            self._check_unit()
            return
        if self.path == JSON_COLUMN:
            self.kind = JSON_COLUMN
        elif t in _PLAIN:
            self.kind = _PLAIN[t]
        elif attr in ("source", "note") and template(base) in _FIGURE:
            self.kind = str
        else:
            self.problem = (
                "unknown column (expected a device-file field path such as 'memory[0].capacity [GB]')"
            )
            return
        if self.unit is not None:
            self.problem = f"this column takes no unit, the header says [{self.unit}]"

    def _check_unit(self) -> None:
        if self.kind == COUNT:
            if self.unit is not None:
                self.problem = f"a count takes no unit, the header says [{self.unit}]"
            return
        if self.unit is None:
            self.problem = (
                f"the header needs the unit, e.g. '{self.path} [{header_unit(self.path, self.kind)}]'"
            )
            return
        try:
            parse_si(f"1 {self.unit}", self.kind, self.path)
        except UnitError as exc:
            self.problem = f"unit [{self.unit}]: {exc.reason}"

    def convert(self, cell: str) -> Any:
        """The cell as device-file data; raises ValueError naming what was expected."""
        if self.kind is str:
            return cell
        if self.kind == JSON_COLUMN:
            try:
                return json.loads(cell)
            except json.JSONDecodeError as exc:
                raise ValueError(f"expected the calibration block as JSON ({exc.msg})") from None
        if self.kind is int:
            if not re.fullmatch(r"\s*[+-]?\d+\s*", cell):
                raise ValueError(f"expected a whole number, got '{cell}'")
            return int(cell)
        if self.kind is float:
            if not _NUMBER.match(cell.strip()):
                raise ValueError(f"expected a number, got '{cell}'")
            return float(cell)
        if self.kind == COUNT:
            if not re.fullmatch(r"\s*\d+\s*", cell):
                raise ValueError(f"expected a whole number, got '{cell}'")
            return {"value": int(cell)}
        stripped = cell.strip()
        return {"value": f"{stripped} {self.unit}" if _NUMBER.match(stripped) else cell}


def _assign(target: dict, tokens: list, value: Any) -> None:
    """Set ``value`` at ``tokens`` in nested dicts (list indices become int keys, turned into lists later)."""
    node = target
    for token in tokens[:-1]:
        node = node.setdefault(token, {})
        if not isinstance(node, dict):
            raise ValueError("conflicts with another column")
    last = tokens[-1]
    if isinstance(value, dict) and isinstance(node.get(last), dict):
        node[last].update(value)
    else:
        node[last] = value


def _listify(node: Any) -> Any:
    if isinstance(node, dict):
        if node and all(isinstance(k, int) for k in node):
            return [_listify(node[k]) for k in sorted(node)]
        return {k: _listify(v) for k, v in node.items()}
    return node


def read_csv(text: str) -> tuple[list[tuple[str, dict | None, list[tuple[str, str]]]], list[tuple[str, str]]]:
    """Parse CSV text into ``[(where, mapping, [(field, problem)])]`` and header ``[(column, problem)]``."""
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    try:
        headers = next(reader)
    except StopIteration:
        return [], [("(file)", "is empty; expected a header row")]
    columns = [Column(h) for h in headers]
    header_problems = [(c.header, c.problem) for c in columns if c.problem]
    seen: dict[str, str] = {}
    for c in columns:
        if c.path in seen:
            header_problems.append((c.header, f"repeats the column '{seen[c.path]}'"))
        seen.setdefault(c.path, c.header)
    entries = []
    id_column = next((i for i, c in enumerate(columns) if c.path == "id"), None)
    line = reader.line_num
    while True:
        start = line + 1
        try:
            cells = [spreadsheet_unsafe(c) for c in next(reader)]
        except StopIteration:
            break
        except csv.Error as exc:
            entries.append(
                (f"line {start}", None, [("(row)", f"unreadable CSV ({exc}); the file may be truncated")])
            )
            break
        line = reader.line_num
        if not any(cell.strip() for cell in cells):
            continue
        where = f"line {start}"
        if len(cells) != len(columns):
            hint = "; the file may be truncated" if len(cells) < len(columns) else ""
            label = cells[id_column] if id_column is not None and id_column < len(cells) else "?"
            entries.append(
                (
                    where,
                    {"id": label} if label else None,
                    [("(row)", f"has {len(cells)} cells for {len(columns)} columns{hint}")],
                )
            )
            continue
        data: dict = {}
        problems: list[tuple[str, str]] = []
        for column, cell in zip(columns, cells):
            if cell == "" or column.problem:
                continue
            try:
                _assign(data, column.tokens, column.convert(cell))
            except ValueError as exc:
                problems.append((column.path, str(exc)))
        data = _listify(data)
        if isinstance(data.get("sources"), list):
            sources = {}
            for i, s in enumerate(data["sources"]):
                key = s.pop("key", None) if isinstance(s, dict) else None
                if key is None:
                    problems.append((f"sources[{i}].key", "is required"))
                elif key in sources:
                    problems.append((f"sources[{i}].key", f"'{key}' repeats an earlier source key"))
                else:
                    sources[key] = s
            data["sources"] = sources
        entries.append((where, {"format": 1, **data}, problems))
    return entries, header_problems
