"""Fixtures shared by the UI tests: offscreen Qt, settings and data dirs under tmp_path, no stray windows."""

from __future__ import annotations

import gc
import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")  # before any Qt import

import pytest


@pytest.fixture(autouse=True)
def isolated_settings(tmp_path, monkeypatch):
    """QSettings and platformdirs data/config dirs point at tmp_path for every test."""
    from PySide6.QtCore import QCoreApplication, QSettings

    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    QCoreApplication.setOrganizationName("hwexplorer-tests")
    QCoreApplication.setApplicationName("hwexplorer-tests")
    QSettings.setDefaultFormat(QSettings.Format.IniFormat)
    for scope in (QSettings.Scope.UserScope, QSettings.Scope.SystemScope):
        QSettings.setPath(QSettings.Format.IniFormat, scope, str(tmp_path / "qsettings"))
    yield


@pytest.fixture(autouse=True)
def no_blocking_input_dialogs(request, monkeypatch):
    """A modal QInputDialog waits for a user the suite does not have: a test that reaches one without replacing it
    fails at once, naming it, instead of hanging the run (a test replaces it with its own monkeypatch, or is marked
    ``real_dialogs`` when it closes the real one itself)."""
    from PySide6.QtWidgets import QInputDialog

    if request.node.get_closest_marker("real_dialogs"):
        return

    def refuse(*args, **kwargs):
        raise AssertionError(f"a modal QInputDialog was opened in a test: {args[1:3]}")

    for name in ("getText", "getInt", "getDouble", "getItem", "getMultiLineText"):
        monkeypatch.setattr(QInputDialog, name, staticmethod(refuse))


@pytest.fixture(autouse=True)
def no_leftover_windows(qapp):
    """Fail a test that leaves top-level windows visible (every widget must go through qtbot.addWidget)."""
    yield
    from PySide6.QtWidgets import QApplication

    QApplication.processEvents()
    # No garbage collection while PySide wraps the list: a collection can delete a widget that only Python owned
    # (pyqtgraph's plots keep parentless option widgets) between Qt building the list and PySide reading it.
    gc.disable()
    try:
        left = [w for w in QApplication.topLevelWidgets() if w.isVisible()]
    finally:
        gc.enable()
    for w in left:
        w.close()
    assert not left, f"windows left open: {[type(w).__name__ for w in left]}"


def _seeded_catalog():
    from explorer.store.engine import open_catalog

    repo = open_catalog("sqlite://")  # private in-memory database seeded with the shipped catalog
    yield repo
    repo.engine.dispose()


@pytest.fixture
def repository():
    """A fresh seeded catalog per test (for tests that add, edit or delete devices)."""
    yield from _seeded_catalog()


@pytest.fixture(scope="module")
def shared_repository():
    """One seeded catalog per module (for tests that only read it)."""
    yield from _seeded_catalog()
