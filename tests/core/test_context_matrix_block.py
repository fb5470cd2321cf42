"""A built table keeps the (15, rows) block its columns are rows of, and ``context_plane._matrix`` copies it in one
step: the same bits as the column-by-column copy, on every template at prefill and decode contexts."""

from __future__ import annotations

import numpy as np
import pytest

from explorer.core.workload import context_plane
from explorer.core.workload.layer_memo import NUMERIC, WIDTH
from explorer.core.workload.layers import Context
from explorer.core.workload.model import build_table
from explorer.core.workload.templates import TEMPLATES


def _by_columns(t) -> np.ndarray:
    """``_matrix`` as it was: every column copied in turn (the table's block hidden)."""
    block = t.__dict__.pop("_numbers", None)
    try:
        return context_plane._matrix(t)
    finally:
        if block is not None:
            object.__setattr__(t, "_numbers", block)


@pytest.mark.parametrize("template_id", sorted(TEMPLATES))
@pytest.mark.parametrize("ctx", [Context(batch=2, seq_len=333, phase="prefill"),
                                 Context(batch=1, seq_len=1100, phase="decode")], ids=["prefill", "decode"])
def test_the_block_gives_the_same_bits_as_the_columns(template_id, ctx):
    build_table.cache_clear()
    t = build_table(TEMPLATES[template_id].build(), ctx)
    block = t.__dict__.get("_numbers")
    assert block is not None and block.shape == (WIDTH, len(t)) and not block.flags.writeable
    fast, slow = context_plane._matrix(t), _by_columns(t)
    assert fast.shape == slow.shape and fast.tobytes() == slow.tobytes()
    # the block's rows are the table's columns, GEMM M, N, K and count, in that order
    for i, c in enumerate(NUMERIC):
        assert np.array_equal(block[i], t.columns[c])
    assert np.array_equal(block[len(NUMERIC):len(NUMERIC) + 3], t.gemm.T)
    assert np.array_equal(block[WIDTH - 1], t.gemm_count)


def test_a_replaced_table_does_not_keep_the_block():
    """A table made from another with other GEMMs (``dataclasses.replace``) must not read the old block."""
    from dataclasses import replace

    build_table.cache_clear()
    t = build_table(TEMPLATES["gpt2"].build(), Context(batch=1, seq_len=64, phase="prefill"))
    other = replace(t, gemm=t.gemm * 2.0)
    assert "_numbers" not in other.__dict__
    nc = len(NUMERIC)
    assert np.array_equal(context_plane._matrix(other)[nc:nc + 3], 2.0 * t.gemm.T)


def test_the_memo_block_converts_as_np_array_does():
    """``_Memo.matrix`` flattens the rows' tuples through ``np.fromiter``: the same floats as ``np.array(...,
    dtype=float)`` gives, for ints past 2**53 (rounded once), bools, -0.0 and NaN, and for every template's rows."""
    from explorer.core.workload import layer_memo

    memo = layer_memo._Memo()
    odd = (2**53 + 1, 2**60 + 12345, 10**300, True, -0.0, float("nan"), 3, 0.1, -5, 2**64 + 7, 1.5, 7)
    memo.numbers = [odd, odd[::-1]]
    memo.gemms = [(2**53 + 3, 1, 0), (4, 5.5, 2**62 + 1)]
    plain = np.array(memo.numbers, dtype=float)
    want = np.vstack([plain[:, :len(NUMERIC)].T, np.array(memo.gemms, dtype=float).T, plain[:, len(NUMERIC)]])
    assert memo.matrix().tobytes() == want.tobytes()
    build_table.cache_clear()
    for tid in sorted(TEMPLATES):
        ctx = Context(batch=1, seq_len=128, phase="decode")
        build_table(TEMPLATES[tid].build(), ctx)
        memo = layer_memo.memo_for(ctx)
    plain = np.array(memo.numbers, dtype=float)
    want = np.vstack([plain[:, :len(NUMERIC)].T, np.array(memo.gemms, dtype=float).T, plain[:, len(NUMERIC)]])
    assert memo.matrix().tobytes() == want.tobytes()
