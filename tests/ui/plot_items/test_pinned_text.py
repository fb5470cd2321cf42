"""PinnedText: plain text at screen size with its anchor (a fraction of its box, margin included) at its
position, as pg.TextItem places its text."""

from __future__ import annotations

import pytest
from PySide6.QtGui import QColor

from explorer.ui.plot_items.pinned_text import PinnedText


@pytest.mark.parametrize("anchor", [(0.0, 0.0), (1.0, 1.0), (0.5, 0.0), (1.05, -0.1)])
def test_the_anchor_of_the_box_sits_at_the_position(qapp, anchor):
    text = PinnedText(anchor=anchor, margin=4)
    text.setText("ridge 153 FLOP/B")
    w, h = text.box_size()
    inner = text.boundingRect()
    assert (w, h) == (inner.width() + 8, inner.height() + 8)
    box = text.transform().mapRect(inner).adjusted(-4, -4, 4, 4)  # the text and its margin, item coordinates
    assert box.left() == pytest.approx(-anchor[0] * w) and box.top() == pytest.approx(-anchor[1] * h)
    assert text.toPlainText() == "ridge 153 FLOP/B"


def test_new_text_and_colour(qapp):
    text = PinnedText(color="#000000", anchor=(1.0, 0.0), margin=1)
    text.setText("a")
    narrow = text.box_size()[0]
    text.setText("a much longer text", color="#d62728")
    assert text.brush().color() == QColor("#d62728")
    assert text.box_size()[0] > narrow
    assert text.transform().dx() == pytest.approx(1 - text.box_size()[0])  # re-anchored to the new width
