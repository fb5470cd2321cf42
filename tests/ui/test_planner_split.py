"""The planner table reads a model that needs several units as the report does (issue 23): "SPLIT OVER N UNITS",
not FAIL; both come from check_verdict."""

from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtGui import QColor

from explorer.core.hardware.device_file import load_device_file
from explorer.core.session.workspace import Assumptions, Workspace
from explorer.core.workload.templates import get_template
from explorer.ui.planner.planner_panel import STATUS_COLORS, PlannerPanel

CATALOG = Path(__file__).resolve().parents[2] / "catalog"
IDS = ("nvidia-h100-sxm5", "nvidia-l4")


@pytest.fixture
def workspace():
    devices = {i: load_device_file(CATALOG / f"{i}.yaml") for i in IDS}
    ws = Workspace(get_template("llama2-70b").build(), lookup=lambda ids: [devices[i] for i in ids if i in devices],
                   assumptions=Assumptions(phase="decode", batch=1))
    ws.select_devices(IDS)
    return ws


def test_a_split_model_reads_split_in_the_planner_table(qtbot, workspace):
    panel = PlannerPanel(workspace)
    qtbot.addWidget(panel)
    panel.target.setText("100 tokens/s")
    panel.replan()
    rows = {panel.table.item(r, 1).text(): r for r in range(panel.table.rowCount())}
    for d in panel.result.ranked:
        mem = d.checks[0]
        # ~138 GB of FP16 weights: one 80 GB H100 or one 24 GB L4 cannot hold them; the plan splits the model
        assert mem.status == "fail" and d.shards == -(-int(mem.value) // int(mem.limit)) > 1
        cell = panel.table.item(rows[d.name], 3)
        assert cell.text().startswith(f"SPLIT OVER {d.shards} UNITS ") and "FAIL" not in cell.text()
        assert cell.foreground().color() == QColor(STATUS_COLORS["split"])
        assert d.verdicts[0] == ("split", f"SPLIT OVER {d.shards} UNITS")
    assert panel.result.by_id("nvidia-h100-sxm5").shards == 2
