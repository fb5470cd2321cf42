"""Run start-up work once the main window has been painted (issue 22: cold start).

A zero-interval timer started with the window's ``show()`` may fire before Qt has painted anything: what is
deferred "after the first paint" here waits for the first Paint event of one of the window's widgets, then for
the end of that paint pass (a zero-interval timer started from it) and one more turn of the event loop. If nothing is painted within ``fallback_ms``
(a window minimized at start), the work runs anyway.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QEvent, QObject, QTimer
from PySide6.QtWidgets import QApplication, QWidget


class _FirstPaint(QObject):
    def __init__(self, window: QWidget, callback: Callable[[], None], fallback_ms: int):
        super().__init__(window)
        self.window, self.callback, self.done = window, callback, False
        QApplication.instance().installEventFilter(self)
        QTimer.singleShot(fallback_ms, self, self._run)

    def eventFilter(self, obj, event) -> bool:
        if (not self.done and event.type() == QEvent.Type.Paint and isinstance(obj, QWidget)
                and obj.window() is self.window):
            self.done = True
            QApplication.instance().removeEventFilter(self)
            QTimer.singleShot(0, self, self._next_turn)  # after the whole paint pass
        return False

    def _next_turn(self) -> None:
        # one more turn of the event loop: what else was queued at that paint (the cold-start benchmark's probe,
        # bench/bench_startup.py, which times the end of the paint pass the same way) runs before the work
        QTimer.singleShot(0, self, self._run)

    def _run(self) -> None:
        if self.callback is None:
            return
        callback, self.callback, self.done = self.callback, None, True
        QApplication.instance().removeEventFilter(self)
        callback()


def after_first_paint(window: QWidget, callback: Callable[[], None], fallback_ms: int = 2000) -> None:
    """Call ``callback()`` once, at the end of the first paint pass of ``window`` (or after ``fallback_ms``)."""
    _FirstPaint(window, callback, fallback_ms)
