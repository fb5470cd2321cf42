"""The four analysis panels: curve data from the shared analysis, selection sync, live update, export."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
from PySide6.QtCore import QPointF, Qt
from PySide6.QtWidgets import QApplication

from explorer.core.hardware.device_file import device_from_dict
from explorer.core.session.commands import ReplaceLayer, SelectDevices
from explorer.core.session.workspace import Assumptions, Workspace
from explorer.core.workload.model import LayerSpec, Model
from explorer.ui.panels import PANELS, AnalysisControls, CostPanel, EnergyPanel, RooflinePanel, TilingPanel

GPU = {
    "id": "gpu",
    "name": "Test GPU",
    "vendor": "t",
    "kind": "gpu",
    "peak": {"fp16": "312 TFLOP/s", "tf32": "156 TFLOP/s"},
    "tdp": "400 W",
    "memory": [
        {"name": "HBM", "role": "offchip", "capacity": "80 GB", "bandwidth": "2039 GB/s"},
        {"name": "L2", "role": "onchip", "capacity": "40 MB", "bandwidth": "7 TB/s"},
    ],
    "matrix_engine": {"type": "tensor_core", "sm_count": 108, "block_tile": {"m": 128, "n": 128}},
}
NPU = {
    "id": "npu",
    "name": "Test NPU",
    "vendor": "t",
    "kind": "npu",
    "peak": {"fp16": "100 TFLOP/s"},
    "price": "8000 USD",
    "tdp": "200 W",
    "memory": [{"name": "DRAM", "role": "offchip", "capacity": "16 GB", "bandwidth": "1 TB/s"}],
    "matrix_engine": {"type": "systolic", "rows": 128, "cols": 128, "dataflow": "ws", "units": 1},
}


def small_model() -> Model:
    return Model.make(
        "small",
        {"tokens": 256, "hidden": 129},
        [
            LayerSpec.make("dense", "up", in_features=129, out_features=512),
            LayerSpec.make("gelu", "act"),
            LayerSpec.make("dense", "down", in_features=512, out_features=129),
            LayerSpec.make("layernorm", "ln"),
        ],
    )


@pytest.fixture
def ws():
    devices = {d["id"]: device_from_dict(d) for d in (GPU, NPU)}
    w = Workspace(
        small_model(),
        lookup=lambda ids: [devices[i] for i in ids if i in devices],
        assumptions=Assumptions(precision="fp16"),
    )
    w.select_devices(["gpu", "npu"])
    return w


def make(qtbot, cls, ws, size=(1000, 700)):
    panel = cls(ws)
    qtbot.addWidget(panel)
    panel.resize(*size)
    panel.show()
    qtbot.waitExposed(panel)
    settle(qtbot, panel)
    return panel


def settle(qtbot, *panels):
    qtbot.waitUntil(lambda: not any(p.pending for p in panels), timeout=2000)


# ------------------------------------------------------------------------------------------------ shared
def test_panels_tuple_titles_and_empty_workspace(qtbot):
    assert [p.__name__ for p in PANELS] == ["RooflinePanel", "EnergyPanel", "TilingPanel", "CostPanel", "FidelityPanel",
                                            "SystemsPanel", "TrainingPanel", "DesignSpacePanel", "ServingPanel"]
    empty = Workspace(small_model())
    for cls in [c for c in PANELS if c.title not in ("Systems", "Training")]:  # Systems and Training size on
        # systems, not devices (tests/ui/test_systems_panel.py)
        assert cls.title
        panel = make(qtbot, cls, empty, (600, 400))
        assert "Select one or more devices" in panel.message.text()
        assert panel.csv_text().count("\n") == 1  # the header only


def test_one_edit_is_one_redraw_per_panel(qtbot, ws):
    panels = [make(qtbot, cls, ws) for cls in PANELS]
    before = [p.redraws for p in panels]
    runs = [p.estimator.runs if hasattr(p, "estimator") else 0 for p in panels]
    spec = ws.model.layers[0]
    ws.execute(ReplaceLayer(0, spec.with_params(bias=False)))
    ws.set_assumptions(batch=2)  # a burst before the event loop runs: still one redraw
    assert all(p.pending for p in panels)
    settle(qtbot, *panels)
    # the Serving panel draws once more when its estimates come back from the worker thread (one run per edit)
    extra = [p.estimator.runs - r if hasattr(p, "estimator") else 0 for p, r in zip(panels, runs)]
    assert all(e in (0, 1) for e in extra)
    assert [p.redraws for p in panels] == [b + 1 + e for b, e in zip(before, extra)]


def test_a_hidden_panel_draws_when_shown_and_is_current_when_read(qtbot, ws):
    shown, hidden = make(qtbot, RooflinePanel, ws), make(qtbot, EnergyPanel, ws)
    hidden.hide()  # as a tab behind another
    before = (shown.redraws, hidden.redraws)
    ws.set_assumptions(batch=4)
    settle(qtbot, shown, hidden)
    assert (shown.redraws, hidden.redraws) == (before[0] + 1, before[1])  # only what one can see is drawn
    hidden.csv_text()  # reading its data draws it first
    assert hidden.redraws == before[1] + 1 and "batch 4" in hidden.per_layer.plot_title.text
    ws.set_assumptions(batch=8)
    hidden.show()
    settle(qtbot, hidden)
    assert hidden.redraws == before[1] + 2 and "batch 8" in hidden.per_layer.plot_title.text


def test_export_png_svg_and_copy_csv(qtbot, ws, tmp_path):
    for cls in PANELS:
        panel = make(qtbot, cls, ws)
        png, svg = tmp_path / f"{cls.__name__}.png", tmp_path / f"{cls.__name__}.svg"
        panel.export_png(png)
        panel.export_svg(svg)
        assert png.stat().st_size > 2000 and png.read_bytes()[:4] == b"\x89PNG"
        assert b"<svg" in svg.read_bytes()[:2000]
        panel.copy_csv()
        text = QApplication.clipboard().text()
        assert text == panel.csv_text() and (text.count("\n") > 2 or cls.title in ("Systems", "Fidelity", "Training"))
        # no system chosen; no trace imported
    roofline_csv = make(qtbot, RooflinePanel, ws).csv_text().splitlines()[0]
    assert "intensity (FLOP/byte)" in roofline_csv and "attainable (FLOP/s)" in roofline_csv


def _ink_span(image, rect, scale: float) -> tuple[int, int]:
    """First and last column with ink (darker than the white background) inside ``rect`` (scene coordinates)
    of an image of the canvas at ``scale`` device pixels per pixel."""
    top, bottom = int(rect.top() * scale) + 1, int(rect.bottom() * scale) - 1
    columns = [x for x in range(int(rect.left() * scale), int(rect.right() * scale))
               if any(image.pixelColor(x, y).lightness() < 200 for y in range(top, bottom, 2))]
    return columns[0], columns[-1]


def test_png_export_scales_text_drawn_at_screen_size(qtbot, ws, tmp_path):
    """Titles, legends and labels ignore the view's zoom; at twice the resolution they are twice as wide."""
    from PySide6.QtGui import QImage

    panel = make(qtbot, EnergyPanel, ws)
    band = panel.per_layer.titleLabel.sceneBoundingRect()  # the title and its key
    shot = panel.graphics.grab().toImage()
    panel.export_png(tmp_path / "energy.png")
    image = QImage(str(tmp_path / "energy.png"))
    assert (image.width(), image.height()) == (2 * shot.width(), 2 * shot.height())
    left, right = _ink_span(shot, band, 1)
    left2, right2 = _ink_span(image, band, 2)
    assert right2 - left2 == pytest.approx(2 * (right - left), rel=0.06)
    assert left2 == pytest.approx(2 * left, abs=6)  # in the same place


# ------------------------------------------------------------------------------------------------ roofline
def test_roofline_curves_are_the_analysis(qtbot, ws):
    panel = make(qtbot, RooflinePanel, ws)
    a = ws.analysis
    roof_x, roof_y = panel.devices[0].roof.getOriginalDataset()  # linear units; the plot shows log10
    ridge = 312e12 / 2039e9
    assert roof_x[1] == pytest.approx(ridge) and roof_y.tolist()[1:] == [312e12, 312e12]
    assert roof_y[0] == pytest.approx(roof_x[0] * 2039e9)
    shown_x, _ = panel.devices[0].roof.getData()
    assert shown_x[1] == pytest.approx(math.log10(ridge))  # log mode maps the data, not the view
    others_x, others_y = panel.devices[0].others.getOriginalDataset()
    assert others_y.tolist() == [156e12, 156e12] and others_x[0] == pytest.approx(156e12 / 2039e9)
    levels_x, levels_y = panel.devices[0].levels.getOriginalDataset()  # the L2 slope
    assert levels_y[1] == pytest.approx(312e12) and levels_x[1] == pytest.approx(312 / 7)
    x, y = panel.points.getData()  # scatter points are placed in log10 coordinates
    rows = panel.result.points.rows
    assert np.allclose(10**x, a.intensity[rows]) and np.allclose(10**y, a.attainable[rows, 0])
    x0, width = panel.bands.opts["x0"], panel.bands.opts["width"]  # the regime bands, in log10 coordinates
    assert (x0[1], x0[1] + width[1]) == pytest.approx((math.log10(2), math.log10(20)))
    # hover: a point shows its numbers with units, the empty band around it the chapter's advice
    tip = panel.describe_hover(panel._hover_key(x[0], y[0]))
    assert "FLOP/byte" in tip and "FLOP/s" in tip and "recommended" in tip
    # "up" and "down" (129 x 512 and 512 x 129) sit on the same spot: the tip is the one drawn on top
    top = int(np.flatnonzero(np.isclose(x, x[0], atol=1e-3) & np.isclose(y, y[0], atol=1e-3))[-1])
    assert top > 0
    assert tip.startswith(f"{panel.result.points.names[top]} (")
    band = panel.describe_hover(panel._hover_key(math.log10(0.5), math.log10(1e15)))
    assert "very low" in band and "fusion" in band  # I < 2: mandatory fusion
    ridge = panel.describe_hover(panel._hover_key(math.log10(ridge), math.log10(312e12)))
    assert "ridge 153 FLOP/byte" in ridge and "2.04 TB/s" in ridge


def test_clicking_a_point_selects_its_layer_everywhere(qtbot, ws):
    roof = make(qtbot, RooflinePanel, ws)
    energy = make(qtbot, EnergyPanel, ws)
    tiling = make(qtbot, TilingPanel, ws)
    down = ws.analysis.table.names.index("down")
    i = int(np.flatnonzero(roof.result.points.rows == down)[0])
    x, y = roof.points.getData()
    scene_pos = roof.plot.vb.mapViewToScene(QPointF(x[i], y[i]))
    view_pos = roof.graphics.mapFromScene(scene_pos)
    qtbot.mouseClick(roof.graphics.viewport(), Qt.MouseButton.LeftButton, pos=view_pos)
    assert ws.focused_layer == 2
    settle(qtbot, roof, energy, tiling)
    rx, _ = roof.focus_ring.getData()
    assert rx.tolist() == [x[i]]
    assert energy.focus_bars.opts["y"].tolist() == [float(down)]
    assert tiling.view.row == down and tiling.operator.currentData() == down
    # and back: selecting in the workspace (the builder) moves every highlight
    ws.focus_layer(0)
    settle(qtbot, roof, energy, tiling)
    up = ws.analysis.table.names.index("up")
    assert roof.focus_ring.getData()[0].tolist() == [x[int(np.flatnonzero(roof.result.points.rows == up)[0])]]
    assert energy.focus_bars.opts["y"].tolist() == [float(up)]
    assert tiling.view.row == up


def test_live_update_after_an_edit_and_a_precision_change(qtbot, ws):
    panel = make(qtbot, RooflinePanel, ws)
    old = panel.points.getData()[0].copy()
    ws.execute(ReplaceLayer(0, ws.model.layers[0].with_params(out_features=2048)))
    ws.execute(ReplaceLayer(2, ws.model.layers[2].with_params(in_features=2048)))
    settle(qtbot, panel)
    a = ws.analysis
    x, _ = panel.points.getData()
    assert not np.allclose(x, old)
    assert np.allclose(10**x, a.intensity[panel.result.points.rows])
    ws.set_assumptions(precision="tf32")
    settle(qtbot, panel)
    assert panel.devices[0].roof.getOriginalDataset()[1][-1] == 156e12  # the TF32 ceiling is now the roof
    assert "tf32" in panel.message.text()
    assert "Test NPU: no tf32 peak" in panel.message.text()  # says what it cannot draw
    ws.undo()
    settle(qtbot, panel)
    assert panel.devices[0].roof.getOriginalDataset()[1][-1] == 312e12


def test_device_selector_focuses_the_device_everywhere(qtbot, ws):
    roof = make(qtbot, RooflinePanel, ws)
    energy = make(qtbot, EnergyPanel, ws)
    energy.device_combo.setCurrentIndex(1)
    assert ws.focused_device == "npu"
    settle(qtbot, roof, energy)
    assert roof.device_combo.currentData() == "npu"
    assert roof.result.device_index == 1 and energy.view.device_id == "npu"
    y = roof.points.getData()[1]
    assert np.allclose(10**y, ws.analysis.attainable[roof.result.points.rows, 1])
    # the selector follows the selected devices, in their order, whatever changed
    for ids in (["npu", "gpu"], ["gpu"], ["npu", "gpu"], [], ["gpu", "npu"]):
        ws.select_devices(ids)
        roof.device_combo.sync()
        combo = roof.device_combo
        assert [combo.itemData(i) for i in range(combo.count())] == ids
        assert [combo.itemText(i) for i in range(combo.count())] == [
            {"gpu": "Test GPU", "npu": "Test NPU"}[i] for i in ids
        ]
        assert combo.currentData() == (ws.focused_device if ids else None)


# ------------------------------------------------------------------------------------------------ energy
def test_energy_bars_and_editable_table(qtbot, ws):
    panel = make(qtbot, EnergyPanel, ws)
    a = ws.analysis
    stack = panel.layer_stack
    widths = stack.widths[:, :3]  # HBM, L2, arithmetic
    assert np.allclose(widths[:, 0], a.level_energy[:, 0, 0] * a.count)
    assert np.allclose(widths.sum(axis=1), a.energy[:, 0] * a.count)
    assert np.allclose(stack.lefts[:, 1], widths[:, 0])  # stacked
    assert np.allclose(stack.lefts[:, 2], widths[:, 0] + widths[:, 1])
    assert panel.total_stack.widths[:, 0].sum() == pytest.approx(a.totals.energy_by_level[:, 0].sum())
    assert re.search(r"HBM: [\d.]+ [µmn]?J\n", panel._describe_bar(0))  # numbers with units
    ladder = dict(zip([e.label for e in panel._ladder_entries], panel.ladder_bars.opts["width"]))
    assert ladder["DRAM read"] == pytest.approx(math.log10(640) + 2)  # log10(pJ) above the 0.01 pJ baseline
    # edit HBM energy: 160 -> 320 pJ/B (a what-if on the session's device)
    before = a.totals.energy_by_level[0, 0]
    assert panel.table.item(0, 3).text().startswith("default: DRAM 640 pJ")
    panel.table.item(0, 1).setText("320 pJ/B")
    settle(qtbot, panel)
    assert ws.analysis.totals.energy_by_level[0, 0] == pytest.approx(2 * before)
    assert panel.table.item(0, 1).text() == "320 pJ/B"
    assert panel.table.item(0, 3).text() == "entered by the user (no source)"
    panel.table.item(0, 1).setText("3 kg")
    assert "Not applied" in panel.message.text() and "energy" in panel.message.text()
    assert panel.table.item(0, 1).text() == "320 pJ/B"
    panel.grouping.setCurrentText("per layer")
    settle(qtbot, panel)
    assert len(panel.layer_stack.widths) == len(ws.model.layers)


# ------------------------------------------------------------------------------------------------ tiling
def test_tiling_sweep_fold_and_suggestion(qtbot, ws):
    ws.focus_device("npu")
    ws.focus_layer(0)
    panel = make(qtbot, TilingPanel, ws)
    v = panel.view
    assert v.row_name == "up" and (v.rows_dim, v.cols_dim) == ("K", "N")
    x, y = panel.curve.getData()
    assert v.current_value == 129 and x[0] <= 129 <= x[-1]
    assert y[list(x).index(129.0)] == pytest.approx(ws.analysis.mapping_efficiency[0, 1] * 100)
    assert panel.current_line.value() == 129
    image = panel.fold_image.image
    assert image.shape[:2] == (128, 128)
    active = (image == np.array([44, 160, 44], dtype=np.uint8)).all(axis=2)
    assert (
        active.sum() == 1 * 128
    )  # last fold along K: 129 - 128 = 1 row active across N = 512 (4 full folds)
    assert "reshape to 128" in panel.message.text() and "pad to 256" in panel.message.text()
    bars = panel.bars.opts
    assert len(bars["y"]) == 2 and bars["width"][0] == pytest.approx(v.efficiency * 100)
    panel._pick_bar(1)  # clicking the second GEMM's bar selects its layer
    assert ws.focused_layer == 2
    settle(qtbot, panel)
    assert panel.view.row_name == "down"
    assert panel.focus_bars.opts["y"].tolist() == [1.0]  # the outline is on the focused layer's bar
    ws.select_devices([])  # no device: the bars go; they come back with their outline
    settle(qtbot, panel)
    assert len(panel.focus_bars.opts["y"]) == 0
    ws.select_devices(["gpu", "npu"])
    ws.focus_device("npu")
    settle(qtbot, panel)
    assert panel.focus_bars.opts["y"].tolist() == [1.0]
    ws.focus_device("gpu")
    settle(qtbot, panel)
    assert panel.view.engine == "tensor_core"


# ------------------------------------------------------------------------------------------------ cost
def test_cost_table_dashes_with_reasons_and_price_edit(qtbot, ws):
    panel = make(qtbot, CostPanel, ws)
    table = panel.table
    headers = [table.horizontalHeaderItem(j).text() for j in range(table.columnCount())]
    col = {h.replace("\n", " "): j for j, h in enumerate(headers)}
    row = {table.item(r, 0).text(): r for r in range(table.rowCount())}
    gpu, npu = row["Test GPU"], row["Test NPU"]
    assert table.item(gpu, col["Price (USD)"]).text() == "\u2014"
    assert "no list price" in table.item(gpu, col["USD per peak TFLOP/s"]).toolTip()
    assert table.item(npu, col["USD per peak TFLOP/s"]).text() == "$80.00"  # 8000 / 100
    assert "no price" in panel.notes["per_tflops"][0].toPlainText()
    assert panel.bars["peak"].opts["width"].tolist() == pytest.approx([0.0, 80.0])
    # sorting by a cost column puts the unknowns last
    table.sortByColumn(col["USD per peak TFLOP/s"], Qt.SortOrder.AscendingOrder)
    assert [table.item(r, 0).text() for r in range(2)] == ["Test NPU", "Test GPU"]
    # a price entered in the table is a what-if that flows through
    row = {table.item(r, 0).text(): r for r in range(table.rowCount())}
    table.item(row["Test GPU"], col["Price (USD)"]).setText("$15,600")
    settle(qtbot, panel)
    assert panel.result.price_per_peak[0] * 1e12 == pytest.approx(50.0)
    row = {table.item(r, 0).text(): r for r in range(table.rowCount())}
    assert table.item(row["Test GPU"], col["USD per peak TFLOP/s"]).text() == "$50.00"
    assert table.item(row["Test GPU"], col["Price (USD)"]).text() == "$15,600 *"  # marked: no cited source
    assert (
        table.item(row["Test NPU"], col["Price (USD)"]).text() == "$8,000 *"
    )  # a dict device: no source either
    assert "TCO" in panel._describe(0, "tco") and "kWh" in panel._describe(0, "tco")
    # a refused price is put back as it was, though no figure changed
    table.item(row["Test GPU"], col["Price (USD)"]).setText("3 kg")
    assert "Not applied" in panel.message.text()
    assert table.item(row["Test GPU"], col["Price (USD)"]).text() == "$15,600 *"


def test_cost_table_rows_follow_devices_and_assumptions(qtbot, ws):
    panel = make(qtbot, CostPanel, ws)
    table = panel.table
    headers = [table.horizontalHeaderItem(j).text().replace("\n", " ") for j in range(table.columnCount())]
    tco = next(j for j, h in enumerate(headers) if h.startswith("TCO"))

    def shown(name):
        r = next(r for r in range(table.rowCount()) if table.item(r, 0).text() == name)
        return table.item(r, tco).text()

    before = shown("Test NPU")
    ws.execute(SelectDevices(("npu",)))  # a row goes; the other keeps its figures
    settle(qtbot, panel)
    assert table.rowCount() == 1 and shown("Test NPU") == before
    ws.execute(SelectDevices(("gpu", "npu")))
    settle(qtbot, panel)
    assert table.rowCount() == 2 and shown("Test NPU") == before
    ws.set_assumptions(years=6.0)  # a longer life: more electricity, a new TCO in every row
    settle(qtbot, panel)
    i = panel.result.ids.index("npu")
    assert headers != [table.horizontalHeaderItem(j).text().replace("\n", " ") for j in range(table.columnCount())]
    assert shown("Test NPU") == f"${panel.result.tco[i]:,.0f}" and shown("Test NPU") != before


def test_cost_assumption_boxes_are_undoable_commands(qtbot, ws):
    panel = make(qtbot, CostPanel, ws)
    panel.inputs["years"].setValue(5)
    assert ws.assumptions.years == 5 and ws.stack.undo_text == "change assumptions"
    settle(qtbot, panel)
    assert panel.result.years == 5
    ws.undo()
    settle(qtbot, panel)
    assert panel.inputs["years"].value() == 3
    panel.inputs["utilization"].setValue(80)
    assert ws.assumptions.utilization == pytest.approx(0.8)


def test_devices_without_price_stay_in_the_cost_panel(qtbot, ws):
    panel = make(qtbot, CostPanel, ws)
    ws.execute(SelectDevices(("gpu",)))
    settle(qtbot, panel)
    assert panel.table.rowCount() == 1 and panel.table.item(0, 0).text() == "Test GPU"
    assert "no list price in the catalog" in panel.message.text()


# ------------------------------------------------------------------------------------------------ controls
def test_controls_issue_commands_and_follow_undo(qtbot, ws):
    controls = AnalysisControls(ws)
    qtbot.addWidget(controls)
    controls.precision.setCurrentText("tf32")
    assert ws.assumptions.precision == "tf32"
    controls.batch.setValue(4)
    controls.seq_len.setValue(64)
    controls.phase.setCurrentText("decode")
    assert (ws.assumptions.batch, ws.assumptions.seq_len, ws.assumptions.phase) == (4, 64, "decode")
    ws.undo()
    ws.undo()
    assert controls.seq_len.value() == 0 and controls.phase.currentText() == "prefill"
    assert controls.seq_len.text() == "model's"


def test_a_destroyed_panel_stops_listening(qtbot, ws):
    from shiboken6 import isValid

    panel = RooflinePanel(ws)
    panel.show()
    panel.close()
    panel.deleteLater()
    qtbot.waitUntil(lambda: not isValid(panel), timeout=2000)
    ws.focus_layer(1)  # would raise "Internal C++ object already deleted" if still connected
    ws.set_assumptions(batch=3)
    QApplication.processEvents()
    assert ws.assumptions.batch == 3
