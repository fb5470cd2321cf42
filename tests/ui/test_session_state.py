"""The trace and the planner's requirements are session state: a project saved with both reopens with both in a
fresh window (another machine: its own catalog, the trace file gone), and loading a trace and editing a requirement
are undone and redone from the Edit menu."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from PySide6.QtWidgets import QFileDialog, QMessageBox

from explorer.core.analysis.procurement import Requirements
from explorer.core.session.workspace import Assumptions, Workspace
from explorer.core.workload.model import load_model_file
from explorer.ui.app import device_lookup
from explorer.ui.main_window import MainWindow
from explorer.ui.panels import RooflinePanel
from explorer.ui.planner.planner_panel import PlannerPanel

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "traces"
IDS = ("nvidia-a100-sxm4-80gb", "nvidia-h100-sxm5", "nvidia-l4")


@pytest.fixture
def make_window(qtbot, shared_repository, monkeypatch):
    monkeypatch.setattr(QMessageBox, "question", lambda *a, **k: QMessageBox.StandardButton.Discard)

    def make():
        ws = Workspace(lookup=device_lookup(shared_repository), assumptions=Assumptions())
        win = MainWindow(ws, shared_repository)
        qtbot.addWidget(win)
        return win

    return make


def roofline(window) -> RooflinePanel:
    panel = next(d.widget() for d in window.panel_docks if isinstance(d.widget(), RooflinePanel))
    panel.flush()
    return panel


def load_trace(window, monkeypatch, path: Path) -> None:
    monkeypatch.setattr(QFileDialog, "getOpenFileName", lambda *a, **k: (str(path), ""))
    window.actions.import_trace.trigger()


def test_a_project_reopens_with_its_trace_and_requirements(make_window, monkeypatch, tmp_path):
    window = make_window()
    window.new_from_template("gpt2")
    ws = window.workspace
    ws.select_devices(IDS)
    ws.set_assumptions(phase="decode", batch=8)
    copy = tmp_path / "profile.json"
    shutil.copy(FIXTURES / "torch_cpu_trace.json", copy)
    load_trace(window, monkeypatch, copy)
    planner: PlannerPanel = window.planner
    planner.target.setText("20000 tokens/s")
    planner.latency.setText("50 ms")
    planner.set_quote("nvidia-h100-sxm5", "30000", "4.00")
    planner.replan()
    saved_plan = [planner.table.item(r, 1).text() for r in range(planner.table.rowCount())]
    assert window.controller.save_as(tmp_path / "study")
    data = json.loads((tmp_path / "study.hwproj").read_text())
    assert data["format"] == 9 and len(data["trace"]["events"]["name"]) == 150
    assert data["requirements"]["target"] == 20000.0 and data["requirements"]["price"] == {"nvidia-h100-sxm5": 30000.0}
    copy.unlink()  # the other machine does not have the trace file

    other = make_window()
    assert other.open_project(tmp_path / "study.hwproj")
    ows = other.workspace
    assert ows.trace == ws.trace and ows.trace.source_format == "chrome"
    assert other.trace_panel.trace is ows.trace and len(other.trace_panel.timeline.bars) > 0
    assert ows.requirements == Requirements(20000.0, "tokens/s", latency=0.05, years=3.0, electricity_usd_per_kwh=0.12,
                                            pue=1.3, price={"nvidia-h100-sxm5": 30000.0},
                                            cloud_price={"nvidia-h100-sxm5": 4.0 / 3600},
                                            price_source=ws.requirements.price_source,
                                            cloud_price_source=ws.requirements.cloud_price_source)
    assert ows.requirements.price_source["nvidia-h100-sxm5"].startswith("entered in the planner on ")
    p = other.planner
    assert (p.target.text(), p.latency.value(), p.quotes.item(1, 1).text(), p.quotes.item(1, 2).text()) == (
        "20000 tokens/s", 0.05, "30000", "4")
    p.replan()
    assert [p.table.item(r, 1).text() for r in range(p.table.rowCount())] == saved_plan
    assert not ows.is_dirty and not ows.stack.can_undo


def test_loading_a_trace_and_editing_a_requirement_undo_and_redo(make_window, monkeypatch):
    window = make_window()
    window.controller.new_project(load_model_file(FIXTURES / "smallnet.json"))  # the network the trace profiles
    ws = window.workspace
    ws.select_devices(IDS[:2])
    load_trace(window, monkeypatch, FIXTURES / "torch_cpu_trace.json")
    assert window.actions.undo.text() == "&Undo load torch_cpu_trace.json"
    assert len(roofline(window).measured.scatter.getData()[0]) > 0
    window.actions.undo.trigger()
    assert ws.trace is None and window.trace_panel.trace is None
    assert len(roofline(window).measured.scatter.getData()[0]) == 0
    window.actions.redo.trigger()
    assert ws.trace.source_format == "chrome" and window.trace_panel.trace is ws.trace
    assert len(roofline(window).measured.scatter.getData()[0]) > 0

    planner = window.planner
    for text in ("5", "50", "50 ms"):  # typing: one undo step for the field
        planner.latency.setText(text)
        planner.replan()
    assert ws.requirements.latency == 0.05 and window.actions.undo.text() == "&Undo edit latency"
    planner.budget.setText("1 MUSD")
    planner.replan()
    assert ws.requirements.budget == 1e6
    window.actions.undo.trigger()
    assert ws.requirements.budget is None and planner.budget.text() == "" and planner.latency.value() == 0.05
    assert planner.latency.text() == "50 ms"  # a field that holds the session's value keeps its text
    window.actions.undo.trigger()
    assert ws.requirements.latency is None and planner.latency.text() == ""
    assert window.actions.undo.text() == "&Undo load torch_cpu_trace.json"
    window.actions.redo.trigger()
    assert planner.latency.value() == 0.05
    planner.replan()
    assert not planner.pending and planner.result is not None
