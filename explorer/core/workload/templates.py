"""Model templates: the lighthouse workloads, built from the layer kit, each with its published size and cost.

A template's ``id`` is a public interface (CLI ``hwexplorer analyze gpt2``, the "new from template" menu, saved
workspaces). ``published`` holds the figures the template is checked against (``tests/core/test_templates.py``),
each with its source and, where the source counts differently from this app, a note saying how.
Conventions of the app's own counts: ``docs/templates.md`` and ``layers/base.py``.
"""

from __future__ import annotations

import functools

from explorer.core.workload.llm_templates import LLM_TEMPLATES
from explorer.core.workload.model import LayerSpec, Model
from explorer.core.workload.template_types import (  # noqa: F401  (public names of this module)
    PHASES,
    QUANTITIES,
    PublishedFigure,
    Template,
    UnknownTemplateError,
)

L = LayerSpec.make


def _run(prefix: str, first: int, count: int, kind: str, **params) -> LayerSpec:
    """``count`` identical shape-keeping blocks numbered from ``first`` (e.g. ``layer1.1-2``)."""
    name = f"{prefix}.{first}" if count == 1 else f"{prefix}.{first}-{first + count - 1}"
    return L(kind, name, repeat=count, **params)


# ------------------------------------------------------------------------------------------------- vision
def resnet50() -> Model:
    layers = [L("conv2d", "conv1", out_channels=64, kernel_size=7, stride=2, padding=3), L("batchnorm", "bn1"),
              L("relu", "relu"), L("maxpool", "maxpool", kernel_size=3, stride=2, padding=1)]
    for stage, (mid, blocks, stride) in enumerate(((64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)), start=1):
        layers.append(L("bottleneck", f"layer{stage}.0", mid_channels=mid, stride=stride))
        layers.append(_run(f"layer{stage}", 1, blocks - 1, "bottleneck", mid_channels=mid))
    layers += [L("global_avgpool", "avgpool"), L("dense", "fc", in_features=2048, out_features=1000)]
    return Model.make("ResNet-50 (torchvision, v1.5)", {"channels": 3, "height": 224, "width": 224}, layers)


def mobilenetv2() -> Model:
    layers = [L("conv2d", "features.0.conv", out_channels=32, kernel_size=3, stride=2, padding=1),
              L("batchnorm", "features.0.bn"), L("relu6", "features.0.relu6")]
    index = 1
    # (expansion t, output channels c, blocks n, first stride s): Sandler et al. 2018, Table 2
    for t, c, n, s in ((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2),
                       (6, 320, 1, 1)):
        layers.append(L("inverted_residual", f"features.{index}", out_channels=c, stride=s, expand_ratio=t))
        if n > 1:
            layers.append(_run("features", index + 1, n - 1, "inverted_residual", out_channels=c, expand_ratio=t))
        index += n
    layers += [L("conv2d", f"features.{index}.conv", out_channels=1280, kernel_size=1),
               L("batchnorm", f"features.{index}.bn"), L("relu6", f"features.{index}.relu6"),
               L("global_avgpool", "avgpool"), L("dense", "classifier", in_features=1280, out_features=1000)]
    return Model.make("MobileNetV2 (torchvision, width 1.0)", {"channels": 3, "height": 224, "width": 224}, layers)


def vit_b16() -> Model:
    layers = [L("conv2d", "conv_proj", out_channels=768, kernel_size=16, stride=16, bias=True),
              L("to_tokens", "encoder.tokens", cls_token=True, position_embedding=True),
              L("transformer_block", "encoder.layers", repeat=12, heads=12, causal=False),
              L("layernorm", "encoder.ln"), L("token_pool", "class_token", mode="first"),
              L("dense", "heads.head", in_features=768, out_features=1000)]
    return Model.make("ViT-B/16 (torchvision)", {"channels": 3, "height": 224, "width": 224}, layers)


def kws_dscnn() -> Model:
    # TensorFlow 'SAME' padding of the 10x4 stride-2 convolution pads 4 rows above and 5 below (Arm's reference
    # uses PY=4, PX=1 with a 25x5 output); a symmetric 5 rows / 1 column gives the same 25x5 output and work.
    layers = [L("conv2d", "conv1", out_channels=64, kernel_size=10, kernel_w=4, stride=2, padding_h=5,
                padding_w=1, bias=True), L("relu", "conv1.relu")]
    for i in range(1, 5):  # batch norm folded into the biases, as deployed
        layers += [L("conv2d", f"ds{i}.depthwise", out_channels=64, kernel_size=3, padding=1, groups=64, bias=True),
                   L("relu", f"ds{i}.depthwise_relu"),
                   L("conv2d", f"ds{i}.pointwise", out_channels=64, kernel_size=1, bias=True),
                   L("relu", f"ds{i}.pointwise_relu")]
    layers += [L("global_avgpool", "avgpool"), L("dense", "fc", in_features=64, out_features=12),
               L("softmax", "probabilities")]
    return Model.make("DS-CNN-S keyword spotting (Hello Edge)", {"channels": 1, "height": 49, "width": 10}, layers)


# ------------------------------------------------------------------------------------------- transformers
def bert_base() -> Model:
    layers = [L("embedding", "embeddings", num_embeddings=30522, embedding_dim=768, position_embeddings=512,
                token_types=2),
              L("layernorm", "embeddings.LayerNorm"),
              L("transformer_block", "encoder.layer", repeat=12, heads=12, norm_position="post", causal=False),
              L("token_pool", "pooler.first_token", mode="first"),
              L("dense", "pooler.dense", in_features=768, out_features=768), L("tanh", "pooler.activation")]
    return Model.make("BERT-base uncased (110M)", {"tokens": 128}, layers)


def gpt2() -> Model:
    layers = [L("embedding", "wte", num_embeddings=50257, embedding_dim=768, position_embeddings=1024),
              L("transformer_block", "h", repeat=12, heads=12), L("layernorm", "ln_f"),
              L("dense", "lm_head", in_features=768, out_features=50257, bias=False, tied=True, head=True)]
    return Model.make("GPT-2 (124M)", {"tokens": 1024}, layers)


def llama2_7b() -> Model:
    layers = [L("embedding", "embed_tokens", num_embeddings=32000, embedding_dim=4096),
              L("transformer_block", "layers", repeat=32, heads=32, ffn="swiglu", ffn_hidden=11008, norm="rmsnorm",
                bias=False),
              L("rmsnorm", "norm"),
              L("dense", "lm_head", in_features=4096, out_features=32000, bias=False, head=True)]
    return Model.make("Llama-2-7B", {"tokens": 4096}, layers)


# -------------------------------------------------------------------------------------------- recommendation
def dlrm_small() -> Model:
    """facebookresearch/dlrm bench/dlrm_s_benchmark.sh: --arch-mlp-bot=512-512-64 --arch-mlp-top=1024-1024-1024-1
    --arch-sparse-feature-size=64 --arch-embedding-size=1000000 (x8) --num-indices-per-lookup=100, dot."""
    layers = [L("dense", "bot_l.0", in_features=512, out_features=512), L("relu", "bot_l.1"),
              L("dense", "bot_l.2", in_features=512, out_features=64), L("relu", "bot_l.3"),
              L("embedding_bag", "emb_l", num_tables=8, rows_per_table=1_000_000, embedding_dim=64,
                lookups_per_table=100),
              L("dot_interaction", "interact"),  # 64 + 9*8/2 = 100 features
              L("dense", "top_l.0", in_features=100, out_features=1024), L("relu", "top_l.1"),
              L("dense", "top_l.2", in_features=1024, out_features=1024), L("relu", "top_l.3"),
              L("dense", "top_l.4", in_features=1024, out_features=1024), L("relu", "top_l.5"),
              L("dense", "top_l.6", in_features=1024, out_features=1), L("sigmoid", "top_l.7")]
    return Model.make("DLRM (paper benchmark configuration)", {"features": 512}, layers)


# ------------------------------------------------------------------------------------------------ registry
_TV = ("torchvision models documentation, {}: "
       "https://pytorch.org/vision/stable/models/generated/torchvision.models.{}.html")
_GFLOPS_ARE_MACS = ("torchvision's 'GFLOPS' column counts multiply-accumulates (MACs), not 2 x MACs: it is "
                    "compared with the app's MAC total")
_HELLO_EDGE = ("Zhang, Suda, Lai, Chandra, 'Hello Edge: Keyword Spotting on Microcontrollers' (2017), DS-CNN small: "
               "https://arxiv.org/abs/1711.07128")
_ARM_DSCNN = ("Arm ML-KWS-for-MCU reference implementation, Deployment/Source/NN/DS_CNN/ds_cnn.h: "
              "https://github.com/ARM-software/ML-KWS-for-MCU")

_ALL = (
    Template(
        "resnet50", "ResNet-50",
        "torchvision ResNet-50 v1.5 (stride on the 3x3 convolution of each bottleneck). Input: a 3x224x224 image.",
        resnet50, "prefill",
        (PublishedFigure("params", 25_557_032, "224x224, batch 1", _TV.format("resnet50", "resnet50"),
                         "torchvision counts batch-norm scale and shift only; the app's params also hold the running "
                         "mean and variance (2 more per channel)"),
         PublishedFigure("macs", 4.09e9, "224x224, batch 1", _TV.format("resnet50", "resnet50"), _GFLOPS_ARE_MACS))),
    Template(
        "mobilenetv2", "MobileNetV2",
        "torchvision MobileNetV2, width multiplier 1.0: inverted residuals with depthwise 3x3 convolutions. "
        "Input: a 3x224x224 image.",
        mobilenetv2, "prefill",
        (PublishedFigure("params", 3_504_872, "224x224, batch 1", _TV.format("mobilenet_v2", "mobilenet_v2"),
                         "torchvision counts batch-norm scale and shift only; the app's params also hold the running "
                         "mean and variance (2 more per channel)"),
         PublishedFigure("macs", 300e6, "224x224, batch 1",
                         "Sandler et al., 'MobileNetV2: Inverted Residuals and Linear Bottlenecks' (CVPR 2018), "
                         "Table 4, 300M multiply-adds: https://arxiv.org/abs/1801.04381",
                         "torchvision lists the same model as 0.30 'GFLOPS', also MACs"))),
    Template(
        "vit-b16", "ViT-B/16",
        "torchvision Vision Transformer Base, 16x16 patches: 196 patch tokens plus a class token through 12 "
        "pre-norm encoder blocks (12 heads, MLP 3072). Input: a 3x224x224 image.",
        vit_b16, "prefill",
        (PublishedFigure("params", 86_567_656, "224x224, batch 1", _TV.format("vit_b_16", "vit_b_16")),
         PublishedFigure("macs", 17.56e9, "224x224, batch 1", _TV.format("vit_b_16", "vit_b_16"),
                         _GFLOPS_ARE_MACS))),
    Template(
        "bert-base", "BERT-base (uncased)",
        "BERT-base: 12 post-norm encoder blocks, hidden 768, 12 heads, with the pooler. Input: 128 tokens "
        "(the fine-tuning sequence length of the cited FLOP figure).",
        bert_base, "prefill",
        (PublishedFigure("params", 109_482_240, "the encoder with embeddings and pooler",
                         "Devlin et al., 'BERT: Pre-training of Deep Bidirectional Transformers for Language "
                         "Understanding' (2019), BERT-BASE 110M: https://arxiv.org/abs/1810.04805; exact count of "
                         "google-bert/bert-base-uncased: https://huggingface.co/google-bert/bert-base-uncased"),
         PublishedFigure("flops", 22.5e9, "128 tokens, batch 1",
                         "Jiao et al., 'TinyBERT: Distilling BERT for Natural Language Understanding' (2020), "
                         "Table 1, BERT-BASE teacher 22.5B FLOPs: https://arxiv.org/abs/1909.10351",
                         "the paper's FLOPs are 2 x MACs of the matrix products (its 4-layer, 312-wide student, "
                         "1.2B FLOPs, fits the same rule); the sequence length 128 is the paper's maximum "
                         "sequence length"))),
    Template(
        "gpt2", "GPT-2 small (124M)",
        "GPT-2 small: 12 pre-norm decoder blocks, hidden 768, 12 heads, LM head tied to the token embedding. "
        "Input: 1024 tokens (its context window).",
        gpt2, "prefill",
        (PublishedFigure("params", 124_439_808, "token and position embeddings, 12 blocks, final norm; lm_head tied",
                         "OpenAI GPT-2 model card (124M parameters), exact count of openai-community/gpt2: "
                         "https://huggingface.co/openai-community/gpt2"),)),
    Template(
        "llama2-7b", "Llama-2-7B",
        "Llama 2 7B: 32 pre-RMSNorm decoder blocks, hidden 4096, 32 heads, SwiGLU FFN 11008, no biases, untied LM "
        "head, vocabulary 32000 (rotary position encoding is not counted). Input: 4096 tokens; decode by default: "
        "one new token per sequence against a KV cache of the sequence length.",
        llama2_7b, "decode",
        (PublishedFigure("params", 6_738_415_616, "embeddings, 32 blocks, final norm, untied lm_head",
                         "Touvron et al., 'Llama 2: Open Foundation and Fine-Tuned Chat Models' (2023), 7B: "
                         "https://arxiv.org/abs/2307.09288; exact count of meta-llama/Llama-2-7b-hf: "
                         "https://huggingface.co/meta-llama/Llama-2-7b-hf"),)),
    Template(
        "dlrm-small", "DLRM (small benchmark)",
        "The DLRM paper's benchmark model (facebookresearch/dlrm bench/dlrm_s_benchmark.sh; Naumov et al. 2019, "
        "https://arxiv.org/abs/1906.00091): 512 dense features through a bottom MLP 512-512-64; 8 embedding tables "
        "of 1,000,000 x 64 with up to 100 sum-pooled lookups each; dot interaction; top MLP 100-1024-1024-1024-1. "
        "No total is published: the tests derive params and MACs from the configuration's stated sizes.",
        dlrm_small, "prefill", ()),
    Template(
        "kws-dscnn", "DS-CNN keyword spotting (small)",
        "DS-CNN-S from 'Hello Edge': a 10x4 stride-2 convolution (64 channels) and 4 depthwise-separable layers "
        "(64 channels), average pool, 12 classes; batch norm folded into biases as deployed. Input: 49x10 MFCC "
        "features as a (1, 49, 10) image.",
        kws_dscnn, "prefill",
        (PublishedFigure("params", 22_604, "weights and biases (int8)", _ARM_DSCNN,
                         "Hello Edge gives 38.6 KB of memory, not a parameter count: 22,604 B of int8 weights and "
                         "biases + 16,000 B for two 64x25x5 int8 activation buffers = 38,604 B"),
         PublishedFigure("flops", 5.4e6, "49x10 MFCC, batch 1", _HELLO_EDGE,
                         "'operations' count a multiply and an add per MAC plus one add per output for the bias "
                         "(2 x MACs + bias adds); ReLU, pooling and softmax are not counted"))),
)

TEMPLATES: dict[str, Template] = {t.id: t for t in (*_ALL, *LLM_TEMPLATES)}


def get_template(template_id: str) -> Template:
    try:
        return TEMPLATES[template_id]
    except (KeyError, TypeError):
        raise UnknownTemplateError(f"unknown template {template_id!r}; known: {', '.join(TEMPLATES)}") from None


EDITED = " (edited)"


@functools.cache
def _template_layers() -> dict[str, tuple[LayerSpec, ...]]:
    """Each template's model name and its layers as the template builds them."""
    built = [t.build() for t in TEMPLATES.values()]
    return {m.name: m.layers for m in built}


def edited_name(name: str, layers: tuple[LayerSpec, ...]) -> str:
    """``name``, marked ``"Llama-2-7B (edited)"`` when it is a template's name and ``layers`` are no longer the
    template's: a model changed by hand must not pass for the published one."""
    original = _template_layers().get(name)
    return f"{name}{EDITED}" if original is not None and tuple(layers) != original else name
