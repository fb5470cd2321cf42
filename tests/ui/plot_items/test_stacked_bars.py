"""StackedBars: the energy panel's stacked bars in one item, drawn from a numpy array of rectangles."""

from __future__ import annotations

import math

import numpy as np
from PySide6.QtCore import QRectF
from PySide6.QtGui import QColor, QImage, QPainter, QTransform

from explorer.ui.plot_items.stacked_bars import StackedBars

RED, GREEN, BLUE = "#ff0000", "#00ff00", "#0000ff"


def render(item: StackedBars, scale: float = 10.0, size=(120, 60)) -> QImage:
    """The item painted on white, ``scale`` pixels per unit, y = 0 at pixel row 20."""
    image = QImage(*size, QImage.Format.Format_RGB32)
    image.fill(QColor("white"))
    painter = QPainter(image)
    painter.setTransform(QTransform.fromScale(scale, scale) * QTransform.fromTranslate(0, 20))
    item.paint(painter)
    painter.end()
    return image


def color_at(image: QImage, x: int, y: int) -> str:
    return image.pixelColor(x, y).name()


def test_parts_stack_left_to_right_and_nan_draws_nothing(qapp):
    bars = StackedBars(height=0.8)
    bars.set(np.array([[2.0, 3.0, 1.0], [4.0, math.nan, 2.0]]), [RED, GREEN, BLUE])
    assert np.array_equal(bars.widths, [[2, 3, 1], [4, 0, 2]])
    assert np.array_equal(bars.lefts, [[0, 2, 5], [0, 4, 4]])
    assert bars.boundingRect() == QRectF(0, -0.4, 6, 1.8)  # to the longest bar's end; bar 1 ends at y = 1.4
    image = render(bars)
    # bar 0 at y = 0 (pixel row 20): red 0-2, green 2-5, blue 5-6 (x10 pixels); nothing past 6
    assert [color_at(image, x, 20) for x in (5, 25, 45, 55, 65)] == [RED, GREEN, GREEN, BLUE, "#ffffff"]
    # bar 1 at y = 1 (pixel row 30): red 0-4, its NaN part empty, blue 4-6
    assert [color_at(image, x, 30) for x in (5, 35, 45, 55, 65)] == [RED, RED, BLUE, BLUE, "#ffffff"]
    # between the bars (y = 0.5) and above the first: white
    assert color_at(image, 5, 25) == color_at(image, 5, 15) == "#ffffff"


def test_new_data_replaces_the_old_and_empty_draws_nothing(qapp):
    bars = StackedBars()
    bars.set(np.ones((3, 2)), [RED, GREEN])
    bars.set(np.array([[1.0]]), [BLUE])
    image = render(bars)
    assert color_at(image, 5, 20) == BLUE
    assert color_at(image, 15, 20) == color_at(image, 5, 30) == "#ffffff"  # no leftovers of the 3 x 2 bars
    bars.set(np.zeros((0, 2)), [RED, GREEN])
    assert bars.boundingRect().isNull()
    image = render(bars)
    assert {color_at(image, x, y) for x in range(0, 120, 7) for y in range(0, 60, 7)} == {"#ffffff"}
