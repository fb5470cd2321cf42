"""The report's marking of default energies (issue 23): the energy figure hatches the part of each bar whose
energies are Horowitz's 45 nm defaults rather than the device's own, with a legend entry
"default energies (Horowitz 45 nm)", and the caption names the devices so marked.

The figure's bars have three parts (off-chip memory, on-chip memory, arithmetic: ``figures.energy_parts``); a part
is hatched when any figure behind it is a default (the part's joules then rest, wholly or partly, on the 45 nm
table).
"""

from __future__ import annotations

import numpy as np
from reportlab.graphics.shapes import Group, Line, Rect
from reportlab.lib import colors

from ..core.analysis.energy_defaults import default_energy_marks, energy_marks_note
from .build import ReportData

HATCH = colors.HexColor("#333333")
SPACING = 3.0  # points between hatch lines


def energy_part_marks(data: ReportData) -> np.ndarray:
    """(D, 3) bool aligned with ``energy_parts``: off-chip, on-chip, arithmetic; True where a default is used."""
    dev = data.analysis.devices
    marks = default_energy_marks(dev)
    out = np.zeros((len(dev), 3), dtype=bool)
    for i, device in enumerate(dev.devices):
        roles = [lv.role for lv in device.memory if lv.role != "registers"]
        for j, role in enumerate(roles):
            out[i, 0 if role == "offchip" else 1] |= bool(marks[i, j])
        out[i, 2] = bool(marks[i, -1])
    return out


def hatch_lines(x: float, y: float, w: float, h: float, spacing: float = SPACING) -> list[tuple[float, ...]]:
    """45-degree lines (x1, y1, x2, y2) filling the rectangle at (x, y) of size w x h, clipped to it."""
    out = []
    if w <= 0 or h <= 0:
        return out
    c = -h
    while c < w:
        t0, t1 = max(0.0, -c), min(h, w - c)
        if t1 > t0:
            out.append((x + c + t0, y + t0, x + c + t1, y + t1))
        c += spacing
    return out


def hatch(g: Group, x: float, y: float, w: float, h: float) -> None:
    """Hatch one rectangle (drawn over its fill) and outline it."""
    for x1, y1, x2, y2 in hatch_lines(x, y, w, h):
        g.add(Line(x1, y1, x2, y2, strokeColor=HATCH, strokeWidth=0.5))
    g.add(Rect(x, y, w, h, fillColor=None, strokeColor=HATCH, strokeWidth=0.4))


def hatch_bars(g: Group, ax, stacks: np.ndarray, marks: np.ndarray) -> None:
    """Hatch part ``j`` of bar ``i`` where ``marks[i, j]``, at the places ``figures._hbars`` drew them."""
    n = len(stacks)
    bar = min(16.0, ax.h / max(n, 1) * 0.6)
    for i in range(n):
        yc = ax.y0 + ax.h * (n - i - 0.5) / n
        x = 0.0
        for j, v in enumerate(stacks[i]):
            if v > 0 and np.isfinite(v):
                if marks[i, j]:
                    hatch(g, ax.x(x), yc - bar / 2, ax.x(x + v) - ax.x(x), bar)
                x += v


def legend_swatch(g: Group, x: float, y: float) -> None:
    """The legend's hatched swatch at (x, y) (the figure writes :data:`DEFAULT_ENERGY_LABEL` beside it)."""
    g.add(Rect(x, y - 0.5, 8, 7, fillColor=colors.HexColor("#BBBBBB"), strokeColor=None))
    hatch(g, x, y - 0.5, 8, 7)


def caption_note(data: ReportData) -> str:
    dev = data.analysis.devices
    return energy_marks_note(dev, default_energy_marks(dev))
