"""Memory capacities shown as each vendor writes them (issue 23).

NVIDIA, Intel and Google's v5e/v6e pages write decimal gigabytes ("80 GB" = 80 x 10^9 B); AMD's ROCm tables,
AWS and Google's v3/v4/v5p pages write binary gibibytes ("192 GiB" = 192 x 2^30 B). A display that converts
one into the other ("206 GB" for the MI300X's 192 GiB) reads as a different product. So every display shows
the figure in the unit its vendor wrote (the ``text`` the Cited value keeps) while arithmetic keeps bytes.

Where only the byte count is at hand (the catalog table's rows), :func:`format_capacity` writes it in the
family in which it is a whole number: a vendor's round figure comes back as written (80 x 10^9 B -> "80 GB",
192 x 2^30 B -> "192 GiB"); ``tests/core/test_capacity_display.py`` checks both over the shipped catalog.
"""

from __future__ import annotations

import math
import re

from .device import Cited, Device

#: the reading of the two families, for tooltips, footnotes and table notes
CAPACITY_NOTE = ("capacities are shown in the unit each vendor writes: GB = 10^9 B (decimal), "
                 "GiB = 2^30 B (binary)")

_DECIMAL = ("B", "kB", "MB", "GB", "TB", "PB")
_BINARY = ("B", "KiB", "MiB", "GiB", "TiB", "PiB")
_TEXT = re.compile(r"^\s*([0-9][0-9,]*(?:\.[0-9]+)?)\s*([kKMGTP]i?B|B)\s*$")


def _whole(n: float, base: float, names: tuple[str, ...]) -> str | None:
    """``n`` bytes as a whole number of the largest unit of one family it is a multiple of, or None."""
    for i in range(len(names) - 1, -1, -1):
        x = n / base ** i
        if x >= 1 and abs(x - round(x)) < 1e-9 * x:
            return f"{round(x):d} {names[i]}"
    return None


def format_capacity(n: float | None) -> str:
    """Bytes in the family where they are a whole number with the fewest digits (decimal on a tie);
    three significant decimal digits when neither is whole; "—" when unknown."""
    if n is None or not math.isfinite(n) or n <= 0:
        return "\u2014"
    options = [s for s in (_whole(n, 1000.0, _DECIMAL), _whole(n, 1024.0, _BINARY)) if s is not None]
    if options:
        return min(options, key=lambda s: len(s.split()[0]))  # stable: decimal first on a tie
    i = min(int(math.log(n, 1000)), len(_DECIMAL) - 1)
    return f"{n / 1000 ** i:.3g} {_DECIMAL[i]}"


def cited_capacity(cited: Cited | None) -> str:
    """The capacity as its source wrote it ("192 GiB", "80 GB"), spacing normalised; falls back on
    :func:`format_capacity` of the value when the text is not a plain ``number unit``."""
    if cited is None:
        return "\u2014"
    m = _TEXT.match(cited.text or "")
    if m is None:
        return format_capacity(cited.value)
    return f"{m.group(1)} {m.group(2)}"


def device_capacity(device: Device) -> str:
    """The device's main (off-chip) memory capacity as its vendor wrote it."""
    level = device.offchip
    return cited_capacity(level.capacity if level is not None else None)
