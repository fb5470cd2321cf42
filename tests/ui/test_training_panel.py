"""The Training panel through its widgets and synthesized mouse events: each control edit one undo step (a refused
one changes nothing and says why), the bars against the training core's numbers, hover tooltips with units, the
empty, error and does-not-fit states, the table and CSV, and a project saved and opened in the window."""

from __future__ import annotations

import gc
from dataclasses import replace

import numpy as np
import pytest
from PySide6.QtCore import Qt
from test_chart_mouse import hover
from test_panels import make, settle
from test_systems_panel import _choose_in_combo

from explorer.core.hardware.catalog_files import load_shipped_devices, load_shipped_systems
from explorer.core.session.commands import SetSystem
from explorer.core.session.state import SystemChoice
from explorer.core.session.training import SetTraining, cost_assumptions
from explorer.core.session.training_choice import TrainingChoice
from explorer.core.session.workspace import Workspace
from explorer.core.training.compare import train_on_system
from explorer.core.training.layout import TrainingLayout
from explorer.core.training.step import STEP_PARTS
from explorer.core.workload.templates import get_template
from explorer.ui.panels import PANELS, SystemsPanel, TrainingPanel
from explorer.ui.panels.training import EMPTY, IDEAL

DGX, TPU = "nvidia-dgx-h100", "google-tpu-v5p-128-slice"
DEVICES = {d.id: d for d in load_shipped_devices()}
SYSTEMS = {s.id: s for s in load_shipped_systems()}


def _workspace(*ids: str, model: str = "llama3-70b", **training) -> Workspace:
    ws = Workspace(get_template(model).build(), lambda wanted: [DEVICES[i] for i in wanted if i in DEVICES])
    if ids:
        ws.execute(SetSystem(SystemChoice(system_ids=ids)))
    if training:
        ws.execute(SetTraining(replace(ws.state.training, **training)))
    return ws


def _panel(qtbot, ws) -> TrainingPanel:
    panel = make(qtbot, TrainingPanel, ws, (1400, 900))
    gc.collect()  # a picker nobody keeps would be gone now
    return panel


@pytest.fixture
def two():  # Llama-3-70B on 64 H100 (8 DGX nodes) and 64 TPU v5p chips (one v5p-128 slice)
    return _workspace(DGX, TPU, devices=64, tokens=2e12)


def test_the_panel_is_listed_after_systems():
    assert PANELS.index(TrainingPanel) == PANELS.index(SystemsPanel) + 1 and TrainingPanel.title == "Training"


def test_each_control_edit_is_one_undo_step(qtbot, two):
    panel = _panel(qtbot, two)
    c = panel.controls
    depth = len(two.stack._done)
    _choose_in_combo(qtbot, c.recompute, "full")
    settle(qtbot, panel)
    assert two.state.training.recompute == "full" and len(two.stack._done) == depth + 1
    assert two.stack.undo_text == "set recomputation"
    c.spins["micro_batch"].setValue(2)
    settle(qtbot, panel)
    assert two.state.training.micro_batch == 2 and len(two.stack._done) == depth + 2
    c.tokens.selectAll()
    qtbot.keyClicks(c.tokens, "15.6T")
    qtbot.keyClick(c.tokens, Qt.Key.Key_Return)
    settle(qtbot, panel)
    assert two.state.training.tokens == pytest.approx(15.6e12) and len(two.stack._done) == depth + 3
    qtbot.mouseClick(c.overlap, Qt.MouseButton.LeftButton)
    assert two.state.training.overlap and len(two.stack._done) == depth + 4
    for _ in range(4):
        two.undo()
    settle(qtbot, panel)
    assert two.state.training == TrainingChoice(devices=64, tokens=2e12)
    assert c.recompute.currentText() == "selective" and c.spins["micro_batch"].value() == 1 and c.tokens.text() == "2e+12"
    assert not c.overlap.isChecked()


def test_a_refused_edit_changes_nothing_and_says_why(qtbot, two):
    panel = _panel(qtbot, two)
    before, depth = two.state, len(two.stack._done)
    panel.controls.spins["micro_batch"].setValue(3)  # 1024 sequences do not divide into micro-batches of 3
    settle(qtbot, panel)
    assert two.state is before and len(two.stack._done) == depth
    assert panel.message.text().startswith("Not applied: global_batch: 1024 sequences do not divide")
    assert panel.controls.spins["micro_batch"].value() == 1  # the widget shows the state again
    panel.controls.tokens.setText("many")
    panel.controls.tokens.editingFinished.emit()
    settle(qtbot, panel)
    assert two.state is before and "Not applied: tokens: expected a number of tokens" in panel.message.text()


def test_layout_by_hand_and_a_double_clicked_row(qtbot, two):
    panel = _panel(qtbot, two)
    c = panel.controls
    best = two.results.training[0].layout
    _choose_in_combo(qtbot, c.mode, "by hand")
    settle(qtbot, panel)
    assert two.state.training.layout == (best.tp, best.pp, best.dp) and c.degrees["tp"].isEnabled()
    row = 1
    wanted = panel.table.layouts[row]
    panel.table.scrollToItem(panel.table.item(row, 1))
    rect = panel.table.visualItemRect(panel.table.item(row, 1))
    qtbot.mouseClick(panel.table.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())  # a double-click's press
    qtbot.mouseDClick(panel.table.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
    settle(qtbot, panel)
    assert two.state.training.layout == (wanted.tp, wanted.pp, wanted.dp)
    assert panel.results[0].layout == wanted and panel.table.item(0, 0).text().startswith("\u25b6 1")


def test_the_bars_are_the_training_core_s_numbers(qtbot, two):
    panel = _panel(qtbot, two)
    choice = two.state.training
    for i, r in enumerate(panel.results):
        system = SYSTEMS[(DGX, TPU)[i]]
        system = system.with_nodes(64 // system.devices) if system.devices < 64 else system
        want = train_on_system(two.model, system, DEVICES[system.device_id], choice.setup, choice.tokens,
                               assumptions=cost_assumptions(two.assumptions))
        a, k = want.analysis, want.chosen
        assert r.system.devices == 64 and r.layout == want.layout
        np.testing.assert_allclose(panel.step_bars.widths[i], a.step_parts[k], rtol=1e-12)
        assert panel.step_bars.widths[i].sum() == pytest.approx(a.step_time[k], rel=1e-12)
        memory = [a.weight_bytes[k], a.gradient_bytes[k], a.optimizer_bytes[k], a.activation_bytes[k]]
        np.testing.assert_allclose(panel.memory_bars.widths[i], np.array(memory) / 1e9, rtol=1e-12)
        assert panel.memory_bars.widths[i].sum() == pytest.approx(a.memory_bytes[k] / 1e9, rel=1e-12)
        x, _ = panel.capacity.getData()
        assert x[2 * i] == x[2 * i + 1] == pytest.approx(DEVICES[system.device_id].memory_capacity / 1e9)
    h100 = panel.results[0].analysis
    assert h100.capacity == 80e9  # the H100 SXM5's 80 GB: the red tick at 80 on the GB axis


def test_hover_shows_the_parts_with_units(qtbot, two):
    panel = _panel(qtbot, two)
    tip = hover(panel, panel.steps, panel.step_bars.widths[0].sum() / 2, 0)
    assert tip.startswith("8 x NVIDIA DGX H100, TP") and "on 64 x NVIDIA H100" in tip
    for part in STEP_PARTS:
        assert f"{part} " in tip
    assert " s + " in tip and "tokens/s" in tip and "days" in tip and "MWh" in tip and "MFU" in tip
    qtbot.wait(30)  # pyqtgraph's scene drops mouse moves closer than 10 ms (its mouseRateLimit)
    tip = hover(panel, panel.memory, panel.memory_bars.widths[1].sum() / 2, 1)
    assert tip.startswith("Google Cloud TPU v5p-128 slice") and "weights" in tip and " GB" in tip
    assert "capacity 102 GB: fits" in tip  # TPU v5p: 95 GiB of HBM = 102 GB


def test_the_empty_state_and_why_nothing_fits(qtbot):
    ws = _workspace()
    panel = _panel(qtbot, ws)
    assert panel.message.text() == EMPTY
    assert panel.steps.getAxis("bottom").labelText == "nothing to plot: no system chosen"
    assert panel.csv_text().count("\n") == 1 and panel.table.rowCount() == 0
    # one DGX, full training with nothing partitioned: no layout of 70B fits in 8 x 80 GB
    ws.execute(SetSystem(SystemChoice(system_ids=(DGX,))))
    ws.execute(SetTraining(TrainingChoice(zero=0, recompute="none", global_batch=64, seq_len=8192)))
    settle(qtbot, panel)
    text = panel.message.text()
    assert "NVIDIA DGX H100: no layout fits in device memory; the fastest" in text and "try full recomputation" in text
    assert IDEAL in text and panel.memory_notes[0].toPlainText().endswith("does NOT fit")
    ws.execute(SetTraining(replace(ws.state.training, devices=60)))
    settle(qtbot, panel)
    assert "no valid training layout \u2014 devices: 60 is not a whole number" in panel.message.text()
    assert panel.step_notes[0].toPlainText() == "\u2014 no valid layout"


def test_the_table_and_the_csv(qtbot, two):
    panel = _panel(qtbot, two)
    r = panel.results[0]
    headers = [panel.table.horizontalHeaderItem(i).text() for i in range(panel.table.columnCount())]
    assert "MFU\n(%)" in headers and "time to train\n(days)" in headers and "energy to train\n(MWh)" in headers
    assert panel.table.rowCount() == len(r.order)
    k = r.chosen
    mfu = panel.table.item(0, headers.index("MFU\n(%)")).text()
    assert float(mfu) == pytest.approx(100 * r.analysis.mfu[k], rel=1e-3)
    days = panel.table.item(0, headers.index("time to train\n(days)")).text()
    assert float(days.replace(",", "")) == pytest.approx(r.cost.time_s[k] / 86400, rel=1e-3)
    lines = panel.csv_text().splitlines()
    assert "MFU [fraction]" in lines[0] and "energy to train [J]" in lines[0]
    assert len(lines) == 1 + sum(len(x.order) for x in panel.results)
    _choose_in_combo(qtbot, panel.focus_combo, "Google Cloud TPU v5p-128 slice")
    assert panel.table.rowCount() == len(panel.results[1].order)


def test_a_project_round_trip_keeps_the_training_and_its_bars(qtbot, tmp_path, monkeypatch):
    from PySide6.QtWidgets import QMessageBox

    from explorer.ui.main_window import MainWindow

    monkeypatch.setattr(QMessageBox, "question", lambda *a, **k: QMessageBox.StandardButton.Discard)
    lookup = lambda wanted: [DEVICES[i] for i in wanted if i in DEVICES]
    win = MainWindow(Workspace(lookup=lookup), None, panels=(TrainingPanel,))
    qtbot.addWidget(win)
    win.new_from_template("llama3-8b")
    ws = win.workspace
    ws.execute(SetSystem(SystemChoice(system_ids=(DGX,), nodes=2)))
    choice = TrainingChoice(tokens=1e12, global_batch=256, zero=3, recompute="full", layout=(8, 1, 2))
    ws.execute(SetTraining(choice))
    panel = win.panel(TrainingPanel)  # its tab never shown: built when asked for
    panel.flush()
    widths = panel.step_bars.widths.copy()
    assert widths.shape == (1, len(STEP_PARTS)) and widths.sum() > 0
    assert win.controller.save_as(tmp_path / "train")
    assert win.new_project() and ws.state.training == TrainingChoice()
    assert win.open_project(tmp_path / "train.hwproj")
    panel.flush()
    assert ws.state.training == choice and panel.results[0].layout == TrainingLayout(8, 1, 2)
    np.testing.assert_allclose(panel.step_bars.widths, widths, rtol=1e-12)
    assert panel.controls.mode.currentText() == "by hand" and panel.controls.degrees["dp"].value() == 2


def test_the_panel_follows_the_times_switch(qtbot, two):
    """Under the calibrated model the DGX H100's bars are the training core's with the H100's fitted curves; the
    TPU v5p has none and keeps its ideal step; the title says which model it shows."""
    panel = _panel(qtbot, two)
    ideal = [b.sum() for b in panel.step_bars.widths]
    assert panel.model_caption() == "ideal model"
    two.set_assumptions(time_model="calibrated")
    settle(qtbot, panel)
    assert panel.model_caption() == "calibrated model"
    choice = two.state.training
    system = SYSTEMS[DGX].with_nodes(8)
    want = train_on_system(two.model, system, DEVICES[system.device_id],
                           replace(choice.setup, time_model="calibrated"), choice.tokens,
                           assumptions=cost_assumptions(two.assumptions))
    np.testing.assert_allclose(panel.step_bars.widths[0], want.analysis.step_parts[want.chosen], rtol=1e-12)
    assert panel.step_bars.widths[0].sum() > ideal[0]
    assert panel.step_bars.widths[1].sum() == pytest.approx(ideal[1], rel=1e-12)
    two.execute(SetSystem(SystemChoice(system_ids=(TPU,))))  # no chosen system's device calibrated
    settle(qtbot, panel)
    assert panel.model_caption() == "calibrated model (no system's device calibrated: ideal times)"
