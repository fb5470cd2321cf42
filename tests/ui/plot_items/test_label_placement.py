"""Label placement: labels above their lines, moved left past what they hit, else below; pixel boxes of items."""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import QPointF

from explorer.ui.plot_items.label_placement import pixel_rect, place_labels, scatter_rects


def test_place_labels_moves_left_along_the_line_then_below():
    # two lines 10 px apart, labels 100 x 16 px, lines from x=300 to the right edge at 800
    a, b = place_labels([(50, 300, 800, 100, 16, True), (60, 300, 800, 100, 16, False)], 800, 400)
    assert a == (700, 34, 800, 50)  # above its line at the right end
    assert b == (594, 44, 694, 60)  # above its line, moved left past the first label
    # no room to the left (the line starts at 650): the second label goes below its line
    a, b = place_labels([(50, 300, 800, 100, 16, True), (60, 650, 800, 100, 16, False)], 800, 400)
    assert b == (700, 60, 800, 76)
    # an obstacle at the top right (a band name) pushes the first label left
    (a,) = place_labels([(30, 0, 800, 100, 16, True)], 800, 400, obstacles=[(720, 0, 800, 30)])
    assert a == (614, 14, 714, 30)
    # nowhere free: an optional label is left out, a required one moves down past what it hits
    wall = [(0, 0, 800, 45), (0, 47, 800, 70)]
    assert place_labels([(46, 0, 800, 100, 16, False)], 800, 400, obstacles=wall) == [None]
    assert place_labels([(46, 0, 800, 100, 16, True)], 800, 400, obstacles=wall) == [(700, 69, 800, 85)]


class _Text:
    """A text item as ``pixel_rect`` sees one: a position, an anchor and a size in pixels."""

    def __init__(self, x, y, anchor, size):
        self._pos, self.anchor, self._size = QPointF(x, y), anchor, size

    def pos(self):
        return self._pos

    def box_size(self):
        return self._size


def test_pixel_rect_maps_the_anchor_point_into_pixels():
    view = ((0.0, 10.0), (0.0, 4.0))  # 10 x 4 view units on an 800 x 400 px view: 80 px/unit, y upwards
    # anchored at its top-left corner at (5, 3): 400 px right, 100 px down
    assert pixel_rect(_Text(5, 3, (0, 0), (60, 20)), view, (800, 400)) == (400, 100, 460, 120)
    # anchored at its bottom-right corner: the box lies up and left of the point
    assert pixel_rect(_Text(5, 3, (1, 1), (60, 20)), view, (800, 400)) == (340, 80, 400, 100)


class _Points:
    def getData(self):
        return np.array([1.0, 2.0]), np.array([1.0, 0.5])

    def pixel_sizes(self):
        return np.array([10.0, 4.0])


def test_scatter_rects_are_centred_on_the_points_with_their_pixel_size():
    rects = scatter_rects(_Points(), ((0.0, 4.0), (0.0, 2.0)), (400, 200))  # 100 px per unit both ways
    np.testing.assert_allclose(rects, [[95, 95, 105, 105], [198, 148, 202, 152]])
