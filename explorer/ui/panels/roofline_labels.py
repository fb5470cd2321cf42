"""The ceiling labels of the roofline, laid out in pixels so that they overlap nothing.

Each label names a ceiling of the device in focus ("fp16 312 TFLOP/s") and sits just above its line, at the
right end. Ceilings close in value (bf16 and tf32 on a short plot) would print on top of each other, and the
highest would run into the regime band names along the top edge, the legend or the operator points; so the
labels are placed highest ceiling first, and a label that would overlap one already placed (or an obstacle)
moves left along its own line, past what it hit, else goes below its line. A label of another precision that
finds no free spot is left out (the plot is too small for it); the label of the roof at the analysis precision
is always shown. The layout is redone when the view is resized or its range changes (few labels: cheap).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import pyqtgraph as pg

from ..plot_items.label_placement import Rect, pixel_rect, place_labels
from ..plot_items.pinned_text import PinnedText
from .plotting import changed


class CeilingLabels:
    """Text items for ``(text, x_start, x_end, flops, colour, required)`` entries (linear units) on a log-log
    plot. ``obstacles(view_range, size)`` gives the pixel boxes the labels must not cover."""

    def __init__(self, plot: pg.PlotItem, obstacles: Callable[..., Sequence[Rect]] = lambda *_: ()):
        self.plot = plot
        self.obstacles = obstacles
        self.items: list[PinnedText] = []
        self.entries: list[tuple[str, float, float, float, pg.QtGui.QColor, bool]] = []
        plot.vb.sigResized.connect(lambda *_: self.layout())
        plot.vb.sigRangeChanged.connect(lambda *_: self.layout())

    def set_entries(self, entries) -> None:
        entries = sorted(entries, key=lambda e: -e[3])  # highest ceiling first
        while len(self.items) < len(entries):
            label = PinnedText(anchor=(0, 0), margin=1)  # tight boxes: close ceilings need every pixel
            self.plot.addItem(label, ignoreBounds=True)
            self.items.append(label)
        for i, label in enumerate(self.items):  # typeset again only the labels whose text or colour changed
            if i < len(entries):
                text, _x0, _x1, _y, colour, _required = entries[i]
                if changed(label, "text", (text, colour.rgba())):
                    label.setText(text, color=colour)
            else:
                label.setVisible(False)
        self.entries = entries
        self.layout()

    def layout(self) -> None:
        vb = self.plot.vb
        view = vb.viewRange()
        (x_lo, x_hi), (y_lo, y_hi) = view
        width, height = vb.width(), vb.height()
        if not self.entries or width <= 0 or height <= 0 or x_hi <= x_lo or y_hi <= y_lo:
            return
        items = self.items[: len(self.entries)]
        wanted = []
        for item, (_t, x_start, x_end, flops, _c, required) in zip(items, self.entries):
            w, h = item.box_size()
            wanted.append(((y_hi - math.log10(flops)) / (y_hi - y_lo) * height,
                           (math.log10(x_start) - x_lo) / (x_hi - x_lo) * width,
                           (math.log10(x_end) - x_lo) / (x_hi - x_lo) * width, w, h, required))
        boxes = place_labels(wanted, width, height, self.obstacles(view, (width, height)))
        for item, box in zip(items, boxes):
            item.setVisible(box is not None)
            if box is None:
                continue
            pos = (x_lo + box[0] / width * (x_hi - x_lo), y_hi - box[1] / height * (y_hi - y_lo))
            if changed(item, "pos", pos):
                item.setPos(*pos)

    def boxes(self) -> list[tuple[str, Rect]]:
        """(text, pixel box) of each label as laid out, for tests."""
        vb = self.plot.vb
        size = (vb.width(), vb.height())
        return [(item.toPlainText(), pixel_rect(item, vb.viewRange(), size))
                for item in self.items[: len(self.entries)] if item.isVisible()]


