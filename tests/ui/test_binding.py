"""bind: a psygnal signal connected to a slot until the Qt object that owns the slot is destroyed."""

from __future__ import annotations

from psygnal import Signal
from PySide6.QtCore import QEvent
from PySide6.QtWidgets import QApplication, QWidget

from explorer.ui.binding import bind, bind_many


class Source:
    changed = Signal(object)
    focused = Signal(object)


class Listener(QWidget):
    def __init__(self, source: Source):
        super().__init__()
        self.got: list = []
        bind_many(self, [(source.changed, self.on_changed), (source.focused, self.on_changed)])

    def on_changed(self, value) -> None:
        self.got.append(value)


def _destroy(widget: QWidget) -> None:
    widget.deleteLater()
    QApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)  # destroyed now


def test_connected_until_the_owner_is_destroyed(qapp):
    source = Source()
    listener = Listener(source)
    source.changed.emit(1)
    source.focused.emit(2)
    assert listener.got == [1, 2]
    assert len(source.changed) == 1 and len(source.focused) == 1
    got = listener.got
    _destroy(listener)
    assert len(source.changed) == 0 and len(source.focused) == 0  # no connection left to the destroyed widget
    source.changed.emit(3)  # no call into a deleted object
    source.focused.emit(4)
    assert got == [1, 2]


def test_a_signal_disconnected_before_the_owner_is_destroyed_is_fine(qapp):
    source = Source()
    owner = QWidget()
    calls = []
    bind(owner, source.changed, calls.append)
    source.changed.disconnect(calls.append)
    source.changed.connect(print)  # someone else's connection stays
    _destroy(owner)
    assert len(source.changed) == 1
    source.changed.disconnect(print)
