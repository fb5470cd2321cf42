"""Convolution, pooling and reshaping layers (images are (C, H, W) per sample)."""

from __future__ import annotations

from explorer.core.workload.layers.base import (
    Context,
    Param,
    Row,
    Shape,
    ShapeError,
    conv_out,
    format_shape,
    layer_kind,
    need_rank,
    numel,
)


@layer_kind(
    "conv2d",
    "convolution",
    (
        Param("out_channels", int),
        Param("kernel_size", int),
        Param("stride", int, 1),
        Param("padding", int, 0, minimum=0),
        Param("dilation", int, 1),
        Param("groups", int, 1, help="groups = input channels is a depthwise convolution"),
        Param("bias", bool, False),
        Param("kernel_h", int, 0, minimum=0, help="kernel height for a non-square kernel (0 = kernel_size)"),
        Param("kernel_w", int, 0, minimum=0, help="kernel width for a non-square kernel (0 = kernel_size)"),
        Param("stride_h", int, 0, minimum=0, help="vertical stride (0 = stride)"),
        Param("stride_w", int, 0, minimum=0, help="horizontal stride (0 = stride)"),
        Param("padding_h", int, -1, minimum=-1, help="rows of zeros above and below (-1 = padding)"),
        Param("padding_w", int, -1, minimum=-1, help="columns of zeros left and right (-1 = padding)"),
    ),
    "2-D convolution; GEMM view by im2col: M = B*Ho*Wo, N = Cout/groups, K = Cin/groups*kh*kw, one GEMM per group",
)
def conv2d(p: dict, in_shape: Shape, ctx: Context, name: str):
    need_rank(in_shape, (3,), "conv2d", "an image (C, H, W)")
    c, h, w = in_shape
    g, cout = p["groups"], p["out_channels"]
    kh, kw = p["kernel_h"] or p["kernel_size"], p["kernel_w"] or p["kernel_size"]
    sh, sw = p["stride_h"] or p["stride"], p["stride_w"] or p["stride"]
    ph = p["padding"] if p["padding_h"] < 0 else p["padding_h"]
    pw = p["padding"] if p["padding_w"] < 0 else p["padding_w"]
    if c % g or cout % g:
        raise ShapeError(f"'conv2d' groups={g} must divide input channels {c} and output channels {cout}")
    ho = conv_out(h, kh, sh, ph, p["dilation"])
    wo = conv_out(w, kw, sw, pw, p["dilation"])
    if ho < 1 or wo < 1:
        size = f"{kh}x{kw}" if kh != kw else str(kh)
        pad = f"{ph}x{pw}" if ph != pw else str(ph)
        raise ShapeError(f"'conv2d' kernel {size} with padding {pad} does not fit a {h}x{w} input")
    b = ctx.batch
    cin_g, cout_g = c // g, cout // g
    m, n, kk = b * ho * wo, cout_g, cin_g * kh * kw
    weights = cout * cin_g * kh * kw + (cout if p["bias"] else 0)
    out = (cout, ho, wo)
    return out, [
        Row(name, "conv2d", macs=m * n * kk * g, other_flops=b * numel(out) if p["bias"] else 0, params=weights,
            weight_elems=weights, input_elems=b * numel(in_shape), output_elems=b * numel(out),
            gemm=(m, n, kk), gemm_count=g, out_shape=out)
    ]


def _pool(kind: str):
    def expand(p: dict, in_shape: Shape, ctx: Context, name: str):
        need_rank(in_shape, (3,), kind, "an image (C, H, W)")
        c, h, w = in_shape
        k, s = p["kernel_size"], p["stride"] or p["kernel_size"]
        ho, wo = conv_out(h, k, s, p["padding"]), conv_out(w, k, s, p["padding"])
        if ho < 1 or wo < 1:
            raise ShapeError(f"'{kind}' window {k} does not fit a {h}x{w} input")
        out = (c, ho, wo)
        b = ctx.batch
        return out, [Row(name, kind, other_flops=b * numel(out) * k * k, input_elems=b * numel(in_shape),
                         output_elems=b * numel(out), out_shape=out)]

    return expand


for _kind in ("maxpool", "avgpool"):
    layer_kind(
        _kind,
        "convolution",
        (Param("kernel_size", int), Param("stride", int, 0, minimum=0, help="0 = kernel size"),
         Param("padding", int, 0, minimum=0)),
        f"{_kind[:3]} pooling over k x k windows",
    )(_pool(_kind))


@layer_kind("global_avgpool", "convolution", (), "average over all spatial positions: (C, H, W) -> (C,)")
def global_avgpool(p: dict, in_shape: Shape, ctx: Context, name: str):
    need_rank(in_shape, (3,), "global_avgpool", "an image (C, H, W)")
    b = ctx.batch
    out = (in_shape[0],)
    return out, [Row(name, "global_avgpool", other_flops=b * numel(in_shape), input_elems=b * numel(in_shape),
                     output_elems=b * in_shape[0], out_shape=out)]


@layer_kind("flatten", "other", (), "flatten to a vector (no work, no traffic: a view)")
def flatten(p: dict, in_shape: Shape, ctx: Context, name: str):
    out = (numel(in_shape),)
    return out, [Row(name, "flatten", out_shape=out)]


@layer_kind(
    "to_tokens",
    "attention",
    (Param("cls_token", bool, False), Param("position_embedding", bool, False)),
    "(C, H, W) feature map -> (H*W [+1], C) tokens, with an optional class token and learned positions",
)
def to_tokens(p: dict, in_shape: Shape, ctx: Context, name: str):
    need_rank(in_shape, (3,), "to_tokens", "an image (C, H, W)")
    c, h, w = in_shape
    s = h * w + (1 if p["cls_token"] else 0)
    params = (c if p["cls_token"] else 0) + (s * c if p["position_embedding"] else 0)
    b = ctx.batch
    out = (s, c)
    return out, [Row(name, "to_tokens", other_flops=b * s * c if p["position_embedding"] else 0, params=params,
                     weight_elems=params, input_elems=b * numel(in_shape), output_elems=b * s * c, out_shape=out)]


@layer_kind(
    "token_pool",
    "attention",
    (Param("mode", str, "first", choices=("first", "last", "mean")),),
    "(S, H) -> (H,): the first (class) token, the last token, or the mean over tokens",
)
def token_pool(p: dict, in_shape: Shape, ctx: Context, name: str):
    if len(in_shape) != 2:
        raise ShapeError(f"'token_pool' needs tokens (S, H), got {format_shape(in_shape)}")
    s, h = in_shape
    b = ctx.batch
    read = s * h if p["mode"] == "mean" else h
    out = (h,)
    return out, [Row(name, "token_pool", other_flops=b * s * h if p["mode"] == "mean" else 0, input_elems=b * read,
                     output_elems=b * h, out_shape=out)]
