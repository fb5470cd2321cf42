"""Many contexts in one table (explorer/core/workload/context_axis.py): the stacked table equals the loop of single
work tables, entry by entry, on random dense, GQA, sliding-window, MoE and MLA decoders, both phases, both attention
kernels and both LM heads; and it builds a handful of tables, not one per context."""

from __future__ import annotations

import numpy as np
import pytest

from explorer.core.workload.context_axis import ContextError, stack_contexts, stack_tables
from explorer.core.workload.layers import Context
from explorer.core.workload.llm_templates import MLA, BlockGroup, MoE, decoder_model
from explorer.core.workload.model import NUMERIC, LayerSpec, Model, build_table

build = build_table.__wrapped__  # uncached: every reference table is built here, not reused


def random_model(rng: np.random.Generator) -> Model:
    kind = rng.choice(["dense", "gqa", "window", "moe", "mla"])
    heads = int(rng.choice([4, 8, 16]))
    head_dim = int(rng.choice([16, 32, 64]))
    hidden = heads * head_dim
    kv_heads = int(rng.choice([h for h in (1, 2, 4, heads) if heads % h == 0])) if kind != "dense" else 0
    groups: tuple[BlockGroup, ...] | int = int(rng.integers(1, 5))
    if kind == "window":  # windows inside the sequence range put breakpoints between the lengths swept
        groups = tuple(BlockGroup(f"g{i}", int(rng.integers(1, 4)), int(w))
                       for i, w in enumerate(rng.choice([0, 37, 200, 333, 1000], size=int(rng.integers(1, 4)))))
    moe = MoE(experts=int(rng.choice([4, 8])), top_k=2, ffn_hidden=int(rng.choice([64, 96])),
              shared=int(rng.integers(0, 2))) if kind == "moe" else None
    mla = MLA(kv_lora_rank=int(rng.choice([32, 64])), qk_nope_head_dim=32, qk_rope_head_dim=16, v_head_dim=32,
              q_lora_rank=int(rng.choice([0, 48]))) if kind == "mla" else None
    return decoder_model(f"random-{kind}", vocab=int(rng.integers(100, 5000)), hidden=hidden, layers=groups,
                         heads=heads, kv_heads=kv_heads, ffn_hidden=int(rng.integers(64, 512)), moe=moe, mla=mla,
                         qkv_bias=bool(rng.integers(0, 2)) and mla is None, tokens=512)


def assert_equal_to_loop(model: Model, contexts: list[Context]) -> None:
    st = stack_contexts(model, contexts, build)
    tables = [build(model, c) for c in contexts]
    ref = stack_tables(tables)
    assert st.table.names == ref.names and st.table.kinds == ref.kinds
    assert np.array_equal(st.table.layer_index, ref.layer_index)
    assert np.array_equal(st.sizes, [len(t) for t in tables])
    assert np.array_equal(st.table.gemm, ref.gemm) and np.array_equal(st.table.gemm_count, ref.gemm_count)
    for c in NUMERIC:
        np.testing.assert_allclose(st.table.columns[c], ref.columns[c], rtol=1e-12, atol=0, err_msg=c)
    if contexts[0].attention == "fused":  # the K/V streams the fused kernel's re-reads are computed from
        assert st.table.attention == ref.attention


@pytest.mark.parametrize("seed", range(40))
def test_stacked_contexts_equal_the_loop_of_single_tables(seed):
    rng = np.random.default_rng(seed)
    model = random_model(rng)
    attention = str(rng.choice(["naive", "fused"]))
    lm_head = str(rng.choice(["last", "all"]))
    contexts = []
    for phase in ("prefill", "decode"):
        for batch in sorted({int(b) for b in rng.integers(1, 9, size=2)}):
            seqs = np.unique(rng.integers(1, 1500, size=int(rng.integers(1, 40))))
            contexts += [Context(batch=batch, seq_len=int(s), phase=phase, attention=attention, lm_head=lm_head)
                         for s in seqs]
    assert_equal_to_loop(model, contexts)


def test_generate_lengths_build_three_tables():
    """1,024 + 128 tokens: 127 decode steps at consecutive KV lengths come from 2 nodes and 1 probe."""
    model = decoder_model("dense", vocab=1000, hidden=256, layers=4, heads=8, ffn_hidden=512, tokens=1024)
    contexts = [Context(batch=2, seq_len=s, phase="decode") for s in range(1025, 1153)]
    st = stack_contexts(model, contexts, build)
    assert st.builds == 3
    assert_equal_to_loop(model, contexts)


def test_a_window_inside_the_range_splits_the_run_and_stays_exact():
    model = decoder_model("win", vocab=1000, hidden=128, layers=(BlockGroup("a", 2, 300), BlockGroup("b", 1)),
                          heads=4, kv_heads=2, ffn_hidden=256, tokens=1024)
    contexts = [Context(batch=1, seq_len=s, phase="decode") for s in range(1, 1024, 7)]
    st = stack_contexts(model, contexts, build)
    assert 4 < st.builds < len(contexts) // 2  # split around the breakpoint at 300, not built one by one
    assert_equal_to_loop(model, contexts)


def test_a_context_the_model_does_not_take_is_named():
    # a dense layer of fixed input width after the embedding: fine at any length, but a reshape-free conv is not;
    # here the first layer's explicit input shape contradicts the tokens, so every context fails at layer 0
    model = Model.make("bad", {"tokens": 16}, [LayerSpec.make("dense", "fc", in_features=8, out_features=4)])
    contexts = [Context(batch=1, seq_len=s, phase="decode") for s in (8, 16, 32, 64, 128, 256)]
    with pytest.raises(ContextError, match=r"batch 1, seq_len 8, decode: layer 0"):
        stack_contexts(model, contexts, build)
