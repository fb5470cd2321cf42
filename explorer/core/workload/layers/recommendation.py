"""Recommendation-model layers (DLRM style): pooled embedding-table lookups and the dot feature interaction.

The two compose with the tensors the rest of the layer kit uses: the dense path is a vector ``(D,)`` (the bottom
MLP's output); ``embedding_bag`` stacks one pooled vector per table under it, ``(1 + T, D)``; ``dot_interaction``
turns the stack into the top MLP's input vector.
"""

from __future__ import annotations

from explorer.core.workload.layers.base import (
    Context,
    Param,
    Row,
    Shape,
    ShapeError,
    format_shape,
    layer_kind,
)


@layer_kind(
    "embedding_bag",
    "linear algebra",
    (
        Param("num_tables", int, help="embedding tables (one per sparse feature)"),
        Param("rows_per_table", int, help="vectors in each table"),
        Param("embedding_dim", int, help="vector length; must equal the incoming vectors' length"),
        Param("lookups_per_table", int, 1, help="indices looked up and summed per table and sample (pooling factor)"),
    ),
    "sum-pooled lookups in T tables (one pooled vector per table); stacks them under the incoming (D,) or (N, D)",
)
def embedding_bag(p: dict, in_shape: Shape, ctx: Context, name: str):
    d = p["embedding_dim"]
    if len(in_shape) not in (1, 2) or in_shape[-1] != d:
        raise ShapeError(f"'embedding_bag' stacks {d}-long vectors under a ({d},) or (N, {d}) tensor, "
                         f"got {format_shape(in_shape)}")
    n = 1 if len(in_shape) == 1 else in_shape[0]
    t, lookups, b = p["num_tables"], p["lookups_per_table"], ctx.batch
    params = t * p["rows_per_table"] * d
    rows_read = b * t * lookups * d
    out = (n + t, d)
    # the incoming vectors pass through as a view; traffic is the indices, the rows read and the pooled vectors
    return out, [Row(name, "embedding_bag", other_flops=b * t * (lookups - 1) * d, params=params,
                     weight_elems=min(rows_read, params), input_elems=b * t * lookups, output_elems=b * t * d,
                     out_shape=out)]


@layer_kind(
    "dot_interaction",
    "linear algebra",
    (Param("self_interaction", bool, False, help="keep each vector's dot product with itself"),),
    "DLRM dot interaction: (N, D) -> (D + pairs,): the first (dense) vector followed by the pairwise dot products "
    "(N(N-1)/2, or N(N+1)/2 with self_interaction); computed as the batched GEMM X X^T",
)
def dot_interaction(p: dict, in_shape: Shape, ctx: Context, name: str):
    if len(in_shape) != 2 or in_shape[0] < 2:
        raise ShapeError(f"'dot_interaction' needs a stack of at least two vectors (N, D), "
                         f"got {format_shape(in_shape)}")
    n, d = in_shape
    b = ctx.batch
    pairs = n * (n + 1) // 2 if p["self_interaction"] else n * (n - 1) // 2
    out = (d + pairs,)
    # the reference implementation runs the full bmm X X^T and then gathers the lower triangle
    return out, [Row(name, "dot_interaction", macs=b * n * n * d, input_elems=b * n * d, output_elems=b * (d + pairs),
                     gemm=(n, n, d), gemm_count=b, out_shape=out)]
