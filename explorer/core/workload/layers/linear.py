"""Linear algebra: matmul, dense, embedding."""

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


@layer_kind(
    "matmul",
    "linear algebra",
    (
        Param("m", int, help="rows of A and C"),
        Param("n", int, help="columns of B and C"),
        Param("k", int, help="reduction dimension"),
        Param("weights", bool, True, help="B is a weight matrix (else both operands are activations)"),
    ),
    "C[m,n] = A[m,k] B[k,n], one per sample; a standalone GEMM with its own operands",
)
def matmul(p: dict, in_shape: Shape, ctx: Context, name: str):
    m, n, k, b = p["m"], p["n"], p["k"], ctx.batch
    out = (m, n)
    if p["weights"]:  # the batch stacks along M and shares the weights
        row = Row(name, "matmul", macs=b * m * n * k, params=k * n, weight_elems=k * n, input_elems=b * m * k,
                  output_elems=b * m * n, gemm=(b * m, n, k), gemm_count=1, out_shape=out)
    else:
        row = Row(name, "matmul", macs=b * m * n * k, input_elems=b * (m * k + k * n), output_elems=b * m * n,
                  gemm=(m, n, k), gemm_count=b, out_shape=out)
    return out, [row]


@layer_kind(
    "dense",
    "linear algebra",
    (
        Param("in_features", int),
        Param("out_features", int),
        Param("bias", bool, True),
        Param("tied", bool, False, help="weights shared with an embedding: read, but not counted as parameters"),
        Param("head", bool, False, help="the language-model head: with the lm_head assumption 'last', prefill "
                                        "computes the logits of each sequence's last position only"),
    ),
    "fully connected layer y = x W + b over the last dimension",
)
def dense(p: dict, in_shape: Shape, ctx: Context, name: str):
    if not in_shape or in_shape[-1] != p["in_features"]:
        raise ShapeError(
            f"'dense' expects {p['in_features']} input features, got a tensor of shape {format_shape(in_shape)}"
        )
    if p["head"] and ctx.lm_head == "last" and len(in_shape) == 2:  # serving: the next token's logits only
        in_shape = (1, in_shape[1])
    fin, fout = p["in_features"], p["out_features"]
    rows_per_sample = numel(in_shape[:-1])
    m = ctx.batch * rows_per_sample
    weights = fin * fout + (fout if p["bias"] else 0)
    out = in_shape[:-1] + (fout,)
    return out, [
        Row(name, "dense", macs=m * fin * fout, other_flops=m * fout if p["bias"] else 0,
            params=0 if p["tied"] else weights, weight_elems=weights, input_elems=m * fin, output_elems=m * fout,
            gemm=(m, fout, fin), gemm_count=1, out_shape=out)
    ]


@layer_kind(
    "embedding",
    "linear algebra",
    (
        Param("num_embeddings", int),
        Param("embedding_dim", int),
        Param("position_embeddings", int, 0, minimum=0, help="learned position table rows (0 = none)"),
        Param("token_types", int, 0, minimum=0, help="token-type table rows (0 = none)"),
    ),
    "table lookup: one row per token (plus learned positions); reads only the rows it looks up",
)
def embedding(p: dict, in_shape: Shape, ctx: Context, name: str):
    if len(in_shape) != 1:
        raise ShapeError(f"'embedding' needs a sequence of token ids (S,), got {format_shape(in_shape)}")
    s, d, b = in_shape[0], p["embedding_dim"], ctx.batch
    tables = 1 + (1 if p["position_embeddings"] else 0) + (1 if p["token_types"] else 0)
    params = d * (p["num_embeddings"] + p["position_embeddings"] + p["token_types"])
    lookups = b * s * tables
    out = (s, d)
    return out, [
        Row(name, "embedding", other_flops=b * s * d * (tables - 1), params=params,
            weight_elems=min(lookups * d, params), input_elems=b * s, output_elems=b * s * d, out_shape=out)
    ]
