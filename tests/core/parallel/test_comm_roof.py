"""The communication roof: roofs at each domain's per-direction bandwidth and the collectives placed at their FLOPs
per byte sent over the link, checked by hand."""

import math

import numpy as np
import pytest
from hand_systems import hgx

from explorer.core.parallel.comm_roof import comm_roofline, place, roof
from explorer.core.parallel.layout import Layout
from explorer.core.workload.layers import Context
from explorer.core.workload.templates import get_template

LLAMA70 = get_template("llama2-70b").build()
DECODE = Context(batch=8, phase="decode", seq_len=4096)
PEAK = 989e12  # H100 SXM5 dense FP16/BF16


def test_roof_geometry_by_hand():
    """NVLink 4 at 450 GB/s per direction under a 989 TFLOP/s peak: P = I x 450e9, meeting the peak at
    I = 989e12 / 450e9 = 2,197.8 FLOP/B; drawn from the left edge of the plot to that ridge."""
    r = roof("NVLink", "scale_up", 450e9, PEAK, (1e-2, 1e5))
    assert r.ridge == pytest.approx(2197.777, rel=1e-6)
    assert list(r.x) == [1e-2, pytest.approx(2197.777, rel=1e-6)]
    assert r.y[0] == pytest.approx(4.5e9) and r.y[-1] == pytest.approx(PEAK)
    # a ridge beyond the plot ends at its right edge; an unknown bandwidth draws nothing
    slow = roof("net", "scale_out", 1e6, PEAK, (1e-2, 1e5))
    assert slow.x[-1] == 1e5 and slow.y[-1] == pytest.approx(1e11)
    none = roof("PCIe", "scale_up", math.nan, PEAK, (1e-2, 1e5))
    assert len(none.x) == 0 and math.isnan(none.ridge)


def test_place_by_hand():
    # 1 GFLOP per MB sent: 1,000 FLOP/B; at 450 GB/s that is 450 TFLOP/s (link-bound), at 50 GB/s 50 TFLOP/s
    i, p = place([1e9, 1e9, 5e9], [1e6, 1e6, 1e6], [450e9, 50e9, 450e9], PEAK)
    assert list(i) == [1000.0, 1000.0, 5000.0]
    assert p[0] == pytest.approx(450e12) and p[1] == pytest.approx(50e12) and p[2] == PEAK  # above the ridge
    i, p = place([1e9], [0.0], [450e9], PEAK)
    assert math.isnan(i[0]) and math.isnan(p[0])


def test_llama2_70b_tp8_collectives_by_hand():
    """Llama-2-70B decode, batch 8, TP 8, fp16 on an 8-GPU NVLink node.

    LM head: 2 x 8,192 x 32,000 / 8 FLOPs per token on each device, batch 8 -> 524,288,000 FLOPs; its logits'
    all-gather sends 7/8 x 8 x 32,000 x 2 B = 448,000 B: I = h / (tp - 1) = 8,192 / 7 = 1,170.3 FLOP/B, left of
    NVLink's ridge (2,197.8): link-bound, at 1,170.3 x 450e9 = 526.6 TFLOP/s.
    MLP: gate, up and down, 3 x 2 x 8,192 x 28,672 / 8 per token, over an all-reduce of 2 x 7/8 x 8 x 8,192 x 2 B
    = 229,376 B: I = 6 x 28,672 / (4 x 7) = 6,144 FLOP/B from the GEMMs alone (the norm, residual add and SiLU x
    up add 0.03 %): above the ridge, at the peak.
    Attention: QKV (2 x 8,192 x 10,240 / 8), output (2 x 8,192^2 / 8), scores and context (2 x 2 x 8 heads x 128
    x 4,096) per token = 54,525,952 FLOPs; x 8 / 229,376 B = 1,901.7 FLOP/B from these (softmax and norm add
    0.25 %)."""
    r = comm_roofline(LLAMA70, hgx(), Layout(tp=8), PEAK, "fp16", DECODE)
    p = r.points
    head = p.names.index("lm_head")
    assert (p.ops[head], p.flops[head], p.nbytes[head]) == ("all_gather", 524_288_000, 448_000)
    assert p.intensity[head] == pytest.approx(8192 / 7, rel=1e-12)
    assert p.attainable[head] == pytest.approx(8192 / 7 * 450e9, rel=1e-12) and p.link_bound[head]
    mlp = p.names.index("layers.ffn_down")
    assert p.nbytes[mlp] == 229_376 and p.repeats[mlp] == 80
    assert p.intensity[mlp] == pytest.approx(6144, rel=5e-4) and p.intensity[mlp] >= 6144
    assert p.attainable[mlp] == PEAK and not p.link_bound[mlp]
    attn = p.names.index("layers.attn.out")
    assert p.intensity[attn] == pytest.approx(54_525_952 * 8 / 229_376, rel=3e-3)
    assert p.intensity[attn] >= 54_525_952 * 8 / 229_376
    assert set(p.domain) == {0}  # all inside the node: NVLink
    assert [x.name for x in r.roofs] == ["NVLink", "InfiniBand"]


def test_points_move_with_the_layout_and_the_link():
    """More tensor parallelism moves fewer FLOPs per byte (I = h / (tp - 1) for the LM head); a TP group across two
    nodes crosses the network, whose roof is lower."""
    two = comm_roofline(LLAMA70, hgx(), Layout(tp=2, dp=4), PEAK, "fp16", DECODE).points
    eight = comm_roofline(LLAMA70, hgx(), Layout(tp=8), PEAK, "fp16", DECODE).points
    assert two.intensity[two.names.index("lm_head")] == pytest.approx(8192 / 1)
    assert eight.intensity[eight.names.index("lm_head")] < two.intensity[two.names.index("lm_head")]
    wide = comm_roofline(LLAMA70, hgx(nodes=2), Layout(tp=16), PEAK, "fp16", DECODE)
    assert set(wide.points.domain) == {1}
    assert np.all(wide.points.link_time > 0) and wide.roofs[1].ridge == pytest.approx(PEAK / 50e9)


def test_element_size_moves_the_points():
    """The same collectives at 1-byte elements send half the bytes: twice the FLOPs per link byte."""
    p16 = comm_roofline(LLAMA70, hgx(), Layout(tp=8), PEAK, "fp16", DECODE).points
    p8 = comm_roofline(LLAMA70, hgx(), Layout(tp=8), PEAK, "fp16", DECODE, element_bytes=1.0).points
    assert np.allclose(p8.nbytes, p16.nbytes / 2) and np.allclose(p8.intensity[1:], 2 * p16.intensity[1:])
