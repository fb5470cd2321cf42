"""The generate task's pass on its distinct rows (``generate._step_classes``, ``kernel.time_energy_classes``): each
decode step's rows that do not grow with the KV length are computed once, the rest per step, gathered by row. The
floats must be the pass's over every row of the stacked table, bit for bit, on random repeated models, catalog and
synthetic devices, precisions and task sizes; and the kernel's ``distinct`` keyword (the caller says its rows are
distinct) must give the same floats as the search."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_evaluate_fast import CATALOG, synthetic
from test_pass_rows import PALETTE, repeated_model

from explorer.core.analysis import generate as gen
from explorer.core.analysis import row_classes
from explorer.core.analysis.device_arrays import device_arrays
from explorer.core.analysis.evaluate import time_energy
from explorer.core.analysis.kernel import time_energy as kernel_time_energy
from explorer.core.analysis.kernel import time_energy_classes
from explorer.core.analysis.plan import device_plan, table_plan
from explorer.core.workload.templates import get_template


def _bits(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a).view(np.int64)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(block=st.lists(st.integers(0, len(PALETTE) - 1), min_size=1, max_size=5), repeats=st.integers(1, 6),
       batch=st.integers(1, 8), prompt=st.integers(1, 300), out=st.integers(2, 40),
       precision=st.sampled_from(["fp16", "int8", "fp8"]),
       catalog=st.lists(st.sampled_from(CATALOG), min_size=1, max_size=4, unique_by=lambda d: d.id),
       extra_devices=st.lists(synthetic, max_size=2))
def test_the_pass_on_the_steps_distinct_rows_equals_the_pass_on_every_row(block, repeats, batch, prompt, out,
                                                                           precision, catalog, extra_devices):
    model = repeated_model(block, repeats, [4])  # an attention layer last: some rows grow with the KV length
    st_ = gen._stacked(model, batch, prompt, out, "naive", "last")
    cls = gen._step_classes(st_)
    dev = device_arrays(catalog + extra_devices, precision)
    want_t, want_e = time_energy(st_.table, dev, "naive")
    if cls is None:
        return
    assert len(cls.table) < len(st_.table)
    got_t, got_e = time_energy_classes(cls, dev, device_plan(dev), "naive")
    assert np.array_equal(_bits(got_t), _bits(want_t)) and np.array_equal(_bits(got_e), _bits(want_e))


def test_llama_decode_steps_share_all_but_their_attention_rows():
    """Llama-2-7B, 1,024 + 128: 17 rows per context; in decode only the attention's scores, softmax and context grow
    with the KV length, so the pass runs on 17 (prefill) + 17 (the first step) + 126 x 3 rows."""
    model = get_template("llama2-7b").build()
    st_ = gen._stacked(model, 1, 1024, 128, "naive", "last")
    cls = gen._step_classes(st_)
    assert len(st_.table) == 17 * 128 and len(cls.table) == 17 + 17 + 126 * 3
    assert gen._step_classes(st_) is cls  # found once per stacked table
    moving = {st_.table.names[i] for i in range(17 * 2, 17 * 3) if cls.inv[i] >= 34}
    assert moving == {"layers.attn.scores", "layers.attn.softmax", "layers.attn.context"}


def test_fused_attention_is_not_grouped():
    cls = row_classes.given_classes(*_tiny())
    with pytest.raises(ValueError, match="attention"):
        time_energy_classes(cls, device_arrays(CATALOG[:1], "fp16"), device_plan(device_arrays(CATALOG[:1], "fp16")),
                            "fused")


def _tiny():
    t = gen._stacked(repeated_model([0, 4], 2, []), 1, 16, 4, "naive", "last").table
    return t, np.arange(len(t)), np.arange(len(t))


@pytest.mark.parametrize("n_dev", [1, 6])
def test_the_kernels_distinct_keyword_gives_the_same_floats(monkeypatch, n_dev):
    monkeypatch.setattr(row_classes, "MIN_CELLS", 0)  # the search would group these repeated rows
    monkeypatch.setattr(row_classes, "MIN_DEVICES", 1)
    table = gen._stacked(repeated_model([0, 1, 2, 4], 5, []), 2, 64, 3, "naive", "last").table
    dev = device_arrays(CATALOG[:n_dev], "fp16")
    tp, dp = table_plan(table), device_plan(dev)
    rp = tp.rows(table, dev, dp)
    a = kernel_time_energy(table, dev, tp, dp, rp, "naive")
    b = kernel_time_energy(table, dev, tp, dp, rp, "naive", distinct=True)
    for x, y in zip(a, b):
        assert np.array_equal(_bits(x), _bits(y))


def _same_table(a, b):
    assert a.names == b.names and a.kinds == b.kinds and a.attention == b.attention
    for x, y in [(a.layer_index, b.layer_index), (a.gemm, b.gemm), (a.gemm_count, b.gemm_count),
                 *((a.columns[c], b.columns[c]) for c in b.columns)]:
        assert x.dtype == y.dtype and x.shape == y.shape and np.array_equal(_bits(x.astype(float)), _bits(y.astype(float)))
    assert a.columns.keys() == b.columns.keys()


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(template=st.sampled_from(["llama2-7b", "mistral-7b", "mixtral-8x7b", "gpt2"]), batch=st.integers(1, 4),
       prompt=st.sampled_from([1, 7, 100, 1024, 4000, 4094, 4096]), out=st.integers(2, 150),
       attention=st.sampled_from(["naive", "fused"]), gap=st.booleans())
def test_stack_steps_equals_stack_contexts(template, batch, prompt, out, attention, gap):
    """The generate task's run of decode lengths (``stack_steps``) gives stack_contexts' table bit for bit, with the
    same builds, across a sliding window (Mistral's 4,096), a mixture of experts (not affine in the batch) and
    non-consecutive lengths (``gap``: the general path)."""
    from explorer.core.workload.context_axis import stack_contexts, stack_steps
    from explorer.core.workload.layers import Context

    model = get_template(template).build()
    first = Context(batch=batch, seq_len=prompt, phase="prefill", attention=attention)
    lengths = [prompt + 1 + k + (5 if gap and k > out // 2 else 0) for k in range(out - 1)]
    steps = [Context(batch=batch, seq_len=s, phase="decode", attention=attention) for s in lengths]
    a = stack_steps(model, first, steps)
    b = stack_contexts(model, [first, *steps])
    _same_table(a.table, b.table)
    assert np.array_equal(a.starts, b.starts) and np.array_equal(a.sizes, b.sizes) and a.builds == b.builds
    assert a.contexts == b.contexts


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(block=st.lists(st.integers(0, len(PALETTE) - 1), min_size=1, max_size=5), repeats=st.integers(1, 4),
       batch=st.integers(1, 8), prompt=st.integers(1, 300), out=st.integers(2, 60),
       attention=st.sampled_from(["naive", "fused"]))
def test_the_interpolations_copied_entries_give_the_searchs_repeated_rows(block, repeats, batch, prompt, out,
                                                                          attention):
    """``_step_classes`` reads the repeated rows from the interpolation (``StackedContexts.fixed``) where every step
    is one interpolated block: the same rows as comparing every step's bits with the first's (``_searched_steady``),
    so the same classes."""
    model = repeated_model(block, repeats, [4])
    st_ = gen._stacked(model, batch, prompt, out, attention, "last")
    sizes = st_.sizes[1:]
    if st_.fixed is None:
        return
    width, start = int(sizes[0]), int(st_.starts[1])
    assert np.all(sizes == width) and st_.fixed.shape[1] == width
    fast = gen._steady(st_, start, width, len(sizes))
    assert np.array_equal(fast, gen._searched_steady(st_.table, start, width, len(sizes)))


def test_llama_steps_repeated_rows_come_from_the_interpolation():
    st_ = gen._stacked(get_template("llama2-7b").build(), 1, 1024, 128, "naive", "last")
    assert st_.fixed is not None  # one interpolated block: no search
    same = gen._steady(st_, 17, 17, 127)
    assert same.sum() == 14 and np.array_equal(same, gen._searched_steady(st_.table, 17, 17, 127))


@settings(max_examples=60, deadline=None)
@given(head=st.integers(1, 40), width=st.integers(1, 12), later=st.integers(1, 9), data=st.data())
def test_the_step_classes_are_the_row_order_numbering(head, width, later, data):
    """``_step_rows`` builds (first, inv) by arithmetic; the same as each row's representative numbered in row
    order (the construction it replaced: a row repeating its first-step row takes that row's class)."""
    width = min(width, head)
    same = np.array(data.draw(st.lists(st.booleans(), min_size=width, max_size=width)))
    n = head + later * width
    rep = np.arange(n)
    rep[head:].reshape(later, width)[:, same] = rep[head - width:head][same]
    own = rep == np.arange(n)
    first, inv = gen._step_rows(head, width, later, same)
    assert np.array_equal(first, np.flatnonzero(own)) and np.array_equal(inv, (np.cumsum(own) - 1)[rep])


def test_the_footprint_reads_the_columns_resident_bytes_reads():
    from explorer.core.analysis.tensor_bytes import formats_of, resident_bytes

    model = get_template("llama2-7b").build()
    st_ = gen._stacked(model, 2, 700, 30, "naive", "last")
    for precision in ("fp16", "fp8", "int8"):
        dev = device_arrays(CATALOG[:2], precision)
        c = st_.table.columns
        want = 0.0
        for k in (0, len(st_.sizes) - 1):
            a, b = st_.starts[k], st_.starts[k] + st_.sizes[k]
            want = max(want, sum(resident_bytes({n: v[a:b] for n, v in c.items()}, formats_of(dev))))
        assert gen._footprint(st_, dev) == want


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(template=st.sampled_from(["llama2-7b", "mistral-7b", "mixtral-8x7b"]), batch=st.integers(1, 4),
       prompt=st.sampled_from([1, 100, 1024, 4094]), out=st.integers(2, 150),
       attention=st.sampled_from(["naive", "fused"]))
def test_the_tasks_stack_made_consecutive_equals_stack_contexts(template, batch, prompt, out, attention):
    """``generate._stacked`` tells ``stack_steps`` its steps are consecutive copies (``made_consecutive``: not
    compared again): the same table, builds and contexts as stack_contexts over the contexts made one by one."""
    from explorer.core.workload.context_axis import stack_contexts
    from explorer.core.workload.layers import Context

    model = get_template(template).build()
    a = gen._stacked(model, batch, prompt, out, attention, "last")
    first = Context(batch=batch, seq_len=prompt, phase="prefill", attention=attention)
    steps = [Context(batch=batch, seq_len=prompt + k, phase="decode", attention=attention) for k in range(1, out)]
    b = stack_contexts(model, [first, *steps])
    _same_table(a.table, b.table)
    assert np.array_equal(a.starts, b.starts) and np.array_equal(a.sizes, b.sizes) and a.builds == b.builds
    assert a.contexts == b.contexts


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(block=st.lists(st.integers(0, len(PALETTE) - 1), min_size=1, max_size=5), repeats=st.integers(1, 4),
       batch=st.integers(1, 8), prompt=st.integers(1, 300), out=st.integers(2, 60))
def test_the_step_classes_names_and_kinds_are_their_first_rows(block, repeats, batch, prompt, out):
    """Where every step is one interpolated block, ``_step_classes`` gives ``given_classes`` the classes' names and
    kinds from the first step's; they are the table's at each class's first row, and every column matches."""
    st_ = gen._stacked(repeated_model(block, repeats, [4]), batch, prompt, out, "naive", "last")
    gen._CLASSES.pop(st_, None)
    cls = gen._step_classes(st_)
    if cls is None:
        return
    first = np.unique(cls.inv, return_index=True)[1]
    want = row_classes.given_classes(st_.table, first, cls.inv)
    assert cls.table.names == want.table.names and cls.table.kinds == want.table.kinds
    assert np.array_equal(cls.table.layer_index, want.table.layer_index)
    assert np.array_equal(cls.table.gemm, want.table.gemm) and np.array_equal(cls.table.gemm_count,
                                                                               want.table.gemm_count)
    assert all(np.array_equal(_bits(cls.table.columns[c]), _bits(want.table.columns[c])) for c in want.table.columns)


@pytest.mark.parametrize("template", ["llama2-7b", "gpt2"])
def test_the_prefill_and_one_block_equal_stack_tables(template):
    """``context_axis._prefill_and_block``: stack_tables of the prefill and the block's own table, attention dropped,
    bit for bit, with the columns in the same order."""
    from dataclasses import replace

    from explorer.core.workload import context_axis as ca
    from explorer.core.workload.context_plane import _Run
    from explorer.core.workload.layers import Context
    from explorer.core.workload.model import build_table

    model = get_template(template).build()
    pre = build_table(model, Context(batch=2, seq_len=300, phase="prefill"))
    base = Context(batch=2, seq_len=None, phase="decode")
    [(ref, numbers)] = _Run(model, base, list(range(301, 340)), build_table).solve(0, 39)
    want = replace(ca.stack_tables([pre, ca._from_numbers(ref, numbers, False)]), attention=())
    got = ca._prefill_and_block(pre, ref, numbers)
    _same_table(got, want)
    assert list(got.columns) == list(want.columns)


def test_a_context_run_is_its_contexts():
    """``ContextRun``: the contexts made on demand equal (and hash as) those made one by one; items, negative
    indices, slices, iteration, length, equality with tuples and lists, IndexError past the end."""
    from explorer.core.workload.context_axis import ContextRun
    from explorer.core.workload.layers import Context

    first = Context(batch=3, seq_len=50, phase="prefill", attention="fused")
    step = Context(batch=3, seq_len=51, phase="decode", attention="fused")
    want = (first, *(Context(batch=3, seq_len=s, phase="decode", attention="fused") for s in range(51, 58)))
    run = ContextRun(first, step, 7)
    assert len(run) == 8 and run[0] is first and run[3] == want[3] and hash(run[3]) == hash(want[3])
    assert run[-1] == want[-1] and run[2:5] == want[2:5] and list(run) == list(want)
    assert run == want and want == run and run == list(want) and run != want[:-1] and ContextRun(first, step, 7) == run
    assert ContextRun(None, step, 7) == want[1:] and len(ContextRun(None, step, 7)) == 7
    with pytest.raises(IndexError):
        run[8]
