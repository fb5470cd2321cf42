"""Serving on the systems chosen in the Systems panel, in the app (issue 19): the Serving panel draws one curve and
one table row per system (one replica of its chosen serving layout) beside the devices, and the planner's serving
box one row per system, with numbers equal to ``hwexplorer plan --rate ... --system S --json``'s; the system pass
runs on the worker (the panel repaints at once saying so) and an older run's result is dropped."""

from __future__ import annotations

import contextlib
import io
import json

import numpy as np
import pytest

from explorer.__main__ import main
from explorer.core.hardware.catalog_files import load_shipped_devices, load_shipped_systems
from explorer.core.serving import system_serving
from explorer.core.serving.serve import answer
from explorer.core.serving.system_fleet import size_system
from explorer.core.session.commands import SetServing, SetSystem
from explorer.core.session.serving_choice import ServingChoice
from explorer.core.session.state import SystemChoice
from explorer.core.session.workspace import Workspace
from explorer.core.workload.templates import get_template
from explorer.ui.panels import ServingPanel
from explorer.ui.planner.planner_panel import PlannerPanel
from explorer.ui.planner.serving_fleet import HEADERS, TIPS, _cell

DEVICES = {d.id: d for d in load_shipped_devices()}
SYSTEMS = {s.id: s for s in load_shipped_systems()}
L4, L4_SERVER, DGX = "nvidia-l4", "pcie-server-4x-nvidia-l4", "nvidia-dgx-h100"
CHOICE = ServingChoice(rate=10.0, input_tokens=1024, output_tokens=256, ttft=0.5, tpot=0.05)
CLI = ["--rate", "10/s", "--input", "1024", "--output", "256", "--ttft-p90", "500ms", "--tpot-p90", "50ms"]
WAIT = 60000  # ms: the first sizing runs the system pass on 7 layouts (~0.5 s each) on the worker


def _ws(systems=(L4_SERVER, DGX)) -> Workspace:
    ws = Workspace(get_template("llama3-8b").build(), lambda wanted: [DEVICES[i] for i in wanted if i in DEVICES])
    ws.select_devices((L4,))
    ws.execute(SetServing(CHOICE))
    ws.execute(SetSystem(SystemChoice(system_ids=systems)))
    return ws


def _show(qtbot, widget, size):
    qtbot.addWidget(widget)
    widget.resize(*size)
    widget.show()
    qtbot.waitExposed(widget)
    return widget


def _settled(qtbot, panel):
    qtbot.waitUntil(lambda: not panel.pending, timeout=WAIT)


@pytest.fixture(scope="module")
def cli_rows():
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        code = main(["plan", "llama3-8b", "-d", L4, "--system", L4_SERVER, "--system", DGX, *CLI, "--json"])
    assert code == 0
    return {r["name"].split(" (")[0]: r for r in json.loads(buf.getvalue())["devices"]}  # systems: short names


def test_the_panel_draws_each_systems_chosen_replica(qtbot):
    ws = _ws()
    panel = _show(qtbot, ServingPanel(ws), (1500, 900))
    _settled(qtbot, panel)
    assert len(panel.answers) == 3 and [s.system.id for s in panel.systems] == [L4_SERVER, DGX]
    model, w = ws.model, CHOICE.workload
    for i, sid in enumerate((L4_SERVER, DGX), start=1):
        system = SYSTEMS[sid]
        best, _fleets, setups = size_system(model, system, DEVICES[system.device_id], w, CHOICE.slo,
                                            policy=CHOICE.policy)  # the CLI's own search
        core = answer(w, setups[best.layout], CHOICE.slo)
        n = best.replica_devices
        assert panel.names[i] == f"{system.name.split(' (')[0]}: {best.label} replica ({n} device{'s' * (n > 1)})"
        assert panel.short[i].endswith(best.label)
        ok = core.curve.stable
        x, y = panel.lines["curve"][i].getData()
        np.testing.assert_allclose(x, core.curve.per_user[ok], rtol=1e-12)
        np.testing.assert_allclose(y, core.curve.throughput_per_device[ok], rtol=1e-12)
        _rx, ry = panel.lines["tpot"][i].getData()
        np.testing.assert_allclose(ry, core.curve.tpot[ok] * 1e3, rtol=1e-12)
        assert float(panel.table.item(i, 2).text().replace(",", "")) == pytest.approx(core.curve.capacity, rel=1e-3)
    header = panel.table.horizontalHeaderItem(0)
    assert header.text() == "device or system" and "tp x pp devices" in header.toolTip()
    assert "A system: one replica of its cheapest serving layout" in panel.message.text()
    _headers, rows = panel.csv_table()
    assert [r[0] for r in rows][1:] == panel.names[1:]


def test_the_system_pass_runs_on_the_worker_and_an_older_run_is_dropped(qtbot):
    system_serving.SETUPS.clear()  # nothing kept from the other tests: every sizing below needs the system pass
    system_serving.SERVED.clear()
    ws = _ws(systems=(DGX,))
    panel = _show(qtbot, ServingPanel(ws), (1400, 900))
    _settled(qtbot, panel)
    runs = panel.system_estimator.runs
    assert runs == 1 and len(panel.answers) == 2
    ws.execute(SetSystem(SystemChoice(system_ids=(L4_SERVER,))))
    panel.flush()  # the repaint comes at once, saying so; the run starts after it
    assert panel.system_estimator.busy
    assert "Estimating serving on 1 system (every serving layout)" in panel.message.text()
    assert len(panel.answers) == 1  # the device's, drawn while the system is sized
    ws.execute(SetSystem(SystemChoice(system_ids=(DGX, L4_SERVER))))
    panel.flush()
    _settled(qtbot, panel)
    assert panel.system_estimator.runs == runs + 2  # one per set of inputs; the first's result came stale
    assert [s.system.id for s in panel.systems] == [DGX, L4_SERVER] and len(panel.answers) == 3
    ws.execute(SetSystem(SystemChoice(system_ids=())))
    _settled(qtbot, panel)
    assert panel.systems == () and len(panel.answers) == 1


def test_a_system_that_holds_no_kv_cache_says_so(qtbot):
    ws = Workspace(get_template("llama3-70b").build(), lambda wanted: [DEVICES[i] for i in wanted if i in DEVICES])
    ws.execute(SetServing(CHOICE))
    ws.execute(SetSystem(SystemChoice(system_ids=(L4_SERVER,))))
    panel = _show(qtbot, ServingPanel(ws), (1200, 800))
    _settled(qtbot, panel)
    assert panel.answers == () and len(panel.systems) == 1
    assert ("4x NVIDIA L4 PCIe server: no layout on its 4 devices leaves room for the KV cache after the weights"
            in panel.message.text())


def test_the_planner_rows_equal_plan_rate_system(qtbot, cli_rows):
    ws = _ws()
    planner = _show(qtbot, PlannerPanel(ws), (1200, 900))
    box = planner.serving_fleet
    qtbot.waitUntil(lambda: box.table.rowCount() == 3 and not box.system_estimator.busy
                    and not box.estimator.busy, timeout=WAIT)
    box.refresh()
    assert box.table.rowCount() == 3
    cells = {box.table.item(i, 0).text(): [box.table.item(i, j).text() for j in range(len(HEADERS))]
             for i in range(3)}
    assert set(cells) == set(cli_rows)
    for name, row in cli_rows.items():
        got = cells[name]
        replica = "1 device" if row["kind"] == "device" else f"{row['layout_label']} ({row['replica_devices']})"
        assert got[1] == replica
        assert got[2] == (_cell(row["slo_rate_per_s"]) if row["feasible"] else "none")
        assert got[3] == (str(row["replicas"]) if row["feasible"] else "\u2014")
        assert got[4] == (str(row["devices"]) if row["feasible"] else "\u2014")
        for j, key in ((6, "capital_usd"), (8, "cost_per_million_usd"), (9, "rented_per_million_usd")):
            assert got[j] == (_cell(row[key]) if row[key] is not None else "\u2014"), (name, key)
    # the cheapest first: the DGX H100 (priced in the catalog) before the unpriced L4 rows
    assert box.table.item(0, 0).text() == "NVIDIA DGX H100" and box.table.item(0, 1).text() == "TP1 PP1 (1)"
    units = {2: "(req/s)", 5: "(USD)", 6: "(USD)", 7: "(USD)", 8: "(USD/M tokens)", 9: "(USD/M tokens)"}
    for j, unit in units.items():
        assert box.table.horizontalHeaderItem(j).text().endswith(unit)
    for j, tip in enumerate(TIPS[:-1]):
        assert box.table.horizontalHeaderItem(j).toolTip() == tip
    assert "[devices]" in TIPS[1] and "[requests/s]" in TIPS[2] and "[USD per million tokens]" in TIPS[8]
    assert "a system's replica is its cheapest serving layout" in box.caption.text()
