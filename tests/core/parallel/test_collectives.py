"""Collectives: the chapter's gradient synchronization exactly, ring and tree by hand, invariants."""

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from explorer.core.parallel.collectives import (
    bus_bandwidth,
    collective_time,
    hierarchical_all_reduce,
    no_overlap_scaling,
    transfer_time,
)


def test_chapter_gradient_synchronization():
    """The chapter's multi-GPU fallacy (shared/reference/chapter-models-2.md E-32, R:2624): 1 GB of gradients over
    NVLink stated as 600 GB/s bidirectional, i.e. 300 GB/s per direction: 3.33 ms, 6.7 % of a 50 ms step, and on
    8 GPUs without overlap 7.5x, 93.8 % efficiency."""
    per_direction = 600e9 / 2
    t_sync = float(transfer_time(1e9, per_direction))
    assert t_sync == pytest.approx(3.333e-3, rel=1e-3)
    overhead, speedup, efficiency = no_overlap_scaling(50e-3, t_sync, 8)
    assert round(float(overhead) * 100, 1) == 6.7
    assert round(float(speedup), 1) == 7.5
    assert round(float(efficiency) * 100, 1) == 93.8
    assert float(efficiency) == pytest.approx(0.9375, abs=1e-9)


def test_ring_all_reduce_by_hand():
    # 8 ranks, 1 GiB, 450 GB/s per direction, 2 us per step:
    # 2 * 7 * 2e-6 + 2 * 7/8 * 2**30 / 450e9 = 28e-6 + 4.175530e-3
    t = float(collective_time("all_reduce", 2**30, 8, 450e9, 2e-6, "ring"))
    assert t == pytest.approx(28e-6 + 2 * 7 / 8 * 2**30 / 450e9, rel=1e-12)
    assert t == pytest.approx(4.2035e-3, rel=1e-4)


def test_tree_all_reduce_by_hand():
    # 16 ranks: 2 * log2(16) = 8 latency steps; bandwidth term 2 n / B. 64 KiB at 50 GB/s, 5 us:
    t = float(collective_time("all_reduce", 65536, 16, 50e9, 5e-6, "tree"))
    assert t == pytest.approx(8 * 5e-6 + 2 * 65536 / 50e9, rel=1e-12)
    ring = float(collective_time("all_reduce", 65536, 16, 50e9, 5e-6, "ring"))
    assert ring == pytest.approx(30 * 5e-6 + 2 * 15 / 16 * 65536 / 50e9, rel=1e-12)
    assert float(collective_time("all_reduce", 65536, 16, 50e9, 5e-6, "auto")) == pytest.approx(t)  # small: tree
    big = 2**30
    assert float(collective_time("all_reduce", big, 16, 50e9, 5e-6, "auto")) == pytest.approx(
        float(collective_time("all_reduce", big, 16, 50e9, 5e-6, "ring")))  # large: ring


def test_gather_scatter_all_to_all_send():
    n, p, bw, a = 8e6, 4, 100e9, 1e-6
    one_pass = 3 * a + 3 / 4 * n / bw
    for op in ("all_gather", "reduce_scatter", "all_to_all"):
        assert float(collective_time(op, n, p, bw, a)) == pytest.approx(one_pass)
    assert float(collective_time("send_recv", n, 2, bw, a)) == pytest.approx(a + n / bw)
    assert float(collective_time("all_reduce", n, 1, bw, a)) == 0.0  # one rank: nothing to do


def test_hierarchical_is_the_sum_of_its_phases():
    n = 2**28
    inner = collective_time("reduce_scatter", n, 8, 450e9, 0) + collective_time("all_gather", n, 8, 450e9, 0)
    outer = collective_time("all_reduce", n / 8, 4, 50e9, 0)
    assert float(hierarchical_all_reduce(n, 8, 4, 450e9, 50e9)) == pytest.approx(float(inner + outer))
    # and it beats a flat ring on the slow link
    assert float(hierarchical_all_reduce(n, 8, 4, 450e9, 50e9)) < float(collective_time("all_reduce", n, 32, 50e9))


def test_bus_bandwidth_convention_of_nccl_tests():
    # a ring all-reduce with no latency runs its links at exactly the link bandwidth: busbw == B for every p
    for p in (2, 4, 8, 64):
        t = collective_time("all_reduce", 2**30, p, 300e9)
        assert float(bus_bandwidth("all_reduce", 2**30, p, t)) == pytest.approx(300e9)
        t = collective_time("all_gather", 2**30, p, 300e9)
        assert float(bus_bandwidth("all_gather", 2**30, p, t)) == pytest.approx(300e9)


def test_unknown_latency_is_a_lower_bound_not_nan():
    t = float(collective_time("all_reduce", 1e6, 8, 100e9, math.nan))
    assert t == pytest.approx(2 * 7 / 8 * 1e6 / 100e9)


def test_bad_operation_names_the_field():
    with pytest.raises(ValueError, match="operation"):
        collective_time("broadcastx", 1, 2, 1)
    with pytest.raises(ValueError, match="algorithm"):
        collective_time("all_reduce", 1, 2, 1, algorithm="butterfly")


@given(n=st.floats(1, 1e12), p=st.integers(2, 1024), bw=st.floats(1e8, 1e13), a=st.floats(0, 1e-4),
       op=st.sampled_from(["all_reduce", "all_gather", "reduce_scatter", "all_to_all", "send_recv"]),
       alg=st.sampled_from(["ring", "tree", "auto"]))
def test_time_grows_with_message_and_falls_with_bandwidth(n, p, bw, a, op, alg):
    t = float(collective_time(op, n, p, bw, a, alg))
    assert np.isfinite(t) and t > 0
    assert float(collective_time(op, 2 * n, p, bw, a, alg)) > t
    assert float(collective_time(op, n, p, 2 * bw, a, alg)) < t
