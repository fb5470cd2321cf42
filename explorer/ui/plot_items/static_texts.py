"""Texts laid out once and drawn many times: a QStaticText per text, for one font.

Plain text (a name like "a<b>c" is text, not markup: QStaticText would otherwise guess rich text), with Qt's
glyph caching; at most ``limit`` texts are kept (names come and go with the model and the devices).
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QFont, QFontMetricsF, QStaticText, QTransform


class StaticTexts:
    def __init__(self, font: QFont, limit: int = 512):
        self.font = QFont(font)
        self.line_height = QFontMetricsF(self.font).height()  # drawText's, unrounded (QStaticText's is rounded up)
        self.limit = limit
        self._texts: dict[str, QStaticText] = {}

    def get(self, text: str, transform: QTransform | None = None) -> QStaticText:
        """``text`` laid out in this font (for ``transform``, the painter's, if it scales or rotates)."""
        static = self._texts.get(text)
        if static is None:
            if len(self._texts) >= self.limit:
                self._texts.clear()
            static = self._texts[text] = QStaticText(text)
            static.setTextFormat(Qt.TextFormat.PlainText)
            static.setPerformanceHint(QStaticText.PerformanceHint.AggressiveCaching)
            static.prepare(transform if transform is not None else QTransform(), self.font)
        return static
