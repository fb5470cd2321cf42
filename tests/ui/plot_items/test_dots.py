"""Dots: the roofline's points, painted from one pixmap of their symbols in one call, in their order."""

from __future__ import annotations

import math

import numpy as np
from PySide6.QtGui import QColor, QImage, QPainter, QTransform

from explorer.ui.plot_items.dots import Dots

RED, BLUE = (255, 0, 0, 255), (0, 0, 255, 255)


def render(dots: Dots, size=(100, 60)) -> QImage:
    """Painted on white, 1 view unit = 1 pixel."""
    image = QImage(*size, QImage.Format.Format_RGB32)
    image.fill(QColor("white"))
    painter = QPainter(image)
    painter.setTransform(QTransform())
    dots.paint(painter, None, None)
    painter.end()
    return image


def test_points_are_drawn_in_order_the_last_on_top_and_nan_skipped(qapp):
    dots = Dots(symbol="s", pen=None)
    # two overlapping squares (red, then blue on top), a NaN point, a small red one on its own
    dots.setData(x=[30, 36, math.nan, 80], y=[30, 30, 30, 30], size=[20, 20, 20, 6],
                 colors=np.array([RED, BLUE, BLUE, RED]))
    assert [style for style in dots._styles] == [(6.0, RED), (20.0, BLUE), (20.0, RED)]  # distinct (size, colour)
    image = render(dots)
    assert image.pixelColor(24, 30).name() == "#ff0000"  # red alone
    assert image.pixelColor(33, 30).name() == "#0000ff"  # where they overlap: blue, drawn last
    assert image.pixelColor(44, 30).name() == "#0000ff"
    assert image.pixelColor(80, 30).name() == "#ff0000" and image.pixelColor(85, 30).name() == "#ffffff"  # 6 px
    dots.setData(x=[36, 30], y=[30, 30], size=20, colors=np.array([BLUE, RED]))  # the other order
    assert render(dots).pixelColor(33, 30).name() == "#ff0000"


def test_no_points_draw_nothing(qapp):
    dots = Dots()
    dots.setData(x=[math.nan], y=[1.0])
    image = render(dots)
    assert {image.pixelColor(x, y).name() for x in range(0, 100, 9) for y in range(0, 60, 9)} == {"#ffffff"}
