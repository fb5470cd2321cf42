"""The app's cold start (issue 22): the main window is painted before the catalog database is opened (SQLAlchemy,
migrations, seeding check), which then fills the catalog dock's tables; a catalog opened on first use answers as
the repository would; a database that cannot be opened is still reported, and the app exits with 1.

The start-up checks run ``hwexplorer`` in a new interpreter (offscreen): this process has imported everything."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from PySide6.QtWidgets import QMessageBox

from explorer.ui.app import build_window
from explorer.ui.panels import PANEL_SPECS

ROOT = Path(__file__).resolve().parents[2]

PROBE = r"""
import gc, json, sys
from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QMessageBox
import explorer.ui.app as app_module

QMessageBox.critical = staticmethod(lambda parent, title, text: print("CRITICAL", title, "|", text, flush=True))
real = app_module.after_first_paint
seen = {}
DEFERRED = ("sqlalchemy", "dask", "alembic", "pint", "yaml", "scipy", "hashlib")  # and the explorer.core modules


def probe(window, callback, fallback_ms=2000):
    def at_first_paint():
        dock = window.catalog_dock
        seen["painted"] = {"modules": sorted(m for m in sys.modules if m.split(".")[0] in DEFERRED
                                             or m.startswith(("explorer.ui.panels.", "explorer.store.", "explorer.core.",
                                                              "explorer.ui.catalog.system"))),
                           "systems_built": dock._systems is not None,  # (asked for below: built then)
                           "gc": gc.isenabled(),
                           "opened": window.repository.opened, "device_rows": dock.model.rowCount(),
                           "system_rows": dock.systems.model.rowCount(), "built": [d.objectName() for d in window.panel_docks if d.built]}
        callback()
        seen["after"] = {"opened": window.repository.opened, "panels": "explorer.ui.panels.serving" in sys.modules, "device_rows": dock.model.rowCount(),
                         "count": window.repository.count() if window.repository.opened else None,
                         "system_rows": dock.systems.model.rowCount(), "frozen": gc.get_freeze_count() > 0,
                         "pint": "pint" in sys.modules, "gc": gc.isenabled()}
        print("SEEN " + json.dumps(seen), flush=True)
        QTimer.singleShot(0, window.close)

    real(window, at_first_paint, fallback_ms)


app_module.after_first_paint = probe
from explorer.__main__ import main

sys.exit(main([]))
"""


def start(tmp_path, db: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", HWEXPLORER_DB=db, XDG_DATA_HOME=str(tmp_path / "data"),
               XDG_CONFIG_HOME=str(tmp_path / "config"), XDG_CACHE_HOME=str(tmp_path / "cache"),
               PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    return subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, timeout=180,
                          check=False, cwd=tmp_path)


def test_the_window_is_painted_before_the_catalog_is_opened_then_its_tables_fill(tmp_path):
    done = start(tmp_path, f"sqlite:///{tmp_path / 'catalog.sqlite3'}")
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(next(line for line in done.stdout.splitlines() if line.startswith("SEEN "))[5:])
    painted, after = seen["painted"], seen["after"]
    assert not any(m.split(".")[0] in ("sqlalchemy", "dask", "alembic") for m in painted["modules"]), painted
    # nor the unit registry (pint: made on first use), yaml (read and written on use), hashlib, the trace readers,
    # nor the core of what the first window does not show: the serving, systems and training analyses (issue 22)
    later = {"pint", "scipy", "yaml", "hashlib", "explorer.core.traces.formats", "explorer.core.parallel.system_pass", "explorer.core.parallel.compare",
             "explorer.core.training.step", "explorer.core.session.training"}
    assert not [m for m in painted["modules"] if m.split(".")[0] in later or m in later
                or m.startswith("explorer.core.serving.")], painted["modules"]
    assert "explorer.store.repository" not in painted["modules"] and "explorer.store.engine" not in painted["modules"]
    assert painted["opened"] is False and painted["device_rows"] == 0 and painted["system_rows"] == 0
    # the catalog's Systems tab (behind the Devices tab) is built when first chosen or asked for
    assert painted["systems_built"] is False and "explorer.ui.catalog.systems_browser" not in painted["modules"]
    assert painted["built"] == ["panel_RooflinePanel"]  # the tab on screen; the others when first chosen
    panel_modules = {m for m in painted["modules"] if m.startswith("explorer.ui.panels.")}
    # the roofline's module, and not those of the other tabs: titled from their PanelSpec (the Times switch is on
    # "ideal" here; on "calibrated" the classes that word their own captions are imported for it)
    not_needed = {f"explorer.ui.panels.{spec.module}" for spec in PANEL_SPECS if spec.module != "roofline"}
    assert "explorer.ui.panels.roofline" in panel_modules and not panel_modules & not_needed, panel_modules
    assert {"explorer.ui.panels.serving", "explorer.ui.panels.systems", "explorer.ui.panels.design_space"} <= not_needed
    assert after["opened"] is True and after["device_rows"] == after["count"] > 30 and after["system_rows"] > 5
    assert after["frozen"]  # start-up objects frozen once the catalog is in (app.freeze_startup_objects)
    assert after["pint"]  # the unit registry made then too, not at the first quantity typed
    assert painted["gc"] is False and after["gc"] is True  # the collector paused to the first paint, then on again
    assert after["panels"]  # and the other tabs' modules imported then, not at the first edit


def test_a_catalog_that_cannot_be_opened_is_reported_and_the_app_exits_with_1(tmp_path):
    done = start(tmp_path, "mysql://someone@somewhere/catalog")
    assert done.returncode == 1, done.stderr[-3000:]
    assert "CRITICAL Cannot open the device catalog | unsupported database 'mysql'" in done.stdout


def test_a_deferred_catalog_opens_when_first_used_and_fills_the_dock(qtbot, monkeypatch, tmp_path):
    monkeypatch.setenv("HWEXPLORER_DB", f"sqlite:///{tmp_path / 'catalog.sqlite3'}")
    monkeypatch.setattr(QMessageBox, "question", lambda *a, **k: QMessageBox.StandardButton.Discard)
    window = build_window(defer_catalog=True)
    qtbot.addWidget(window)
    dock = window.catalog_dock
    assert not window.repository.opened and dock.model.rowCount() == 0
    window.workspace.select_devices(["nvidia-h100-sxm5"])  # the workspace's lookup asks the catalog: it opens
    assert window.repository.opened
    assert dock.model.rowCount() == window.repository.count() > 30 and dock.systems.model.rowCount() > 5
    assert [d.id for d in window.workspace.devices] == ["nvidia-h100-sxm5"]
    assert dock.model.device_row(dock.model.row_of("nvidia-h100-sxm5")).name == window.workspace.devices[0].name
    window.repository.engine.dispose()


def test_the_qt_free_core_is_imported_before_pyside6(tmp_path):
    """explorer.ui imports numpy, psygnal and the core of the first window before any module imports PySide6, which
    reads the source of every module imported after it (explorer/ui/__init__.py): as `hwexplorer` starts the app."""
    code = ("import sys, importlib.abc\n"
            "seen = []\n"
            "class First(importlib.abc.MetaPathFinder):\n"
            "    def find_spec(self, name, path, target=None):\n"
            "        if name == 'PySide6' and not seen:\n"
            "            seen.append(sorted(m for m in sys.modules if m.split('.')[0] in ('numpy', 'psygnal', 'explorer')))\n"
            "sys.meta_path.insert(0, First())\n"
            "import explorer.__main__, explorer.ui.app, explorer.ui\n"
            "import json\nprint(json.dumps([seen[0], explorer.ui.CORE_FIRST]))")
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen",
               PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120,
                          check=False, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    before_qt, core_first = json.loads(done.stdout.strip().splitlines()[-1])
    assert set(core_first) <= set(before_qt)
    assert {"numpy", "psygnal", "explorer.core.session.workspace", "explorer.core.session.results",
            "explorer.core.workload.model", "explorer.store.io"} <= set(before_qt)
    assert "explorer.ui.main_window" not in before_qt  # (explorer.ui.app is being imported: its first line asks)
