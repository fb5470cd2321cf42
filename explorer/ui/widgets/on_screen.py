"""Run a widget's update once per burst of changes, and only while the widget can be seen.

The analysis panels and the planner share one tab area of the main window: a view behind another tab has
nothing to show, so it keeps the request and updates when it comes on screen. A widget hidden with ``hide()``
(or in a hidden tab widget page) gets a Show event; a dock widget tabbed behind another stays "visible" to Qt
with nothing of it on screen: the main window connects such a dock's ``visibilityChanged`` to the ``wake`` of the
widget's ``updates`` (an :class:`OnScreenUpdate`).
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QEvent, QObject, QTimer
from PySide6.QtWidgets import QWidget


def on_screen(widget: QWidget) -> bool:
    """True when some part of ``widget`` can be seen (not hidden, not behind another dock tab)."""
    return widget.isVisible() and not widget.visibleRegion().isEmpty()


class OnScreenUpdate(QObject):
    """Calls ``update`` at the next turn of the event loop after any number of :meth:`request` calls, or, if
    ``widget`` is off screen then, as soon as it is shown (or :meth:`wake` is called)."""

    def __init__(self, widget: QWidget, update: Callable[[], None]):
        super().__init__(widget)
        self.widget, self.update = widget, update
        self.stale = False
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(0)
        self._timer.timeout.connect(self._run)
        widget.installEventFilter(self)

    @property
    def pending(self) -> bool:
        """An update will run at the next turn of the event loop."""
        return self._timer.isActive()

    def request(self) -> None:
        self.stale = True
        if on_screen(self.widget):
            self._timer.start()

    def wake(self, visible: bool = True) -> None:
        """The widget may have come on screen (``visible``, as a dock's ``visibilityChanged`` says): run a kept
        request."""
        if visible and self.stale:
            self._timer.start()

    def cancel(self) -> None:
        """The caller updated by itself: nothing is left to do."""
        self.stale = False
        self._timer.stop()

    def eventFilter(self, obj, event) -> bool:
        if event.type() == QEvent.Type.Show:
            self.wake()
        return False

    def _run(self) -> None:
        self.stale = False
        self.update()
