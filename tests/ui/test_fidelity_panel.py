"""The Fidelity panel maps the core's numbers: the scatter is the measured and predicted times, the summary the
MAPEs, the table the worst kernels with their shapes, the hover a kernel's numbers with units."""

from __future__ import annotations


from pathlib import Path

import numpy as np
import pytest

from explorer.core.hardware.device_file import load_device_file
from explorer.core.session.commands import SetTrace
from explorer.core.session.workspace import Assumptions, Workspace
from explorer.core.traces import load_trace
from explorer.core.workload.model import load_model_file
from explorer.ui.panels import FidelityPanel
from explorer.ui.panels.plotting import si

ROOT = Path(__file__).resolve().parents[2]
TRACES = ROOT / "tests" / "fixtures" / "traces"


@pytest.fixture
def ws():
    device = load_device_file(ROOT / "catalog" / "nvidia-h100-sxm5.yaml")
    w = Workspace(load_model_file(TRACES / "smallnet.json"), lookup=lambda ids: [device] if device.id in ids else [],
                  assumptions=Assumptions(precision="bf16"))
    w.select_devices([device.id])
    return w


def make(qtbot, ws):
    panel = FidelityPanel(ws)
    qtbot.addWidget(panel)
    panel.resize(1100, 800)
    panel.show()
    qtbot.waitExposed(panel)
    qtbot.waitUntil(lambda: not panel.pending, timeout=4000)
    return panel


def test_without_a_trace_it_says_how_to_get_one(qtbot, ws):
    panel = make(qtbot, ws)
    assert "Import a trace" in panel.message.text() and panel.table.rowCount() == 0
    assert panel.csv_text().count("\n") == 1


def test_the_scatter_summary_table_and_hover_are_the_core_numbers(qtbot, ws):
    panel = make(qtbot, ws)
    ws.execute(SetTrace(load_trace(TRACES / "torch_cpu_trace.json")))
    qtbot.waitUntil(lambda: not panel.pending, timeout=4000)
    f = ws.results.fidelity(0)
    assert panel.result is f and len(f) == 12
    x, y = panel.calibrated.getOriginalDataset()
    np.testing.assert_allclose(x, f.measured)
    np.testing.assert_allclose(y, f.calibrated)
    _, yi = panel.ideal.getOriginalDataset()
    np.testing.assert_allclose(yi, f.ideal)
    dx, dy = panel.diagonal.getOriginalDataset()
    np.testing.assert_allclose(dx, dy)  # the diagonal: predicted = measured
    assert panel.summary.text().startswith(
        f"12 kernels. MAPE: ideal {f.mape('ideal') * 100:.1f} %, calibrated {f.mape('calibrated') * 100:.1f} %.")
    worst = f.worst("calibrated", 10)
    assert panel.table.rowCount() == 10
    assert panel.table.item(0, 0).text() == f.names[worst[0]] and panel.table.item(0, 2).text() == f.shapes[worst[0]]
    assert panel.table.item(0, 7).text() == f"{f.error('calibrated')[worst[0]] * 100:+.1f}"
    i = int(worst[0])
    key = panel._hover_key(np.log10(f.measured[i]), np.log10(f.calibrated[i]))
    assert key == ("calibrated", i)
    tip = panel.describe_hover(key)
    assert tip.startswith(f"{f.names[i]} \u2192 {f.layers[i]} ({f.shapes[i]})\n")
    assert f"measured {si(f.measured[i], 's')}, calibrated model {si(f.calibrated[i], 's')}" in tip
    assert panel.csv_text().count("\n") == 13
    # the time switch does not change what the panel shows: both models side by side
    ws.set_assumptions(time_model="calibrated")
    qtbot.waitUntil(lambda: not panel.pending, timeout=4000)
    assert panel.result is f and panel.shown_title == "Fidelity \u2014 ideal vs calibrated"
    ws.set_assumptions(precision="fp16")
    qtbot.waitUntil(lambda: not panel.pending, timeout=4000)
    assert panel.result is not f


def test_no_device_says_so(qtbot, ws):
    ws.execute(SetTrace(load_trace(TRACES / "torch_cpu_trace.json")))
    ws.select_devices([])
    panel = make(qtbot, ws)
    assert "Select one or more devices" in panel.message.text()

