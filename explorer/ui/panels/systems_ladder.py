"""The Systems panel's bandwidth ladder: the chapter's memory hierarchy extended outward to the links.

Per chosen system, one bar per level from the innermost on-chip memory through device memory to the scale-up and
scale-out links: the bytes one device moves there per step (log axis), labelled with the level's bandwidth (a
link's per device and direction) and the time those bytes take at it alone. Levels without traffic (a scale-out
network a one-node layout never crosses) or without a stated bandwidth say so.
"""

from __future__ import annotations

import math

import numpy as np
import pyqtgraph as pg

from explorer.core.parallel.compare import bandwidth_ladder

from ..plot_items.bars import Bars
from ..plot_items.pinned_text import PinnedText
from .plotting import DASH, NO_PEN, BarPicker, changed, device_color, elide, name_axis, new_plot, set_range, \
    set_ticks, set_title, si

GAP = 0.6  # between two systems' blocks of rows


def energy_label(rung) -> str:
    """A link's energy per step and device of its bytes: joules at the file's pJ/bit, or that none is stated."""
    if not rung.tier.startswith("scale") or not rung.nbytes > 0:
        return ""
    if not math.isfinite(rung.energy_per_byte):
        return "energy not stated"
    return f"{si(rung.joules, 'J')} at {rung.energy_per_byte / 8 * 1e12:.3g} pJ/bit"


def rung_label(rung) -> str:
    """What a bar's end says: the level's bandwidth and the time of its bytes at it (and a link's energy)."""
    if not rung.nbytes > 0:
        return f"no traffic ({si(rung.bandwidth, 'B/s')})" if math.isfinite(rung.bandwidth) else "no traffic"
    energy = energy_label(rung)
    energy = f", {energy}" if energy else ""
    if not math.isfinite(rung.seconds):
        return "bandwidth not stated" + energy
    return f"{si(rung.bandwidth, 'B/s')} \u2192 {si(rung.seconds, 's')}{energy}"


def fit_right(right, label_widths, plot_width: float, left: float = 0.0) -> float:
    """The smallest right end of a range from ``left`` where each bar ending at ``right[i]`` still has room for
    a label ``label_widths[i]`` pixels wide after it, in a plot ``plot_width`` pixels wide."""
    right = np.asarray(right, float)
    if not right.size:
        return left + 1.0
    share = np.minimum((np.asarray(label_widths, float) + 6.0) / max(plot_width, 1.0), 0.8)
    return left + float(np.max((right - left) / (1.0 - share), initial=1e-12))


class Ladder:
    """The ladder chart in ``graphics`` at (row, col): :meth:`draw` maps the chosen results to its items."""

    def __init__(self, graphics: pg.GraphicsLayoutWidget, row: int, col: int):
        self.plot = plot = new_plot()
        plot.vb.invertY(True)
        axis = plot.getAxis("bottom")
        axis.setLogMode(True)
        axis.enableAutoSIPrefix(False)
        plot.setLabel("bottom", "bytes per step and device (B)")
        name_axis(plot, 160)
        graphics.addItem(plot, row=row, col=col)
        self.bars = Bars(x0=[], y=[], width=[], height=0.7, pen=NO_PEN)
        plot.addItem(self.bars)
        self.labels: list[PinnedText] = []
        self.rows: list[tuple[int, object]] = []  # per row: (system index, its Rung)
        self.y = np.zeros(0)
        self.names: list[str] = []
        self.floor = 0.0
        self.right, self.height = np.zeros(0), 1.0
        plot.vb.sigResized.connect(lambda _vb: self.fit())
        BarPicker(plot, self.locate, self.describe)

    def draw(self, results, names) -> None:
        rows, y, at = [], [], 0.0
        for i, r in enumerate(results):
            for rung in bandwidth_ladder(r):
                rows.append((i, rung))
                y.append(at)
                at += 1.0
            at += GAP
        self.rows, self.y, self.names = rows, np.array(y), list(names)
        nbytes = np.array([rung.nbytes for _, rung in rows])
        positive = nbytes[nbytes > 0]
        lo = math.floor(math.log10(positive.min())) if positive.size else 0.0
        hi = math.ceil(math.log10(positive.max())) if positive.size else 3.0
        self.floor = lo
        right = np.where(nbytes > 0, np.log10(np.where(nbytes > 0, nbytes, 1.0)), lo)
        brushes = [pg.mkBrush(device_color(i)) for i, _ in rows]
        if changed(self.bars, "data", (right, self.y, [i for i, _ in rows])):
            self.bars.setOpts(x0=np.full(len(rows), lo), y=self.y, width=right - lo, height=0.7, brushes=brushes)
        set_ticks(self.plot.getAxis("left"), [[(float(v), elide(rung.name, 26)) for v, (_, rung) in zip(y, rows)]])
        self.right, self.height = right, max(at - GAP, 1.0)
        set_title(self.plot, "Bandwidth ladder (bytes per step)" if rows
                  else "Bandwidth ladder", [(device_color(i), n) for i, n in enumerate(names)] if rows else ())
        while len(self.labels) < len(rows):
            text = PinnedText(color=(40, 40, 40), anchor=(0, 0.5))
            self.plot.addItem(text, ignoreBounds=True)
            self.labels.append(text)
        for j, text in enumerate(self.labels):
            text.setVisible(j < len(rows))
            if j < len(rows):
                text.setText(rung_label(rows[j][1]))
                text.setPos(float(right[j]), float(self.y[j]))
        self.fit()
        axis = self.plot.getAxis("bottom")
        if changed(self.plot, "empty", not rows):
            axis.setStyle(showValues=bool(rows))
            axis.setLabel("nothing to plot: no system chosen" if not rows else "bytes per step and device (B)")

    def fit(self) -> None:
        """A range wide enough for each bar's label beside it (screen-size text on a log axis)."""
        n = len(self.rows)
        top = fit_right(self.right, [t.box_size()[0] for t in self.labels[:n]], self.plot.vb.width(), self.floor)
        set_range(self.plot, (self.floor, max(math.ceil(top * 4) / 4, self.floor + 1.0)), (-0.6, self.height - 0.4))

    def locate(self, _x: float, y: float):
        if not len(self.y):
            return None
        j = int(np.argmin(np.abs(self.y - y)))
        return j if abs(self.y[j] - y) <= 0.4 else None

    def describe(self, j: int) -> str:
        i, rung = self.rows[j]
        per = " per direction" if rung.tier.startswith("scale") else ""
        bandwidth = si(rung.bandwidth, "B/s") + per if math.isfinite(rung.bandwidth) else f"{DASH} (not stated)"
        energy = energy_label(rung)
        return (f"{self.names[i]}: {rung.name} ({rung.tier})\n{si(rung.nbytes, 'B')} per step and device at "
                f"{bandwidth}: {si(rung.seconds, 's')} at this level's bandwidth alone"
                + (f"\nenergy per step and device: {energy}" if energy else ""))

