"""The lines and ridge label of one device on the roofline and the panel's CSV table (split from ``roofline.py``)."""

from __future__ import annotations

import functools
import math

import numpy as np
import pyqtgraph as pg
from PySide6.QtGui import QPen

from ..plot_items.log_lines import LogLines
from ..plot_items.pinned_text import PinnedText
from .plotting import (
    DASH,
    changed,
    device_color,
    opaque,
)


class DeviceItems:
    """The lines of one device slot in the shared :class:`LogLines`, created once and reused: the roof
    (main-memory slope and the ceiling at the precision), the on-chip slopes and the other precisions' ceilings
    (as segment pairs); and its ridge label."""

    def __init__(self, plot: pg.PlotItem, lines: LogLines):
        self.lines = lines
        self.roof = lines.add()
        self.levels = lines.add(pairs=True)
        self.others = lines.add(pairs=True)
        self.ridge_label = PinnedText(anchor=(1.05, -0.1))  # below and left of the ridge point
        plot.addItem(self.ridge_label, ignoreBounds=True)

    def hide(self) -> None:
        for line in (self.roof, self.levels, self.others):
            self.lines.show(line, False)
        self.ridge_label.setVisible(False)


def segments(pieces) -> tuple[np.ndarray, np.ndarray]:
    """Concatenate 2-point segments for a ``connect='pairs'`` curve."""
    return (
        np.array([float(v) for x, _ in pieces for v in (x[0], x[-1])]),
        np.array([float(v) for _, y in pieces for v in (y[0], y[-1])]),
    )


@functools.cache
def _pen(color, width: float, dashed: bool = False) -> QPen:
    pen = pg.mkPen(color, width=width)
    if dashed:
        pen.setDashPattern([8, 6])  # long dashes: cheap to paint
    return pen


@functools.cache
def _faint_pen(color) -> QPen:
    """The pen of another precision's ceiling: the device's colour, pale (opaque: cheap to paint)."""
    return _pen(opaque(pg.mkColor(color).getRgb()[:3], 0.4), 1.0)


def draw_device(items: DeviceItems, dr, index: int, focused: bool) -> None:
    """Draw one device's roof, on-chip slopes, other precisions' ceilings and ridge label."""
    color = device_color(index)
    width = 2.5 if focused else 1.5
    main = dr.slopes[0] if dr.slopes else None
    if dr.ceiling is not None and main is not None:
        x = np.array([main.x[0], dr.ridge, dr.ceiling.x[-1]]) if np.isfinite(dr.ridge) else main.x
        y = np.array([main.y[0], dr.peak, dr.peak]) if np.isfinite(dr.ridge) else main.y
    elif dr.ceiling is not None:
        x, y = dr.ceiling.x, dr.ceiling.y
    elif main is not None:
        x, y = main.x, main.y
    else:
        x, y = np.empty(0), np.empty(0)
    lines = items.lines
    if changed(items, "roof", (x, y, color, width)):
        lines.set(items.roof, x, y, _pen(color, width))
    lines.show(items.roof, len(x) > 0)
    lx, ly = segments([(sl.x, sl.y) for sl in dr.slopes[1:]])
    if changed(items, "levels", (lx, ly, color)):
        lines.set(items.levels, lx, ly, _pen(color, 1.0, dashed=True))
    lines.show(items.levels, len(lx) > 0)
    # a precision with the same peak lies under the roof: drawn pale over it, it would split the roof's line
    ox, oy = segments([(c.x, c.y) for c in dr.other_ceilings if c.flops != dr.peak])
    if changed(items, "others", (ox, oy, color)):
        lines.set(items.others, ox, oy, _faint_pen(color))
    lines.show(items.others, len(ox) > 0)
    # only the device in focus labels its ridge (every ridge is in the legend and the hover): the others' labels
    # are not typeset until their device comes into focus
    shown = focused and math.isfinite(dr.ridge) and math.isfinite(dr.peak)
    if shown and changed(items.ridge_label, "text", (dr.ridge, dr.peak, color)):
        items.ridge_label.setText(f"ridge {dr.ridge:.3g} FLOP/B", color=color)
        items.ridge_label.setPos(math.log10(dr.ridge), math.log10(dr.peak))
    items.ridge_label.setVisible(shown)


def roofline_csv(r):
    """The CSV header and rows of a roofline result (None: the header only)."""
    header = [
        "operator",
        "kind",
        "layer",
        "intensity (FLOP/byte)",
        "attainable (FLOP/s)",
        "modelled (FLOP/s)",
        "time (s)",
        "time share",
        "bound",
        "regime",
        "device",
        "precision",
    ]
    if r is None:
        return header, []
    p, dev = r.points, r.devices[r.device_index]
    rows = [
        [
            p.names[i],
            p.kinds[i],
            int(p.layer[i]) + 1,
            float(p.intensity[i]),
            float(p.attainable[i]),
            float(p.achieved[i]),
            float(p.time[i]),
            float(p.time_share[i]),
            p.bound[i],
            p.regime[i],
            dev.name,
            r.precision,
        ]
        for i in range(len(p.rows))
    ]
    rows.append([])
    rows.append(
        ["device", "peak (FLOP/s)", "main memory bandwidth (B/s)", "ridge (FLOP/byte)", "missing"]
    )
    rows.extend([[x.name, x.peak, x.bandwidth, x.ridge, x.missing or DASH] for x in r.devices])
    return header, rows
