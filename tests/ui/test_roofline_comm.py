"""The roofline's communication roof: off by default; toggled on it draws the chosen system's links as roofs and
its layout's collectives at the core's positions, with a tooltip in units."""

from __future__ import annotations

import numpy as np
import pytest
from test_chart_mouse import hover
from test_panels import make, settle

from explorer.core.hardware.catalog_files import load_shipped_devices
from explorer.core.parallel.comm_roof import comm_roof_for
from explorer.core.session.commands import SetSystem
from explorer.core.session.state import Assumptions, SystemChoice
from explorer.core.session.workspace import Workspace
from explorer.core.workload.templates import get_template
from explorer.ui.panels import RooflinePanel

DEVICES = {d.id: d for d in load_shipped_devices()}


@pytest.fixture
def ws():
    w = Workspace(get_template("llama3-70b").build(), lambda ids: [DEVICES[i] for i in ids if i in DEVICES],
                  Assumptions(phase="decode", batch=16, seq_len=4096))
    w.select_devices(("nvidia-h100-sxm5",))
    w.execute(SetSystem(SystemChoice(system_ids=("nvidia-dgx-h100",))))
    return w


def test_off_by_default_then_the_roofs_and_collectives_of_the_chosen_layout(qtbot, ws):
    panel = make(qtbot, RooflinePanel, ws, (1200, 700))
    assert not panel.comm_toggle.isChecked()
    assert not any(c.isVisible() for c in panel.comm.curves) and len(panel.comm.points.x) == 0
    panel.comm_toggle.setChecked(True)
    settle(qtbot, panel)
    r = panel.result
    view = ws.results.comm_roof(0, r.x_range)
    expected = comm_roof_for(ws.results.systems, "nvidia-h100-sxm5", float(ws.analysis.devices.peak[0]),
                             ws.state.assumptions.precision, ws.state.assumptions.context,
                             ws.state.assumptions.tensor_formats, r.x_range)
    assert view.layout_label == expected.layout_label == ws.results.systems[0].layout.label()
    # the NVLink roof: P = I x 450 GB/s up to its ridge (peak / 450 GB/s); the network's roof beside it
    nvlink = view.roofline.roofs[0]
    assert nvlink.bandwidth == pytest.approx(450e9)
    x, y = panel.comm.curves[0].getData()
    assert np.allclose(10 ** x, nvlink.x) and np.allclose(10 ** y, nvlink.x * 450e9)
    assert panel.comm.curves[1].isVisible()
    p = view.roofline.points
    ok = np.isfinite(p.intensity) & (p.intensity > 0)
    assert np.allclose(10 ** panel.comm.points.x, p.intensity[ok])
    assert np.allclose(10 ** panel.comm.points.y, np.minimum(p.intensity[ok] * 450e9, view.roofline.peak))
    assert "Communication roof: NVIDIA DGX H100" in panel.message.text()
    j = int(np.flatnonzero(ok)[0])
    tip = hover(panel, panel.plot, float(np.log10(p.intensity[j])), float(np.log10(p.attainable[j])))
    assert "FLOP/byte" in tip and "per device and direction" in tip and "FLOP/s" in tip
    panel.comm_toggle.setChecked(False)
    settle(qtbot, panel)
    assert not any(c.isVisible() for c in panel.comm.curves) and len(panel.comm.points.x) == 0


def test_without_a_system_of_the_device_it_says_so(qtbot, ws):
    ws.execute(SetSystem(SystemChoice(system_ids=("pcie-server-8x-nvidia-l40s",))))
    panel = make(qtbot, RooflinePanel, ws, (1200, 700))
    panel.comm_toggle.setChecked(True)
    settle(qtbot, panel)
    assert "no chosen system is made of nvidia-h100-sxm5" in panel.message.text()
    assert len(panel.comm.points.x) == 0
