"""A legend drawn from rows of coloured runs of text, in a framed box pinned to a point of a plot.

The roofline's legend names every device with its ridge, which moves with each precision change. As an HTML
``pg.TextItem`` it parsed and laid out a text document on every such edit (0.4 ms); here each run of text is a
QStaticText, laid out once per text and font, and a row is the runs side by side.
"""

from __future__ import annotations

from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QColor, QFont, QPen
from PySide6.QtWidgets import QGraphicsItem

from .static_texts import StaticTexts

Run = tuple[str, QColor, bool]  # text, colour, bold


def _merged(row) -> tuple[Run, ...]:
    """The row with neighbouring runs of the same colour and weight joined (one text each, also in SVG)."""
    runs: list[Run] = []
    for text, color, bold in row:
        color, bold = QColor(color), bool(bold)
        if runs and runs[-1][1] == color and runs[-1][2] == bold:
            runs[-1] = (runs[-1][0] + text, color, bold)
        else:
            runs.append((text, color, bold))
    return tuple(runs)


class LegendBox(QGraphicsItem):
    """Rows of ``(text, colour, bold)`` runs at screen size (the view's zoom does not scale it), with its
    ``anchor`` (fractions of its width and height, as ``pg.TextItem``'s) at its position; framed unless
    ``fill`` and ``border`` are None."""

    def __init__(self, anchor=(1.0, 1.0), point_size: float = 8.0, fill=QColor(255, 255, 255),
                 border=QColor(190, 190, 190), pad: float = 4.0):
        super().__init__()
        self.anchor = anchor
        self.pad = pad  # pixels between the frame and the text
        self.fill = QColor(fill) if fill is not None else None
        self.border = QPen(QColor(border)) if border is not None else None
        self.fonts = {False: QFont(), True: QFont()}
        for bold, font in self.fonts.items():
            font.setPointSizeF(point_size)
            font.setBold(bold)
        self.texts = {bold: StaticTexts(font, limit=256) for bold, font in self.fonts.items()}
        self.line_height = self.texts[False].line_height
        self.rows: tuple[tuple[Run, ...], ...] = ()
        self._widths: list[list[float]] = []
        self._box = QRectF()
        self.setFlag(QGraphicsItem.GraphicsItemFlag.ItemIgnoresTransformations)
        self.setCacheMode(QGraphicsItem.CacheMode.DeviceCoordinateCache)

    def set_rows(self, rows) -> None:
        rows = tuple(_merged(row) for row in rows)
        if rows == self.rows:
            return
        self.rows = rows
        self._widths = [[self.texts[bold].get(text).size().width() for text, _c, bold in row] for row in rows]
        width = max((sum(w) for w in self._widths), default=0.0) + 2 * self.pad
        height = len(rows) * self.line_height + 2 * self.pad
        self.prepareGeometryChange()
        self._box = QRectF(-self.anchor[0] * width, -self.anchor[1] * height, width, height) if rows else QRectF()
        self.update()

    def box_size(self) -> tuple[float, float]:
        """Width and height in pixels, frame included."""
        return self._box.width(), self._box.height()

    def toPlainText(self) -> str:
        return "\n".join("".join(text for text, _c, _b in row) for row in self.rows)

    def boundingRect(self) -> QRectF:
        return QRectF(self._box)

    def paint(self, painter, *_args) -> None:
        if not self.rows:
            return
        box = self._box
        if self.fill is not None or self.border is not None:
            painter.setPen(self.border if self.border is not None else Qt.PenStyle.NoPen)
            painter.setBrush(self.fill if self.fill is not None else Qt.BrushStyle.NoBrush)
            painter.drawRect(box.adjusted(0.5, 0.5, -0.5, -0.5))
        y = box.top() + self.pad
        for row, widths in zip(self.rows, self._widths):
            x = box.left() + self.pad
            for (text, color, bold), width in zip(row, widths):
                painter.setFont(self.fonts[bold])
                painter.setPen(color)
                painter.drawStaticText(QPointF(x, y), self.texts[bold].get(text))
                x += width
            y += self.line_height
