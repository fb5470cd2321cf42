"""Reading the CSV exports of profilers with errors that name the file, line and column.

Shared by the Nsight Compute and Torq importers: delimiter sniffing (``,`` ``;`` or tab), case- and
space-insensitive column lookup with aliases, and numbers that may carry thousands separators.
"""

from __future__ import annotations

import csv
import io
import math
from dataclasses import dataclass
from pathlib import Path

from explorer.core.traces.model import TraceError

_DELIMITERS = (",", ";", "\t")


def read_text(path: str | Path) -> str:
    """The file's text (UTF-8, BOM tolerated); a TraceError if it cannot be read or is empty."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        raise TraceError(f"is not UTF-8 text (byte {exc.start}); is it a binary report?",
                         file=str(p)) from None
    except OSError as exc:
        raise TraceError(f"cannot be read ({exc.strerror or exc})", file=str(p)) from None
    if not text.strip():
        raise TraceError("is empty", file=str(p))
    return text


def sniff_delimiter(header_line: str) -> str:
    """The delimiter that splits the header line into the most fields (',' when none does)."""
    counts = {d: len(next(csv.reader([header_line], delimiter=d))) for d in _DELIMITERS}
    best = max(_DELIMITERS, key=lambda d: counts[d])
    return best if counts[best] > 1 else ","


def normalize(name: str) -> str:
    """Column names compare without case, surrounding spaces or repeated inner spaces."""
    return " ".join(name.strip().lower().split())


@dataclass(frozen=True)
class Row:
    """One data row: its 1-based line number in the file and its cells."""

    line: int
    cells: tuple[str, ...]


@dataclass(frozen=True)
class Table:
    """A CSV table: header cells, data rows, and the file they came from (for messages)."""

    file: str
    header: tuple[str, ...]
    header_line: int
    rows: tuple[Row, ...]
    delimiter: str

    def find(self, *aliases: str) -> int | None:
        """Index of the first column whose name matches one of ``aliases`` (normalized), else None."""
        wanted = [normalize(a) for a in aliases]
        names = [normalize(h) for h in self.header]
        for alias in wanted:
            if alias in names:
                return names.index(alias)
        return None

    def require(self, *aliases: str, fmt: str) -> int:
        """Like :meth:`find`, but a missing column is a TraceError naming it and the columns present."""
        index = self.find(*aliases)
        if index is None:
            shown = ", ".join(repr(h) for h in self.header)
            raise TraceError(
                f"required column '{aliases[0]}' is missing from this {fmt} file (columns: {shown})",
                file=self.file, line=self.header_line, field=aliases[0])
        return index

    def cell(self, row: Row, index: int) -> str:
        return row.cells[index].strip() if index < len(row.cells) else ""

    def number(self, row: Row, index: int, *, required: bool = True) -> float | None:
        """The cell as a float; thousands separators allowed; '' / 'n/a' give None unless required."""
        raw = self.cell(row, index)
        if raw.lower() in ("", "n/a", "nan", "-"):
            if required:
                raise TraceError("is empty; expected a number", file=self.file, line=row.line,
                                 field=self.header[index].strip())
            return None
        try:
            value = float(raw.replace(",", ""))
        except ValueError:
            raise TraceError(f"'{raw}' is not a number", file=self.file, line=row.line,
                             field=self.header[index].strip()) from None
        if not math.isfinite(value):
            raise TraceError(f"'{raw}' is not a finite number", file=self.file, line=row.line,
                             field=self.header[index].strip())
        return value


def parse_table(text: str, file: str, *, skip_prefixes: tuple[str, ...] = (),
                header_hint: str | None = None, fmt: str = "CSV") -> Table:
    """Split ``text`` into a header and data rows.

    Lines starting with one of ``skip_prefixes`` are ignored wherever they are (ncu prints ``==PROF==``
    lines around its table). If ``header_hint`` is given, the header is the first line containing it
    (case-insensitive).
    Blank lines are skipped; every data row keeps its line number.
    """
    lines = text.splitlines()
    start = None
    for i, line in enumerate(lines):
        stripped = line.strip()
        if not stripped or any(stripped.startswith(p) for p in skip_prefixes):
            continue
        if header_hint is None or header_hint.lower() in stripped.lower():
            start = i
            break
    if start is None:
        what = f"no header line with a '{header_hint}' column" if header_hint else "no header line"
        raise TraceError(f"has {what}, which this format needs ({fmt})", file=file, field=header_hint)
    delimiter = sniff_delimiter(lines[start])
    reader = csv.reader(io.StringIO("\n".join(lines[start:])), delimiter=delimiter)
    try:
        header = tuple(next(reader))
        rows = []
        for cells in reader:
            if not any(c.strip() for c in cells):
                continue
            if cells and any(cells[0].lstrip().startswith(p) for p in skip_prefixes):
                continue
            rows.append(Row(line=start + reader.line_num, cells=tuple(cells)))
    except csv.Error as exc:
        raise TraceError(f"is not valid CSV ({exc})", file=file, line=start + reader.line_num) from None
    return Table(file=file, header=header, header_line=start + 1, rows=tuple(rows), delimiter=delimiter)
