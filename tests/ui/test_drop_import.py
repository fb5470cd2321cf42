"""Dropping files on the main window imports them through the importer registry: an ONNX model becomes the
workspace's model (one undoable edit), a trace goes to the Trace dock, and a file no importer reads is
reported in a message box (synthetic drag and drop events)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from PySide6.QtCore import QMimeData, QPoint, QPointF, Qt, QUrl
from PySide6.QtGui import QDragEnterEvent, QDropEvent
from PySide6.QtWidgets import QMessageBox

from explorer.core.session.workspace import Assumptions, Workspace
from explorer.ui.app import device_lookup
from explorer.ui.main_window import MainWindow

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "core"))
from test_onnx_import import cnn  # the ONNX builders of the core tests

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "traces"


@pytest.fixture
def window(qtbot, shared_repository, monkeypatch):
    monkeypatch.setattr(QMessageBox, "question", lambda *a, **k: QMessageBox.StandardButton.Discard)
    ws = Workspace(lookup=device_lookup(shared_repository), assumptions=Assumptions(precision="fp32"))
    win = MainWindow(ws, shared_repository)
    qtbot.addWidget(win)
    win.new_from_template("resnet50")
    return win


def mime(*paths) -> QMimeData:
    data = QMimeData()
    data.setUrls([QUrl.fromLocalFile(str(p)) for p in paths])
    return data


def drop(window, *paths) -> QDropEvent:
    data = mime(*paths)
    enter = QDragEnterEvent(QPoint(20, 20), Qt.DropAction.CopyAction, data, Qt.MouseButton.LeftButton,
                            Qt.KeyboardModifier.NoModifier)
    window.dragEnterEvent(enter)
    assert enter.isAccepted()
    event = QDropEvent(QPointF(20, 20), Qt.DropAction.CopyAction, data, Qt.MouseButton.LeftButton,
                       Qt.KeyboardModifier.NoModifier)
    window.dropEvent(event)
    return event


def test_the_window_accepts_drops_of_local_files_only(window):
    assert window.acceptDrops()
    remote = QMimeData()
    remote.setUrls([QUrl("https://example.com/model.onnx")])
    enter = QDragEnterEvent(QPoint(20, 20), Qt.DropAction.CopyAction, remote, Qt.MouseButton.LeftButton,
                            Qt.KeyboardModifier.NoModifier)
    window.dragEnterEvent(enter)
    assert not enter.isAccepted()


def test_a_dropped_onnx_file_becomes_the_model_as_one_undoable_edit(window, tmp_path):
    ws = window.workspace
    before = ws.model
    path = tmp_path / "dropped.bin"  # no .onnx suffix: the content tells
    path.write_bytes(cnn()[0])
    event = drop(window, path)
    assert event.isAccepted()
    assert ws.model.name == "dropped"
    assert [layer.name for layer in ws.model.layers] == ["conv1", "bn1", "relu1", "pool1", "flat", "fc"]
    assert ws.stack.undo_text == "import dropped.bin"
    window.actions.undo.trigger()
    assert ws.model is before


def test_a_dropped_trace_goes_to_the_trace_dock(window):
    assert window.trace_panel.trace is None
    drop(window, FIXTURES / "torch_cpu_trace.json")
    assert window.trace_panel.trace is not None and window.trace_panel.trace.source_format == "chrome"
    assert "Loaded torch_cpu_trace.json" in window.statusBar().currentMessage()
    model = window.workspace.model
    drop(window, FIXTURES / "runtime.csv")  # a second trace replaces the first; the model is untouched
    assert window.trace_panel.trace.source_format == "torq_runtime" and window.workspace.model is model


def test_a_file_no_importer_reads_is_reported_and_changes_nothing(window, monkeypatch, tmp_path):
    shown = []
    monkeypatch.setattr(QMessageBox, "warning", lambda parent, title, text, *a: shown.append((title, text)))
    path = tmp_path / "notes.md"
    path.write_text("# not a model\n", encoding="utf-8")
    model, undo = window.workspace.model, window.workspace.stack.can_undo
    drop(window, path)
    assert len(shown) == 1 and shown[0][0] == "Import"
    assert "The file was not imported" in shown[0][1] and "notes.md" in shown[0][1] and "ONNX model" in shown[0][1]
    assert window.workspace.model is model and window.workspace.stack.can_undo == undo
    assert window.trace_panel.trace is None
