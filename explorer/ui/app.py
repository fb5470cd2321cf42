"""Starting the desktop app: the QApplication, the catalog database (created and seeded on the first
start), the workspace, the main window; then, once the window is up, the offer to restore unsaved work
left by a session that crashed."""

from __future__ import annotations

import gc
import os
import sys
import warnings
from collections.abc import Sequence

from PySide6.QtCore import QCoreApplication, QTimer
from PySide6.QtWidgets import QApplication, QMessageBox

from explorer.core.hardware.device import Device
from explorer.core.session.workspace import Assumptions, Workspace
from explorer.core.settings import load_preferences

from .first_paint import after_first_paint

ORGANIZATION = "hwexplorer"
APPLICATION = "hwexplorer"


def device_lookup(repository):
    """``Workspace`` lookup: the catalog's devices for the ids it knows; unknown ids are skipped (the
    project keeps them, the catalog dock shows them as missing)."""
    from explorer.store.errors import UnknownDeviceError

    def lookup(ids: Sequence[str]) -> list[Device]:
        try:
            return list(repository.devices(list(ids)))
        except UnknownDeviceError:
            found = []
            for i in ids:
                try:
                    found.append(repository.get(i))
                except UnknownDeviceError:
                    pass
            return found

    return lookup


def configure_qt_environment(environ=os.environ, cpus: int | None = None) -> None:
    """What Qt reads from the environment, set before the QApplication exists (a value the user set is kept).

    On two CPUs or fewer, Qt's GUI thread pool (it splits some raster fills and image conversions over
    threads) competes with the GUI thread for the same cores: an edit redrawing the four panels measured 10 %
    faster without it on a 2-CPU machine, with less CPU time in all (docs/benchmarks.md). Larger machines keep
    Qt's default."""
    count = os.cpu_count() if cpus is None else cpus
    if (count or 1) <= 2:
        environ.setdefault("QT_NO_GUI_THREADPOOL", "1")


def make_application(argv: Sequence[str] | None = None) -> QApplication:
    configure_qt_environment()
    app = QApplication.instance() or QApplication(list(argv if argv is not None else sys.argv))
    if not QCoreApplication.organizationName():  # tests set their own names (settings under tmp_path)
        QCoreApplication.setOrganizationName(ORGANIZATION)
        QCoreApplication.setApplicationName(APPLICATION)
    QApplication.setApplicationDisplayName("Hardware Explorer")
    QApplication.setDesktopFileName("hwexplorer")
    from .icons import app_icon

    QApplication.setWindowIcon(app_icon())
    return app


def system_lookup(repository):
    """``Workspace`` system lookup: the catalog database's systems for the ids it knows (unknown ids skipped);
    None: every system of the catalog."""

    def lookup(ids: Sequence[str] | None):
        if ids is None:
            return repository.systems()
        if not ids:
            return ()
        known = {s.id: s for s in repository.systems()}
        return tuple(known[i] for i in ids if i in known)

    return lookup


def build_window(db_url: str | None = None, defer_catalog: bool = False):
    """The catalog, workspace and main window (not shown). Raises CatalogDatabaseError.

    ``defer_catalog``: the catalog is a :class:`~explorer.store.lazy.LazyCatalog`, opened when first used or by
    ``window.repository.open()`` (``run_app`` does so once the window has painted: SQLAlchemy and the database
    are not needed to paint it; the catalog dock's tables fill then). Errors come from that call."""
    from .main_window import MainWindow

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        prefs = load_preferences()
    if defer_catalog:
        from explorer.store.lazy import LazyCatalog

        repository = LazyCatalog(db_url)
    else:
        from explorer.store.engine import open_catalog

        repository = open_catalog(db_url)
    workspace = Workspace(lookup=device_lookup(repository),
                          assumptions=Assumptions(**prefs.assumption_defaults()), systems=system_lookup(repository),
                          calibration_store=repository)
    window = MainWindow(workspace, repository, prefs)
    for w in caught:
        window.statusBar().showMessage(str(w.message), 15000)
    return window


def freeze_startup_objects() -> None:
    """Move every object alive once the window has painted (modules, classes, the catalog, the window's widgets)
    out of the garbage collector's generations: they live as long as the app, and a full collection during an
    edit no longer walks them (issue 22: no collector pauses in the edit path of a large model)."""
    gc.freeze()


def run_app(db_url: str | None = None, argv: Sequence[str] | None = None, project: str | None = None) -> int:
    """The app; ``project`` (a .hwproj path) is opened once the window shows."""
    app = make_application(argv)
    from explorer.store.errors import CatalogDatabaseError

    try:
        window = build_window(db_url, defer_catalog=True)
    except CatalogDatabaseError as exc:
        QMessageBox.critical(None, "Cannot open the device catalog", str(exc))
        return 1
    window.show()

    def open_catalog() -> None:  # once painted: SQLAlchemy, the database and the catalog dock's rows
        try:
            window.repository.open()
        except CatalogDatabaseError as exc:
            QMessageBox.critical(window, "Cannot open the device catalog", str(exc))
            app.exit(1)
            return
        from .panels import PANEL_SPECS

        for spec in PANEL_SPECS:  # the other tabs' modules, imported now rather than at the first edit
            spec.load()
        freeze_startup_objects()  # what start-up made lives on
        from .idle_gc import collect_when_idle

        collect_when_idle(window)  # the collector's young passes after edits, not inside them

    after_first_paint(window, open_catalog)
    QTimer.singleShot(0, window.controller.offer_recovery)
    if project is not None:
        QTimer.singleShot(0, lambda: window.open_project(project))
    return app.exec()
