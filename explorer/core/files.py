"""Files on the ground floor: atomic writes (a crash mid-save leaves the previous file intact)."""

from __future__ import annotations

import csv
import glob
import os
import tempfile
import time
from pathlib import Path


def atomic_write_text(path: str | Path, text: str) -> None:
    """Write to a temporary file in the same folder, fsync, then rename over the target: a crash mid-save
    leaves the previous file intact."""
    atomic_write_bytes(path, text.encode("utf-8"))


#: A temporary file of ours older than this was left by a write that was killed (a live one takes well under it).
STALE_AFTER_S = 60.0


def _remove_stale_temporaries(path: Path) -> None:
    """Delete what killed writes of ``path`` left beside it (``.NAME.*.tmp``), so they do not pile up."""
    now = time.time()
    for tmp in path.parent.glob(f".{glob.escape(path.name)}.*.tmp"):
        try:
            if now - tmp.stat().st_mtime > STALE_AFTER_S:
                tmp.unlink()
        except OSError:
            pass  # gone already, or not ours to delete


def atomic_write_bytes(path: str | Path, data: bytes) -> None:
    """:func:`atomic_write_text` for bytes (PDF and other binary exports)."""
    path = Path(path)
    _remove_stale_temporaries(path)
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


def _runs_as_formula(text: str) -> bool:
    """Would a spreadsheet run ``text`` once its leading apostrophes (ours) are taken off?"""
    rest = text.lstrip("'")
    return rest.startswith(FORMULA_STARTS) and not _is_number(rest)


def spreadsheet_safe(value):
    """``value`` as a CSV cell a spreadsheet will not run: text starting with ``= + - @``, a tab or a carriage return
    gets a leading apostrophe (and so does such text that already starts with apostrophes, so that reading back is
    exact); numbers, and text that reads as a number ("-1.5"), are left as they are."""
    if isinstance(value, str) and _runs_as_formula(value):
        return "'" + value
    return value


def spreadsheet_unsafe(cell: str) -> str:
    """:func:`spreadsheet_safe` undone, for reading back a CSV file this application wrote."""
    return cell[1:] if cell.startswith("'") and _runs_as_formula(cell[1:]) else cell


class SafeCsvWriter:
    """``csv.writer`` (``\\n`` line ends) whose every cell goes through :func:`spreadsheet_safe`."""

    def __init__(self, out):
        self._writer = csv.writer(out, lineterminator="\n")

    def writerow(self, row) -> None:
        self._writer.writerow([spreadsheet_safe(v) for v in row])


#: Deeper nesting than any file of ours has: a deeper one is refused before anything walks it.
MAX_DEPTH = 64


class NestingError(ValueError):
    """A JSON or YAML document nested deeper than :data:`MAX_DEPTH` (the readers turn it into their one line)."""


def parse_nested(loads, text: str):
    """``loads(text)`` (``json.loads``, ``yaml.safe_load``) refusing documents nested deeper than
    :data:`MAX_DEPTH`: such input ends the parser or a later walk in a RecursionError, never a message."""
    try:
        data = loads(text)
    except RecursionError:
        raise NestingError(f"nested too deeply to read (more than {MAX_DEPTH} levels)") from None
    stack = [(data, 1)]
    while stack:
        node, depth = stack.pop()
        children = node.values() if isinstance(node, dict) else node if isinstance(node, list) else ()
        for child in children:
            if isinstance(child, (dict, list)):
                if depth + 1 > MAX_DEPTH:
                    raise NestingError(f"nested more than {MAX_DEPTH} levels deep")
                stack.append((child, depth + 1))
    return data


def names(keys) -> str:
    """Keys for a one-line message: plain ones as they are, others (a newline, a control character) as Python
    literals, so a hostile key never breaks the message's line."""
    return ", ".join(k if isinstance(k, str) and k.isprintable() and k.strip() == k and k else repr(k) for k in keys)


#: C0 controls, DEL, and the C1 controls and Unicode separators that ``str.splitlines`` also breaks lines at
#: (NEL U+0085, LINE SEPARATOR U+2028, PARAGRAPH SEPARATOR U+2029)
_CONTROL = ({c: f"\\x{c:02x}" for c in (*range(32), *range(0x7F, 0xA0))}
            | {ord("\n"): "\\n", ord("\r"): "\\r", ord("\t"): "\\t", 0x2028: "\\u2028", 0x2029: "\\u2029"})


def single_line(text: str) -> str:
    """``text`` with its line breaks and other control characters written as escapes (``\\n``): a message that
    quotes a file's text stays one line however hostile the text."""
    return text.translate(_CONTROL)
