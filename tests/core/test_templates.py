"""Model templates against their published sizes and costs (sources in each test and in docs/templates.md).

Counting conventions of the app (layers/base.py): MACs count the multiply-accumulates of matrix products and
convolutions; FLOPs = 2 x MACs + other work (norms, activations, biases, softmax); batch norm has 2 learned
parameters per channel (running statistics are buffers, as in PyTorch); causal attention counts only the unmasked
half.
"""

from dataclasses import replace

import pytest

from explorer.core.workload.layers import Context, ParamError, ShapeError
from explorer.core.workload.layers.base import run
from explorer.core.workload.model import Model, build_table
from explorer.core.workload.templates import TEMPLATES, PublishedFigure, UnknownTemplateError, get_template

IDS = ("resnet50", "mobilenetv2", "vit-b16", "bert-base", "gpt2", "llama2-7b", "dlrm-small", "kws-dscnn",
       "llama2-70b", "llama3-8b", "llama3-70b", "llama3.1-405b", "mistral-7b", "qwen2.5-7b",  # LLMs: test_llm_templates
       "mixtral-8x7b", "deepseek-v3")  # mixtures of experts: test_moe_templates


def table(template_id, **ctx):
    t = get_template(template_id)
    return build_table(t.build(), t.context(**ctx))


def rows(tab, kind):
    return [i for i in range(len(tab)) if tab.kinds[i] == kind]


def column_sum(tab, column, indices):
    return sum(float(getattr(tab, column)[i] * tab.count[i]) for i in indices)


def executions(tab, indices):
    return sum(int(tab.count[i]) for i in indices)


def published(template_id, quantity):
    (figure,) = [f for f in get_template(template_id).published if f.quantity == quantity]
    return figure.value


def rel(a, b):
    return abs(a - b) / b


# ----------------------------------------------------------------------------------------------- registry
def test_registry_has_the_public_ids():
    assert tuple(TEMPLATES) == IDS
    assert all(TEMPLATES[i].id == i for i in IDS)


def test_unknown_id_names_it_and_lists_the_known_ones():
    with pytest.raises(ValueError) as err:
        get_template("resnet51")
    assert isinstance(err.value, UnknownTemplateError)
    assert "'resnet51'" in str(err.value)
    assert all(i in str(err.value) for i in IDS)


def test_published_figure_rejects_an_unknown_quantity():
    with pytest.raises(ValueError, match="quantity"):
        PublishedFigure("gflops", 1.0, "x", "y")


@pytest.mark.parametrize("template_id", IDS)
def test_builds_without_errors_with_readable_unique_names(template_id):
    t = get_template(template_id)
    model = t.build()
    names = [layer.name for layer in model.layers]
    assert all(names) and len(set(names)) == len(names)
    phases = ("prefill", "decode") if model.default_seq_len() else ("prefill",)
    for phase in phases:
        tab = build_table(model, t.context(batch=2, phase=phase))
        assert tab.errors == []
        assert len(set(tab.names)) == len(tab.names)
    assert Model.from_dict(model.to_dict()) == model  # a template is a valid model file
    assert all(f.citation.count("https://") >= 1 for f in t.published)


# ------------------------------------------------------------------------------------------------ vision
def test_resnet50_matches_torchvision():
    """torchvision ResNet50_Weights: num_params 25,557,032, 'GFLOPS' 4.09 (MACs, conv + fc) at 224x224.
    https://pytorch.org/vision/stable/models/generated/torchvision.models.resnet50.html"""
    tab = table("resnet50")
    assert tab.total("params") == 25_557_032  # batch norm: weight and bias (running statistics are buffers)
    assert rel(tab.total("params"), published("resnet50", "params")) < 0.01
    assert tab.total("macs") == 4_089_184_256
    assert rel(tab.total("macs"), published("resnet50", "macs")) < 0.01
    convs = rows(tab, "conv2d")
    assert executions(tab, convs) == 53  # 1 stem + 16 x 3 + 4 projection shortcuts
    assert tab.out_shapes[-1] == (1000,)
    conv2 = tab.names.index("layer2.0.conv2")  # v1.5: the stride sits on the 3x3 convolution
    assert tab.out_shapes[conv2] == (128, 28, 28)
    assert tab.out_shapes[tab.names.index("layer2.0.conv1")] == (128, 56, 56)


def test_mobilenetv2_matches_torchvision_and_the_paper():
    """torchvision mobilenet_v2: 3,504,872 params, 0.30 'GFLOPS' (MACs); Sandler et al. 2018, Table 4: 300M
    multiply-adds at 224x224."""
    tab = table("mobilenetv2")
    assert tab.total("params") == 3_504_872
    assert rel(tab.total("params"), published("mobilenetv2", "params")) < 0.01
    assert rel(tab.total("macs"), published("mobilenetv2", "macs")) < 0.01
    depthwise = [i for i in rows(tab, "conv2d") if tab.names[i].endswith(".depthwise")]
    assert executions(tab, depthwise) == 17  # 17 inverted-residual blocks
    assert all(tab.gemm[i, 2] == 9 for i in depthwise)  # K = 1 channel x 3 x 3 per group
    assert executions(tab, rows(tab, "add")) == 10  # residuals where stride 1 and channels match


def test_vit_b16_matches_torchvision():
    """torchvision vit_b_16: 86,567,656 params, 17.56 'GFLOPS' (MACs) at 224x224.
    https://pytorch.org/vision/stable/models/generated/torchvision.models.vit_b_16.html"""
    tab = table("vit-b16")
    assert tab.total("params") == 86_567_656
    assert rel(tab.total("macs"), published("vit-b16", "macs")) < 0.01
    scores = tab.names.index("encoder.layers.attn.scores")
    assert tab.out_shapes[scores] == (12, 197, 197)  # 196 patches + class token, bidirectional
    assert tab.macs[scores] == 12 * 197 * 197 * 64


def test_kws_dscnn_matches_hello_edge():
    """Hello Edge (Zhang et al. 2017, https://arxiv.org/abs/1711.07128), DS-CNN small: 38.6 KB memory, 5.4 M
    operations. Arm's reference (ML-KWS-for-MCU ds_cnn.h) holds 22,604 int8 weights and biases and two 64x25x5
    activation buffers (16,000 B): 38,604 B. 'Operations' = a multiply and an add per MAC + one add per bias."""
    tab = table("kws-dscnn")
    assert tab.out_shapes[tab.names.index("conv1")] == (64, 25, 5)
    assert tab.gemm[tab.names.index("conv1")].tolist() == [125, 64, 40]  # K = 1 x 10 x 4
    params = tab.total("params")
    assert params == published("kws-dscnn", "params") == 22_604
    assert rel(params + 2 * 64 * 25 * 5, 38.6e3) < 0.01
    assert tab.total("macs") == 320_000 + 4 * (72_000 + 512_000) + 768
    bias_adds = column_sum(tab, "other_flops", rows(tab, "conv2d") + rows(tab, "dense"))
    assert bias_adds == 9 * 64 * 25 * 5 + 12
    ops = 2 * tab.total("macs") + bias_adds
    assert rel(ops, published("kws-dscnn", "flops")) < 0.01


# ------------------------------------------------------------------------------------------- transformers
def test_bert_base_matches_published():
    """BERT-base uncased: 109,482,240 params with the pooler (Devlin et al. 2019 '110M'; google-bert/bert-base-
    uncased). TinyBERT (Jiao et al. 2020, Table 1, https://arxiv.org/abs/1909.10351): BERT-BASE 22.5B FLOPs,
    which is 2 x MACs at 128 tokens."""
    tab = table("bert-base")
    assert tab.total("params") == published("bert-base", "params") == 109_482_240
    assert rel(2 * tab.total("macs"), published("bert-base", "flops")) < 0.01
    assert rel(tab.total("flops"), published("bert-base", "flops")) < 0.01
    scores = tab.names.index("encoder.layer.attn.scores")
    assert tab.macs[scores] == 12 * 128 * 128 * 64  # bidirectional: every (query, key) pair


def test_gpt2_params_and_kaplan_forward_cost():
    """GPT-2 small: 124,439,808 params (openai-community/gpt2, lm_head tied). No MAC figure is published; the
    forward cost is checked against Kaplan et al. 2020 ('Scaling Laws for Neural Language Models', Table 1):
    C_forward = 2N + 2 n_layer n_ctx d_attn FLOPs per token plus the de-embedding 2 d_model n_vocab, with
    N = 12 n_layer d_model^2. Its causal attention term averages n_ctx/2 keys per token over QK^T and AV; the
    exact causal count attends to (n_ctx + 1)/2, one extra n_layer n_ctx d per token. Kaplan counts the de-embedding
    for every one of the n_ctx tokens, so the LM head runs on every position here (lm_head 'all', as in training),
    not on the last one only (the serving default)."""
    t = get_template("gpt2")
    tab = build_table(t.build(), replace(t.context(), lm_head="all"))
    assert tab.total("params") == published("gpt2", "params") == 124_439_808
    n_layer, d, s, vocab = 12, 768, 1024, 50257
    n = 12 * n_layer * d**2
    kaplan_macs = s * (n + n_layer * s * d + d * vocab)
    assert tab.total("macs") == kaplan_macs + s * n_layer * d
    assert rel(tab.total("macs"), kaplan_macs) < 0.01


def test_gpt2_decode_kv_cache():
    tab = table("gpt2", phase="decode", seq_len=1024)
    assert tab.total("kv_cache_elems") == 2 * 12 * 1024 * 768  # K and V, 12 layers, 1024 positions, 768 wide
    assert tab.out_shapes[-1] == (1, 50257)  # one new token per sequence
    per_sequence = build_table(get_template("gpt2").build(), Context(batch=4, seq_len=1024, phase="decode"))
    assert per_sequence.total("kv_cache_elems") == 4 * 2 * 12 * 1024 * 768
    assert per_sequence.total("kv_read_elems") == 4 * 2 * 12 * 1023 * 768  # the cache before the new token


def test_llama2_7b_params_and_decode():
    """Llama-2-7B: 6,738,415,616 params (Touvron et al. 2023; meta-llama/Llama-2-7b-hf config: hidden 4096,
    32 layers, 32 heads, SwiGLU 11008, vocab 32000, no biases, untied head)."""
    t = get_template("llama2-7b")
    assert t.phase_default == "decode"
    prefill = table("llama2-7b", phase="prefill")
    assert prefill.total("params") == published("llama2-7b", "params") == 6_738_415_616
    tab = table("llama2-7b")  # decode at the template's 4096-token context
    n_layer, d, ff, ctx, vocab = 32, 4096, 11008, 4096, 32000
    non_embedding = n_layer * (4 * d * d + 3 * d * ff)
    assert tab.total("macs") == non_embedding + 2 * n_layer * ctx * d + d * vocab  # QK^T and AV over the cache
    assert tab.total("kv_cache_elems") == 2 * n_layer * ctx * d  # 2 GiB at fp16
    # the big dense layers at batch 1: 2 FLOP per weight, 2 bytes per fp16 weight -> ~1 FLOP/byte
    big = [i for i in rows(tab, "dense") if tab.weight_elems[i] > 1e7]
    assert sorted(tab.names[i] for i in big) == ["layers.attn.out", "layers.attn.qkv", "layers.ffn_down",
                                                 "layers.ffn_gate", "layers.ffn_up", "lm_head"]
    for i in big:
        nbytes = 2 * (tab.weight_elems[i] + tab.input_elems[i] + tab.output_elems[i])
        assert 0.99 < tab.flops[i] / nbytes <= 1.0


# ------------------------------------------------------------------------------------------ recommendation
def test_dlrm_small_against_its_configuration():
    """No total is published for the DLRM benchmark model; the expected figures are computed from the sizes the
    configuration states (facebookresearch/dlrm bench/dlrm_s_benchmark.sh; Naumov et al. 2019, Section 6):
    bottom MLP 512-512-64, 8 tables of 1,000,000 x 64, dot interaction of 9 vectors, top MLP 100-1024-1024-1024-1."""
    tab = table("dlrm-small")
    mlp = [(512, 512), (512, 64), (100, 1024), (1024, 1024), (1024, 1024), (1024, 1)]
    assert 64 + 9 * 8 // 2 == 100  # the top MLP's input: dense vector + pairwise dots
    assert tab.total("params") == 8 * 1_000_000 * 64 + sum(i * o + o for i, o in mlp)
    assert tab.total("macs") == sum(i * o for i, o in mlp) + 9 * 9 * 64  # the bmm X X^T as run
    emb = tab.names.index("emb_l")
    assert tab.out_shapes[emb] == (9, 64)
    assert tab.weight_elems[emb] == 8 * 100 * 64  # rows read per sample, not the 2 GB of tables
    assert tab.other_flops[emb] == 8 * 99 * 64  # sum pooling
    assert tab.out_shapes[tab.names.index("interact")] == (100,)


def test_dlrm_embedding_intensity_is_far_below_one():
    """The chapter's Table 13: embedding lookups run at < 1 FLOP/byte (memory-bound)."""
    tab = table("dlrm-small", batch=2048)
    emb = tab.names.index("emb_l")
    nbytes = 4 * (tab.weight_elems[emb] + tab.input_elems[emb] + tab.output_elems[emb])  # fp32
    assert tab.flops[emb] / nbytes < 1


# ---------------------------------------------------------------------------------------- new layer kinds
def test_conv2d_non_square_kernel_and_square_defaults():
    ctx = Context(batch=1)
    out, (row,) = run("conv2d", {"out_channels": 8, "kernel_size": 3, "kernel_w": 5, "stride_w": 2,
                                 "padding_h": 1, "padding_w": 0}, (4, 16, 16), ctx, "c")
    assert out == (8, 16, 6)
    assert row.gemm == (16 * 6, 8, 4 * 3 * 5) and row.params == 8 * 4 * 15
    square, (sq_row,) = run("conv2d", {"out_channels": 8, "kernel_size": 3, "stride": 2, "padding": 1},
                            (4, 16, 16), ctx, "c")
    assert square == (8, 8, 8) and sq_row.macs == 64 * 8 * 36
    with pytest.raises(ShapeError, match="kernel 10x4"):
        run("conv2d", {"out_channels": 8, "kernel_size": 10, "kernel_w": 4}, (1, 5, 10), ctx, "c")
    with pytest.raises(ParamError, match="c.padding_h"):
        run("conv2d", {"out_channels": 8, "kernel_size": 3, "padding_h": -2}, (1, 5, 10), ctx, "c")


def test_embedding_bag_and_dot_interaction_shapes():
    ctx = Context(batch=3)
    out, (row,) = run("embedding_bag", {"num_tables": 2, "rows_per_table": 10, "embedding_dim": 4,
                                        "lookups_per_table": 20}, (4,), ctx, "e")
    assert out == (3, 4)
    assert row.params == 80 and row.weight_elems == 80  # 3 x 2 x 20 rows read > the 20 stored: capped
    stacked, _ = run("embedding_bag", {"num_tables": 1, "rows_per_table": 10, "embedding_dim": 4}, out, ctx, "e2")
    assert stacked == (4, 4)
    with pytest.raises(ShapeError, match="embedding_bag"):
        run("embedding_bag", {"num_tables": 1, "rows_per_table": 10, "embedding_dim": 8}, (4,), ctx, "e")
    flat, (dot,) = run("dot_interaction", {}, (4, 4), ctx, "i")
    assert flat == (4 + 6,) and dot.macs == 3 * 16 * 4 and dot.gemm == (4, 4, 4) and dot.gemm_count == 3
    with_self, _ = run("dot_interaction", {"self_interaction": True}, (4, 4), ctx, "i")
    assert with_self == (4 + 10,)
    with pytest.raises(ShapeError, match="dot_interaction"):
        run("dot_interaction", {}, (4,), ctx, "i")


def test_template_context_defaults():
    t = get_template("llama2-7b")
    assert t.context() == Context(batch=1, seq_len=4096, phase="decode")
    assert t.context(batch=8, phase="prefill", seq_len=512) == Context(batch=8, seq_len=512, phase="prefill")
    assert get_template("resnet50").context() == Context()
