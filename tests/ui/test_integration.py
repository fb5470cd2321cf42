"""Every capability reachable from the main window's menus: ONNX import (undoable, with its summary), the
catalog's import and export, the calculators following the selected devices, and the procurement planner's
requirements reaching File -> Export Report. File dialogs and message boxes are monkeypatched."""

from __future__ import annotations

import numpy as np
import pytest
import yaml
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper as nh
from PySide6.QtWidgets import QDockWidget, QFileDialog, QInputDialog, QMessageBox

from explorer.core.calculators.batch_sweep import CHAPTER_DEVICES
from explorer.core.session.workspace import Workspace
from explorer.store.engine import open_catalog
from explorer.ui import report_export
from explorer.ui.app import device_lookup
from explorer.ui.calculators.panel import CalculatorsPanel
from explorer.ui.main_window import MainWindow
from explorer.ui.planner.planner_panel import PlannerPanel

RNG = np.random.default_rng(0)



def make_window(qtbot, shared_repository, monkeypatch):
    monkeypatch.setattr(QMessageBox, "question", lambda *a, **k: QMessageBox.StandardButton.Discard)
    win = MainWindow(Workspace(lookup=device_lookup(shared_repository)), shared_repository)
    qtbot.addWidget(win)
    return win


@pytest.fixture
def window(qtbot, shared_repository, monkeypatch):
    return make_window(qtbot, shared_repository, monkeypatch)


def onnx_file(path, nodes, inputs, outputs, inits=()):
    model = h.make_model(h.make_graph(nodes, "g", inputs, outputs, list(inits)),
                         opset_imports=[h.make_opsetid("", 17)])
    path.write_bytes(model.SerializeToString())
    return path


def mlp(path):
    """x (N, 32) -> fc1 (32x64) -> relu -> fc2 (64x10): 32*64 + 64*10 = 2,688 MAC per sample."""
    inits = [nh.from_array(RNG.standard_normal((32, 64)).astype(np.float32), "W1"),
             nh.from_array(RNG.standard_normal((64, 10)).astype(np.float32), "W2")]
    nodes = [h.make_node("MatMul", ["x", "W1"], ["a"], name="fc1"), h.make_node("Relu", ["a"], ["r"], name="act"),
             h.make_node("MatMul", ["r", "W2"], ["y"], name="fc2")]
    return onnx_file(path, nodes, [h.make_tensor_value_info("x", T.FLOAT, ["N", 32])],
                     [h.make_tensor_value_info("y", T.FLOAT, None)], inits)


def choose(monkeypatch, path, save=False):
    name = "getSaveFileName" if save else "getOpenFileName"
    monkeypatch.setattr(QFileDialog, name, lambda *a, **k: (str(path), ""))


def test_every_new_capability_is_in_the_menus_and_docks(qtbot, window):
    window.show()
    qtbot.waitExposed(window)
    file_menu = window.menuBar().actions()[0].menu()
    texts = [a.text() for a in file_menu.actions()]
    for action in (window.actions.import_model, window.actions.import_trace, window.actions.import_catalog,
                   window.actions.export_catalog):
        assert action.text() in texts and action.isEnabled()
    assert window.actions.import_model.shortcut().toString() == "Ctrl+I"
    docks = {d.objectName(): d for d in window.findChildren(QDockWidget)}
    assert docks["calculators_dock"].windowTitle() == "Calculators"
    assert docks["calculators_dock"].widget().widget() is window.calculators  # in a scroll area
    assert isinstance(window.calculators, CalculatorsPanel)
    assert docks["planner_dock"].windowTitle() == "Procurement planner"
    assert isinstance(docks["planner_dock"].widget(), PlannerPanel)
    # all in the analysis panels' tab group, each toggled from View -> Docks
    tabbed = set(window.tabifiedDockWidgets(window.panel_docks[0]))
    assert {docks["calculators_dock"], docks["planner_dock"], docks["trace_dock"]} <= tabbed
    toggles = {a.text(): a for a in window.actions.docks_menu.actions()}
    assert toggles["Calculators"].isChecked()
    toggles["Calculators"].trigger()
    assert docks["calculators_dock"].isHidden() and not toggles["Calculators"].isChecked()
    toggles["Calculators"].trigger()
    assert not docks["calculators_dock"].isHidden()


def test_without_a_catalog_the_catalog_actions_are_disabled(qtbot, monkeypatch):
    monkeypatch.setattr(QMessageBox, "question", lambda *a, **k: QMessageBox.StandardButton.Discard)
    win = MainWindow(Workspace(), None)
    qtbot.addWidget(win)
    assert not win.actions.import_catalog.isEnabled() and not win.actions.export_catalog.isEnabled()
    assert win.importer.import_catalog() == () and win.importer.export_catalog() == 0


# ------------------------------------------------------------------------------------------------ ONNX
def test_onnx_import_becomes_the_model_and_undo_restores_the_previous(window, monkeypatch, tmp_path):
    ws = window.workspace
    window.new_from_template("gpt2")
    before = ws.model
    choose(monkeypatch, mlp(tmp_path / "tiny-mlp.onnx"))
    window.actions.import_model.trigger()
    assert ws.model.name == "tiny-mlp"
    assert [(l.kind, l.name) for l in ws.model.layers] == [("dense", "fc1"), ("relu", "act"), ("dense", "fc2")]
    assert ws.table.total("macs") == 32 * 64 + 64 * 10 == 2688
    assert window.importer.summary is None  # nothing unsupported, no warnings: a status message only
    assert "Imported 3 layers from tiny-mlp.onnx" in window.statusBar().currentMessage()
    assert ws.stack.undo_text == "import tiny-mlp.onnx" and window.actions.undo.text() == "&Undo import tiny-mlp.onnx"
    window.actions.undo.trigger()
    assert ws.model is before and ws.model.name == "GPT-2 (124M)"
    window.actions.redo.trigger()
    assert ws.model.name == "tiny-mlp"


def test_onnx_summary_lists_unsupported_operators_with_counts(window, monkeypatch, tmp_path):
    nodes = [h.make_node("Relu", ["x"], ["r"], name="act"),
             h.make_node("TopK", ["r", "k"], ["vals", "idx"], axis=-1, name="top1"),
             h.make_node("TopK", ["x", "k"], ["vals2", "idx2"], axis=-1, name="top2"),
             h.make_node("Einsum", ["vals", "vals2"], ["y"], equation="ni,ni->n", name="dot")]
    outputs = [h.make_tensor_value_info("y", T.FLOAT, None), h.make_tensor_value_info("idx", T.INT64, None),
               h.make_tensor_value_info("idx2", T.INT64, None)]
    path = onnx_file(tmp_path / "topk.onnx", nodes, [h.make_tensor_value_info("x", T.FLOAT, ["N", 32])], outputs,
                     [nh.from_array(np.array([5], dtype=np.int64), "k")])
    assert window.importer.import_model(path)
    box = window.importer.summary
    assert box is not None and box.isVisible() and not box.isModal()  # the window stays usable
    assert "3 operator(s) of 2 type(s) are not supported" in box.text() and "TopK \u00d72, Einsum \u00d71" in box.text()
    details = box.detailedText()
    assert "  TopK: 2" in details and "  Einsum: 1" in details and "Warnings:" in details
    assert window.workspace.model.name == "topk"
    box.close()


def test_onnx_symbolic_size_is_asked_for(window, monkeypatch, tmp_path):
    path = onnx_file(tmp_path / "seq.onnx", [h.make_node("Relu", ["x"], ["y"], name="act")],
                     [h.make_tensor_value_info("x", T.FLOAT, ["batch", "sequence", 8])],
                     [h.make_tensor_value_info("y", T.FLOAT, None)])
    asked = []
    monkeypatch.setattr(QInputDialog, "getInt", lambda *a, **k: (asked.append(a[2]) or 12, True))
    assert window.importer.import_model(path)
    assert len(asked) == 1 and "'sequence'" in asked[0]
    assert window.workspace.model.layers[0].params["input_shape"] == (12, 8)


def test_a_broken_onnx_file_is_reported_and_the_project_untouched(window, monkeypatch, tmp_path):
    ws = window.workspace
    window.new_from_template("resnet50")
    before, undo = ws.model, ws.stack.can_undo
    bad = tmp_path / "broken.onnx"
    bad.write_bytes(b"this is not a protobuf")
    choose(monkeypatch, bad)
    shown = []
    monkeypatch.setattr(QMessageBox, "warning", lambda parent, title, text, *a: shown.append((title, text)))
    window.actions.import_model.trigger()
    assert shown and shown[0][0] == "Import model"
    assert "The model was not imported" in shown[0][1] and "broken.onnx" in shown[0][1]
    assert ws.model is before and ws.stack.can_undo == undo
    choose(monkeypatch, "")  # a cancelled file dialog does nothing
    assert not window.importer.import_model()


# ------------------------------------------------------------------------------------------------ catalog
def test_catalog_export_and_import_round_trip_through_the_menu(qtbot, monkeypatch, tmp_path):
    repo = open_catalog("sqlite://")  # this test writes to the catalog: its own database
    try:
        window = make_window(qtbot, repo, monkeypatch)
        a100 = repo.get("nvidia-a100-sxm4-80gb")
        repo.duplicate(a100.id, "my-a100-quote")
        window.catalog_dock.refresh()
        shown = window.catalog_dock.proxy.rowCount()
        out = tmp_path / "devices.yaml"
        choose(monkeypatch, out, save=True)
        window.actions.export_catalog.trigger()
        data = yaml.safe_load(out.read_text())
        ids = [d["id"] for d in (data["devices"] if isinstance(data, dict) else data)]
        assert len(ids) == shown and "my-a100-quote" in ids
        assert "Exported" in window.statusBar().currentMessage()
        repo.delete("my-a100-quote")
        window.catalog_dock.refresh()
        monkeypatch.setattr(window.catalog_dock, "confirm", lambda title, question: True)  # replace the rest
        choose(monkeypatch, out)
        window.actions.import_catalog.trigger()
        assert repo.get("my-a100-quote").name == f"{a100.name} (copy)"  # duplicate() names the copy
        assert window.catalog_dock.current_id() is not None
        assert f"Imported {len(ids)} device(s)" in window.statusBar().currentMessage()
    finally:
        repo.engine.dispose()


# ------------------------------------------------------------------------------------------------ calculators
def test_calculators_follow_the_selected_devices_at_the_precision(window):
    ws = window.workspace
    calc = window.calculators
    assert tuple(calc.devices) == CHAPTER_DEVICES  # nothing selected: the chapter's devices
    ws.select_devices(["nvidia-a100-sxm4-80gb", "google-tpu-v4"])
    # fp16: the TPU v4 lists bf16 and int8 only, so the calculators get the A100 alone
    assert [d.name for d in calc.devices] == ["NVIDIA A100 SXM4 80GB FP16"]
    assert calc.devices[0].peak_flops == 312e12 and calc.devices[0].bandwidth == pytest.approx(2.039e12)
    sweep = calc.widget("batch-sweep").sections[0]
    assert sweep.device_list.count() == 1
    ws.set_assumptions(precision="bf16")
    assert [d.name for d in calc.devices] == ["NVIDIA A100 SXM4 80GB BF16", "Google Cloud TPU v4 BF16"]
    assert calc.devices[1].peak_flops == 275e12
    assert sweep.device_list.count() == 2
    ws.undo()
    ws.undo()
    assert tuple(calc.devices) == CHAPTER_DEVICES


# ------------------------------------------------------------------------------------------------ planner
def test_planner_requirements_reach_the_report_export(window, monkeypatch):
    seen = {}

    def fake_export(parent, workspace, requirements=None):
        seen.update(parent=parent, workspace=workspace, requirements=requirements)

    monkeypatch.setattr(report_export, "export_report", fake_export)
    ws = window.workspace
    window.new_from_template("gpt2")
    ws.select_devices(["nvidia-a100-sxm4-80gb", "nvidia-h100-sxm5"])
    window.planner.target.setText("2000 tokens/s")
    window.planner.latency.setText("50 ms")
    window.actions.export_report.trigger()
    req = seen["requirements"]
    assert seen["parent"] is window and seen["workspace"] is ws
    assert (req.target, req.target_unit, req.latency) == (2000.0, "tokens/s", 0.05)
    window.planner.target.setText("fast please")  # invalid: the report goes without the plan, and says so
    window.actions.export_report.trigger()
    assert seen["requirements"] is None
    assert "invalid field" in window.statusBar().currentMessage()
