"""The Systems panel's third objective: 'best by cost per million tokens' through the layout combo, the table's cost
column (a quote in the planner prices it; without one it says why), and the note when a system has no price."""

from __future__ import annotations

import gc

from test_panels import make, settle
from test_systems_panel import DGX, L40S, _choose_in_combo, _workspace

from explorer.core.analysis.procurement import Requirements
from explorer.core.session.commands import SetRequirements
from explorer.ui.panels import SystemsPanel


def _panel(qtbot, ws) -> SystemsPanel:
    panel = make(qtbot, SystemsPanel, ws, (1400, 800))
    gc.collect()
    return panel


def _cost_column(panel) -> list[str]:
    t = panel.table
    col = t.columnCount() - 1
    assert t.horizontalHeaderItem(col).text().startswith("cost\n(USD/M tokens)")
    return [t.item(row, col).text() for row in range(t.rowCount())]


def test_choosing_cost_through_the_combo_and_pricing_a_system(qtbot):
    ws = _workspace(DGX, L40S)
    panel = _panel(qtbot, ws)
    _choose_in_combo(qtbot, panel.controls.mode, "best by cost per million tokens")
    settle(qtbot, panel)
    assert ws.state.system.objective == "cost" and ws.state.system.layout is None
    assert panel.controls.mode.currentText() == "best by cost per million tokens"
    # the catalog prices the H100 (a street price) but not the L40S: the L40S is unknown, and the note says how
    # it is ranked
    (listed, _l40s) = ws.results.system_costs
    assert listed.price_source == "list price" and listed.price_per_device == 25_000.0
    assert "\u2014" not in _cost_column(panel)
    assert "cost unknown (no price for nvidia-l40s" in panel.message.text()
    assert "ranked by throughput after priced layouts" in panel.message.text()
    ws.execute(SetRequirements(Requirements(price={"nvidia-h100-sxm5": 30_000.0})))
    settle(qtbot, panel)
    (dgx_cost, _l40s) = ws.results.system_costs
    shown = _cost_column(panel)
    order = [int(k) for k in ws.results.system_layouts[0].order]
    assert shown == [f"{dgx_cost.cost_per_million[k]:,.4g}" for k in order]
    fitting = [float(x) for x, k in zip(shown, order) if ws.results.system_layouts[0].analysis.fits[k]]
    assert fitting == sorted(fitting)  # ranked by cost
    assert "nvidia-h100-sxm5" not in panel.message.text() and "no price for nvidia-l40s" in panel.message.text()
    ws.undo()
    ws.undo()
    settle(qtbot, panel)
    assert panel.controls.mode.currentText() == "best by throughput per device"
