"""The planner panel and File -> Export report (pytest-qt, offscreen)."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from PySide6.QtGui import QColor

from explorer.core.analysis.procurement import Requirements, plan
from explorer.core.hardware.device_file import load_device_file
from explorer.core.session.workspace import Assumptions, Workspace
from explorer.core.workload.templates import get_template
from explorer.ui.planner.planner_panel import STATUS_COLORS, PlannerPanel
from explorer.ui.report_export import run_with_progress, start_export

CATALOG = Path(__file__).resolve().parents[2] / "catalog"
IDS = ("nvidia-a100-sxm4-80gb", "nvidia-h100-sxm5", "nvidia-l4")


@pytest.fixture
def workspace():
    devices = {i: load_device_file(CATALOG / f"{i}.yaml") for i in IDS}
    ws = Workspace(get_template("gpt2").build(), lookup=lambda ids: [devices[i] for i in ids if i in devices],
                   assumptions=Assumptions(phase="decode", batch=8))
    ws.select_devices(IDS)
    return ws


def make_panel(qtbot, workspace):
    panel = PlannerPanel(workspace)
    qtbot.addWidget(panel)
    panel.replan()
    return panel


def test_planner_table_matches_the_core_plan(qtbot, workspace):
    panel = make_panel(qtbot, workspace)
    panel.target.setText("20000 tokens/s")
    panel.latency.setText("50 ms")
    panel.set_quote("nvidia-h100-sxm5", "30000", "4.00")
    panel.set_quote("nvidia-l4", "2500")
    panel.replan()
    assert not panel.pending
    expected = plan(workspace.analysis, Requirements(20000.0, "tokens/s", latency=0.05, years=3.0,
                                                     electricity_usd_per_kwh=0.12, pue=1.3,
                                                     price={"nvidia-h100-sxm5": 30000.0, "nvidia-l4": 2500.0},
                                                     cloud_price={"nvidia-h100-sxm5": 4.0 / 3600}),
                    workspace.assumptions)
    table = panel.table
    assert table.rowCount() == 3
    for r, d in enumerate(expected.ranked):
        assert table.item(r, 1).text() == d.name
        assert table.item(r, 2).text() == str(d.units)
        assert table.item(r, 10).text() == d.reason
        assert table.item(r, 3).text().startswith("PASS")
        assert table.item(r, 3).foreground().color() == QColor(STATUS_COLORS["pass"])
    assert panel.result.ranked[0].id == "nvidia-l4"
    assert panel.message.text().startswith("Recommended: NVIDIA L4 24GB")
    h100_row = [table.item(r, 1).text() for r in range(3)].index("NVIDIA H100 SXM5 80GB")
    assert table.item(h100_row, 9).text().startswith("buy (")


def test_failing_checks_are_red_with_their_reason(qtbot, workspace):
    panel = make_panel(qtbot, workspace)
    panel.target.setText("2000 tokens/s")
    panel.latency.setText("0.5 ms")  # the L4's 565 MB / 300 GB/s = 1.88 ms floor fails it
    panel.replan()
    rows = {panel.table.item(r, 1).text(): r for r in range(panel.table.rowCount())}
    l4 = rows["NVIDIA L4 24GB"]
    assert panel.table.item(l4, 4).text().startswith("FAIL 1.88 ms")
    assert panel.table.item(l4, 4).foreground().color() == QColor(STATUS_COLORS["fail"])
    assert panel.table.item(l4, 10).text().startswith("infeasible: bandwidth (latency floor) 1.883 ms exceeds")
    assert l4 == 2  # infeasible devices rank last


def test_bad_fields_show_errors_and_phase_mismatch_offers_a_switch(qtbot, workspace):
    panel = make_panel(qtbot, workspace)
    panel.target.setText("2000 kg")
    panel.replan()
    assert panel.result is None and not panel.target_error.isHidden()
    assert "expected a rate" in panel.target_error.text()
    panel.target.setText("100 inferences/s")
    panel.replan()
    assert panel.result is None and not panel.switch_phase.isHidden()
    panel.switch_phase.click()
    assert workspace.assumptions.phase == "prefill"
    panel.replan()
    assert panel.result is not None and panel.result.unit == "inferences/s"
    panel.set_quote("nvidia-l4", "-5")
    panel.replan()
    # a bad cell is marked and left out; the ranking stays (issue 23)
    assert panel.result is not None and "must be a positive amount" in panel.quote_error.text()
    assert "nvidia-l4" not in panel.result.requirements.price
    assert "must be a positive amount" in panel.quotes.item(_quote_row(panel, "nvidia-l4"), 1).toolTip()


def _quote_row(panel, device_id):
    from PySide6.QtCore import Qt

    return next(r for r in range(panel.quotes.rowCount())
                if panel.quotes.item(r, 0).data(Qt.ItemDataRole.UserRole) == device_id)


def test_planner_quotes_read_every_money_form_and_a_bad_cell_blanks_nothing(qtbot, workspace):
    panel = make_panel(qtbot, workspace)
    panel.target.setText("20000 tokens/s")
    ids = [r for r in workspace.analysis.devices.ids]
    panel.set_quote(ids[0], "$30k", "$4.10/h")
    panel.set_quote(ids[1], "3 GB", "4.10 USD/h")
    panel.replan()
    req = panel.result.requirements
    assert req.price == {ids[0]: 30000.0}
    assert req.cloud_price == {ids[0]: 4.10 / 3600, ids[1]: 4.10 / 3600}
    assert "is a byte count, not a money amount" in panel.quotes.item(_quote_row(panel, ids[1]), 1).toolTip()
    assert panel.quotes.item(_quote_row(panel, ids[0]), 1).toolTip() == ""
    assert len(panel.result.devices) == len(ids)


def test_planner_follows_the_workspace(qtbot, workspace):
    panel = make_panel(qtbot, workspace)
    panel.show()
    qtbot.waitExposed(panel)
    panel.target.setText("2000 tokens/s")
    panel.replan()
    workspace.select_devices(IDS[:2])
    assert panel.pending
    panel.replan()
    assert panel.table.rowCount() == 2 and panel.quotes.rowCount() == 2
    panel.hide()  # off screen (a tab behind another): it plans when it comes back, not on every change
    workspace.select_devices(IDS)
    assert not panel.pending and panel.table.rowCount() == 2
    panel.show()
    qtbot.waitUntil(lambda: panel.table.rowCount() == len(IDS), timeout=2000)


def test_export_runs_in_a_worker_and_writes_the_file(qtbot, workspace, tmp_path):
    req = Requirements(20000.0, "tokens/s", price={"nvidia-l4": 2500.0})
    job = start_export(workspace, tmp_path / "r.csv", req)
    seen = []
    job.progress.connect(lambda p, m: seen.append(p))
    qtbot.waitUntil(lambda: job.done, timeout=30_000)
    assert job.error is None
    assert job.paths == [str(tmp_path / "r.csv"), str(tmp_path / "r-layers.csv")]
    assert seen and seen[-1] == 100
    rows = list(csv.DictReader((tmp_path / "r.csv").open(encoding="utf-8")))
    assert [r["device_id"] for r in rows] == list(IDS)
    assert float(rows[0]["Latency per decode step (one unit) [s]"]) == workspace.analysis.totals.time[0]


def test_export_with_progress_dialog_writes_a_pdf(qtbot, workspace, tmp_path):
    job = run_with_progress(None, workspace, tmp_path / "r.pdf")
    qtbot.waitUntil(lambda: job.done, timeout=30_000)
    assert job.error is None
    qtbot.wait(10)
    assert (tmp_path / "r.pdf").read_bytes().startswith(b"%PDF")


def test_export_to_an_unwritable_path_says_why(qtbot, workspace, tmp_path):
    from explorer.report import ReportError

    with pytest.raises(ReportError, match="does not exist"):
        start_export(workspace, tmp_path / "missing" / "r.pdf")
