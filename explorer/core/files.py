"""Files on the ground floor: atomic writes (a crash mid-save leaves the previous file intact)."""

from __future__ import annotations

import csv
import os
import tempfile
from pathlib import Path


def atomic_write_text(path: str | Path, text: str) -> None:
    """Write to a temporary file in the same folder, fsync, then rename over the target: a crash mid-save
    leaves the previous file intact."""
    atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_bytes(path: str | Path, data: bytes) -> None:
    """:func:`atomic_write_text` for bytes (PDF and other binary exports)."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


#: The first characters with which a spreadsheet reads a cell as a formula (OWASP, "CSV Injection").
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def spreadsheet_safe(value):
    """``value`` as a CSV cell a spreadsheet will not run: text starting with ``= + - @``, a tab or a carriage return
    gets a leading apostrophe; numbers, and text that reads as a number ("-1.5"), are left as they are."""
    if isinstance(value, str) and value.startswith(FORMULA_STARTS) and not _is_number(value):
        return "'" + value
    return value


def spreadsheet_unsafe(cell: str) -> str:
    """:func:`spreadsheet_safe` undone, for reading back a CSV file this application wrote."""
    return cell[1:] if cell.startswith("'") and cell[1:].startswith(FORMULA_STARTS) and not _is_number(cell[1:]) \
        else cell


class SafeCsvWriter:
    """``csv.writer`` (``\\n`` line ends) whose every cell goes through :func:`spreadsheet_safe`."""

    def __init__(self, out):
        self._writer = csv.writer(out, lineterminator="\n")

    def writerow(self, row) -> None:
        self._writer.writerow([spreadsheet_safe(v) for v in row])
