"""The Systems panel's bandwidth ladder labels each link with the energy of its bytes, or says none is stated."""

import math

import pytest

from explorer.core.hardware.catalog_files import load_shipped_devices, load_shipped_systems
from explorer.core.parallel.compare import Rung, bandwidth_ladder, size_on_systems
from explorer.core.workload.layers import Context
from explorer.core.workload.templates import get_template
from explorer.ui.panels.systems_ladder import energy_label, rung_label


def test_labels_by_hand():
    nvlink = Rung("NVLink", "scale-up", 1e6, 450e9, 1.3e-12 * 8)  # 1 MB at 1.3 pJ/bit = 10.4 uJ
    assert nvlink.joules == pytest.approx(1.04e-5)
    assert energy_label(nvlink) == "10.4 \u00b5J at 1.3 pJ/bit"
    assert rung_label(nvlink).endswith(", 10.4 \u00b5J at 1.3 pJ/bit")
    pcie = Rung("PCIe", "scale-up", 1e6, 32e9)
    assert math.isnan(pcie.joules) and rung_label(pcie).endswith(", energy not stated")
    idle = Rung("IB", "scale-out", 0.0, 50e9)
    assert idle.joules == 0.0 and rung_label(idle).startswith("no traffic")
    hbm = Rung("HBM3", "device memory", 1e9, 3.35e12)
    assert energy_label(hbm) == "" and "J" not in rung_label(hbm)


def test_the_dgx_ladder_carries_nvlink_joules():
    systems = {s.id: s for s in load_shipped_systems()}
    devices = {d.id: d for d in load_shipped_devices()}
    dgx = systems["nvidia-dgx-h100"]
    (res,) = size_on_systems(get_template("llama3-70b").build(), [(dgx, devices[dgx.device_id])], "fp16",
                             Context(batch=16, seq_len=4096, phase="decode"))
    up = next(r for r in bandwidth_ladder(res) if r.tier == "scale-up")
    assert up.joules == pytest.approx(up.nbytes * 8 * 1.3e-12, rel=1e-12) and up.nbytes > 0
    assert "pJ/bit" in rung_label(up)


def test_a_layout_points_tooltip_gives_its_energy():
    from explorer.ui.panels.systems import energy_line

    systems = {s.id: s for s in load_shipped_systems()}
    devices = {d.id: d for d in load_shipped_devices()}
    model = get_template("llama3-70b").build()
    ctx = Context(batch=16, seq_len=4096, phase="decode")
    dgx, l40s = (systems[i] for i in ("nvidia-dgx-h100", "pcie-server-8x-nvidia-l40s"))
    a, b = size_on_systems(model, [(dgx, devices[dgx.device_id]), (l40s, devices[l40s.device_id])], "fp16", ctx)
    line = energy_line(a.analysis, a.chosen)
    assert line.startswith("\nenergy per step and device: ") and "over the links" in line and " J" in line
    assert "links of unknown energy (PCIe Gen4" in energy_line(b.analysis, b.chosen)
