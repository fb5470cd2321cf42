"""The ideal/calibrated switch in the toolbar: one undoable command, every panel's title says which model it shows,
and the roofline's modelled times follow it (docs/calibration.md)."""

from __future__ import annotations

import pytest
from PySide6.QtWidgets import QDockWidget, QMainWindow

from explorer.core.hardware.device_file import device_from_dict
from explorer.core.session.workspace import Assumptions, Workspace
from explorer.ui.panels import PANELS, AnalysisControls, RooflinePanel

from explorer.core.workload.model import LayerSpec, Model

GPU = {"id": "gpu", "name": "Test GPU", "vendor": "t", "kind": "gpu", "peak": {"fp16": "312 TFLOP/s"},
       "tdp": "400 W", "memory": [{"name": "HBM", "role": "offchip", "capacity": "80 GB", "bandwidth": "2039 GB/s"}],
       "matrix_engine": {"type": "tensor_core", "sm_count": 108, "block_tile": {"m": 128, "n": 128}}}


def small_model() -> Model:
    return Model.make("small", {"tokens": 256, "hidden": 129},
                      [LayerSpec.make("dense", "up", in_features=129, out_features=512), LayerSpec.make("gelu", "act"),
                       LayerSpec.make("dense", "down", in_features=512, out_features=129)])


def settle(qtbot, *panels):
    qtbot.waitUntil(lambda: not any(p.pending for p in panels), timeout=4000)

CAL = {**GPU, "id": "cal", "calibration": {"matrix": {"fp16": {"fraction": 0.5, "latency": "10 us", "sharpness": 1}},
                                           "vector": {"fraction": 0.5, "latency": "2 us", "sharpness": 1}}}


@pytest.fixture
def ws():
    devices = {d["id"]: device_from_dict(d) for d in (GPU, CAL)}
    w = Workspace(small_model(), lookup=lambda ids: [devices[i] for i in ids if i in devices],
                  assumptions=Assumptions(precision="fp16"))
    w.select_devices(["cal", "gpu"])
    return w


def test_the_toolbar_switch_is_an_undoable_command(qtbot, ws):
    bar = AnalysisControls(ws)
    qtbot.addWidget(bar)
    combo = bar.editors.time_model
    assert combo.currentText() == "ideal" and "calibrated" in combo.toolTip()
    combo.setCurrentText("calibrated")
    assert ws.assumptions.time_model == "calibrated" and ws.stack.undo_text == "set time model calibrated"
    ws.undo()
    assert ws.assumptions.time_model == "ideal" and combo.currentText() == "ideal"


def test_every_panel_title_names_the_model_and_the_roofline_times_follow(qtbot, ws):
    window = QMainWindow()
    qtbot.addWidget(window)
    panels = {}
    for cls in PANELS:
        dock = QDockWidget(cls.title, window)
        panels[cls] = cls(ws)
        dock.setWidget(panels[cls])
        window.addDockWidget(dock_area(), dock)
    window.resize(1200, 900)
    window.show()
    qtbot.waitExposed(window)
    settle(qtbot, *panels.values())
    roof = panels[RooflinePanel]
    titles = {cls: panels[cls].parentWidget().windowTitle() for cls in PANELS}
    assert titles[RooflinePanel] == "Roofline \u2014 ideal model"
    ideal_times = roof.result.points.time.copy()
    ws.set_assumptions(time_model="calibrated")
    settle(qtbot, *panels.values())
    titles = {cls.__name__: panels[cls].parentWidget().windowTitle() for cls in PANELS}
    assert titles == {"RooflinePanel": "Roofline \u2014 calibrated model",
                      "EnergyPanel": "Memory-hierarchy energy",
                      "TilingPanel": "Tiling fringe tax \u2014 ideal model (not calibrated here)",
                      "CostPanel": "Cost per TFLOP/s \u2014 calibrated model",
                      "SystemsPanel": "Systems \u2014 calibrated model",  # no system chosen: no label yet
                      "FidelityPanel": "Fidelity \u2014 ideal vs calibrated",
                      "TrainingPanel": "Training \u2014 calibrated model",
                      "DesignSpacePanel": "Design space \u2014 calibrated model",  # its points follow the switch
                      # the serving surfaces follow the switch: the calibrated device's, the other's ideal (spec)
                      "ServingPanel": "Serving \u2014 calibrated model (calibrated, spec)"}
    # the roofline shows device 0 (calibrated): its per-row times are the calibrated model's, longer than ideal
    rows = roof.result.points.rows
    a = ws.results.evaluation
    assert roof.result.points.time == pytest.approx(a.count[rows] * a.calibrated_time[rows, 0])
    assert (roof.result.points.time > ideal_times).all()
    ws.select_devices(["gpu"])  # no device calibrated: the title says the times are the ideal ones
    settle(qtbot, *panels.values())
    assert panels[RooflinePanel].parentWidget().windowTitle() == (
        "Roofline \u2014 calibrated model (no device calibrated: ideal times)")


def dock_area():
    from PySide6.QtCore import Qt

    return Qt.DockWidgetArea.BottomDockWidgetArea
