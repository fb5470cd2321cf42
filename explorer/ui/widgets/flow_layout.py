"""A row of controls that wraps onto further lines when its widget is narrower than the row.

The panels' header rows (device, options, the PNG/SVG/CSV buttons) were ``QHBoxLayout``s: the widest of them set
the analysis dock's minimum width and with it the main window's (1,578 px, more than a 1280 x 800 laptop screen).
:class:`FlowLayout` takes the same calls (``addWidget``, ``addLayout``, ``addStretch``, ``addSpacing``) and
lays the items out left to right, starting a new line where the next one does not fit. A label stays on the
line of the control after it ("Device:" never ends a line with its combo on the next), and a stretch takes the
free width of its line, so the buttons after it stay right-aligned.
"""

from __future__ import annotations

from PySide6.QtCore import QPoint, QRect, QSize, Qt
from PySide6.QtWidgets import QLabel, QLayout, QLayoutItem, QSizePolicy, QSpacerItem, QWidgetItem


class FlowLayout(QLayout):
    """Items left to right in lines as wide as the layout; the height follows the width (height-for-width)."""

    def __init__(self, parent=None, spacing: int = 6, line_spacing: int = 2):
        super().__init__(parent)
        self._items: list[QLayoutItem] = []
        self._stretch: set[int] = set()  # ids of the spacer items that take their line's free width
        self._joined: set[int] = set()  # ids of the items kept on the line of the item before them
        self._line_spacing = line_spacing
        self.setSpacing(spacing)
        if parent is None:
            self.setContentsMargins(0, 0, 0, 0)

    # -- the QHBoxLayout calls the panels make
    def addItem(self, item: QLayoutItem) -> None:
        self._items.append(item)
        self.invalidate()

    def addWidget(self, widget, stretch: int = 0, alignment=None) -> None:
        self.addChildWidget(widget)
        self.addItem(QWidgetItem(widget))

    def insertWidget(self, index: int, widget, stretch: int = 0, alignment=None) -> None:
        self.addChildWidget(widget)
        self._items.insert(max(0, min(index, len(self._items))) if index >= 0 else len(self._items),
                           QWidgetItem(widget))
        self.invalidate()

    def addGroup(self, widgets) -> None:
        """Widgets that stay together on one line (the PNG, SVG and Copy CSV buttons)."""
        for k, widget in enumerate(widgets):
            self.addWidget(widget)
            if k:
                self._joined.add(id(self._items[-1]))

    def addLayout(self, layout: QLayout, stretch: int = 0) -> None:
        self.addChildLayout(layout)
        self.addItem(layout)

    def addStretch(self, stretch: int = 1) -> None:
        spacer = QSpacerItem(0, 0, QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Minimum)
        self._stretch.add(id(spacer))
        self.addItem(spacer)

    def addSpacing(self, size: int) -> None:
        self.addItem(QSpacerItem(size, 0, QSizePolicy.Policy.Fixed, QSizePolicy.Policy.Minimum))

    # -- QLayout
    def count(self) -> int:
        return len(self._items)

    def itemAt(self, index: int):
        return self._items[index] if 0 <= index < len(self._items) else None

    def takeAt(self, index: int):
        if not 0 <= index < len(self._items):
            return None
        item = self._items.pop(index)
        self._stretch.discard(id(item))
        self._joined.discard(id(item))
        self.invalidate()
        return item

    def expandingDirections(self) -> Qt.Orientation:
        return Qt.Orientation.Horizontal if self._stretch else Qt.Orientation(0)

    def hasHeightForWidth(self) -> bool:
        return True

    def heightForWidth(self, width: int) -> int:
        return self._place(QRect(0, 0, width, 0), move=False)

    def sizeHint(self) -> QSize:
        """Everything on one line."""
        groups = self._groups()
        m = self.contentsMargins()
        width = sum(g.hint for g in groups) + self.spacing() * max(0, len(groups) - 1)
        height = max((g.height(g.hint) for g in groups), default=0)
        return QSize(width + m.left() + m.right(), height + m.top() + m.bottom())

    def minimumSize(self) -> QSize:
        """As wide as the widest group (a label with its control), so any narrower width wraps instead."""
        groups = self._groups()
        m = self.contentsMargins()
        width = max((g.minimum for g in groups), default=0)
        height = max((g.height(g.minimum) for g in groups), default=0)
        return QSize(width + m.left() + m.right(), height + m.top() + m.bottom())

    def setGeometry(self, rect: QRect) -> None:
        super().setGeometry(rect)
        self._place(rect, move=True)

    # -- layout
    def _groups(self) -> list[_Group]:
        """The visible items in groups that stay on one line: a label with the control after it."""
        groups: list[_Group] = []
        joining = False
        for item in self._items:
            spacer = item.spacerItem()
            if spacer is None and item.isEmpty():  # a hidden widget
                continue
            stretch = spacer is not None and id(spacer) in self._stretch
            if (joining or id(item) in self._joined) and spacer is None and groups:
                groups[-1].items.append(item)
            else:
                groups.append(_Group([item], stretch, self.spacing()))
            widget = item.widget()
            joining = isinstance(widget, QLabel) and not widget.wordWrap() and not joining
        return groups

    def _place(self, rect: QRect, move: bool) -> int:
        m = self.contentsMargins()
        left, top = rect.x() + m.left(), rect.y() + m.top()
        avail = max(1, rect.width() - m.left() - m.right())
        space = self.spacing()
        lines: list[list[_Group]] = [[]]
        right = [False]  # a line that begins after a stretch keeps right-aligned (the buttons after the stretch)
        used = 0
        previous = None
        for group in self._groups():
            width = min(group.hint, max(group.minimum, avail))
            if lines[-1] and used + space + width > avail:
                lines.append([])
                right.append(previous is not None and previous.stretch)
                used = 0
            used += (space if lines[-1] else 0) + width
            lines[-1].append(group)
            previous = group
        y = top
        for n, (line, align_right) in enumerate(zip(lines, right, strict=True)):
            if not line:
                continue
            widths = [min(g.hint, max(g.minimum, avail)) for g in line]
            free = max(0, avail - sum(widths) - space * (len(line) - 1))
            stretches = [i for i, g in enumerate(line) if g.stretch]
            for k, i in enumerate(stretches):  # the free width goes to the line's stretches
                widths[i] += free // len(stretches) + (1 if k < free % len(stretches) else 0)
            height = max(g.height(w) for g, w in zip(line, widths, strict=True))
            if move:
                x = left + (free if align_right and not stretches else 0)
                for group, width in zip(line, widths, strict=True):
                    group.put(x, y, width, height)
                    x += width + space
            y += height + (self._line_spacing if n < len(lines) - 1 else 0)
        return y - top + m.top() + m.bottom()


class _Group:
    """Items kept on one line, with their preferred and smallest widths."""

    def __init__(self, items: list[QLayoutItem], stretch: bool, spacing: int):
        self.items, self.stretch, self.spacing = items, stretch, spacing

    @property
    def hint(self) -> int:
        return 0 if self.stretch else self._sum(lambda i: i.sizeHint().width())

    @property
    def minimum(self) -> int:
        return 0 if self.stretch else self._sum(lambda i: i.minimumSize().width())

    def _sum(self, width) -> int:
        return sum(max(width(i), i.minimumSize().width()) for i in self.items) + self.spacing * (len(self.items) - 1)

    def _widths(self, total: int) -> list[int]:
        """The items' widths in ``total``: each its preferred width, the last (the control) given or giving
        up the difference down to its minimum, then the others down to theirs."""
        widths = [max(i.sizeHint().width(), i.minimumSize().width()) for i in self.items]
        excess = sum(widths) + self.spacing * (len(widths) - 1) - total
        for k in reversed(range(len(widths))):
            if excess <= 0:
                break
            cut = min(excess, widths[k] - self.items[k].minimumSize().width())
            widths[k] -= cut
            excess -= cut
        if excess < 0 and not self.stretch:  # wider than preferred: the control takes it, up to its maximum
            last = self.items[-1]
            widths[-1] = min(widths[-1] - excess, max(widths[-1], last.maximumSize().width()))
        return widths

    def height(self, total: int) -> int:
        heights = []
        for item, width in zip(self.items, self._widths(total), strict=True):
            heights.append(item.heightForWidth(width) if item.hasHeightForWidth() else item.sizeHint().height())
        return max(heights, default=0)

    def put(self, x: int, y: int, total: int, line_height: int) -> None:
        for item, width in zip(self.items, self._widths(total), strict=True):
            hint = item.heightForWidth(width) if item.hasHeightForWidth() else item.sizeHint().height()
            maximum = item.maximumSize().height()
            height = min(line_height, maximum) if item.expandingDirections() & Qt.Orientation.Vertical else hint
            height = max(min(height, line_height), 0)
            item.setGeometry(QRect(QPoint(x, y + (line_height - height) // 2), QSize(width, height)))
            x += width + self.spacing
