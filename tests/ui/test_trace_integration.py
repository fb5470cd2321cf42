"""File -> Import Trace in the main window: the Trace dock's lanes and top kernels, and the measured kernels
as crosses on the roofline beside the modelled operators (committed fixtures, file dialogs monkeypatched)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PySide6.QtWidgets import QDockWidget, QFileDialog, QInputDialog, QMessageBox

from explorer.core.hardware.device_file import device_from_dict
from explorer.core.session.commands import SetModel
from explorer.core.session.workspace import Assumptions, Workspace
from explorer.core.workload.model import Model, load_model_file
from explorer.ui.app import device_lookup
from explorer.ui.main_window import MainWindow
from explorer.ui.panels import RooflinePanel

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "traces"
CPU = {"id": "test-cpu", "name": "Test CPU core", "vendor": "test", "kind": "cpu", "peak": {"fp32": "100 GFLOP/s"},
       "memory": [{"name": "DRAM", "role": "offchip", "capacity": "16 GB", "bandwidth": "20 GB/s"}]}


def smallnet() -> Model:
    """The network make_torch_trace.py profiles; its layer names match the trace's record_function ranges."""
    return load_model_file(FIXTURES / "smallnet.json")



@pytest.fixture
def window(qtbot, shared_repository, monkeypatch):
    monkeypatch.setattr(QMessageBox, "question", lambda *a, **k: QMessageBox.StandardButton.Discard)
    ws = Workspace(lookup=device_lookup(shared_repository), assumptions=Assumptions(precision="fp32", batch=4))
    ws.put_devices([device_from_dict(CPU)])
    ws.execute(SetModel(smallnet()))
    ws.select_devices(["test-cpu", "nvidia-a100-sxm4-80gb"])
    win = MainWindow(ws, shared_repository)
    qtbot.addWidget(win)
    return win


def choose(monkeypatch, path):
    monkeypatch.setattr(QFileDialog, "getOpenFileName", lambda *a, **k: (str(path), ""))


def roofline(window) -> RooflinePanel:
    panel = next(d.widget() for d in window.panel_docks if isinstance(d.widget(), RooflinePanel))
    panel.flush()
    return panel


def test_torch_trace_fills_the_dock_and_the_roofline(qtbot, window, monkeypatch):
    window.show()
    qtbot.waitExposed(window)
    choose(monkeypatch, FIXTURES / "torch_cpu_trace.json")
    window.actions.import_trace.trigger()
    trace = window.importer.trace
    assert trace is not None and trace.source_format == "chrome"
    dock = window.findChild(QDockWidget, "trace_dock")
    assert dock.windowTitle() == "Trace" and not dock.isHidden()
    panel = window.trace_panel
    assert panel.lanes() == ("thread 5230 (python)",)
    assert sum(len(bar.opts["x0"]) for bar in panel.timeline.bars.values()) == 150  # every event drawn
    top = panel.kernels.top
    assert top.names == ("aten::addmm", "aten::conv2d") and top.count.tolist() == [9, 3]
    assert "roof: Test CPU core at fp32" in panel.summary.text()
    assert window.statusBar().currentMessage() == "Loaded torch_cpu_trace.json: 12 of 12 kernels placed on the Roofline"
    # the roofline: twelve measured crosses on the CPU (the device in focus) beside the model's operators
    roof = roofline(window)
    x, y = roof.measured.scatter.getData()
    assert len(x) == 12
    m = roof.measured.result
    assert m.layers == ("conv1", "fc1", "fc2", "fc3") * 3
    assert np.allclose(10**x, m.intensity) and np.allclose(10**y, m.achieved)
    assert len(roof.points.getData()[0]) > 0  # the modelled operators are still there
    assert "measured kernels (torch_cpu_trace.json): 12 of 12 placed" in roof.legend.toPlainText()
    assert "Crosses: 12 measured kernels" in roof.message.text()
    conv = m.layers.index("conv1")
    assert roof._hover_key(x[conv], y[conv])[0] == "measured"  # the crosses are above the operators' points
    tip = roof.describe_hover(("measured", m.layers.index("fc1")))
    assert tip.startswith("aten::addmm (measured, torch_cpu_trace.json)")
    assert "intensity 1.96 FLOP/byte from the model's 'fc1'" in tip and "efficiency 48.8%" in tip  # 19.2 of 39.3 GFLOP/s
    # the device in focus changes the roof the kernels are measured against; the kernel table follows
    window.workspace.focus_device("nvidia-a100-sxm4-80gb")
    roof = roofline(window)
    assert roof.measured.result.device_id == "nvidia-a100-sxm4-80gb" and len(roof.measured.scatter.getData()[0]) == 12
    panel.refresh_kernels()
    assert "roof: NVIDIA A100 SXM4 80GB at fp32" in panel.summary.text()


def test_torq_trace_asks_for_the_clock(window, monkeypatch):
    choose(monkeypatch, FIXTURES / "torq_trace.csv")
    asked = []
    monkeypatch.setattr(QInputDialog, "getDouble", lambda *a, **k: (asked.append(a[2]) or 800.0, True))
    window.actions.import_trace.trigger()
    assert asked and "MHz" in asked[0]
    trace = window.importer.trace
    assert trace.clock_hz == 800e6
    assert window.trace_panel.lanes() == ("DMA in", "compute", "DMA out")
    roof = roofline(window)
    # conv2d / fully_connected kernels matched to conv1, fc1, fc2 by their MLIR locations
    assert roof.measured.result.layers == ("conv1", "fc1", "fc2")
    assert len(roof.measured.scatter.getData()[0]) == 3


def test_a_bad_trace_is_reported_and_changes_nothing(window, monkeypatch, tmp_path):
    choose(monkeypatch, FIXTURES / "torch_cpu_trace.json")
    window.actions.import_trace.trigger()
    bad = tmp_path / "notes.csv"
    bad.write_text("hello,world\n1,2\n")
    choose(monkeypatch, bad)
    shown = []
    monkeypatch.setattr(QMessageBox, "warning", lambda parent, title, text, *a: shown.append((title, text)))
    window.actions.import_trace.trigger()
    assert shown and shown[0][0] == "Import trace"
    assert "notes.csv" in shown[0][1] and "cannot tell the trace format" in shown[0][1]
    assert window.importer.trace.source_format == "chrome"  # the loaded trace stays
    assert len(roofline(window).measured.scatter.getData()[0]) == 12
    # a cancelled clock question loads nothing either
    choose(monkeypatch, FIXTURES / "torq_trace.csv")
    monkeypatch.setattr(QInputDialog, "getDouble", lambda *a, **k: (0.0, False))
    assert window.importer.import_trace() is None and window.importer.trace.source_format == "chrome"
