"""The sortable cost table of the cost panel: one row per device, "—" with the reason for unknowns.

Cells are updated in place (rows are added or removed only when the devices change, so the user's sort order
survives an edit); numbers sort numerically with unknowns last. The price column is editable: the text entered
is reported through :attr:`CostTable.price_entered` (device id, text) for the panel to parse and apply.
"""

from __future__ import annotations

import math

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QAbstractItemView, QHeaderView, QStyle, QTableWidget, QTableWidgetItem

from explorer.core.money import parse_usd

from .plotting import DASH, changed

ID_ROLE = Qt.ItemDataRole.UserRole + 1


def columns(unit: str, years: float) -> list[tuple[str, str, float]]:
    """(header, CostResult field, scale from SI to the displayed unit) of each column."""
    return [
        ("Device", "names", 1.0),
        ("Price\n(USD)", "price", 1.0),
        ("Peak\n(TFLOP/s)", "peak", 1e-12),
        ("USD per\npeak TFLOP/s", "price_per_peak", 1e12),
        ("Sustained\n(TFLOP/s)", "achieved", 1e-12),
        ("USD per\nsustained TFLOP/s", "price_per_sustained", 1e12),
        ("USD per\nGB/s", "price_per_bandwidth", 1e9),
        ("TDP\n(W)", "tdp", 1.0),
        (f"Electricity\n{years:g} y (USD)", "energy_cost", 1.0),
        (f"TCO\n{years:g} y (USD)", "tco", 1.0),
        (f"USD per 1M\n{unit}s (TCO)", "cost_per_million", 1.0),
        (f"USD per 1M\n{unit}s (cloud)", "cloud_cost_per_million", 1.0),
    ]


def money(x: float) -> str:
    if not math.isfinite(x):
        return DASH
    return f"${x:,.0f}" if abs(x) >= 100 else f"${x:,.2f}" if abs(x) >= 0.01 else f"${x:.3g}"


def parse_price(text: str) -> float | None:
    """Read a price: "15000", "$15,000", "30k USD", "1.2M USD" (explorer.core.money) -> USD; empty or "—" -> None (no price).

    Raises UnitError naming 'price'."""
    text = text.replace("*", "").strip()
    if text in ("", DASH):
        return None
    return parse_usd(text, "price", bare=True)


class _NumberItem(QTableWidgetItem):
    """Sorts by the number in UserRole; unknowns ("—") sort last."""

    def __lt__(self, other):
        a, b = self.data(Qt.ItemDataRole.UserRole), other.data(Qt.ItemDataRole.UserRole)
        if isinstance(a, float) and isinstance(b, float):
            return (math.inf if math.isnan(a) else a) < (math.inf if math.isnan(b) else b)
        return str(a).lower() < str(b).lower()


def _same(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    return a == b


class CostTable(QTableWidget):
    price_entered = Signal(str, str)  # device id, the text entered in its price cell

    def __init__(self, parent=None):
        super().__init__(0, 0, parent)
        self.verticalHeader().setVisible(False)
        self.horizontalHeader().setSortIndicator(
            -1, Qt.SortOrder.AscendingOrder
        )  # catalog order until clicked
        self.setSortingEnabled(True)
        self.setEditTriggers(
            QAbstractItemView.EditTrigger.DoubleClicked | QAbstractItemView.EditTrigger.EditKeyPressed
        )
        self.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        self.itemChanged.connect(self._edited)
        self._unsourced: set[str] = set()

    def fill(self, c, unsourced: set[str]) -> None:
        """Show ``c`` (a CostResult); ``unsourced`` are the devices whose price has no cited source (marked
        *)."""
        self._unsourced = unsourced
        cols = columns(c.unit, c.years)
        self.blockSignals(True)
        # Sorting is off while rows change: with a sort column each changed cell would move its row mid-update,
        # and columns sized with sorting on reserve room for a sort arrow in every header. Switching it back
        # on repaints the whole table, so values that change in place (same devices, no sort column) leave it
        # on.
        ids = [self.item(r, 0).data(ID_ROLE) if self.item(r, 0) else None for r in range(self.rowCount())]
        sorting = self.horizontalHeader().sortIndicatorSection() >= 0 or ids != list(c.ids)
        if sorting:
            self.setSortingEnabled(False)
        if changed(self, "headers", [h for h, _, _ in cols]):
            if self.columnCount() != len(cols):
                self.setRowCount(0)
                self.setColumnCount(len(cols))
            self.setHorizontalHeaderLabels([h for h, _, _ in cols])
            ids = [self.item(r, 0).data(ID_ROLE) if self.item(r, 0) else None for r in range(self.rowCount())]
        for r in reversed(range(len(ids))):  # rows of devices no longer selected
            if ids[r] not in c.ids:
                self.removeRow(r)
                del ids[r]
        first_fill, kept = not ids, len(ids)
        narrow = set()  # columns a changed cell no longer fits ("$30,000 *" in a column sized for "—")
        for device_id in [i for i in c.ids if i not in ids]:  # new devices: new rows at the end
            r = self.rowCount()
            self.insertRow(r)
            for j, col in enumerate(cols):
                item = self._cell(c, c.ids.index(device_id), col, None)
                self.setItem(r, j, item)
                if self._text_width(item.text()) > self.columnWidth(j):
                    narrow.add(j)
            ids.append(device_id)
        for r in range(kept):
            i = c.ids.index(ids[r])
            for j, col in enumerate(cols):
                item = self.item(r, j)
                before = item.text()
                self._cell(c, i, col, item)
                if item.text() != before and self._text_width(item.text()) > self.columnWidth(j):
                    narrow.add(j)
        if first_fill:
            self.resizeColumnsToContents()
        else:
            for j in sorted(narrow):
                self.resizeColumnToContents(j)
        if sorting:
            self.setSortingEnabled(True)
        self.blockSignals(False)

    def _text_width(self, text: str) -> int:
        """The width a cell needs for ``text``: the text and the cell's margins."""
        margin = 2 * (self.style().pixelMetric(QStyle.PixelMetric.PM_FocusFrameHMargin, None, self) + 1) + 6
        return self.fontMetrics().horizontalAdvance(text) + margin

    def _cell(
        self, c, i: int, col: tuple[str, str, float], item: QTableWidgetItem | None
    ) -> QTableWidgetItem:
        """Create or update one cell (only what changed is set: every setter notifies the view; what a cell shows
        is kept on the item, cheaper to compare than asking Qt for its text, value and tooltip)."""
        header, field, scale = col
        fresh = item is None
        item = item or _NumberItem()
        if field == "names":
            text, value, tip = c.names[i], c.names[i], c.missing[i] or "all figures known"
        else:
            value = float(getattr(c, field)[i]) * scale
            text = money(value) if "USD" in header else (f"{value:,.4g}" if math.isfinite(value) else DASH)
            tip = c.reasons[field][i] if field in c.reasons else ""
            if field == "price":
                reason = "" if math.isfinite(value) else "no list price in the catalog"
                if c.ids[i] in self._unsourced:
                    text += " *"
                    reason = "entered by hand, not from a cited source (a what-if)"
                tip = (reason + "; " if reason else "") + "double-click to enter a price (a what-if)"
        shown = None if fresh else item.__dict__.get("shown")
        if shown is None or item.text() != text:  # the text is asked: typing in a price cell changes it
            item.setText(text)
        if shown is None or not _same(shown[1], value):
            item.setData(Qt.ItemDataRole.UserRole, value)
        if shown is None or shown[2] != tip:
            item.setToolTip(tip)
        item.shown = (text, value, tip)
        if fresh:
            item.setData(ID_ROLE, c.ids[i])
            if field != "names":
                item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
            if field != "price":
                item.setFlags(item.flags() & ~Qt.ItemFlag.ItemIsEditable)
        return item

    def _edited(self, item: QTableWidgetItem) -> None:
        device_id = item.data(ID_ROLE)
        if device_id is not None:
            self.price_entered.emit(device_id, item.text())
