"""File -> Export report asks for a title, prefilled with the default one, and the report carries it; when the
report is written a note offers to open it or its folder through QDesktopServices (issue 23). Nothing is opened:
the dialogs are driven or replaced and ``QDesktopServices.openUrl`` is recorded."""

from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtCore import QUrl
from PySide6.QtWidgets import QApplication, QInputDialog, QLineEdit, QMessageBox, QWidget

from explorer.core.hardware.device_file import load_device_file
from explorer.core.session.workspace import Assumptions, Workspace
from explorer.core.workload.templates import get_template
from explorer.ui import report_export

CATALOG = Path(__file__).resolve().parents[2] / "catalog"
IDS = ("nvidia-a100-sxm4-80gb", "nvidia-l4")


@pytest.fixture
def workspace():
    devices = {i: load_device_file(CATALOG / f"{i}.yaml") for i in IDS}
    ws = Workspace(get_template("gpt2").build(), lookup=lambda ids: [devices[i] for i in ids if i in devices],
                   assumptions=Assumptions(phase="decode", batch=8))
    ws.select_devices(IDS)
    return ws


@pytest.fixture
def opened(monkeypatch):
    urls: list[QUrl] = []
    monkeypatch.setattr(report_export.QDesktopServices, "openUrl", lambda url: urls.append(url) or True)
    return urls


def test_the_title_dialog_is_prefilled_and_its_text_reaches_the_report(qtbot, workspace, tmp_path, monkeypatch,
                                                                       opened):
    asked = {}

    def get_text(parent, caption, label, echo, text):
        asked.update(caption=caption, label=label, echo=echo, text=text)
        return "Llama budget, committee copy", True

    monkeypatch.setattr(QInputDialog, "getText", staticmethod(get_text))
    target = tmp_path / "r.html"
    monkeypatch.setattr(report_export.QFileDialog, "getSaveFileName",
                        staticmethod(lambda *a, **k: (str(target), "HTML report, self-contained (*.html)")))
    parent = QWidget()
    qtbot.addWidget(parent)
    job = report_export.export_report(parent, workspace)
    assert asked["text"] == f"{workspace.model.name} on 2 accelerators"  # the default title, to edit
    assert asked["label"] == "Report title:" and asked["echo"] == QLineEdit.EchoMode.Normal
    qtbot.waitUntil(lambda: job.done and job.confirmation is not None, timeout=30_000)
    assert job.error is None
    html = target.read_text(encoding="utf-8")
    assert "<h1>Llama budget, committee copy</h1>" in html
    # the note offers Open and Show Folder; each calls QDesktopServices.openUrl with the file or its folder
    box = job.confirmation
    assert isinstance(box, QMessageBox) and str(target) in box.text()
    buttons = {b.text(): b for b in box.buttons()}
    assert {"Open", "Show Folder"} <= set(buttons)
    buttons["Open"].click()
    buttons["Show Folder"].click()
    assert [u.toLocalFile() for u in opened] == [str(target), str(tmp_path)]
    box.close()


def test_cancelling_the_title_writes_nothing(qtbot, workspace, tmp_path, monkeypatch, opened):
    monkeypatch.setattr(QInputDialog, "getText", staticmethod(lambda *a: ("", False)))
    files = []
    monkeypatch.setattr(report_export.QFileDialog, "getSaveFileName",
                        staticmethod(lambda *a, **k: files.append(a) or ("", "")))
    assert report_export.export_report(None, workspace) is None
    assert files == [] and opened == []  # no file asked for, nothing opened


def test_an_emptied_title_keeps_the_default(qtbot, workspace, monkeypatch):
    monkeypatch.setattr(QInputDialog, "getText", staticmethod(lambda *a: ("   ", True)))
    assert report_export.ask_title(None, workspace) == f"{workspace.model.name} on 2 accelerators"


@pytest.mark.real_dialogs
def test_the_real_dialog_shows_the_prefilled_title(qtbot, workspace):
    """The dialog itself (not replaced): open it, read its field, cancel it."""
    from PySide6.QtCore import QTimer

    seen = {}

    def inspect():
        dialog = next(w for w in QApplication.topLevelWidgets()
                      if isinstance(w, QInputDialog) and w.isVisible())
        seen["text"], seen["label"] = dialog.textValue(), dialog.labelText()
        dialog.reject()

    QTimer.singleShot(50, inspect)
    assert report_export.ask_title(None, workspace) is None
    assert seen == {"text": f"{workspace.model.name} on 2 accelerators", "label": "Report title:"}
