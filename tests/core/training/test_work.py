"""Training FLOPs: 6 x parameters x tokens plus attention, on templates, by hand and against a published total."""

import numpy as np
import pytest

from explorer.core.training.step import TrainingSetup, with_lora
from explorer.core.training.work import attention_core, backward_factor, step_work
from explorer.core.workload.layers import Context
from explorer.core.workload.model import build_table
from explorer.core.workload.templates import get_template


def _table(template: str, seq: int, lora: int = 0):
    model = with_lora(get_template(template).build(), TrainingSetup(1, seq, lora_rank=lora))
    return build_table(model, Context(batch=1, seq_len=seq, lm_head="all", attention="fused"))


def test_llama3_8b_six_n_d_plus_attention_by_hand():
    """Llama-3-8B (32 layers, hidden 4096, 32 heads of 128, vocabulary 128,256, untied), one 4096-token sequence.
    The GEMMs' parameters N' = all parameters - the embedding table - the norms' weights; 6 N' D is exactly the
    GEMMs' training FLOPs (3 passes x 2 FLOPs per MAC x N' MACs per token). Causal attention by hand: per layer and
    head, Q K^T and P V each take head_dim x s (s + 1) / 2 MACs."""
    t = _table("llama3-8b", 4096)
    w = step_work(t, 1)
    count = t.columns["count"]
    params = float(t.columns["params"] @ count)
    embed = 128256 * 4096
    norms = (2 * 32 + 1) * 4096
    gemm_params = params - embed - norms
    dense = np.array([k == "dense" for k in t.kinds])
    assert 6 * float(t.columns["macs"][dense] @ count[dense]) == 6 * gemm_params * 4096
    attn_macs = 32 * 32 * 2 * 128 * 4096 * 4097 / 2
    core = np.isin(np.array(t.kinds), ["attention_scores", "attention_context"])
    assert float(t.columns["macs"][core] @ count[core]) == attn_macs
    assert w.model_flops == pytest.approx(3 * w.forward)
    six_nd = 6 * gemm_params * 4096 + 6 * attn_macs
    # the rest is elementwise work (norms, SiLU, softmax, adds): 0.06 % here
    assert w.model_flops / six_nd - 1 == pytest.approx(0.0006, abs=0.0002)
    assert w.trainable_params == params and w.frozen_params == 0


def test_llama3_405b_total_compute_against_the_paper():
    """"The Llama 3 Herd of Models" (Llama Team, AI @ Meta, 2024, https://arxiv.org/abs/2407.21783), Sec. 3.2.1:
    the flagship "is pre-trained ... 3.8 x 10^25 FLOPs" with 405B parameters on 15.6T tokens (6 N D: 3.79e25).
    Ours at the 8K pre-training sequence adds causal attention: 3.94e25, +3.6 %."""
    t = _table("llama3.1-405b", 8192)
    per_sequence = step_work(t, 1).model_flops
    total = per_sequence * 15.6e12 / 8192
    assert total / 3.8e25 - 1 == pytest.approx(0.036, abs=0.005)


def test_recompute_flops():
    t = _table("llama3-8b", 4096)
    none, sel, full = (step_work(t, 2, r) for r in ("none", "selective", "full"))
    assert none.recompute == 0 and full.recompute == pytest.approx(none.forward)
    core = attention_core(t)
    assert sel.recompute == pytest.approx(2 * float((t.flops * t.columns["count"])[core].sum()))
    assert none.hardware_flops < sel.hardware_flops < full.hardware_flops
    assert none.model_flops == sel.model_flops == full.model_flops


def test_lora_backward_skips_frozen_weight_gradients():
    """LoRA rank 16 on q, k, v, o: base GEMMs' backward is 1 x forward (activation gradients only), the adapters'
    2 x. Trainable parameters = the adapters': 32 layers x 16 x ((4096 + 4096) + 2 (4096 + 1024) + (4096 + 4096))."""
    t = _table("llama3-8b", 4096, lora=16)
    w = step_work(t, 1, lora=True)
    assert w.trainable_params == 32 * 16 * (8192 + 2 * 5120 + 8192)
    factor = backward_factor(t, True)
    kinds = np.array(t.kinds)
    assert set(factor[kinds == "lora"]) == {2.0}
    assert set(factor[(kinds == "dense")]) == {1.0}
    full = step_work(_table("llama3-8b", 4096), 1)
    assert w.backward < full.backward


def test_fused_attention_recomputes_the_core():
    """FlashAttention's backward recomputes the scores (Dao et al. 2022, Sec. 3.1): with it, no recomputation
    costs what selective recomputation costs, and selective costs nothing more."""
    t = _table("llama3-8b", 4096)
    assert step_work(t, 1, "none", fused=True).recompute == step_work(t, 1, "selective").recompute > 0
    assert step_work(t, 1, "selective", fused=True).recompute == step_work(t, 1, "selective").recompute
