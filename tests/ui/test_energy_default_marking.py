"""The energy panel hatches the bar segments whose energies are Horowitz's 45 nm defaults (issue 23), with the
key entry "default energies (Horowitz 45 nm)"; a device whose file states its own figures is not marked, and an
edit that gives a device its own figure removes the mark (the marking follows the data)."""

from __future__ import annotations

import numpy as np
import pytest
from PySide6.QtCore import QPointF

from explorer.core.analysis.energy_defaults import DEFAULT_ENERGY_LABEL
from explorer.core.hardware.device_file import device_from_dict
from explorer.core.session.workspace import Assumptions, Workspace
from explorer.core.workload.model import LayerSpec, Model
from explorer.ui.panels import EnergyPanel

DEFAULTS = {  # no energy figure at all: every segment uses the defaults
    "id": "plain", "name": "Plain GPU", "vendor": "t", "kind": "gpu", "peak": {"fp16": "312 TFLOP/s"}, "tdp": "400 W",
    "memory": [{"name": "HBM", "role": "offchip", "capacity": "80 GB", "bandwidth": "2039 GB/s"},
               {"name": "L2", "role": "onchip", "capacity": "40 MB", "bandwidth": "7 TB/s"}],
}
OWN = {  # its own figures for every level and the MAC: nothing to mark
    "id": "own", "name": "Own NPU", "vendor": "t", "kind": "npu", "peak": {"fp16": "100 TFLOP/s"}, "tdp": "200 W",
    "memory": [{"name": "DRAM", "role": "offchip", "capacity": "16 GB", "bandwidth": "1 TB/s",
                "energy": "7.25 pJ/bit"}],
    "energy_per_mac": {"fp16": "0.5 pJ"},
}


@pytest.fixture
def ws():
    devices = {d["id"]: device_from_dict(d) for d in (DEFAULTS, OWN)}
    model = Model.make("small", {"tokens": 64, "hidden": 128},
                       [LayerSpec.make("dense", "up", in_features=128, out_features=256),
                        LayerSpec.make("dense", "down", in_features=256, out_features=128)])
    w = Workspace(model, lookup=lambda ids: [devices[i] for i in ids if i in devices],
                  assumptions=Assumptions(precision="fp16"))
    w.select_devices(["plain", "own"])
    return w


def make(qtbot, ws):
    panel = EnergyPanel(ws)
    qtbot.addWidget(panel)
    panel.resize(1000, 700)
    panel.show()
    qtbot.waitExposed(panel)
    qtbot.waitUntil(lambda: not panel.pending, timeout=2000)
    return panel


def test_defaults_are_hatched_and_own_figures_are_not(qtbot, ws):
    panel = make(qtbot, ws)
    # totals: one bar per device, parts HBM/DRAM, L2, arithmetic
    marks = panel.total_hatch.marks
    assert marks[0].tolist() == [True, True, True]  # Plain GPU: every figure a default
    assert not marks[1].any()  # Own NPU: its own DRAM and MAC energies, nothing hatched
    assert len(panel.total_hatch.marked_rects()) == 3
    assert any(DEFAULT_ENERGY_LABEL in name for _, name in panel.totals.plot_title.key)
    assert "(default)" in panel._describe_device(0) and "(default)" not in panel._describe_device(1)
    # the focused device's per-operator bars: every operator's segments hatched for the plain GPU
    assert panel.layer_hatch.marks.all()
    assert any(DEFAULT_ENERGY_LABEL in name for _, name in panel.per_layer.plot_title.key)
    ws.focus_device("own")
    qtbot.waitUntil(lambda: not panel.pending, timeout=2000)
    assert panel.view.device_id == "own"
    assert not panel.layer_hatch.marks.any()
    assert not any(DEFAULT_ENERGY_LABEL in name for _, name in panel.per_layer.plot_title.key)


def test_the_marking_follows_an_edit(qtbot, ws):
    panel = make(qtbot, ws)
    assert panel.total_hatch.marks[0, 0]
    panel.table.item(0, 1).setText("60 pJ/B")  # the plain GPU's HBM: now its own (edited) figure
    qtbot.waitUntil(lambda: not panel.pending, timeout=2000)
    assert panel.total_hatch.marks[0].tolist() == [False, True, True]  # L2 and the MAC are still defaults


def test_the_hatch_is_painted(qtbot, ws):
    """Pixels: the plain GPU's total bar shows the dark hatch lines over its colours; the NPU's does not."""
    panel = make(qtbot, ws)
    image = panel.graphics.grab().toImage()
    view = panel.totals.vb

    def dark_share(i: int) -> float:
        """The share of dark pixels along the middle of bar ``i`` (the bar colours are all light or mid)."""
        left = view.mapViewToScene(QPointF(0.0, i))
        right = view.mapViewToScene(QPointF(float(np.nansum(panel.total_stack.widths[i])), i))
        xs = range(int(left.x()) + 2, int(right.x()) - 2)
        pixels = [image.pixelColor(x, int(left.y())).lightness() for x in xs]
        return sum(p < 90 for p in pixels) / max(len(pixels), 1)

    assert dark_share(0) > 0.05  # hatch lines cross the plain GPU's bar
    assert dark_share(1) < 0.02  # the NPU's own figures: plain colours
