"""Help > Quick Start and Documentation; an exported report says where it went and offers to open it (issue 24)."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtGui import QDesktopServices
from PySide6.QtWidgets import QFileDialog, QInputDialog, QMessageBox

from explorer.core.session.workspace import Workspace
from explorer.ui.help import DOCS, docs_dir
from explorer.ui.main_window import MainWindow


def make_window(qtbot, shared_repository, monkeypatch):
    from explorer.ui.app import device_lookup

    monkeypatch.setattr(QMessageBox, "question", lambda *a, **k: QMessageBox.StandardButton.Discard)

    win = MainWindow(Workspace(lookup=device_lookup(shared_repository)), shared_repository)
    qtbot.addWidget(win)
    return win


def test_quick_start_and_every_documentation_link(qtbot, shared_repository, monkeypatch):
    win = make_window(qtbot, shared_repository, monkeypatch)
    help_menu = next(a.menu() for a in win.menuBar().actions() if a.text() == "&Help")
    assert [a.text() for a in help_menu.actions() if a.text()][:2] == ["&Quick Start", "&Documentation"]
    win.actions.quick_start.trigger()
    box = next(w for w in win.findChildren(QMessageBox) if w.windowTitle() == "Quick start")
    assert "What each panel answers" in box.text() and "Roofline" in box.text() and box.isVisible()
    opened = []
    monkeypatch.setattr(QDesktopServices, "openUrl", lambda url: opened.append(url.toLocalFile()) or True)
    for action in win.actions.docs:
        assert action.isEnabled()
        action.trigger()
    assert [Path(p).name for p in opened] == [name for _, name in DOCS]
    assert all(Path(p).is_file() and Path(p).parent == docs_dir() for p in opened)
    box.close()


def test_an_exported_report_offers_to_open_it(qtbot, shared_repository, monkeypatch, tmp_path):
    win = make_window(qtbot, shared_repository, monkeypatch)
    win.new_from_template("gpt2")
    win.workspace.select_devices(["nvidia-h100-sxm5"])
    target = tmp_path / "study.html"
    monkeypatch.setattr(QFileDialog, "getSaveFileName", lambda *a, **k: (str(target), ""))
    monkeypatch.setattr(QInputDialog, "getText", staticmethod(lambda *a, **k: ("Study", True)))  # the title
    job = win.export_report()
    qtbot.waitUntil(lambda: job.done and job.confirmation is not None, timeout=30_000)
    box = job.confirmation
    assert str(target) in box.text() and box.isVisible()
    opened = []
    monkeypatch.setattr(QDesktopServices, "openUrl", lambda url: opened.append(url.toLocalFile()) or True)
    next(b for b in box.buttons() if b.text() == "Open").click()
    assert opened == [str(target)] and target.read_text().startswith("<!DOCTYPE html>")
    box.close()
