"""Mixture of experts (Mixtral, DeepSeek-V3): a router picks ``top_k`` of ``experts`` feed-forward networks for each
token; ``shared_experts`` (DeepSeek) run for every token.

Expanded into the operators a MoE kernel runs: the router (a dense hidden -> experts, scored like a softmax), the
routed experts' projections (one grouped GEMM per projection), their activation, the shared experts (a plain dense
feed-forward ``shared_experts`` x ``ffn_hidden`` wide) and the weighted sum of the experts' outputs.

Counting conventions (``docs/model-file.md`` states them for users):

* **Work**: each token computes with its ``top_k`` routed experts and the shared ones, so the routed rows count
  T x top_k (token, expert) pairs, T the tokens of the step (batch x sequence in prefill, batch in decode).
* **Parameters**: ``params`` holds every expert (the model's size); ``active_params`` only the ``top_k`` a token uses
  (plus the router and the shared experts, which every token uses).
* **Weights read per step** assume **uniform, independent routing**: each of the T tokens picks its ``top_k``
  experts uniformly at random, so an expert is missed by one token with probability 1 - k/E and by all of them with
  (1 - k/E)^T. The expected number of distinct experts touched, E (1 - (1 - k/E)^T) (:func:`expected_experts`), is
  the number whose weights are read: exactly ``top_k`` for one token, approaching all E as the batch grows. Real
  routers are not uniform (popular experts are touched more often), so this is an estimate, not a bound.
* **GEMM shape** (tiling): one GEMM per expected expert touched (rounded, at least 1), each of the expected
  tokens routed to it.
"""

from __future__ import annotations

import math

from explorer.core.workload.layers.base import (
    Context,
    Expansion,
    Param,
    ParamError,
    Row,
    Shape,
    ShapeError,
    format_shape,
    layer_kind,
    run,
)

GATED = {"swiglu": "silu", "geglu": "gelu"}
ROUTING_ASSUMPTION = "uniform independent routing: expected experts touched = E (1 - (1 - top_k/E)^T)"


def expected_experts(experts: int, top_k: int, tokens: float) -> float:
    """Expected distinct experts touched when ``tokens`` tokens each pick ``top_k`` of ``experts`` uniformly and
    independently: E (1 - (1 - k/E)^T). One token touches exactly k; the count never falls as tokens are added."""
    if tokens <= 0:
        return 0.0
    if tokens <= 1 or top_k >= experts:
        return float(min(top_k * tokens, experts))
    touched = experts * (1.0 - (1.0 - top_k / experts) ** tokens)
    return max(float(top_k), min(touched, float(experts), float(top_k * tokens)))  # rounding stays in [k, min(E, kT)]


def _check(p: dict, name: str) -> None:
    if p["top_k"] > p["experts"]:
        raise ParamError(f"{name}.top_k: {p['top_k']} is more than the {p['experts']} experts")


def _routed(name: str, part: str, *, fin: int, fout: int, bias: bool, p: dict, assignments: float,
            touched: float, per_sample: int) -> Row:
    """One projection of the routed experts: ``assignments`` (token, expert) pairs through ``fin`` -> ``fout``."""
    one = fin * fout + (fout if bias else 0)  # one expert's weights of this projection
    gemms = max(1, round(touched))
    return Row(f"{name}.experts_{part}", "moe_experts", macs=assignments * fin * fout,
               other_flops=assignments * fout if bias else 0, params=p["experts"] * one,
               active_params=p["top_k"] * one, weight_elems=touched * one, input_elems=assignments * fin,
               output_elems=assignments * fout, gemm=(math.ceil(assignments / gemms), fout, fin), gemm_count=gemms,
               out_shape=(per_sample, fout))


@layer_kind(
    "moe",
    "blocks",
    (
        Param("experts", int, help="routed experts E"),
        Param("top_k", int, help="routed experts each token uses"),
        Param("ffn_hidden", int, help="width of one expert's feed-forward"),
        Param("shared_experts", int, 0, minimum=0, help="experts every token uses besides its top_k (DeepSeek)"),
        Param("ffn", str, "swiglu", choices=("gelu", "relu", "swiglu", "geglu"), help="each expert's feed-forward"),
        Param("bias", bool, False, help="the experts' projections have biases"),
        Param("router_bias", bool, False, help="the router has a bias per expert (DeepSeek-V3's selection bias)"),
    ),
    "mixture of experts: a router picks top_k of E feed-forward experts per token (+ shared experts); weights read "
    "per step = the experts the step's tokens touch (uniform routing)",
)
def moe(p: dict, in_shape: Shape, ctx: Context, name: str):
    if len(in_shape) != 2:
        raise ShapeError(f"'moe' needs tokens (S, H), got {format_shape(in_shape)}")
    _check(p, name)
    s_q, hidden = in_shape
    experts, k, width, bias = p["experts"], p["top_k"], p["ffn_hidden"], p["bias"]
    m = ctx.batch * s_q  # tokens of this step
    touched = expected_experts(experts, k, m)
    pairs = m * k  # (token, expert) assignments
    router_w = hidden * experts + (experts if p["router_bias"] else 0)
    rows = [Row(f"{name}.router", "dense", macs=m * hidden * experts, other_flops=3 * m * experts, params=router_w,
                weight_elems=router_w, input_elems=m * hidden, output_elems=m * experts,
                gemm=(m, experts, hidden), gemm_count=1, out_shape=(s_q, experts))]
    routed = {"p": p, "assignments": pairs, "touched": touched, "per_sample": s_q * k}
    gated = GATED.get(p["ffn"])
    rows.append(_routed(name, "gate" if gated else "up", fin=hidden, fout=width, bias=bias, **routed))
    act = gated or p["ffn"]
    rows += run(act, {}, (s_q * k, width), ctx, f"{name}.experts_act")[1]
    if gated:
        rows += run("multiply", {}, (s_q * k, width), ctx, f"{name}.experts_mul")[1]
        rows.append(_routed(name, "up", fin=hidden, fout=width, bias=bias, **routed))
    rows.append(_routed(name, "down", fin=width, fout=hidden, bias=bias, **routed))
    if p["shared_experts"]:  # one dense feed-forward, shared_experts x ffn_hidden wide, for every token
        x = Expansion(ctx, name, in_shape)
        shared = p["shared_experts"] * width
        if gated:
            x.add("dense", "shared_gate", in_features=hidden, out_features=shared, bias=bias)
            x.add(gated, "shared_act")
            x.add("multiply", "shared_mul")
            x.shape = in_shape
            x.add("dense", "shared_up", in_features=hidden, out_features=shared, bias=bias)
        else:
            x.add("dense", "shared_up", in_features=hidden, out_features=shared, bias=bias)
            x.add(p["ffn"], "shared_act")
        x.add("dense", "shared_down", in_features=shared, out_features=hidden, bias=bias)
        rows += x.rows
    # the weighted sum: each token scales its k expert outputs by their gate weights and adds them (and the shared
    # experts' output): 2 FLOP per element of each routed output, 1 per element of the shared one
    extra = m * hidden if p["shared_experts"] else 0
    rows.append(Row(f"{name}.combine", "moe_combine", other_flops=2 * pairs * hidden + extra,
                    input_elems=pairs * hidden + extra, output_elems=m * hidden, out_shape=(s_q, hidden)))
    return (s_q, hidden), rows
