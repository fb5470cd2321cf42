"""StaticTexts: one laid-out QStaticText per text, plain text, at most ``limit`` kept."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QFont, QFontMetricsF

from explorer.ui.plot_items.static_texts import StaticTexts


def test_texts_are_laid_out_once_as_plain_text_and_bounded(qapp):
    font = QFont()
    font.setPointSizeF(9)
    texts = StaticTexts(font, limit=2)
    assert texts.line_height == QFontMetricsF(font).height()
    first = texts.get("a<b>c")
    assert texts.get("a<b>c") is first  # laid out once
    assert first.textFormat() == Qt.TextFormat.PlainText and first.text() == "a<b>c"
    assert first.size().width() >= QFontMetricsF(font).horizontalAdvance("a<b>c") - 1  # the markup is text
    texts.get("second")
    texts.get("third")  # over the limit: the cache starts again
    assert texts.get("a<b>c") is not first
    font.setPointSizeF(20)  # the cache keeps its own copy of the font
    assert texts.font.pointSizeF() == 9
