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
from explorer.core.workload.layers.lora import lora_rows, lora_targets


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
        # mixture of experts (layers/moe.py): experts > 0 replaces the feed-forward
        Param("experts", int, 0, minimum=0, help="routed experts of a mixture-of-experts feed-forward; 0 = dense"),
        Param("top_k", int, 0, minimum=0, help="routed experts each token uses (required with experts)"),
        Param("shared_experts", int, 0, minimum=0, help="experts every token uses besides its top_k (DeepSeek)"),
        Param("expert_ffn_hidden", int, 0, minimum=0, help="one expert's feed-forward width; 0 = ffn_hidden"),
        Param("router_bias", bool, False, help="a bias per expert on the router (DeepSeek-V3)"),
        # multi-head latent attention (layers/mla.py): kv_lora_rank > 0 replaces the attention
        Param("kv_lora_rank", int, 0, minimum=0, help="multi-head latent attention's key/value latent; 0 = attention"),
        Param("q_lora_rank", int, 0, minimum=0, help="MLA: compressed query width; 0 = none"),
        Param("qk_nope_head_dim", int, 0, minimum=0, help="MLA: per-head query/key width without rotary encoding"),
        Param("qk_rope_head_dim", int, 0, minimum=0, help="MLA: per-head rotary query/key width"),
        Param("v_head_dim", int, 0, minimum=0, help="MLA: per-head value width"),
        # LoRA adapters (layers/lora.py): lora_rank > 0 adds them to the lora_targets projections
        Param("lora_rank", int, 0, minimum=0, help="rank r of LoRA adapters on the target projections; 0 = none"),
        Param("lora_targets", str, "q,k,v,o", help="projections with adapters, comma-separated from q, k, v, o, "
                                                   "gate, up, down; or all"),
        Param("lora_adapters", int, 1, help="adapters served together (each sequence uses one)"),
    ),
    "attention + feed-forward with residuals and norms (GPT/BERT/ViT/Llama/Gemma style; mixture of experts and "
    "latent attention as options)",
    is_block=True,
)
def transformer_block(p: dict, in_shape: Shape, ctx: Context, name: str):
    if len(in_shape) != 2:
        raise ShapeError(f"'transformer_block' needs tokens (S, H), got {format_shape(in_shape)}")
    hidden = in_shape[1]
    ffn_hidden = p["ffn_hidden"] or 4 * hidden
    gated = {"swiglu": "silu", "geglu": "gelu"}.get(p["ffn"])
    targets = lora_targets(p, name, gated=bool(gated))
    x = Expansion(ctx, name, in_shape)
    pre = p["norm_position"] == "pre"
    if p["post_norms"] and not pre:
        raise ParamError(f"{name}.post_norms: needs norm_position 'pre'")
    if pre:
        x.add(p["norm"], "norm1")
    if p["kv_lora_rank"]:
        for field in ("kv_heads", "head_dim", "window", "qkv_bias"):
            if p[field]:
                raise ParamError(f"{name}.{field}: has no meaning with latent attention (kv_lora_rank > 0)")
        for field in ("qk_nope_head_dim", "v_head_dim"):
            if not p[field]:
                raise ParamError(f"{name}.{field}: is required with latent attention (kv_lora_rank > 0)")
        x.add("mla", "attn", heads=p["heads"], kv_lora_rank=p["kv_lora_rank"], q_lora_rank=p["q_lora_rank"],
              qk_nope_head_dim=p["qk_nope_head_dim"], qk_rope_head_dim=p["qk_rope_head_dim"],
              v_head_dim=p["v_head_dim"], causal=p["causal"], bias=p["bias"])
    else:
        for field in ("q_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim"):
            if p[field]:
                raise ParamError(f"{name}.{field}: needs latent attention (kv_lora_rank > 0)")
        x.add("attention", "attn", heads=p["heads"], kv_heads=p["kv_heads"], head_dim=p["head_dim"],
              causal=p["causal"], bias=p["bias"], qkv_bias=p["qkv_bias"], window=p["window"])
    heads, head_dim = p["heads"], p["head_dim"] or hidden // p["heads"]
    q_dim, kv_dim = heads * head_dim, (p["kv_heads"] or heads) * head_dim
    x.rows += lora_rows(p, ctx, f"{name}.attn_lora", in_shape, targets, {
        "q": (hidden, q_dim), "k": (hidden, kv_dim), "v": (hidden, kv_dim), "o": (q_dim, hidden)})
    if p["post_norms"]:
        x.add(p["norm"], "post_attn_norm")
    x.add("add", "residual1")
    x.add(p["norm"], "norm2" if pre else "norm1")
    if p["experts"]:
        if not p["top_k"]:
            raise ParamError(f"{name}.top_k: is required with experts (the routed experts each token uses)")
        x.add("moe", "moe", experts=p["experts"], top_k=p["top_k"], shared_experts=p["shared_experts"],
              ffn_hidden=p["expert_ffn_hidden"] or ffn_hidden, ffn=p["ffn"], bias=p["bias"],
              router_bias=p["router_bias"])
    elif p["top_k"] or p["shared_experts"] or p["expert_ffn_hidden"] or p["router_bias"]:
        field = next(f for f in ("top_k", "shared_experts", "expert_ffn_hidden", "router_bias") if p[f])
        raise ParamError(f"{name}.{field}: needs a mixture of experts (experts > 0)")
    elif gated:  # gate and up projections, SiLU (GELU) on the gate, product, down projection
        x.add("dense", "ffn_gate", in_features=hidden, out_features=ffn_hidden, bias=p["bias"])
        x.add(gated, "ffn_act")
        x.add("multiply", "ffn_mul")
        x.shape = in_shape
        x.add("dense", "ffn_up", in_features=hidden, out_features=ffn_hidden, bias=p["bias"])
    else:
        x.add("dense", "ffn_up", in_features=hidden, out_features=ffn_hidden, bias=p["bias"])
        x.add(p["ffn"], "ffn_act")
    if not p["experts"]:
        x.add("dense", "ffn_down", in_features=ffn_hidden, out_features=hidden, bias=p["bias"])
        x.rows += lora_rows(p, ctx, f"{name}.ffn_lora", in_shape, targets, {
            "gate": (hidden, ffn_hidden), "up": (hidden, ffn_hidden), "down": (ffn_hidden, hidden)})
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
