"""Many contexts in one table (explorer/core/workload/context_axis.py): the stacked table equals the loop of single
work tables, entry by entry, on random dense, GQA, sliding-window, MoE and MLA decoders, both phases, both attention
kernels and both LM heads; and it builds a handful of tables, not one per context."""

from __future__ import annotations

from dataclasses import fields

import numpy as np
import pytest

from explorer.core.workload.context_axis import ContextError, stack_contexts, stack_tables
from explorer.core.workload.layers import Context
from explorer.core.workload.llm_templates import MLA, BlockGroup, MoE, decoder_model
from explorer.core.workload.model import NUMERIC, LayerSpec, LayerTable, Model, build_table

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


@pytest.mark.parametrize("seed", range(24))
def test_a_grid_of_batches_and_lengths_equals_the_loop_of_single_tables(seed):
    """The batch interpolated too: a grid of batches x lengths per phase (the embedding's rows read saturating
    inside it: b x s x tables = rows crosses the grid; windows cut it), in a shuffled order with repeats."""
    rng = np.random.default_rng(1000 + seed)
    model = random_model(rng)
    attention = str(rng.choice(["naive", "fused"]))
    lm_head = str(rng.choice(["last", "all"]))
    batches = np.unique(rng.integers(1, 80, size=int(rng.integers(3, 9))))
    seqs = np.unique(rng.integers(1, 1200, size=int(rng.integers(5, 25))))
    contexts = [Context(batch=int(b), seq_len=int(s), phase=phase, attention=attention, lm_head=lm_head)
                for phase in ("prefill", "decode") for b in batches for s in seqs]
    if seed % 3 == 0:  # any order, a context twice
        contexts = [contexts[i] for i in rng.permutation(len(contexts))] + contexts[:3]
    assert_equal_to_loop(model, contexts)


def test_the_sweep_grid_builds_a_few_dozen_tables():
    """Llama-2-7B's 10^6-point sweep grid (bench_sweep_million.py: 64 batches x 60 lengths x 2 phases = 7,680
    contexts): decode one region of (b, s) (2 x 2 nodes + probes), prefill two (the embedding's 32,000 rows read
    below or at b x s = 32,000, and above: 2 x 3 nodes + probes each), against 792 tables with the length axis
    alone; every entry equal to the single table's (checked here on one context in 16, and on every one by
    the random grids above)."""
    from explorer.core.workload.templates import get_template

    model = get_template("llama2-7b").build()
    contexts = [Context(batch=b, seq_len=s, phase=phase) for phase in ("prefill", "decode") for b in range(1, 65)
                for s in range(128, 128 + 64 * 60, 64)]
    st = stack_contexts(model, contexts, build)
    assert st.builds <= 32
    rows = st.sizes[0]
    for k in range(0, len(contexts), 16):
        t = build(model, contexts[k])
        sl = slice(st.starts[k], st.starts[k] + rows)
        assert st.table.names[sl] == t.names
        assert np.array_equal(st.table.gemm[sl], t.gemm) and np.array_equal(st.table.gemm_count[sl], t.gemm_count)
        for c in NUMERIC:
            np.testing.assert_allclose(st.table.columns[c][sl], t.columns[c], rtol=1e-12, atol=0, err_msg=c)


def test_a_mixture_of_experts_decode_interpolates_along_the_length_only():
    """Its expected experts touched grow as 1 - (1 - p)^b: not affine in the batch, so each batch is a run of
    lengths of its own (2 nodes + 1 probe each), still equal to the single tables."""
    model = decoder_model("moe", vocab=1000, hidden=128, layers=2, heads=4, ffn_hidden=64,
                          moe=MoE(experts=8, top_k=2, ffn_hidden=64), tokens=1024)
    contexts = [Context(batch=b, seq_len=s, phase="decode") for b in (1, 2, 3, 5, 8) for s in range(64, 1024, 32)]
    st = stack_contexts(model, contexts, build)
    assert st.builds == 5 * 3
    assert_equal_to_loop(model, contexts)


def test_a_failing_context_in_the_plane_is_the_first_in_order():
    """Lengths above 600 fail (a build that reports a layer error there); the error names the first such context
    in the contexts' order, whichever the interpolation over (batch, length) met first."""
    model = decoder_model("dense", vocab=1000, hidden=128, layers=2, heads=4, ffn_hidden=256, tokens=1024)

    class Failing(LayerTable):
        errors = property(lambda self: [(1, "too long")])

    def failing(m, c):
        t = build(m, c)
        return Failing(**{f.name: getattr(t, f.name) for f in fields(t) if f.init}) if c.seq_len > 600 else t

    contexts = [Context(batch=b, seq_len=s, phase="prefill") for b in (7, 3, 5, 1, 9, 2)
                for s in range(100, 900, 50)]
    with pytest.raises(ContextError, match=r"^batch 7, seq_len 650, prefill: layer 1: too long$"):
        stack_contexts(model, contexts, failing)
    ok = [c for c in contexts if c.seq_len <= 600]
    assert_equal_to_loop(model, ok)


@pytest.mark.parametrize("lengths", [(700,), (300, 900), (100, 400, 1000)])
def test_a_batch_axis_at_a_few_lengths_interpolates_the_batch(lengths):
    """Many batches at one to three lengths: every length a node, the batch interpolated (2 batches x the lengths
    + probes per region), equal to the single tables."""
    model = decoder_model("gqa", vocab=50_000, hidden=256, layers=3, heads=8, kv_heads=2, ffn_hidden=512,
                          tokens=1024)
    contexts = [Context(batch=b, seq_len=s, phase=phase) for phase in ("prefill", "decode") for b in range(1, 41)
                for s in lengths]
    st = stack_contexts(model, contexts, build)
    assert st.builds <= 2 * (2 * len(lengths) + 3)
    assert_equal_to_loop(model, contexts)


def test_a_breakpoint_the_plane_does_not_know_is_found_by_its_probes():
    """A build whose work changes formula at batch 6 (here: twice the MACs from there on, a regime no breakpoint
    names): the probes of the (batch, length) region miss their interpolated values, the batches are split until
    each half is one formula, and the stacked table still equals the loop of those tables."""
    model = decoder_model("dense", vocab=50_000, hidden=128, layers=2, heads=4, ffn_hidden=256, tokens=2048)

    def stepped(m, c):
        t = build(m, c)
        if c.batch < 6:
            return t
        columns = dict(t.columns)
        columns["macs"] = 2 * t.columns["macs"]
        return LayerTable(**{f.name: getattr(t, f.name) for f in fields(t) if f.init and f.name != "columns"},
                          columns=columns)

    contexts = [Context(batch=b, seq_len=s, phase=phase) for phase in ("prefill", "decode") for b in range(1, 13)
                for s in range(100, 1100, 50)]
    st = stack_contexts(model, contexts, stepped)
    ref = stack_tables([stepped(model, c) for c in contexts])
    assert st.builds < len(contexts) // 4
    assert np.array_equal(st.table.gemm, ref.gemm)
    for c in NUMERIC:
        np.testing.assert_allclose(st.table.columns[c], ref.columns[c], rtol=1e-12, atol=0, err_msg=c)
