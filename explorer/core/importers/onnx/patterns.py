"""Subgraphs the ONNX importer recognizes before mapping node by node.

* decomposed layer norm: ReduceMean, Sub, Pow 2 (or Mul by itself), ReduceMean, Add eps, Sqrt, Div, Mul gamma,
  Add beta over the last axis -> one ``layernorm``;
* SiLU: Sigmoid(x) * x -> ``silu``;
* erf GELU: x * 0.5 * (1 + erf(x / sqrt 2)) in the orders exporters write it -> ``gelu``;
* attention: MatMul(Q, K^T) [-> scale / mask] -> Softmax -> MatMul(., V) is labelled ``attentionN.scores``,
  ``.scale``/``.mask``, ``.softmax``, ``.context``; the rows stay matmul, element-wise, softmax, matmul.

A recognized pattern is emitted at its first node (an :class:`Anchor` says which layer); its other nodes are
absorbed. The finder only reads the graph and returns :class:`Patterns`; the operator mapping (``ops``) emits
the anchors during its walk, so the dependency goes one way: ``ops`` -> ``patterns`` -> ``graph``/``nodes``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from explorer.core.importers.onnx.graph import GraphInfo, Shape, reading_node
from explorer.core.importers.onnx.nodes import attr

ATTENTION_STEPS = {"Div": "scale", "Mul": "scale", "Add": "mask", "Sub": "mask", "Where": "mask", "Cast": "cast"}


@dataclass(frozen=True)
class Anchor:
    """The layer a recognized pattern becomes, emitted at its first node."""

    kind: str
    shape: Shape
    name: str
    param_tensors: tuple[str, ...] = ()
    params: tuple[tuple[str, object], ...] = ()


@dataclass
class Patterns:
    """What :func:`find_patterns` recognized: node index -> anchor, the nodes folded into a pattern, the
    labels of the attention rows (kept as separate layers), and how many attention patterns there were."""

    g: GraphInfo
    anchors: dict[int, Anchor] = field(default_factory=dict)
    absorbed: set[int] = field(default_factory=set)
    labels: dict[int, str] = field(default_factory=dict)
    attention: int = 0


def find_patterns(g: GraphInfo) -> Patterns:
    m = Patterns(g)
    finders = {"ReduceMean": _layernorm, "Sigmoid": _silu, "Erf": _gelu, "Softmax": _attention}
    for i, node in enumerate(g.nodes):
        finder = finders.get(node.op_type)
        if finder and node.domain in ("", "ai.onnx") and g.node_dynamic(i) and i not in m.absorbed:
            with reading_node(g, i):
                finder(m, i)
    return m


def group_name(g: GraphInfo, i: int, kind: str) -> str:
    """A pattern's name: the exporter's scope of its first node (``/ln_1/ReduceMean`` -> ``/ln_1``)."""
    name = g.nodes[i].name
    return name.rsplit("/", 1)[0] if "/" in name.strip("/") else f"{kind}_{i}"


def _sole(m: Patterns, t: str, op: str | tuple[str, ...]) -> int | None:
    """The only consumer of ``t`` if it is an ``op`` node not yet used by a pattern (and ``t`` is internal)."""
    cons = m.g.consumers.get(t, [])
    if len(cons) != 1 or t in m.g.graph_outputs or cons[0] in m.absorbed or cons[0] in m.anchors:
        return None
    ops = (op,) if isinstance(op, str) else op
    return cons[0] if m.g.nodes[cons[0]].op_type in ops else None


def _other(m: Patterns, j: int, t: str) -> str:
    a, b = m.g.nodes[j].input[:2]
    return b if a == t else a


def _near(m: Patterns, t: str, value: float) -> bool:
    v = m.g.scalar(t)
    return v is not None and not m.g.is_dynamic(t) and math.isclose(v, value, rel_tol=1e-3)


def _last_axis_only(m: Patterns, j: int, x: str) -> bool:
    n = m.g.nodes[j]
    axes = attr(n, "axes")
    if axes is None and len(n.input) > 1 and n.input[1]:
        axes = m.g.ints(n.input[1])
    rank = len(m.g.full.get(x) or ())
    return bool(axes) and rank > 0 and [a % rank for a in axes] == [rank - 1] and attr(n, "keepdims", 1) == 1


def _layernorm(m: Patterns, r1: int) -> None:
    g = m.g
    x, mean = g.nodes[r1].input[0], g.nodes[r1].output[0]
    if not _last_axis_only(m, r1, x):
        return
    sub = _sole(m, mean, "Sub")
    if sub is None or list(g.nodes[sub].input[:2]) != [x, mean]:
        return
    d = g.nodes[sub].output[0]
    cons = g.consumers.get(d, [])
    square = [j for j in cons if (g.nodes[j].op_type == "Pow" and _near(m, g.nodes[j].input[1], 2.0))
              or (g.nodes[j].op_type == "Mul" and list(g.nodes[j].input[:2]) == [d, d])]
    if len(cons) != 2 or len(square) != 1:
        return
    r2 = _sole(m, g.nodes[square[0]].output[0], "ReduceMean")
    add = r2 is not None and _last_axis_only(m, r2, d) and _sole(m, g.nodes[r2].output[0], "Add")
    if not add or g.is_dynamic(_other(m, add, g.nodes[r2].output[0])):
        return
    sqrt = _sole(m, g.nodes[add].output[0], "Sqrt")
    div = sqrt is not None and _sole(m, g.nodes[sqrt].output[0], "Div")
    if not div or list(g.nodes[div].input[:2]) != [d, g.nodes[sqrt].output[0]] or div not in cons:
        return
    mul = _sole(m, g.nodes[div].output[0], "Mul")
    gamma = mul is not None and _other(m, mul, g.nodes[div].output[0])
    beta_add = gamma and _sole(m, g.nodes[mul].output[0], "Add")
    if not beta_add or g.is_dynamic(gamma):
        return
    beta = _other(m, beta_add, g.nodes[mul].output[0])
    if g.is_dynamic(beta):
        return
    h = g.shape(x, r1)[-1]
    rows = max(1, g.numel(x, r1) // h)
    m.absorbed.update({sub, square[0], r2, add, sqrt, div, mul, beta_add})
    m.anchors[r1] = Anchor("layernorm", (rows, h), group_name(g, r1, "layernorm"), (gamma, beta),
                           (("num_features", h),))


def _silu(m: Patterns, s: int) -> None:
    g = m.g
    x, y = g.nodes[s].input[0], g.nodes[s].output[0]
    mul = _sole(m, y, "Mul")
    if mul is None or sorted(g.nodes[mul].input[:2]) != sorted([x, y]):
        return
    m.absorbed.add(mul)
    m.anchors[s] = Anchor("silu", g.sample(x, s), group_name(g, s, "silu"))


def _gelu(m: Patterns, e: int) -> None:
    g = m.g
    pre = g.producer.get(g.nodes[e].input[0])
    if pre is None or m.g.consumers.get(g.nodes[e].input[0]) != [e]:
        return
    p = g.nodes[pre]
    x = p.input[0]
    if not (g.is_dynamic(x) and ((p.op_type == "Div" and _near(m, p.input[1], math.sqrt(2)))
                                 or (p.op_type == "Mul" and _near(m, p.input[1], math.sqrt(0.5))))):
        return
    add = _sole(m, g.nodes[e].output[0], "Add")
    if add is None or not _near(m, _other(m, add, g.nodes[e].output[0]), 1.0):
        return
    a_out = g.nodes[add].output[0]
    mul_a = _sole(m, a_out, "Mul")
    if mul_a is None:
        return
    o = _other(m, mul_a, a_out)
    out_a = g.nodes[mul_a].output[0]
    nodes = {pre, e, add, mul_a}
    if o == x:  # (x * (1 + erf)) * 0.5
        mul_b = _sole(m, out_a, "Mul")
        ok = mul_b is not None and _near(m, _other(m, mul_b, out_a), 0.5)
    elif _near(m, o, 0.5):  # x * ((1 + erf) * 0.5)
        mul_b = _sole(m, out_a, "Mul")
        ok = mul_b is not None and _other(m, mul_b, out_a) == x
    else:  # (x * 0.5) * (1 + erf)
        mul_b = g.producer.get(o)
        ok = (mul_b is not None and g.nodes[mul_b].op_type == "Mul" and g.consumers.get(o) == [mul_a]
              and sorted([g.nodes[mul_b].input[0], g.nodes[mul_b].input[1]]).count(x) == 1
              and _near(m, _other(m, mul_b, x), 0.5))
    if not ok:
        return
    nodes.add(mul_b)
    first = min(nodes)
    m.absorbed.update(nodes - {first})
    m.anchors[first] = Anchor("gelu", g.sample(x, first), group_name(g, first, "gelu"))


def _attention(m: Patterns, sm: int) -> None:
    g = m.g
    steps, t, scores = [], g.nodes[sm].input[0], None
    for _ in range(5):
        j = g.producer.get(t)
        if j is None:
            return
        n = g.nodes[j]
        if n.op_type == "MatMul":
            if all(g.is_dynamic(u) for u in n.input[:2]):
                scores = j
            break
        if n.op_type not in ATTENTION_STEPS:
            return
        ins = [u for u in n.input if u and g.is_dynamic(u)]
        ins.sort(key=lambda u: g.nodes[g.producer[u]].op_type not in ("MatMul", *ATTENTION_STEPS)
                 if u in g.producer else True)
        if not ins:
            return
        steps.append(j)
        t = ins[0]
    if scores is None:
        return
    u, context = g.nodes[sm].output[0], None
    for _ in range(3):
        cons = g.consumers.get(u, [])
        if len(cons) != 1:
            return
        n = g.nodes[cons[0]]
        if n.op_type == "MatMul" and n.input[0] == u and g.is_dynamic(n.input[1]):
            context = cons[0]
            break
        if n.op_type not in ("Dropout", "Cast", "Identity"):
            return
        u = n.output[0]
    if context is None:
        return
    k = m.attention
    m.attention += 1
    m.labels.update({scores: f"attention{k}.scores", sm: f"attention{k}.softmax", context: f"attention{k}.context"})
    for j in steps:
        m.labels[j] = f"attention{k}.{ATTENTION_STEPS[g.nodes[j].op_type]}"
