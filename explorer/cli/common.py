"""Shared pieces of the command line: the error convention, device and model resolution, JSON output."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from explorer.core.hardware.device_file import DEVICE_FILE_SUFFIXES
from explorer.core.importers import suffixes
from explorer.core.money import parse_money
from explorer.core.session.project import SUFFIX as PROJECT_SUFFIX
from explorer.core.units import UnitError, parse_si

#: What makes a MODEL or DEV argument a path rather than an id: a model importer's or a device file's suffix.
PATH_SUFFIXES = tuple(dict.fromkeys((*suffixes("model"), *DEVICE_FILE_SUFFIXES, PROJECT_SUFFIX)))


class CliError(Exception):
    """Bad input: printed as one line ``hwexplorer: error: ...`` with exit code 2, no traceback."""


class Rows:
    """A JSON list written one item at a time by :func:`print_json` (never whole in memory): ``make()`` gives an
    iterator of the items. Elsewhere (``to_plain``) it becomes a plain list."""

    def __init__(self, make):
        self.make = make


def to_plain(data):
    """``data`` with every :class:`Rows` made a list (for callers that want the whole document)."""
    if isinstance(data, Rows):
        return [to_plain(x) for x in data.make()]
    if isinstance(data, dict):
        return {k: to_plain(v) for k, v in data.items()}
    if isinstance(data, list | tuple):
        return [to_plain(x) for x in data]
    return data


def print_json(data) -> None:
    """``data`` as JSON (indent 2, no NaN) on stdout; a :class:`Rows` value is streamed item by item, so a
    million-layer analysis is written in memory linear in one item, byte for byte as ``json.dumps`` writes it."""
    streams: list[Rows] = []

    def mark(x):
        if isinstance(x, Rows):
            streams.append(x)
            return f"\x00rows{len(streams) - 1}\x00"
        if isinstance(x, dict):
            return {k: mark(v) for k, v in x.items()}
        if isinstance(x, list | tuple):
            return [mark(v) for v in x]
        return x

    text = json.dumps(mark(data), indent=2, allow_nan=False, default=_default)
    out = sys.stdout
    pos = 0
    for n, rows in enumerate(streams):
        marker = f'"\\u0000rows{n}\\u0000"'
        at = text.index(marker, pos)
        out.write(text[pos:at])
        indent = " " * (at - text.rfind("\n", 0, at) - 1 - len(text[text.rfind("\n", 0, at) + 1:at].lstrip()))
        inner = indent + "  "
        first, chunk = True, []
        for item in rows.make():
            body = json.dumps(item, indent=2, allow_nan=False, default=_default).replace("\n", "\n" + inner)
            chunk.append(("[\n" if first else ",\n") + inner + body)
            first = False
            if len(chunk) >= 512:
                out.write("".join(chunk))
                chunk.clear()
        out.write("".join(chunk) + ("[]" if first else "\n" + indent + "]"))
        pos = at + len(marker)
    out.write(text[pos:] + "\n")


def _default(obj):
    import numpy as np

    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    raise TypeError(f"not JSON serializable: {type(obj).__name__}")


def is_path(spec: str) -> bool:
    return any(ch in spec for ch in "/\\") or Path(spec).suffix.lower() in PATH_SUFFIXES


def text_table(headers: list[str], rows: list[list[str]]) -> str:
    """Columns padded to width: the first two left-aligned (names), the rest right-aligned (numbers)."""
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]
    lines = ["  ".join(h.ljust(w) if i < 2 else h.rjust(w) for i, (h, w) in enumerate(zip(headers, widths)))]
    for r in rows:
        lines.append("  ".join(c.ljust(w) if i < 2 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths))))
    return "\n".join(lines)


def parse_pairs(items: list[str], option: str, kind: str) -> dict[str, float]:
    """``["DEV=VALUE", ...]`` -> {DEV: SI value of ``kind``}; a malformed item is one CliError naming ``option``."""
    out = {}
    for item in items:
        dev, sep, value = item.partition("=")
        if not sep or not dev.strip() or not value.strip():
            raise CliError(f"{option}: expected DEV=VALUE, got {item!r}")
        try:
            if kind in ("money", "money_rate"):  # one reader for money: "$30k", "1.2M USD", "$4.10/h"
                out[dev.strip()] = float(parse_money(value, f"{option} {dev.strip()}", rate=kind == "money_rate")
                                         .to("USD" if kind == "money" else "USD/s").magnitude)
            else:
                out[dev.strip()] = parse_si(value, kind, f"{option} {dev.strip()}")
        except UnitError as exc:
            raise CliError(str(exc)) from None
    return out
