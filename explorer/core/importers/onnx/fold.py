"""Shape arithmetic folding, so that ONNX shape inference can see through exporter-written shape subgraphs.

Exporters compute reshape targets and position ids at run time: ``Shape -> Gather -> Unsqueeze -> Concat ->
Reshape`` or ``Range(0, Shape(x)[1])``. ``onnx.shape_inference`` does not propagate every such value (``Range``
and arithmetic on shapes stop it). Here the small integer and float subgraphs whose inputs are known are
evaluated with numpy, and their results are written back as initializers for the nodes that read them; shape
inference is then run again, until nothing new is learnt.

Only values are computed, never data: a node is evaluated when all its inputs have known values and its result
is small (``LIMIT`` elements). Weight initializers larger than ``LIMIT`` are never loaded.
"""

from __future__ import annotations

import math

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

LIMIT = 1 << 16


def _attr(node, name, default=None):
    for a in node.attribute:
        if a.name == name:
            return helper.get_attribute_value(a)
    return default


def _slice(node, v):
    data = v[0]
    if len(node.input) > 1:
        starts, ends = v[1].tolist(), v[2].tolist()
        axes = v[3].tolist() if len(v) > 3 and v[3] is not None else list(range(len(starts)))
        steps = v[4].tolist() if len(v) > 4 and v[4] is not None else [1] * len(starts)
    else:
        starts, ends = _attr(node, "starts"), _attr(node, "ends")
        axes, steps = _attr(node, "axes", list(range(len(starts)))), [1] * len(starts)
    index = [slice(None)] * data.ndim
    for s, e, a, st in zip(starts, ends, axes, steps):
        index[a] = slice(s, e, st)
    return data[tuple(index)]


def _reshape(node, v):
    shape = [d if d != 0 or _attr(node, "allowzero", 0) else v[0].shape[i] for i, d in enumerate(v[1].tolist())]
    return v[0].reshape(shape)


def _axes_of(node, v) -> list[int] | None:
    axes = _attr(node, "axes")
    if axes is None and len(v) > 1 and v[1] is not None:
        axes = [int(a) for a in np.reshape(v[1], -1)]
    return axes


def _unsqueeze(node, v):
    axes = _axes_of(node, v)
    rank = v[0].ndim + len(axes)
    x = v[0]
    for a in sorted(a % rank for a in axes):
        x = np.expand_dims(x, a)
    return x


def _squeeze(node, v):
    axes = _axes_of(node, v)
    return np.squeeze(v[0], axis=tuple(a % v[0].ndim for a in axes) if axes else None)


def constant_array(node: onnx.NodeProto) -> np.ndarray | None:
    """The value of a ``Constant`` node (None for sparse or external values)."""
    for a in node.attribute:
        if a.name == "value":
            return numpy_helper.to_array(a.t) if a.t.data_location != TensorProto.EXTERNAL else None
        if a.name in ("value_float", "value_int", "value_floats", "value_ints"):
            return np.asarray(helper.get_attribute_value(a))
    return None


def _div(a, b):
    if np.issubdtype(a.dtype, np.integer) and np.issubdtype(b.dtype, np.integer):
        return (np.trunc(a / b)).astype(np.result_type(a, b))
    return a / b


def _constant_of_shape(node, v):
    value = _attr(node, "value")
    fill = numpy_helper.to_array(value).reshape(-1)[0] if value is not None else np.float32(0)
    return np.full(v[0].astype(np.int64).tolist(), fill)


EVAL = {
    "Identity": lambda n, v: v[0],
    "Cast": lambda n, v: v[0].astype(helper.tensor_dtype_to_np_dtype(_attr(n, "to"))),
    "Gather": lambda n, v: np.take(v[0], v[1], axis=_attr(n, "axis", 0)),
    "Unsqueeze": lambda n, v: _unsqueeze(n, v),
    "Squeeze": lambda n, v: _squeeze(n, v),
    "Concat": lambda n, v: np.concatenate([np.atleast_1d(x) for x in v], axis=_attr(n, "axis", 0)),
    "Slice": _slice,
    "Reshape": _reshape,
    "Add": lambda n, v: v[0] + v[1], "Sub": lambda n, v: v[0] - v[1], "Mul": lambda n, v: v[0] * v[1],
    "Div": lambda n, v: _div(v[0], v[1]), "Neg": lambda n, v: -v[0], "Abs": lambda n, v: np.abs(v[0]),
    "Sqrt": lambda n, v: np.sqrt(v[0]), "Floor": lambda n, v: np.floor(v[0]), "Ceil": lambda n, v: np.ceil(v[0]),
    "Min": lambda n, v: np.minimum.reduce(v), "Max": lambda n, v: np.maximum.reduce(v),
    "Equal": lambda n, v: v[0] == v[1], "Less": lambda n, v: v[0] < v[1], "Greater": lambda n, v: v[0] > v[1],
    "Not": lambda n, v: np.logical_not(v[0]), "And": lambda n, v: v[0] & v[1], "Or": lambda n, v: v[0] | v[1],
    "LessOrEqual": lambda n, v: v[0] <= v[1], "GreaterOrEqual": lambda n, v: v[0] >= v[1],
    "Mod": lambda n, v: np.fmod(v[0], v[1]) if _attr(n, "fmod", 0) else np.mod(v[0], v[1]),
    "Pow": lambda n, v: np.power(v[0], v[1]).astype(v[0].dtype),
    "ReduceProd": lambda n, v: np.prod(v[0], keepdims=bool(_attr(n, "keepdims", 1))) if not _attr(n, "axes")
    and len(v) < 2 else None,
    "Tile": lambda n, v: np.tile(v[0], v[1].astype(np.int64).tolist()),
    "Where": lambda n, v: np.where(v[0], v[1], v[2]),
    "Range": lambda n, v: np.arange(v[0], v[1], v[2]).astype(v[0].dtype),
    "ConstantOfShape": _constant_of_shape,
    "Expand": lambda n, v: v[0] * np.ones(v[1].astype(np.int64).tolist(), dtype=v[0].dtype),
    "Transpose": lambda n, v: np.transpose(v[0], _attr(n, "perm")),
}


def _shape_value(node, shape):
    start, end = _attr(node, "start", 0), _attr(node, "end", None)
    return np.array(shape[start:end], dtype=np.int64)


def known_values(model: onnx.ModelProto, shapes: dict[str, tuple]) -> dict[str, np.ndarray]:
    """Values of the small tensors computable from constants and the inferred shapes."""
    g = model.graph
    values = {t.name: numpy_helper.to_array(t) for t in g.initializer
              if math.prod(t.dims) <= LIMIT and t.data_location != TensorProto.EXTERNAL}
    for node in g.node:  # the caller has sorted the nodes topologically
        try:
            if node.op_type == "Constant":
                value = constant_array(node)
            elif node.op_type in ("Shape", "Size") and node.input[0] in shapes and None not in shapes[node.input[0]]:
                s = shapes[node.input[0]]
                value = _shape_value(node, s) if node.op_type == "Shape" else np.array(math.prod(s), np.int64)
            elif node.op_type in EVAL and node.domain in ("", "ai.onnx") and all(
                    t in values for t in node.input if t):
                with np.errstate(all="ignore"):
                    value = EVAL[node.op_type](node, [values.get(t) if t else None for t in node.input])
            else:
                continue
        except (ValueError, TypeError, IndexError, KeyError, OverflowError, MemoryError, AttributeError,
                ZeroDivisionError):  # a node of the wrong form: not folded (the mapper names it)
            continue
        if value is not None and np.size(value) <= LIMIT and node.output:
            values[node.output[0]] = np.asarray(value)
    return values


def fold_into(model: onnx.ModelProto, shapes: dict[str, tuple]) -> bool:
    """Write the values of folded tensors as initializers for the nodes that read them; True if any was new."""
    g = model.graph
    values = known_values(model, shapes)
    have = {t.name for t in g.initializer}
    produced = {o for n in g.node if n.op_type != "Constant" for o in n.output}
    changed = False
    for node in g.node:
        for k, t in enumerate(node.input):
            if t in produced and t in values:
                name = f"hwx_folded::{t}"
                if name not in have:
                    g.initializer.append(numpy_helper.from_array(values[t], name))
                    have.add(name)
                node.input[k] = name
                changed = True
    return changed
