"""The LLM templates (explorer/core/workload/llm_templates.py) against the published parameter counts of their
checkpoints. Each count is also worked out by hand from the sizes in the checkpoint's config.json, so a template can
only pass if its sizes are the checkpoint's:

  per block = q (H x Hq) + k, v (H x Hkv each) + o (Hq x H) [+ q/k/v biases] + 3 x H x I (gate, up, down) + 2 H (norms)
  total     = N x per block + V x H (embedding) + H (final norm) + V x H (untied head)

with H the hidden size, Hq = heads x head_dim, Hkv = kv_heads x head_dim, I the FFN width, V the vocabulary."""

import pytest

from explorer.core.workload.layers import Context
from explorer.core.workload.model import build_table
from explorer.core.workload.templates import get_template


def params(template_id):
    t = get_template(template_id)
    return build_table(t.build(), t.context(phase="prefill")).total("params")


def published(template_id):
    (figure,) = get_template(template_id).published
    assert figure.quantity == "params" and "https://" in figure.citation
    return figure.value


def by_hand(n, hidden, heads, kv_heads, ffn, vocab, head_dim=0, qkv_bias=False):
    head_dim = head_dim or hidden // heads
    hq, hkv = heads * head_dim, kv_heads * head_dim
    block = hidden * hq + 2 * hidden * hkv + hq * hidden + 3 * hidden * ffn + 2 * hidden
    block += (hq + 2 * hkv) if qkv_bias else 0
    return n * block + 2 * vocab * hidden + hidden


# (id, published count, sizes of the checkpoint's config.json)
CASES = [
    # Llama 2 70B (Touvron et al. 2023; meta-llama/Llama-2-70b-hf): 80 x 8192, 64/8 heads, FFN 28672, vocab 32000
    ("llama2-70b", 68_976_648_192,
     {"n": 80, "hidden": 8192, "heads": 64, "kv_heads": 8, "ffn": 28672, "vocab": 32000}),
    # meta-llama/Meta-Llama-3-8B: 32 x 4096, 32/8 heads, FFN 14336, vocab 128256
    ("llama3-8b", 8_030_261_248,
     {"n": 32, "hidden": 4096, "heads": 32, "kv_heads": 8, "ffn": 14336, "vocab": 128256}),
    # meta-llama/Meta-Llama-3-70B: 80 x 8192, 64/8 heads, FFN 28672, vocab 128256
    ("llama3-70b", 70_553_706_496,
     {"n": 80, "hidden": 8192, "heads": 64, "kv_heads": 8, "ffn": 28672, "vocab": 128256}),
    # meta-llama/Llama-3.1-405B: 126 x 16384, 128/8 heads, FFN 53248, vocab 128256
    ("llama3.1-405b", 405_853_388_800,
     {"n": 126, "hidden": 16384, "heads": 128, "kv_heads": 8, "ffn": 53248, "vocab": 128256}),
    # mistralai/Mistral-7B-v0.1: 32 x 4096, 32/8 heads, FFN 14336, vocab 32000 (the window has no weights)
    ("mistral-7b", 7_241_732_096,
     {"n": 32, "hidden": 4096, "heads": 32, "kv_heads": 8, "ffn": 14336, "vocab": 32000}),
    # Qwen/Qwen2.5-7B: 28 x 3584, 28/4 heads of 128, FFN 18944, vocab 152064, biases on q, k, v
    ("qwen2.5-7b", 7_615_616_512,
     {"n": 28, "hidden": 3584, "heads": 28, "kv_heads": 4, "ffn": 18944, "vocab": 152064, "qkv_bias": True}),
]


@pytest.mark.parametrize("template_id, count, sizes", CASES, ids=[c[0] for c in CASES])
def test_parameter_count_is_the_published_one(template_id, count, sizes):
    assert published(template_id) == count
    assert by_hand(**sizes) == count
    assert params(template_id) == count


def test_llama2_70b_hub_total_includes_the_rotary_buffers():
    """The Hub's safetensors total for meta-llama/Llama-2-70b-hf is 68,976,653,312: the checkpoint also stores each
    layer's rotary inv_freq buffer, head_dim / 2 = 64 numbers, which are not parameters (the same holds for
    Llama-2-7b-hf: 6,738,417,664 = 6,738,415,616 + 32 x 64, the llama2-7b template's published count)."""
    assert 68_976_653_312 - 80 * 64 == params("llama2-70b")
    assert 6_738_417_664 - 32 * 64 == params("llama2-7b")


def test_405b_counts_follow_from_eight_kv_heads():
    """The first Llama 3.1 405B configs said 16 key/value heads; the published count follows from 8."""
    sixteen = by_hand(n=126, hidden=16384, heads=128, kv_heads=16, ffn=53248, vocab=128256)
    assert sixteen == 410_081_247_232 and sixteen - params("llama3.1-405b") == 126 * 2 * 16384 * 8 * 128


def test_mistral_decode_attends_to_its_window_only():
    t = get_template("mistral-7b")
    long = build_table(t.build(), Context(batch=1, seq_len=32768, phase="decode"))
    window = build_table(t.build(), Context(batch=1, seq_len=4096, phase="decode"))
    scores = long.names.index("layers.attn.scores")
    assert long.out_shapes[scores] == (32, 1, 4096)  # 32768 tokens of context, 4096 keys attended
    assert long.total("kv_cache_elems") == window.total("kv_cache_elems") == 2 * 32 * 4096 * 1024
    assert long.total("macs") == window.total("macs")


def test_qwen_biases_sit_on_q_k_v_only():
    t = get_template("qwen2.5-7b")
    tab = build_table(t.build(), t.context(phase="prefill"))
    qkv, out = tab.names.index("layers.attn.qkv"), tab.names.index("layers.attn.out")
    assert tab.params[qkv] == 3584 * (3584 + 2 * 512) + (3584 + 2 * 512)
    assert tab.params[out] == 3584 * 3584
    assert all(tab.params[tab.names.index(f"layers.ffn_{p}")] == 3584 * 18944 for p in ("gate", "up", "down"))


def test_decode_kv_cache_of_the_gqa_models():
    """GQA shrinks the KV cache by heads / kv_heads: Llama 3 70B keeps 2 x 80 layers x 4096 tokens x 1024 numbers."""
    t = get_template("llama3-70b")
    tab = build_table(t.build(), t.context())
    assert t.context() == Context(batch=1, seq_len=4096, phase="decode")
    assert tab.total("kv_cache_elems") == 2 * 80 * 4096 * 8 * 128
