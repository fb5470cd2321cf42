"""Composite blocks, each expanded into the operators it runs: transformer block, ResNet bottleneck,
MobileNetV2 inverted residual. A block's ``repeat`` is applied by the model (rows carry ``count``)."""

from __future__ import annotations

from explorer.core.workload.layers.base import (
    Context,
    Expansion,
    Param,
    ParamError,
    Shape,
    ShapeError,
    format_shape,
    layer_kind,
    need_rank,
)


@layer_kind(
    "transformer_block",
    "blocks",
    (
        Param("heads", int),
        Param("kv_heads", int, 0, minimum=0, help="0 = heads"),
        Param("head_dim", int, 0, minimum=0, help="0 = hidden / heads"),
        Param("ffn_hidden", int, 0, minimum=0, help="0 = 4 x hidden"),
        Param("ffn", str, "gelu", choices=("gelu", "relu", "swiglu", "geglu"),
              help="swiglu / geglu: gated, SiLU / GELU on the gate (three projections)"),
        Param("norm", str, "layernorm", choices=("layernorm", "rmsnorm")),
        Param("norm_position", str, "pre", choices=("pre", "post")),
        Param("causal", bool, True),
        Param("bias", bool, True),
        Param("qkv_bias", bool, False, help="biases on the q, k, v projections only (Qwen2)"),
        Param("window", int, 0, minimum=0, help="sliding-window attention: keys per query; 0 = full"),
        Param("post_norms", bool, False, help="pre-norm block that also normalizes each sublayer's output before "
                                              "its residual (Gemma 2: four norms per block)"),
    ),
    "attention + feed-forward with residuals and norms (GPT/BERT/ViT/Llama/Gemma style)",
    is_block=True,
)
def transformer_block(p: dict, in_shape: Shape, ctx: Context, name: str):
    if len(in_shape) != 2:
        raise ShapeError(f"'transformer_block' needs tokens (S, H), got {format_shape(in_shape)}")
    hidden = in_shape[1]
    ffn_hidden = p["ffn_hidden"] or 4 * hidden
    x = Expansion(ctx, name, in_shape)
    pre = p["norm_position"] == "pre"
    if p["post_norms"] and not pre:
        raise ParamError(f"{name}.post_norms: needs norm_position 'pre'")
    if pre:
        x.add(p["norm"], "norm1")
    x.add("attention", "attn", heads=p["heads"], kv_heads=p["kv_heads"], head_dim=p["head_dim"],
          causal=p["causal"], bias=p["bias"], qkv_bias=p["qkv_bias"], window=p["window"])
    if p["post_norms"]:
        x.add(p["norm"], "post_attn_norm")
    x.add("add", "residual1")
    x.add(p["norm"], "norm2" if pre else "norm1")
    gated = {"swiglu": "silu", "geglu": "gelu"}.get(p["ffn"])
    if gated:  # gate and up projections, SiLU (GELU) on the gate, product, down projection
        x.add("dense", "ffn_gate", in_features=hidden, out_features=ffn_hidden, bias=p["bias"])
        x.add(gated, "ffn_act")
        x.add("multiply", "ffn_mul")
        x.shape = in_shape
        x.add("dense", "ffn_up", in_features=hidden, out_features=ffn_hidden, bias=p["bias"])
    else:
        x.add("dense", "ffn_up", in_features=hidden, out_features=ffn_hidden, bias=p["bias"])
        x.add(p["ffn"], "ffn_act")
    x.add("dense", "ffn_down", in_features=ffn_hidden, out_features=hidden, bias=p["bias"])
    if p["post_norms"]:
        x.add(p["norm"], "post_ffn_norm")
    x.add("add", "residual2")
    if not pre:
        x.add(p["norm"], "norm2")
    return x.shape, x.rows


@layer_kind(
    "bottleneck",
    "blocks",
    (
        Param("mid_channels", int),
        Param("out_channels", int, 0, minimum=0, help="0 = 4 x mid_channels"),
        Param("stride", int, 1, help="on the 3x3 convolution (torchvision ResNet v1.5)"),
    ),
    "ResNet bottleneck: 1x1, 3x3 (stride), 1x1 convolutions with batch norm, ReLU and a residual "
    "(a 1x1 projection when the shape changes)",
    is_block=True,
)
def bottleneck(p: dict, in_shape: Shape, ctx: Context, name: str):
    need_rank(in_shape, (3,), "bottleneck", "an image (C, H, W)")
    mid, stride = p["mid_channels"], p["stride"]
    out_c = p["out_channels"] or 4 * mid
    x = Expansion(ctx, name, in_shape)
    x.add("conv2d", "conv1", out_channels=mid, kernel_size=1)
    x.add("batchnorm", "bn1")
    x.add("relu", "relu1")
    x.add("conv2d", "conv2", out_channels=mid, kernel_size=3, stride=stride, padding=1)
    x.add("batchnorm", "bn2")
    x.add("relu", "relu2")
    x.add("conv2d", "conv3", out_channels=out_c, kernel_size=1)
    out = x.add("batchnorm", "bn3")
    if stride != 1 or in_shape[0] != out_c:
        x.shape = in_shape
        x.add("conv2d", "downsample", out_channels=out_c, kernel_size=1, stride=stride)
        x.add("batchnorm", "downsample_bn")
    x.add("add", "residual")
    x.add("relu", "relu3")
    assert x.shape == out
    return x.shape, x.rows


@layer_kind(
    "inverted_residual",
    "blocks",
    (
        Param("out_channels", int),
        Param("stride", int, 1),
        Param("expand_ratio", int, 6),
    ),
    "MobileNetV2 block: 1x1 expansion, 3x3 depthwise (stride), 1x1 linear projection, residual when shapes match",
    is_block=True,
)
def inverted_residual(p: dict, in_shape: Shape, ctx: Context, name: str):
    need_rank(in_shape, (3,), "inverted_residual", "an image (C, H, W)")
    c = in_shape[0]
    hidden = c * p["expand_ratio"]
    x = Expansion(ctx, name, in_shape)
    if p["expand_ratio"] != 1:
        x.add("conv2d", "expand", out_channels=hidden, kernel_size=1)
        x.add("batchnorm", "expand_bn")
        x.add("relu6", "expand_relu6")
    x.add("conv2d", "depthwise", out_channels=hidden, kernel_size=3, stride=p["stride"], padding=1, groups=hidden)
    x.add("batchnorm", "depthwise_bn")
    x.add("relu6", "depthwise_relu6")
    x.add("conv2d", "project", out_channels=p["out_channels"], kernel_size=1)
    x.add("batchnorm", "project_bn")
    if p["stride"] == 1 and c == p["out_channels"]:
        x.add("add", "residual")
    return x.shape, x.rows
