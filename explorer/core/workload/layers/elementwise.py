"""Normalizations, activations, softmax and element-wise binary operations."""

from __future__ import annotations

from explorer.core.workload.layers.base import (
    Context,
    Param,
    Row,
    Shape,
    ShapeError,
    format_shape,
    layer_kind,
    numel,
)

#: FLOPs per element (see the module docstring of layers.base for the conventions)
ACTIVATION_FLOPS = {"relu": 1, "relu6": 2, "sigmoid": 4, "tanh": 4, "silu": 4, "gelu": 8}


def _unary(kind: str, flops_per_element: float, params_per_channel: int = 0):
    def expand(p: dict, in_shape: Shape, ctx: Context, name: str):
        if not in_shape:
            raise ShapeError(f"'{kind}' needs a tensor, got a scalar")
        b, n = ctx.batch, numel(in_shape)
        channels = in_shape[0] if len(in_shape) == 3 else in_shape[-1]  # (C,H,W) normalizes C; (S,H) the last
        feature = p.get("num_features")
        if feature and feature != channels:
            raise ShapeError(f"'{kind}' has {feature} features but the tensor {format_shape(in_shape)} has {channels}")
        params = params_per_channel * channels
        return in_shape, [Row(name, kind, other_flops=b * n * flops_per_element, params=params, weight_elems=params,
                              input_elems=b * n, output_elems=b * n, out_shape=in_shape)]

    return expand


for _kind, _flops in ACTIVATION_FLOPS.items():
    layer_kind(_kind, "activation", (), f"{_kind} activation ({_flops} FLOP per element)")(_unary(_kind, _flops))

_NORM = (Param("num_features", int, 0, minimum=0, help="0 = take it from the input"),)
layer_kind("batchnorm", "normalization", _NORM,
           "batch norm at inference (folded scale and shift: 2 FLOP per element; 2 learned parameters per channel; "
           "the running statistics are buffers, as in PyTorch)")(
    _unary("batchnorm", 2, params_per_channel=2))
layer_kind("layernorm", "normalization", _NORM,
           "layer norm over the last dimension (6 FLOP per element; scale and bias)")(
    _unary("layernorm", 6, params_per_channel=2))
layer_kind("rmsnorm", "normalization", _NORM, "RMS norm over the last dimension (4 FLOP per element; scale)")(
    _unary("rmsnorm", 4, params_per_channel=1))


@layer_kind("softmax", "activation", (), "softmax over the last dimension (3 FLOP per element: exp, sum, divide)")
def softmax(p: dict, in_shape: Shape, ctx: Context, name: str):
    return _unary("softmax", 3)({}, in_shape, ctx, name)


def _binary(kind: str):
    def expand(p: dict, in_shape: Shape, ctx: Context, name: str):
        b, n = ctx.batch, numel(in_shape)
        return in_shape, [Row(name, kind, other_flops=b * n, input_elems=2 * b * n, output_elems=b * n,
                              out_shape=in_shape)]

    return expand


layer_kind("add", "other", (), "element-wise sum with a same-shaped tensor (e.g. a residual): reads both")(_binary("add"))
layer_kind("multiply", "other", (), "element-wise product with a same-shaped tensor (e.g. a gate): reads both")(
    _binary("multiply"))
