"""Energy of the bytes moved over each link: hand-computed joules, unknown stays unknown, the catalog's figures."""

import math
from dataclasses import replace

import numpy as np
import pytest
from hand_systems import hgx

from explorer.core.hardware.device import Cited
from explorer.core.hardware.system_file import load_system_file
from explorer.core.parallel.layout import Layout
from explorer.core.parallel.link_energy import collective_energy, joules, link_energy
from explorer.core.parallel.system_pass import Options, analyze_system
from explorer.core.workload.layers import Context
from explorer.core.workload.templates import get_template

LLAMA70 = get_template("llama2-70b").build()
DECODE = Context(batch=8, phase="decode", seq_len=4096)
PJ = 1e-12
NVLINK_PJ_PER_BIT = 1.3  # NVIDIA, "What Is NVLink?" (blogs.nvidia.com/blog/what-is-nvidia-nvlink/): 1.3 pJ/bit


def with_energy(system, domain: int | None = None, pj_per_bit: float = NVLINK_PJ_PER_BIT, host: float | None = None):
    """``system`` with an energy per bit on one domain's link (and optionally the host link)."""
    domains = list(system.domains)
    if domain is not None:
        d = domains[domain]
        domains[domain] = replace(d, link=replace(d.link, energy=Cited(pj_per_bit * PJ * 8, f"{pj_per_bit} pJ/bit")))
    host_link = system.host_link
    if host is not None:
        host_link = replace(host_link, energy=Cited(host * PJ * 8, f"{host} pJ/bit"))
    return replace(system, domains=tuple(domains), host_link=host_link)


def test_one_ring_all_reduce_by_hand():
    """1 GB all-reduced over 8 GPUs by a ring: each GPU sends 2 x 7/8 x 1 GB = 1.75 GB = 1.4e10 bits; at NVLink's
    1.3 pJ/bit that is 18.2 mJ per GPU, 145.6 mJ for the eight."""
    per_rank = collective_energy("all_reduce", 1e9, 8, 1.3e-12)
    assert per_rank == pytest.approx(1.75e9 * 8 * 1.3e-12, rel=1e-12) == pytest.approx(0.0182, rel=1e-12)
    assert 8 * per_rank == pytest.approx(0.1456, rel=1e-12)
    # all-gather: (p - 1) / p of n; a send: n; one rank: nothing
    assert collective_energy("all_gather", 1e9, 4, 1e-12) == pytest.approx(0.75e9 * 8e-12)
    assert collective_energy("send_recv", 2e6, 2, 1e-12) == pytest.approx(2e6 * 8e-12)
    assert collective_energy("all_reduce", 1e9, 1, math.nan) == 0.0
    assert math.isnan(collective_energy("all_reduce", 1e9, 8, math.nan))


def test_joules_unknown_only_where_bytes_move():
    out = joules([[0.0, 10.0], [5.0, 0.0]], [math.nan, 2.0])
    assert out[0, 0] == 0.0 and out[0, 1] == 20.0 and math.isnan(out[1, 0]) and out[1, 1] == 0.0


def test_llama2_70b_tp8_link_joules_by_hand(devices):
    """Llama-2-70B decode at batch 8, TP 8, fp16 activations. Each of the 160 row-parallel all-reduces (attention
    out, ffn_down) and the embedding's moves batch x 8,192 x 2 B = 131,072 B; the LM head's logits are all-gathered
    (8 x 32,000 x 2 B = 512,000 B). A ring GPU sends 2 x 7/8 of an all-reduce and 7/8 of an all-gather:
    161 x 131,072 x 1.75 + 512,000 x 0.875 = 37,377,536 B per step, x 8 bits x 1.3 pJ = 388.7 uJ."""
    system = with_energy(hgx(), domain=0)
    r = analyze_system(LLAMA70, system, devices["nvidia-h100-sxm5"], [Layout(tp=8)], "fp16", DECODE)
    e = link_energy(r)
    assert r.level_bytes[0, 0] == 37_377_536
    assert e.joules[0, 0] == pytest.approx(37_377_536 * 8 * 1.3e-12, rel=1e-12)
    assert e.joules[0, 1] == 0.0  # the network carries nothing inside one node: 0 J although its energy is unknown
    assert e.names[-1].startswith("host link") and e.joules[0, -1] == 0.0  # no offload
    assert e.unknown == ((),)
    assert e.total[0] == pytest.approx(r.device_energy[0] + e.joules[0, 0], rel=1e-12)
    assert 0 < e.link_share[0] < 1e-3  # decode at TP 8: the device's HBM traffic dominates


def test_device_energy_is_the_single_device_energy_of_one_device(devices):
    """A one-device 'system' spends exactly the single-device pass's energy (same rows, count 1, one micro-batch)."""
    from explorer.core.analysis.evaluate import evaluate
    from explorer.core.hardware.system import single_device

    h100 = devices["nvidia-h100-sxm5"]
    r = analyze_system(LLAMA70, single_device(h100.id), h100, [Layout()], "fp16", DECODE)
    a = evaluate(LLAMA70, [h100], "fp16", DECODE)
    assert r.device_energy[0] == pytest.approx(a.totals.energy[0], rel=1e-12)
    assert link_energy(r).links[0] == 0.0


def test_a_link_without_a_figure_stays_unknown_never_zero(devices):
    """TP 8 x PP 2 over two nodes: the all-reduces stay on NVLink (1.3 pJ/bit), the pipeline's send crosses
    InfiniBand, whose file here states no energy."""
    system = with_energy(hgx(nodes=2), domain=0)
    r = analyze_system(LLAMA70, system, devices["nvidia-h100-sxm5"], [Layout(tp=8, pp=2), Layout(tp=8, dp=2)],
                       "fp16", DECODE)
    e = link_energy(r)
    assert r.level_bytes[0, 1] > 0 and math.isnan(e.joules[0, 1])
    assert math.isnan(e.links[0]) and math.isnan(e.total[0])
    assert e.unknown[0] == ("InfiniBand",)
    assert e.known_links[0] == pytest.approx(e.joules[0, 0]) and e.known_links[0] > 0  # the stated part: a bound
    # TP 8 x DP 2 stays inside each node: no bytes on the network, its energy is known (0 J there)
    assert r.level_bytes[1, 1] == 0 and e.joules[1, 1] == 0.0 and np.isfinite(e.total[1])


def test_offloaded_bytes_cost_the_host_links_energy(devices):
    """Llama-2-70B fp16 on one H100 with offload: every step streams the excess over the host link, each byte at
    the host link's energy (here 6.5 pJ/bit)."""
    h100 = devices["nvidia-h100-sxm5"]
    one = with_energy(replace(hgx(devices_per_node=1), devices=1), host=6.5)
    r = analyze_system(LLAMA70, one, h100, [Layout()], "fp16", Context(batch=1, phase="decode", seq_len=1024),
                       options=Options(offload=True))
    excess = r.memory_bytes[0] - h100.memory_capacity
    assert r.host_bytes[0] == pytest.approx(excess, rel=1e-12) and excess > 50e9
    e = link_energy(r)
    assert e.joules[0, -1] == pytest.approx(excess * 8 * 6.5e-12, rel=1e-12)


def test_catalog_figures_and_their_coverage(tmp_path):
    """The shipped files: NVLink 4 at NVIDIA's 1.3 pJ/bit, NVLink-C2C at 1.3, PCIe Gen 5 at 5 x 1.3 = 6.5 (NVIDIA's
    '5 times more energy efficient'), a ConnectX-7 hop's optics at 4 x 15 W / 1.6 Tb/s = 37.5 pJ/bit; every figure
    says what it covers; links no source gives stay empty."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[3] / "catalog" / "systems"
    h100 = load_system_file(root / "nvidia-dgx-h100.yaml", require_sources=True)
    assert h100.domains[0].link.energy_per_byte == pytest.approx(1.3e-12 * 8)
    assert h100.domains[1].link.energy_per_byte == pytest.approx(4 * 15 / 1.6e12 * 8)
    assert h100.host_link.energy_per_byte == pytest.approx(6.5e-12 * 8)
    for d in h100.domains:
        assert "COVERS" in d.link.energy.note
    nvl72 = load_system_file(root / "nvidia-gb200-nvl72.yaml", require_sources=True)
    assert nvl72.host_link.energy_per_byte == pytest.approx(1.3e-12 * 8)
    assert math.isnan(nvl72.domains[0].link.energy_per_byte)  # NVLink 5: no published figure
    for name in ("pcie-server-8x-nvidia-l40s", "google-tpu-v5p-128-slice", "amd-instinct-mi300x-platform"):
        s = load_system_file(root / f"{name}.yaml", require_sources=True)
        assert all(d.link.energy is None for d in s.domains)


def test_every_curated_energy_says_what_it_covers():
    from explorer.core.hardware.catalog_files import load_shipped_systems

    stated = 0
    for s in load_shipped_systems():
        links = [d.link for d in s.domains] + ([s.host_link] if s.host_link else [])
        for link in links:
            if link.energy is not None:
                stated += 1
                assert link.energy.note.startswith("COVERS") and link.energy.source in s.sources, (s.id, link.name)
    # NVLink 4 (DGX H100, H200), the ConnectX-7 optics (DGX H100, H200, B200), PCIe Gen5 (the same three), C2C (NVL72)
    assert stated == 9
