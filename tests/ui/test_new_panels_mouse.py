"""The panels added since the first hardening pass, driven through synthesized mouse events after a
``gc.collect()`` (issue 24: a picker nobody kept was collected, so hover and click did nothing): clicking a bar of
the Systems or Training chart lists that system's layouts in the table, hovering a Fidelity point shows its kernel,
and the Serving charts say "nothing to plot" instead of drawing empty axes."""

from __future__ import annotations

import gc

import numpy as np
from test_chart_mouse import click, hover
from test_fidelity_panel import TRACES
from test_fidelity_panel import make as make_fidelity
from test_fidelity_panel import ws as fidelity_ws  # noqa: F401 - the fixture
from test_serving_panel import _ws as serving_ws
from test_systems_panel import DGX, L40S
from test_systems_panel import _panel as systems_panel
from test_systems_panel import _workspace as systems_workspace
from test_training_panel import TPU
from test_training_panel import _panel as training_panel
from test_training_panel import _workspace as training_workspace

from explorer.core.session.commands import SetTrace
from explorer.core.traces import load_trace
from explorer.ui.panels import ServingPanel


def test_clicking_a_systems_bar_lists_that_systems_layouts(qtbot):
    panel = systems_panel(qtbot, systems_workspace(DGX, L40S))
    assert panel.focus == DGX  # the first system's layouts at the start
    click(qtbot, panel, panel.steps, panel.stack.widths[1].sum() / 2, 1)  # the L40S server's bar
    assert panel.focus == L40S


def test_clicking_a_training_bar_lists_that_systems_layouts(qtbot):
    panel = training_panel(qtbot, training_workspace(DGX, TPU, devices=64, tokens=2e12))
    first, second = (r.system.id for r in panel.results)  # 8 x DGX H100 and the TPU v5p-128 slice
    assert panel.focus == first and first.startswith(DGX) and second == TPU
    click(qtbot, panel, panel.steps, panel.step_bars.widths[1].sum() / 2, 1)
    assert panel.focus == second
    qtbot.wait(30)
    click(qtbot, panel, panel.memory, panel.memory_bars.widths[0].sum() / 2, 0)  # the memory chart's bar too
    assert panel.focus == first


def test_hovering_a_fidelity_point_shows_its_kernel(qtbot, fidelity_ws):  # noqa: F811
    panel = make_fidelity(qtbot, fidelity_ws)
    fidelity_ws.execute(SetTrace(load_trace(TRACES / "torch_cpu_trace.json")))
    qtbot.waitUntil(lambda: not panel.pending, timeout=4000)
    gc.collect()
    f = panel.result
    i = int(np.argmax(f.measured))
    plot = panel.calibrated.getViewBox().parentItem()
    tip = hover(panel, plot, np.log10(f.measured[i]), np.log10(f.calibrated[i]))
    assert tip == panel.describe_hover(("calibrated", i)) and tip.startswith(f"{f.names[i]} \u2192 ")


def test_the_serving_charts_say_nothing_to_plot_without_devices(qtbot):
    from test_panels import make

    panel = make(qtbot, ServingPanel, serving_ws(), (900, 700))
    for plot in (panel.curve, panel.ttft_plot, panel.tpot_plot):
        labels = [plot.getAxis(side).labelText for side in ("bottom", "left")]
        assert any(t.startswith("nothing to plot") for t in labels), labels
