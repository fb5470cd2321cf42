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

import numpy as np
import pyqtgraph as pg

from .plotting import PinnedText, changed

GAP_PX = 6.0  # between labels side by side
SLACK_PX = 2.0  # text boxes carry a margin: touching by this much is not an overlap
Rect = tuple[float, float, float, float]  # left, top, right, bottom in pixels (y downwards)


def _hit(box: Rect, others: np.ndarray) -> Rect | None:
    """The first of ``others`` (an n x 4 array of boxes) that ``box`` overlaps, or None."""
    left, top, right, bottom = box
    overlap = np.flatnonzero((left < others[:, 2] - SLACK_PX) & (others[:, 0] < right - SLACK_PX)
                             & (top < others[:, 3] - SLACK_PX) & (others[:, 1] < bottom - SLACK_PX))
    return tuple(others[overlap[0]].tolist()) if len(overlap) else None


def _boxes(rects) -> np.ndarray:
    return np.asarray(rects, dtype=float).reshape(-1, 4)


def place_labels(labels: Sequence[tuple[float, float, float, float, float, bool]], width: float, height: float,
                 obstacles: Sequence[Rect] | np.ndarray = ()) -> list[Rect | None]:
    """Boxes for labels given as ``(line_y, line_start_x, line_end_x, label_width, label_height, required)`` in
    pixels (y downwards, in the order to place them): above the line at its right end, moved left past anything
    it overlaps but never beyond the line's start; below the line (again from the right end) when no spot above
    fits. A label with no free spot is None, or, if ``required``, at the right end moved down past what it
    overlaps."""
    placed: list[Rect | None] = []
    obstacles = _boxes(obstacles)
    for line_y, start_x, end_x, w, h, required in labels:
        others = np.concatenate([_boxes([b for b in placed if b is not None]), obstacles])
        box = None
        for top in (line_y - h, line_y):  # above the line, else below it
            if top < 0 or top + h > height:
                continue
            right = min(end_x, width)
            while right - w >= max(start_x, 0.0):
                other = _hit((right - w, top, right, top + h), others)
                if other is None:
                    box = (right - w, top, right, top + h)
                    break
                right = other[0] - GAP_PX
            if box is not None:
                break
        if box is None and required:
            box = _moved_down(line_y, min(end_x, width), w, h, height, others)
        placed.append(box)
    return placed


def _moved_down(line_y: float, right: float, w: float, h: float, height: float, others: np.ndarray) -> Rect:
    """At the right end, from just below the line downwards past whatever it overlaps (above the line at the
    right end when even that runs out of the plot)."""
    top = max(line_y, 0.0)
    while top + h <= height:
        other = _hit((right - w, top, right, top + h), others)
        if other is None:
            return (right - w, top, right, top + h)
        top = other[3] - SLACK_PX + 1.0
    top = min(max(line_y - h, 0.0), max(height - h, 0.0))
    return (right - w, top, right, top + h)


def pixel_rect(item, view_range, size) -> Rect:
    """Where a text item anchored in view coordinates (a ``PinnedText`` or a ``LegendBox``: anything with
    ``pos``, ``anchor`` and ``box_size``) sits on a view of ``size`` (pixels)."""
    (x_lo, x_hi), (y_lo, y_hi) = view_range
    width, height = size
    w, h = item.box_size()
    x = (item.pos().x() - x_lo) / (x_hi - x_lo) * width
    y = (y_hi - item.pos().y()) / (y_hi - y_lo) * height
    left, top = x - item.anchor[0] * w, y - item.anchor[1] * h
    return (left, top, left + w, top + h)


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


def scatter_rects(item, view_range, size) -> np.ndarray:
    """Pixel boxes of the points of a :class:`~.dots.Dots` (log10 view coordinates, sizes in pixels), as an
    n x 4 array."""
    (x_lo, x_hi), (y_lo, y_hi) = view_range
    width, height = size
    x, y = item.getData()
    half = item.pixel_sizes() / 2
    px = (x - x_lo) / (x_hi - x_lo) * width
    py = (y_hi - y) / (y_hi - y_lo) * height
    return np.column_stack([px - half, py - half, px + half, py + half]).reshape(-1, 4)
