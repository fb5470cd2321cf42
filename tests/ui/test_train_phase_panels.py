"""The train phase in the app: the phase combo offers it, and the roofline, energy and tiling panels show the
training step's forward, backward and Adam rows of the focused device."""

from __future__ import annotations

import numpy as np
import pytest
from test_panels import make, settle, ws  # noqa: F401 - ws: the fixture

from explorer.core.workload.train_step import part_of
from explorer.ui.panels import AnalysisControls, EnergyPanel, RooflinePanel, TilingPanel


def test_the_phase_combo_sets_train_and_the_panels_show_the_step(qtbot, ws):  # noqa: F811
    controls = AnalysisControls(ws)
    qtbot.addWidget(controls)
    roof, energy = make(qtbot, RooflinePanel, ws), make(qtbot, EnergyPanel, ws)
    forward = ws.analysis.totals.flops[0]
    index = [controls.phase.itemText(i) for i in range(controls.phase.count())].index("train")
    controls.phase.activated.emit(index)
    assert ws.assumptions.phase == "train" and ws.stack.undo_text == "set phase train"
    settle(qtbot, roof, energy)
    a = ws.analysis
    parts = part_of(a.table)
    assert set(parts) == {0, 1, 2}
    # the step: 3 x the forward (this model has no LM head) plus 12 FLOPs per parameter (Adam)
    params = a.table.total("params")
    assert a.totals.flops[0] == pytest.approx(3 * forward + 12 * params)
    names = roof.result.points.names
    assert "up (backward)" in names and "up (Adam)" in names
    # the energy panel's bars are the step's rows; grouped per layer, one bar per layer of the model
    assert len(energy.layer_stack.widths) == len(a.table)
    assert np.allclose(energy.layer_stack.widths[:, :3].sum(axis=1), a.energy[:, 0] * a.count)
    energy.grouping.setCurrentText("per layer")
    settle(qtbot, energy)
    assert len(energy.layer_stack.widths) == len(ws.model.layers)
    # the tiling panel follows a backward GEMM row (its forward shape run twice: dX and dW)
    ws.focus_device("npu")
    ws.focus_layer(0)
    tiling = make(qtbot, TilingPanel, ws)
    assert tiling.view.row_name in ("up", "up (backward)")
    ws.undo()
    settle(qtbot, roof)
    assert ws.assumptions.phase == "prefill" and "up (backward)" not in roof.result.points.names
