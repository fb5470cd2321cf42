"""Psygnal signals bound to the lifetime of a Qt object.

The workspace (Qt-free) emits psygnal signals; a widget that listens must stop listening when Qt destroys it,
or the next emit calls into a deleted C++ object. ``bind`` connects now and disconnects when ``owner`` is
destroyed, whatever happened in between (a signal already disconnected is fine).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable

from PySide6.QtCore import QObject


def bind(owner: QObject, signal, slot: Callable) -> None:
    """Connect ``slot`` to the psygnal ``signal`` until ``owner`` is destroyed."""
    signal.connect(slot)
    owner.destroyed.connect(functools.partial(_unbind, signal, slot))


def bind_many(owner: QObject, pairs: Iterable[tuple[object, Callable]]) -> None:
    """``bind`` each ``(signal, slot)`` of ``pairs`` to ``owner``."""
    for signal, slot in pairs:
        bind(owner, signal, slot)


def _unbind(signal, slot, *_destroyed) -> None:
    try:
        signal.disconnect(slot)
    except (ValueError, RuntimeError):  # already disconnected, or the signal's owner is gone
        pass
