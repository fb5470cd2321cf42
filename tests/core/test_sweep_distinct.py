"""The sweep's distinct rows (sweep/distinct.py) and its plans sliced per block (sweep/plans.py): each distinct row
passed once gives the very floats of the pass over every row; a hash collision is found and the table passed whole;
a block's sliced plans give the pass of its own fresh plans, bit for bit."""

from __future__ import annotations

import numpy as np
import pytest

from explorer.core.analysis.device_arrays import device_arrays
from explorer.core.analysis.kernel import Workspace
from explorer.core.analysis.kernel import time_energy as kernel_time_energy
from explorer.core.analysis.plan import device_plan, table_plan
from explorer.core.sweep import distinct as distinct_mod
from explorer.core.sweep import run as run_mod
from explorer.core.sweep.distinct import distinct_rows, take_rows
from explorer.core.sweep.grid import Grid
from explorer.core.sweep.plans import KNOWN, sliced
from explorer.core.workload.context_axis import stack_contexts
from explorer.core.workload.layers import Context
from explorer.core.workload.llm_templates import BlockGroup, decoder_model
from explorer.core.workload.model import NUMERIC
from explorer.store.engine import open_catalog

DEVICE_IDS = ("nvidia-h100-sxm5", "google-tpu-v5p", "amd-mi300x", "nvidia-l4")


@pytest.fixture(scope="module")
def devices():
    with open_catalog() as repo:
        return repo.devices(DEVICE_IDS)


def _model():
    return decoder_model("win", vocab=3000, hidden=256, layers=(BlockGroup("a", 2, 300), BlockGroup("b", 1)),
                         heads=8, kv_heads=2, ffn_hidden=512, tokens=2048)


def _stack(attention="naive"):
    model = _model()
    contexts = [Context(batch=b, seq_len=s, phase=ph, attention=attention) for ph in ("prefill", "decode")
                for b in (1, 2, 4, 8) for s in (64, 128, 256, 512, 1024)]
    return stack_contexts(model, contexts).table


@pytest.mark.parametrize("attention", ["naive", "fused"])
def test_every_row_is_its_kept_row_bit_for_bit(attention):
    table = _stack(attention)
    keep, where = distinct_rows(table)
    assert len(keep) < len(table) and np.all(np.diff(keep) > 0)  # in order of first appearance
    rep = keep[where]
    assert np.array_equal(rep[keep], keep) and np.all(rep <= np.arange(len(table)))
    for c in NUMERIC:
        assert np.array_equal(table.columns[c].view(np.uint64), table.columns[c][rep].view(np.uint64))
    assert np.array_equal(table.gemm, table.gemm[rep]) and np.array_equal(table.gemm_count, table.gemm_count[rep])
    assert all(table.kinds[i] == table.kinds[j] for i, j in enumerate(rep))
    if attention == "fused":
        assert all(table.attention[i] == table.attention[j] for i, j in enumerate(rep))
    # and different rows are kept apart: no two kept rows are equal
    kept = np.column_stack([table.columns[c][keep] for c in NUMERIC] + [table.gemm[keep], table.gemm_count[keep]])
    kinds = [table.kinds[i] for i in keep]
    assert len({(k, *r) for k, r in zip(kinds, kept.tolist())}) == len(keep)


def test_a_hash_collision_passes_the_table_whole(monkeypatch):
    table = _stack()
    monkeypatch.setattr(distinct_mod, "_mix", lambda h: h.fill(0) or h)  # every row one hash
    assert distinct_rows(table) is None
    one = take_rows(table, np.array([0, 0, 0]))
    assert distinct_rows(one) is not None  # equal rows under one hash are still merged


@pytest.mark.parametrize("attention", ["naive", "fused"])
@pytest.mark.parametrize("time_model", ["ideal", "calibrated"])
def test_distinct_rows_give_the_sweep_of_every_row(devices, monkeypatch, attention, time_model):
    grid = Grid(batches=(1, 3, 16), seq_lens=(100, 300, 700, 2000), phases=("prefill", "decode"),
                precisions=("fp16", "fp8"), attention=attention)
    model = _model()
    got = run_mod.sweep(model, devices, grid, time_model=time_model)
    monkeypatch.setattr(run_mod, "DISTINCT_CELLS", 0)  # every context's rows passed, as before
    want = run_mod.sweep(model, devices, grid, time_model=time_model)
    for name in run_mod.NAMES:
        assert np.array_equal(got.columns[name], want.columns[name]) or (
            got.columns[name].dtype.kind == "f" and np.array_equal(got.columns[name], want.columns[name],
                                                                   equal_nan=True)), name


def test_the_plans_are_known():
    """sweep/plans.py slices every field of the analysis plans: a field added to them needs slicing there too
    (until then the sweep makes each block's plans afresh, the same numbers without the saving)."""
    assert KNOWN


@pytest.mark.parametrize("attention", ["naive", "fused"])
def test_sliced_plans_give_the_blocks_own_pass(devices, attention):
    table = _stack(attention)
    for precision in ("fp16", "int8"):
        dev = device_arrays(devices, precision)
        dp = device_plan(dev)
        for a, b in ((0, 7), (7, 150), (150, len(table)), (0, len(table))):
            block = run_mod._rows(table, a, b)
            tp, rp = sliced(table, block, a, b, dev, dp, attention)
            t, e = kernel_time_energy(block, dev, tp, dp, rp, attention, Workspace())
            fresh = table_plan(run_mod._rows(table, a, b))  # a new table object: its own plan
            t0, e0 = kernel_time_energy(block, dev, fresh, dp, fresh.rows(block, dev, dp), attention, Workspace())
            assert np.array_equal(t, t0, equal_nan=True) and np.array_equal(e, e0, equal_nan=True)
