"""The generate task in one pass (explorer/core/analysis/generate.py) equals the loop of single analyses: a prefill
of the prompt, then one decode step per new token after the first, step k attending prompt + k positions."""

from __future__ import annotations

import numpy as np
import pytest

from explorer.core.analysis.evaluate import evaluate
from explorer.core.analysis.generate import generate
from explorer.core.hardware.catalog_files import load_shipped_devices
from explorer.core.workload.layers import Context
from explorer.core.workload.llm_templates import MLA, BlockGroup, MoE, decoder_model
from explorer.core.workload.templates import get_template

DEVICES = [d for d in load_shipped_devices() if d.id in ("nvidia-a100-sxm4-80gb", "nvidia-h100-sxm5", "google-tpu-v4")]

MODELS = {
    "gqa+window": decoder_model("w", vocab=3000, hidden=256, heads=8, kv_heads=2, ffn_hidden=512, tokens=512,
                                layers=(BlockGroup("a", 2, 40), BlockGroup("b", 1))),
    "moe": decoder_model("m", vocab=3000, hidden=256, heads=8, kv_heads=4, ffn_hidden=128, layers=2, tokens=512,
                         moe=MoE(experts=8, top_k=2, ffn_hidden=128, shared=1)),
    "mla": decoder_model("l", vocab=3000, hidden=256, heads=8, ffn_hidden=256, layers=2, tokens=512,
                         mla=MLA(kv_lora_rank=64, qk_nope_head_dim=32, qk_rope_head_dim=16, v_head_dim=32)),
}


@pytest.mark.parametrize("name", sorted(MODELS))
@pytest.mark.parametrize("attention", ["naive", "fused"])
def test_generate_equals_the_loop_of_single_analyses(name, attention):
    model = MODELS[name]
    p, t, b = 30, 24, 3  # the window of 40 falls inside the decode steps' lengths 31..53
    g = generate(model, DEVICES, "fp16", batch=b, input_tokens=p, output_tokens=t, attention=attention)
    first = evaluate(model, DEVICES, "fp16", Context(batch=b, seq_len=p, phase="prefill", attention=attention))
    steps = [evaluate(model, DEVICES, "fp16", Context(batch=b, seq_len=p + k, phase="decode", attention=attention))
             for k in range(1, t)]
    np.testing.assert_allclose(g.ttft_s, first.totals.time, rtol=1e-12)
    np.testing.assert_allclose(g.step_s, np.stack([s.totals.time for s in steps]), rtol=1e-12)
    np.testing.assert_allclose(g.step_energy_j, np.stack([s.totals.energy for s in steps]), rtol=1e-12)
    np.testing.assert_allclose(g.total_s, first.totals.time + sum(s.totals.time for s in steps), rtol=1e-12)
    assert g.memory_bytes == pytest.approx(max(first.totals.memory_bytes, steps[-1].totals.memory_bytes), rel=1e-12)
    assert np.array_equal(g.step_kv, np.arange(p + 1, p + t))
    np.testing.assert_allclose(g.throughput_tok_s, b * t / g.total_s)
    np.testing.assert_allclose(g.tpot_s, g.decode_s / (t - 1))


def test_llama2_7b_generate_builds_four_tables_and_decode_grows_with_the_cache():
    model = get_template("llama2-7b").build()
    g = generate(model, DEVICES[:1], "fp16", batch=1, input_tokens=1024, output_tokens=128)
    assert g.tables_built <= 4  # the prefill, two decode nodes and a probe (fewer where cached)
    assert np.all(np.diff(g.step_s[:, 0]) >= 0)  # each step reads one more position of K and V
    # a one-token output is the prefill alone
    one = generate(model, DEVICES[:1], "fp16", batch=1, input_tokens=1024, output_tokens=1)
    assert one.step_s.shape == (0, 1) and np.isnan(one.tpot_s[0]) and one.total_s[0] == one.ttft_s[0]


@pytest.mark.parametrize(("kwargs", "field"), [
    ({"input_tokens": 0, "output_tokens": 4}, "input_tokens"),
    ({"input_tokens": 8, "output_tokens": -1}, "output_tokens"),
    ({"input_tokens": 8, "output_tokens": 4, "batch": 0}, "batch"),
    ({"input_tokens": 8, "output_tokens": 4, "attention": "flash"}, "attention"),
])
def test_bad_input_names_the_field(kwargs, field):
    with pytest.raises(ValueError, match=f"^{field}:"):
        generate(MODELS["moe"], DEVICES[:1], "fp16", **kwargs)


def test_a_model_without_tokens_is_refused():
    with pytest.raises(ValueError, match="^model:"):
        generate(get_template("resnet50").build(), DEVICES[:1], "fp16", input_tokens=8, output_tokens=4)
