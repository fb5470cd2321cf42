"""The cyclic garbage collector's young-generation passes moved out of the edit path (issue 22).

Python starts a pass over its young generations every 700 net allocations of container objects. An edit of a
10,000-layer model leaves two 10,000-item tuples among them (the model's layers and the patched work table's
statuses; a few hundred small objects besides), and every young pass walks them: 1-4 ms of CPU a pass measured in
the app, and a pass of the middle generation (every tenth) walks those of the last ~25 edits together, all of it
inside whichever edit's allocation crossed the threshold.

:func:`collect_when_idle` (``run_app`` calls it after the first paint, with ``gc.freeze``) raises the young
generation's threshold to :data:`RAISED` (an edit allocates ~300 net, so a stream of ~60 edits with no pause
before Python collects by itself), and runs the passes Python would have run :data:`IDLE_MS` after the
workspace last changed, when no edit waits for them: the young generations when their count is past Python's
threshold, and a full collection every tenth time, as Python's own schedule does.
"""

from __future__ import annotations

import gc

from PySide6.QtCore import QObject, QTimer

from .binding import bind

IDLE_MS = 300  # ms after the workspace's last change
RAISED = 20_000  # net container allocations before Python starts a young pass by itself


#: Python's thresholds before the first collector raised them, and the collectors alive (by id): the last one to
#: go puts the thresholds back
_saved: tuple[int, int, int] = gc.get_threshold()
_alive: set[int] = set()


def _release(key: int) -> None:
    if key in _alive:
        _alive.discard(key)
        if not _alive:
            gc.set_threshold(*_saved)


class IdleCollector(QObject):
    """Collects the young generations once the workspace has not changed for ``IDLE_MS``; while one lives, Python's
    own young-generation threshold is ``RAISED`` (restored by :meth:`uninstall` or when the collector is destroyed,
    once no other is left). ``passes``: the generations it collected."""

    def __init__(self, workspace, parent: QObject | None = None):
        super().__init__(parent)
        global _saved
        if not _alive:
            _saved = gc.get_threshold()
            gc.set_threshold(max(RAISED, _saved[0]), *_saved[1:])
        key = id(self)
        _alive.add(key)
        self._key = key
        self.passes: list[int] = []
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(IDLE_MS)
        self._timer.timeout.connect(self.collect)
        bind(self, workspace.changed, self._on_changed)
        self.destroyed.connect(lambda *_: _release(key))

    @property
    def saved(self) -> tuple[int, int, int]:
        """Python's own thresholds (what it would collect at)."""
        return _saved

    def _on_changed(self, _changes) -> None:
        self._timer.start()  # again: a stream of edits collects after the last one

    def collect(self) -> None:
        """What Python's schedule would have collected by now: the young generations once their count passed its
        threshold, every generation once ten such passes have run since the last full one."""
        young, _middle, passes = gc.get_count()
        if not gc.isenabled() or young <= _saved[0]:
            return
        generation = 2 if passes >= _saved[2] else 1
        gc.collect(generation)
        self.passes.append(generation)

    def uninstall(self) -> None:
        """No more idle passes; Python's thresholds as they were once no other collector is left."""
        self._timer.stop()
        _release(self._key)


def collect_when_idle(window) -> IdleCollector:
    """Install the idle collector for ``window``'s workspace (kept on the window as ``idle_collector``)."""
    window.idle_collector = IdleCollector(window.workspace, window)
    return window.idle_collector
