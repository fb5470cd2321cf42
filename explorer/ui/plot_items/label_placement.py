"""Labels laid out in pixels so that they overlap nothing: each sits above its (horizontal) line at the right
end, moves left along the line past whatever it hits, else goes below the line; and the pixel boxes of text
items and points that labels must avoid."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

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
