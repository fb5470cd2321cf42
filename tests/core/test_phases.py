"""Prefill + decode in one stacked pass (explorer/core/analysis/phases.py) equals two ``evaluate`` calls, one per
phase, field by field: the rows' time, energy, FLOPs, bytes, intensity and bound, and the totals."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from explorer.core.analysis.evaluate import evaluate
from explorer.core.analysis.phases import prefill_decode
from explorer.core.hardware.catalog_files import load_shipped_devices
from explorer.core.workload.layers import Context
from explorer.core.workload.llm_templates import MLA, BlockGroup, MoE, decoder_model
from explorer.core.workload.templates import get_template

CATALOG = load_shipped_devices()
MODELS = {
    "llama2-7b": get_template("llama2-7b").build(),
    "gpt2": get_template("gpt2").build(),
    "gqa+window": decoder_model("w", vocab=3000, hidden=256, heads=8, kv_heads=2, ffn_hidden=512, tokens=512,
                                layers=(BlockGroup("a", 2, 40), BlockGroup("b", 1))),
    "moe": decoder_model("m", vocab=3000, hidden=256, heads=8, kv_heads=4, ffn_hidden=128, layers=2, tokens=512,
                         moe=MoE(experts=8, top_k=2, ffn_hidden=128, shared=1)),
    "mla": decoder_model("l", vocab=3000, hidden=256, heads=8, ffn_hidden=256, layers=2, tokens=512,
                         mla=MLA(kv_lora_rank=64, qk_nope_head_dim=32, qk_rope_head_dim=16, v_head_dim=32)),
}


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(sorted(MODELS)), st.integers(1, 64), st.integers(1, 512),
       st.sampled_from(["fp16", "fp8", "int8"]), st.sampled_from(["naive", "fused"]),
       st.lists(st.integers(0, len(CATALOG) - 1), min_size=1, max_size=6, unique=True))
def test_one_pass_equals_two_analyses(name, batch, seq, precision, attention, picks):
    model, devices = MODELS[name], [CATALOG[i] for i in picks]
    r = prefill_decode(model, devices, precision, batch=batch, seq_len=seq, attention=attention)
    for k, phase in enumerate(("prefill", "decode")):
        one = evaluate(model, devices, precision, Context(batch=batch, seq_len=seq, phase=phase, attention=attention))
        rows = r.rows[k]
        assert r.names[rows] == one.table.names
        np.testing.assert_array_equal(r.count[rows], one.count)
        np.testing.assert_array_equal(r.flops[rows], one.flops)
        np.testing.assert_array_equal(r.bytes[rows], one.bytes)
        np.testing.assert_array_equal(r.intensity[rows], one.intensity)
        np.testing.assert_array_equal(r.memory_bound[rows], one.memory_bound)
        np.testing.assert_allclose(r.row_time_s[rows], one.time, rtol=1e-12, equal_nan=True)
        np.testing.assert_allclose(r.row_energy_j[rows], one.energy, rtol=1e-12, equal_nan=True)
        np.testing.assert_allclose(r.time_s[k], one.totals.time, rtol=1e-12, equal_nan=True)
        np.testing.assert_allclose(r.energy_j[k], one.totals.energy, rtol=1e-12, equal_nan=True)


def test_llama2_7b_on_the_a100_hand_checked():
    """Decode at batch 1 is memory-bound: one step moves the weights and the KV cache once, so its time is at least
    bytes / bandwidth (13.5 GB of FP16 weights over 2.039 TB/s: > 6.6 ms), and the prefill of 1,024 tokens is
    longer than the step."""
    a100 = [d for d in CATALOG if d.id == "nvidia-a100-sxm4-80gb"]
    r = prefill_decode(MODELS["llama2-7b"], a100, "fp16", batch=1, seq_len=1024)
    step_bytes = float(np.sum(r.count[r.rows[1]] * r.bytes[r.rows[1]]))
    assert step_bytes > 13.4e9  # 6.7e9 parameters x 2 B
    assert r.decode_step_s[0] >= step_bytes / 2.039e12
    assert r.prefill_s[0] > r.decode_step_s[0]
    assert r.memory_bound[r.rows[1]].any() and np.all(r.time_s > 0)


@pytest.mark.parametrize("kwargs, field", [({"batch": 0, "seq_len": 8}, "batch"), ({"seq_len": -1}, "seq_len"),
                                           ({"seq_len": 8, "attention": "x"}, "attention"),
                                           ({"seq_len": 8, "lm_head": "x"}, "lm_head")])
def test_bad_input_names_the_field(kwargs, field):
    with pytest.raises(ValueError, match=field):
        prefill_decode(MODELS["gpt2"], CATALOG[:1], "fp16", **kwargs)
