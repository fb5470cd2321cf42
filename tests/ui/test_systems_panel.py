"""The Systems panel through its widgets and synthesized mouse events: choosing systems (and undoing it), the bars
against the system pass's numbers, hover and click on the layouts' points, the table, the empty and error states."""

from __future__ import annotations

import gc

import numpy as np
import pytest
from PySide6.QtCore import Qt
from test_chart_mouse import click, hover
from test_panels import make, settle

from explorer.core.hardware.catalog_files import load_shipped_devices
from explorer.core.parallel.compare import bandwidth_ladder
from explorer.core.parallel.layout import Layout
from explorer.core.session.commands import SetSystem
from explorer.core.session.state import Assumptions, SystemChoice
from explorer.core.session.workspace import Workspace
from explorer.core.workload.templates import get_template
from explorer.ui.panels import PANELS, SystemsPanel
from explorer.ui.panels.systems import EMPTY
from explorer.ui.panels.systems_ladder import rung_label

DGX, L40S = "nvidia-dgx-h100", "pcie-server-8x-nvidia-l40s"
DEVICES = {d.id: d for d in load_shipped_devices()}


def _workspace(*ids: str) -> Workspace:
    ws = Workspace(get_template("llama3-70b").build(), lambda wanted: [DEVICES[i] for i in wanted if i in DEVICES],
                   Assumptions(phase="decode", batch=16, seq_len=4096))
    if ids:
        ws.execute(SetSystem(SystemChoice(system_ids=ids)))
    return ws


@pytest.fixture
def two():
    return _workspace(DGX, L40S)


def _panel(qtbot, ws) -> SystemsPanel:
    panel = make(qtbot, SystemsPanel, ws, (1400, 800))
    gc.collect()  # a picker nobody keeps would be gone now
    return panel


def _choose_in_combo(qtbot, combo, text: str) -> None:
    """Open the combo's popup and click the item ``text`` in it, as a user does."""
    index = combo.findText(text)
    assert index >= 0, f"{text!r} not offered: {[combo.itemText(i) for i in range(combo.count())]}"
    combo.showPopup()
    view = combo.view()
    qtbot.waitUntil(view.isVisible, timeout=2000)
    rect = view.visualRect(view.model().index(index, 0))
    qtbot.mouseClick(view.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
    qtbot.waitUntil(lambda: not view.isVisible(), timeout=2000)


def test_the_panel_is_listed():
    assert SystemsPanel in PANELS and SystemsPanel.title == "Systems"


def test_choosing_two_systems_through_the_widgets_and_undoing_it(qtbot):
    ws = _workspace()
    panel = _panel(qtbot, ws)
    controls = panel.controls
    _choose_in_combo(qtbot, controls.add_combo, "NVIDIA DGX H100")
    settle(qtbot, panel)
    _choose_in_combo(qtbot, controls.add_combo, "8x NVIDIA L40S PCIe server")
    settle(qtbot, panel)
    assert ws.state.system.system_ids == (DGX, L40S)
    assert [chip.property("system_id") for chip in controls.chips] == [DGX, L40S]
    assert controls.add_combo.findText("NVIDIA DGX H100") < 0  # a chosen system is not offered again
    ws.undo()
    settle(qtbot, panel)
    assert ws.state.system.system_ids == (DGX,)
    assert [chip.property("system_id") for chip in controls.chips] == [DGX]
    ws.redo()
    settle(qtbot, panel)
    qtbot.mouseClick(controls.chips[0], Qt.MouseButton.LeftButton)  # a chip removes its system
    settle(qtbot, panel)
    assert ws.state.system.system_ids == (L40S,)


def test_nodes_layout_and_options_are_each_one_undoable_command(qtbot, two):
    panel = _panel(qtbot, two)
    controls = panel.controls
    best = two.results.systems[0].layout
    _choose_in_combo(qtbot, controls.mode, "by hand")
    settle(qtbot, panel)
    assert two.state.system.layout == best and controls.degrees["tp"].isEnabled()
    controls.degrees["dp"].setValue(2)  # TP8 DP2: 16 devices on 8-device systems
    settle(qtbot, panel)
    assert two.state.system.layout == Layout(tp=8, dp=2)
    assert "no valid layout" in panel.message.text() and "tp x pp x dp" in panel.message.text()
    two.undo()
    settle(qtbot, panel)
    assert two.state.system.layout == best and controls.degrees["dp"].value() == 1
    qtbot.mouseClick(controls.overlap, Qt.MouseButton.LeftButton)
    assert two.state.system.overlap
    _choose_in_combo(qtbot, controls.mode, "best by latency")
    assert two.state.system.layout is None and two.state.system.objective == "latency"
    controls.nodes.setValue(2)
    assert two.state.system.nodes == 2
    texts = [step.command.text for step in two.stack._done]
    for _ in range(3):
        two.undo()
    settle(qtbot, panel)
    assert two.state.system.layout == best, texts
    assert not controls.overlap.isChecked() and controls.mode.currentText() == "by hand"


def test_the_bars_are_the_system_pass_numbers(qtbot, two):
    panel = _panel(qtbot, two)
    results = two.results.systems
    for i, r in enumerate(results):
        a, k = r.analysis, r.chosen
        assert panel.stack.widths[i] == pytest.approx(a.step_parts[k] * 1e3, rel=1e-12)
        assert panel.stack.widths[i].sum() == pytest.approx(a.step_time[k] * 1e3, rel=1e-12)
    assert panel.stack.widths[1].sum() > 4 * panel.stack.widths[0].sum()  # PCIe L40S vs NVLink H100
    rungs = [rung for r in results for rung in bandwidth_ladder(r)]
    bars = panel.ladder.bars.opts
    ends = np.asarray(bars["x0"]) + np.asarray(bars["width"])
    moved = np.array([rung.nbytes for rung in rungs])
    assert 10 ** ends[moved > 0] == pytest.approx(moved[moved > 0], rel=1e-9)  # log10 of the bytes
    labels = [t.text() for t in panel.ladder.labels if t.isVisible()]
    assert labels == [rung_label(rung) for rung in rungs]
    assert "3.35 TB/s \u2192" in labels[2] and labels[4].startswith("no traffic")  # HBM3; a one-node layout's IB


def test_hovering_a_bar_and_a_layout_point(qtbot, two):
    panel = _panel(qtbot, two)
    tip = hover(panel, panel.steps, panel.stack.widths[0].sum() / 2, 0)
    assert tip.startswith("NVIDIA DGX H100, TP8 PP1 DP1") and "compute" in tip and " ms" in tip
    every = two.results.system_layouts[0].analysis
    k = every.layouts.index(Layout(tp=4, dp=2))
    x, y = np.log10(every.latency[k]), np.log10(every.throughput_per_device[k])
    qtbot.wait(60)  # pyqtgraph's scene drops mouse moves that come faster than its rate limit
    tip = hover(panel, panel.scatter, x, y)
    assert tip.startswith("NVIDIA DGX H100: TP4 PP1 DP2")
    assert "tokens/s per device" in tip and "latency" in tip and " ms" in tip and "GB of 80 GB" in tip


def test_clicking_a_point_chooses_its_layout_and_keeps_every_point(qtbot, two):
    panel = _panel(qtbot, two)
    shown = len(panel._points)
    every = two.results.system_layouts[1].analysis
    k = every.layouts.index(Layout(tp=4, pp=2))
    x, y = np.log10(every.latency[k]), np.log10(every.throughput_per_device[k])
    click(qtbot, panel, panel.scatter, x, y)
    assert two.state.system.layout == Layout(tp=4, pp=2)
    settle(qtbot, panel)
    assert len(panel._points) == shown  # every layout still plotted; the stars moved to the chosen one
    stars = panel.stars.getData()
    assert stars[0][1] == pytest.approx(x) and stars[1][1] == pytest.approx(y)
    assert panel.focus == L40S and panel.table.layouts[0] == two.results.system_layouts[1].analysis.layouts[
        two.results.system_layouts[1].order[0]]
    assert panel.controls.mode.currentText() == "by hand" and panel.controls.degrees["pp"].value() == 2
    two.undo()
    settle(qtbot, panel)
    assert two.state.system.layout is None


def test_the_table_ranks_the_focused_systems_layouts_with_units(qtbot, two):
    panel = _panel(qtbot, two)
    headers = [panel.table.horizontalHeaderItem(c).text() for c in range(panel.table.columnCount())]
    assert "step\n(ms)" in headers and "per device\n(tokens/s)" in headers and "memory/device\n(GB)" in headers
    r = two.results.systems[0]
    assert panel.table.rowCount() == len(r.analysis) and panel.table.item(0, 0).text().startswith("\u25b6")
    assert panel.table.item(0, 1).text() == r.layout.label()
    row = 2
    rect = panel.table.visualItemRect(panel.table.item(row, 1))
    qtbot.mouseClick(panel.table.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())  # a double-click's press
    qtbot.mouseDClick(panel.table.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
    assert two.state.system.layout == panel.table.layouts[row]
    _choose_in_combo(qtbot, panel.focus_combo, "8x NVIDIA L40S PCIe server")
    assert panel.focus == L40S and panel.table.rowCount() == len(two.results.system_layouts[1].analysis)
    csv = panel.csv_text().splitlines()
    assert csv[0].startswith("system_id,system,device") and "step [s]" in csv[0]
    assert len(csv) == 1 + sum(len(r.analysis) for r in two.results.system_layouts)


def test_the_empty_state(qtbot):
    panel = _panel(qtbot, _workspace())
    assert panel.message.text() == EMPTY
    assert panel.stack.widths.shape[0] == 0 and panel.table.rowCount() == 0 and not panel._points
    assert panel.steps.getAxis("bottom").labelText.startswith("nothing to plot")
    assert panel.csv_text().count("\n") == 1  # the header only


def test_export_with_two_systems(qtbot, two, tmp_path):
    panel = _panel(qtbot, two)
    png, svg = tmp_path / "systems.png", tmp_path / "systems.svg"
    panel.export_png(png)
    panel.export_svg(svg)
    assert png.stat().st_size > 5000 and png.read_bytes()[:4] == b"\x89PNG"
    assert b"<svg" in svg.read_bytes()[:2000]


def test_the_calibrated_switch_times_the_systems_and_says_from_what(qtbot, two):
    """The Times switch reaches the system pass: the H100's shipped kernel curves time the DGX's compute, the
    L40S (no curves) keeps the ideal one; no link has a stored fit, so the title says 'partly calibrated' and
    'spec'; the step bars are the calibrated pass's numbers."""
    panel = _panel(qtbot, two)
    ideal = two.results.systems
    assert panel.model_caption() == "ideal model"
    two.set_assumptions(time_model="calibrated")
    qtbot.waitUntil(lambda: panel.model_caption() == "calibrated model (partly calibrated, spec)", timeout=5000)
    cal = two.results.systems
    assert cal[0].analysis.time_model == "calibrated" and cal[0].analysis.kernel_source == "calibrated"
    assert cal[1].analysis.kernel_source == "spec"
    k0, k1 = ideal[0].chosen, cal[0].chosen
    assert cal[0].analysis.compute_time[k1] != ideal[0].analysis.compute_time[k0]
    assert cal[1].analysis.compute_time[cal[1].chosen] == ideal[1].analysis.compute_time[ideal[1].chosen]
    qtbot.waitUntil(lambda: panel.stack.widths[0].sum() == pytest.approx(
        cal[0].analysis.step_time[k1] * 1e3, rel=1e-12), timeout=5000)
