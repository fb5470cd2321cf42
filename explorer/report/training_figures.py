"""The Training section's figure, as the Training panel draws it: per system, the chosen layout's step time stacked
part by part (seconds), and memory per device stacked (weights, gradients, optimizer states, activations; GB)
against the device's capacity (a red tick). One reportlab drawing for the PDF and the HTML's inline SVG. Qt-free.
"""

from __future__ import annotations

import math

import numpy as np
from reportlab.graphics.shapes import Drawing, Group, Line, Rect
from reportlab.lib import colors
from reportlab.pdfbase.pdfmetrics import stringWidth

from ..core.training.step import STEP_PARTS
from .build import pdf_text
from .figures import FONT, MUTED, Axes, text
from .training_section import MEMORY_PARTS, TrainingSection, short_name

STEP_COLORS = ("#1f77b4", "#ff7f0e", "#bcbd22", "#9e9e9e", "#8c564b", "#d62728", "#9467bd")
MEMORY_COLORS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd")
CAPACITY = colors.HexColor("#b00020")
NAME_W = 110.0  # the systems' names left of the bars
ROW_H = 22.0


def _nice_top(x: float) -> float:
    if not (math.isfinite(x) and x > 0):
        return 1.0
    base = 10.0 ** math.floor(math.log10(x))
    return next(m * base for m in (1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10) if m * base >= x * (1 - 1e-12))


def _legend(g: Group, x: float, y: float, labels, colours) -> None:
    for label, c in zip(labels, colours):
        g.add(Rect(x, y, 7, 7, fillColor=colors.HexColor(c), strokeColor=None))
        g.add(text(x + 10, y + 0.5, label, 6.8))
        x += 22 + stringWidth(pdf_text(label), FONT, 6.8)


def _bars(g: Group, y0: float, width: float, names, segments, colours, unit: str, title: str, labels,
          capacity=None) -> float:
    """One chart of horizontal stacked bars at height ``y0`` (its bottom); returns its height."""
    n = len(names)
    h = n * ROW_H + 6
    right = np.nansum(segments, axis=1) if n else np.zeros(0)
    if capacity is not None:
        right = np.fmax(right, np.nan_to_num(capacity))
    top = _nice_top(float(np.max(right, initial=0.0)) * 1.45)  # room for each bar's label after it
    ax = Axes(NAME_W, y0 + 30, width - NAME_W - 6, h, (0.0, top), (0.0, float(n)))
    ax.frame(g, f"{title} ({unit})", "", lambda v: f"{v:g}", None, grid=True, yticks=False)
    for i, name in enumerate(names):
        yc = ax.y(n - i - 0.5)
        g.add(text(NAME_W - 5, yc - 2.5, name, 7, "end"))
        left = 0.0
        for w, c in zip(np.nan_to_num(segments[i]), colours):
            if w > 0:
                g.add(Rect(ax.x(left), yc - 7, ax.x(left + w) - ax.x(left), 14, fillColor=colors.HexColor(c),
                           strokeColor=None))
            left += w
        if capacity is not None and math.isfinite(capacity[i]):
            g.add(Line(ax.x(capacity[i]), yc - 10, ax.x(capacity[i]), yc + 10, strokeColor=CAPACITY, strokeWidth=2))
        g.add(text(ax.x(right[i]) + 4, yc - 2.5, labels[i], 6.8, color=MUTED))
    return h + 30


def training_figure(section: TrainingSection, width: float) -> Drawing:
    """Step time and memory per device of each system's chosen layout (systems with no valid layout left out)."""
    results = [r for r in section.results if r.analysis is not None]
    names = [f"{short_name(r.system.name)} ({r.system.devices})" for r in results]
    steps = np.array([r.analysis.step_parts[r.chosen] for r in results]).reshape(-1, len(STEP_PARTS))
    memory = np.array([[getattr(r.analysis, f)[r.chosen] / 1e9 for _, f in MEMORY_PARTS]
                       for r in results]).reshape(-1, len(MEMORY_PARTS))
    capacity = np.array([r.analysis.capacity / 1e9 for r in results])
    step_labels = [f"{r.analysis.step_time[r.chosen]:.3g} s, {r.layout.label()}, MFU {r.analysis.mfu[r.chosen]:.1%}"
                   for r in results]
    memory_labels = [f"{r.analysis.memory_bytes[r.chosen] / 1e9:.3g} of {r.analysis.capacity / 1e9:.3g} GB: "
                     f"{'fits' if r.analysis.fits[r.chosen] else 'does NOT fit'}" for r in results]
    g = Group()
    y = 0.0
    y += _bars(g, y, width, names, memory, MEMORY_COLORS, "GB", "memory per device", memory_labels, capacity)
    _legend(g, NAME_W, y + 2, [p for p, _ in MEMORY_PARTS] + ["capacity"], (*MEMORY_COLORS, "#b00020"))
    y += 24
    y += _bars(g, y, width, names, steps, STEP_COLORS, "s", "time per step", step_labels)
    _legend(g, NAME_W, y + 2, STEP_PARTS, STEP_COLORS)
    y += 16
    d = Drawing(width, y)
    d.add(g)
    return d
