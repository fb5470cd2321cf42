"""An ONNX graph prepared for import: parsed, checked, topologically ordered, with every tensor's shape.

Shapes come from ``onnx.shape_inference`` run twice, with the batch (the leading dimension of every graph
input) set to 1 and to 2. The axis that changes between the two runs is the batch; dropping it gives the
per-sample shape the layer kinds use, wherever the graph moves the batch (``(S, B, H)`` sequence-first
layouts) or folds it into another axis (a reshape to ``(B*S, H)`` keeps ``(S, H)``). If the batch-2 run fails
(a graph with a hard-coded batch), the leading axis of size 1 is taken as the batch.

Tensors are *dynamic* when they depend on the graph's data inputs; everything else (initializers, constants,
and shape arithmetic fed by ``Shape``/``Size``) is *static*: folded, never a layer. A static tensor remembers
the parameter tensors (floating-point or 8/4-bit initializers and constants of more than one element) it is
computed from, so the layers that read it can be credited with those parameters exactly once.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import onnx
from google.protobuf.message import DecodeError
from onnx import TensorProto, numpy_helper

from explorer.core.files import single_line
from explorer.core.importers.onnx.fold import LIMIT, constant_array, fold_into
from explorer.core.workload.model import ModelError

Shape = tuple[int, ...]

PARAM_TYPES = {getattr(TensorProto, n) for n in (
    "FLOAT", "DOUBLE", "FLOAT16", "BFLOAT16", "FLOAT8E4M3FN", "FLOAT8E4M3FNUZ", "FLOAT8E5M2", "FLOAT8E5M2FNUZ",
    "INT8", "UINT8", "INT4", "UINT4") if hasattr(TensorProto, n)}
INTEGER_TYPES = {TensorProto.INT8, TensorProto.UINT8, TensorProto.INT16, TensorProto.UINT16, TensorProto.INT32,
                 TensorProto.UINT32, TensorProto.INT64, TensorProto.UINT64}
INFERENCE_ERRORS = (onnx.shape_inference.InferenceError, onnx.checker.ValidationError, RuntimeError, ValueError,
                    TypeError)
SHAPE_OPS = {"Shape", "Size"}  # their outputs describe a tensor, they do not carry its data
SMALL = 64  # constants up to this many elements keep their values (scales, epsilons, clip bounds, axes)


class OnnxImportError(ModelError):
    """An ONNX file that cannot be imported; the message names the file and the node or tensor, on one line
    (names quoted from the file have their line breaks escaped)."""

    def __init__(self, message: str):
        super().__init__(single_line(message))


def load_proto(source, label: str) -> onnx.ModelProto:
    """Parse without loading external weight files (only their shapes matter)."""
    if isinstance(source, (bytes, bytearray, memoryview)):
        data = bytes(source)
    else:
        try:
            data = Path(source).read_bytes()
        except OSError as exc:
            raise OnnxImportError(f"{label}: cannot read ({exc.strerror})") from None
    if not data:
        raise OnnxImportError(f"{label}: the file is empty, not an ONNX model")
    try:
        proto = onnx.ModelProto.FromString(data)
    except (DecodeError, ValueError, RuntimeError) as exc:
        # a serialized ModelProto starts with its ir_version field (tag 0x08)
        what = "truncated or corrupt ONNX file" if data[:1] == b"\x08" else "not an ONNX model"
        raise OnnxImportError(f"{label}: {what}: protobuf could not parse it ({exc})") from None
    if proto.ir_version <= 0 or not proto.HasField("graph") or not proto.graph.node:
        raise OnnxImportError(f"{label}: not an ONNX model (no IR version or no graph nodes)")
    return proto


def initializer_arrays(graph: onnx.GraphProto, label: str) -> dict[str, np.ndarray]:
    """The values of the initializers small enough to load (``LIMIT`` elements); an error naming the tensor when
    a dimension is negative or the stored data do not fit the dimensions (the file's numbers are checked here,
    before numpy or shape inference meets them)."""
    arrays = {}
    for t in graph.initializer:
        if any(d < 0 for d in t.dims):
            raise OnnxImportError(f"{label}: initializer '{t.name}': dimensions {list(t.dims)} are not sizes "
                                  "(a dimension is negative)")
        if math.prod(t.dims) > LIMIT or t.data_location == TensorProto.EXTERNAL:
            continue
        try:
            arrays[t.name] = numpy_helper.to_array(t)
        except (ValueError, TypeError, KeyError, IndexError, AttributeError) as exc:
            raise OnnxImportError(f"{label}: initializer '{t.name}': its data do not fit its dimensions "
                                  f"{list(t.dims)} ({exc})") from None
    return arrays


#: what a node of the wrong form (missing inputs, attributes of the wrong type or length, shapes of the wrong rank)
#: raises in the code that reads it
MALFORMED = (IndexError, ValueError, TypeError, KeyError, ZeroDivisionError, OverflowError, AttributeError)


@contextmanager
def reading_node(g: GraphInfo, i: int):
    """Turn a node that does not have the form of its operator into an error naming the node, never a traceback."""
    try:
        yield
    except OnnxImportError:
        raise
    except MALFORMED as exc:
        raise OnnxImportError(f"{g.where(i)}: does not have the inputs, attributes or shapes of its operator "
                              f"({type(exc).__name__}: {single_line(str(exc))[:200]})") from None


def node_label(node: onnx.NodeProto, index: int) -> str:
    op = node.op_type if node.domain in ("", "ai.onnx") else f"{node.domain}::{node.op_type}"
    return f"node {index} '{node.name}' ({op})" if node.name else f"node {index} ({op})"


def topological_order(graph: onnx.GraphProto, label: str) -> list[onnx.NodeProto]:
    """Kahn's algorithm, keeping the file's order among ready nodes."""
    nodes = list(graph.node)
    available = {v.name for v in graph.input} | {t.name for t in graph.initializer} | {""}
    producers = {o: i for i, n in enumerate(nodes) for o in n.output if o}
    waiting: dict[str, list[int]] = {}
    missing = [0] * len(nodes)
    for i, n in enumerate(nodes):
        for t in set(n.input) - available:
            if t not in producers:
                raise OnnxImportError(f"{label}: {node_label(n, i)} reads '{t}', which is not a graph input, an "
                                      f"initializer or any node's output")
            waiting.setdefault(t, []).append(i)
            missing[i] += 1
    ready = [i for i, m in enumerate(missing) if m == 0]
    heapq.heapify(ready)
    order = []
    while ready:
        i = heapq.heappop(ready)
        order.append(nodes[i])
        for t in nodes[i].output:
            for j in waiting.pop(t, ()):
                missing[j] -= 1
                if missing[j] == 0:
                    heapq.heappush(ready, j)
    if len(order) < len(nodes):
        stuck = next(i for i, m in enumerate(missing) if m)
        raise OnnxImportError(f"{label}: the graph has a cycle through {node_label(nodes[stuck], stuck)}")
    return order


def _subgraph_names(node: onnx.NodeProto) -> set[str]:
    """Tensor names read inside a node's subgraphs (If/Loop/Scan bodies may read outer tensors implicitly)."""
    names: set[str] = set()
    for a in node.attribute:
        for g in ([a.g] if a.type == onnx.AttributeProto.GRAPH else list(a.graphs)):
            for n in g.node:
                names.update(n.input)
                names |= _subgraph_names(n)
    return names


@dataclass
class GraphInfo:
    """The prepared graph the op mapper reads. Shapes are batch-1 shapes unless called per-sample."""

    label: str
    name: str
    nodes: list[onnx.NodeProto]
    data_inputs: list[str]
    elem_types: dict[str, int]
    full: dict[str, tuple]  # batch 1 (dims that stayed unknown are None)
    full2: dict[str, tuple] | None  # batch 2, None when that inference failed
    dynamic: set[str]
    sources: dict[str, frozenset[str]]  # static tensor -> parameter tensors it is computed from
    param_numel: dict[str, int]
    values: dict[str, np.ndarray]
    producer: dict[str, int]
    consumers: dict[str, list[int]]
    graph_outputs: frozenset[str] = frozenset()
    warnings: list[str] = field(default_factory=list)

    def where(self, i: int | None) -> str:
        return f"{self.label}: graph input" if i is None else f"{self.label}: {node_label(self.nodes[i], i)}"

    def is_dynamic(self, tensor: str) -> bool:
        return tensor in self.dynamic

    def node_dynamic(self, i: int) -> bool:
        return any(o in self.dynamic for o in self.nodes[i].output)

    def shape(self, tensor: str, i: int | None) -> Shape:
        """The batch-1 shape; an error naming the node and tensor when inference left it unknown."""
        s = self.full.get(tensor)
        if s is None or any(d is None for d in s):
            known = "unknown" if s is None else "(" + ", ".join("?" if d is None else str(d) for d in s) + ")"
            raise OnnxImportError(f"{self.where(i)}: tensor '{tensor}' has no static shape after shape inference "
                                  f"(got {known}); give symbolic dimensions a size or run a shape-inference "
                                  f"tool on the file first")
        return s

    def sample(self, tensor: str, i: int | None) -> Shape:
        """Per-sample shape of a dynamic tensor (the batch axis removed)."""
        s1 = self.shape(tensor, i)
        if tensor not in self.dynamic:
            return s1
        s2 = (self.full2 or {}).get(tensor)
        if s2 is not None and len(s2) == len(s1) and None not in s2:
            diff = [a for a in range(len(s1)) if s1[a] != s2[a]]
            if len(diff) == 1:
                a = diff[0]
                if s1[a] == 1 and s2[a] == 2:
                    return s1[:a] + s1[a + 1:]
                if s2[a] == 2 * s1[a]:  # batch folded into this axis; a leading 1 is a batch placeholder
                    return s1[1:] if len(s1) > 1 and s1[0] == 1 and a != 0 else s1
            elif not diff:
                return s1[1:] if len(s1) > 1 and s1[0] == 1 else s1
        return s1[1:] if s1 and s1[0] == 1 else s1

    def numel(self, tensor: str, i: int | None, per_sample: bool = True) -> int:
        return math.prod(self.sample(tensor, i) if per_sample else self.shape(tensor, i))

    def scalar(self, tensor: str) -> float | None:
        v = self.values.get(tensor)
        return float(v.reshape(-1)[0]) if v is not None and v.size == 1 else None

    def ints(self, tensor: str) -> list[int] | None:
        v = self.values.get(tensor)
        return [int(x) for x in v.reshape(-1)] if v is not None else None

    def params_of(self, tensors) -> frozenset[str]:
        out: frozenset[str] = frozenset()
        for t in tensors:
            if t and t not in self.dynamic:
                out |= self.sources.get(t, frozenset())
        return out


def _dims(vi: onnx.ValueInfoProto, symbols: Mapping[str, int]) -> tuple | None:
    t = vi.type.tensor_type
    if not vi.type.HasField("tensor_type") or not t.HasField("shape"):
        return None
    out = []
    for d in t.shape.dim:
        if d.HasField("dim_value"):
            out.append(int(d.dim_value))
        else:
            out.append(symbols.get(d.dim_param) if d.dim_param else None)
    return tuple(out)


def batch_axis(vi: onnx.ValueInfoProto) -> int | None:
    """The batch axis of a graph input: a symbolic dimension named like a batch, else the first."""
    dims = vi.type.tensor_type.shape.dim
    if not dims:
        return None
    named = [a for a, d in enumerate(dims) if d.dim_param and "batch" in d.dim_param.lower()]
    return named[0] if named else 0


def _with_batch(proto: onnx.ModelProto, data_inputs: list[str], batch: int, dims: Mapping[str, int],
                label: str) -> tuple[onnx.ModelProto, dict[str, int]]:
    """A copy with every input dimension sized: the batch axis to ``batch``."""
    model = onnx.ModelProto()
    model.CopyFrom(proto)
    inputs = [vi for vi in model.graph.input if vi.name in data_inputs and vi.type.tensor_type.HasField("shape")]
    axes = {vi.name: batch_axis(vi) for vi in inputs}
    symbols = dict(dims)
    for vi in inputs:
        if axes[vi.name] is not None and vi.type.tensor_type.shape.dim[axes[vi.name]].dim_param:
            symbols[vi.type.tensor_type.shape.dim[axes[vi.name]].dim_param] = batch
    for vi in inputs:
        for axis, d in enumerate(vi.type.tensor_type.shape.dim):
            if axis == axes[vi.name]:
                d.dim_value = batch
            elif d.HasField("dim_value") and d.dim_value < 1:  # -1, 0: no size at all, not a size of 1
                raise OnnxImportError(f"{label}: input '{vi.name}' dimension {axis} is {d.dim_value}; sizes are "
                                      "whole numbers >= 1")
            elif not d.HasField("dim_value"):
                if d.dim_param in symbols:
                    if not isinstance(symbols[d.dim_param], int) or symbols[d.dim_param] < 1:
                        raise OnnxImportError(f"{label}: dims['{d.dim_param}']: expected a whole number >= 1, got "
                                              f"{symbols[d.dim_param]!r}")
                    d.dim_value = int(symbols[d.dim_param])
                elif d.dim_param:
                    raise OnnxImportError(
                        f"{label}: input '{vi.name}' dimension {axis} is symbolic ('{d.dim_param}'); give it a "
                        f"size (dims={{'{d.dim_param}': N}})")
                else:
                    raise OnnxImportError(f"{label}: input '{vi.name}' dimension {axis} has no size")
    return model, symbols


def _collect(inferred: onnx.ModelProto, symbols: Mapping[str, int]) -> dict[str, tuple]:
    g = inferred.graph
    shapes = {t.name: tuple(int(d) for d in t.dims) for t in g.initializer}
    for vi in list(g.input) + list(g.value_info) + list(g.output):
        s = _dims(vi, symbols)
        if s is not None and (vi.name not in shapes or None not in s):
            shapes[vi.name] = s
    return shapes


def _infer(skel, data_inputs, batch, dims, label, rounds: int = 8) -> dict[str, tuple]:
    """Shape inference, folding shape arithmetic between rounds until every node output has a shape."""
    model, symbols = _with_batch(skel, data_inputs, batch, dims, label)
    outputs = [o for n in model.graph.node for o in n.output if o]
    for _ in range(rounds):
        model = onnx.shape_inference.infer_shapes(model, strict_mode=False, data_prop=True)
        shapes = _collect(model, symbols)
        complete = all(o in shapes and None not in shapes[o] for o in outputs)
        if complete or not fold_into(model, shapes):
            break
    return shapes


def skeleton(proto: onnx.ModelProto, nodes: list[onnx.NodeProto]) -> onnx.ModelProto:
    """The model without the data of its large initializers (shape inference reads only their dims), nodes in
    topological order: the copies made for inference stay small."""
    skel = onnx.ModelProto(ir_version=proto.ir_version)
    skel.opset_import.extend(proto.opset_import)
    skel.functions.extend(proto.functions)
    g, src = skel.graph, proto.graph
    g.name = src.name
    for field_name in ("input", "output", "value_info", "sparse_initializer"):
        getattr(g, field_name).extend(getattr(src, field_name))
    g.node.extend(nodes)
    for t in src.initializer:
        if math.prod(t.dims) <= LIMIT or t.data_location == TensorProto.EXTERNAL:
            g.initializer.append(t)
        else:
            stub = g.initializer.add(name=t.name, data_type=t.data_type, dims=t.dims)
            stub.data_location = TensorProto.EXTERNAL
            stub.external_data.add(key="location", value="not-loaded")
    return skel


def prepare(proto: onnx.ModelProto, label: str, dims: Mapping[str, int] | None = None) -> GraphInfo:
    graph = proto.graph
    dims = dict(dims or {})
    for k, v in dims.items():
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise OnnxImportError(f"dims.{k}: expected a whole number >= 1, got {v!r}")
    nodes = topological_order(graph, label)
    arrays = initializer_arrays(graph, label)
    init = {t.name: t for t in graph.initializer}
    data_inputs = [v.name for v in graph.input if v.name not in init]
    if not data_inputs:
        raise OnnxImportError(f"{label}: the graph has no data inputs (every input is an initializer)")
    warnings = []
    for v in graph.input:
        axis = batch_axis(v) if v.name in data_inputs and v.type.tensor_type.HasField("shape") else None
        if axis is not None and v.type.tensor_type.shape.dim[axis].dim_value > 1:
            warnings.append(f"input '{v.name}' has a fixed batch of {v.type.tensor_type.shape.dim[axis].dim_value};"
                            f" it is analyzed per sample (batch set to 1), which shapes hard-coded in the graph "
                            f"may not follow")
    elem_types = {t.name: t.data_type for t in graph.initializer}
    elem_types.update({v.name: v.type.tensor_type.elem_type for v in graph.input})
    skel = skeleton(proto, nodes)
    try:
        full = _infer(skel, data_inputs, 1, dims, label)
    except OnnxImportError:
        raise
    except INFERENCE_ERRORS as exc:
        raise OnnxImportError(f"{label}: shape inference failed: {exc}") from None
    try:
        full2 = _infer(skel, data_inputs, 2, dims, label)
    except INFERENCE_ERRORS:
        full2 = None
        warnings.append("shape inference at batch 2 failed (a hard-coded batch?); the leading axis of size 1 "
                        "was taken as the batch")

    values = {n: a for n, a in arrays.items() if a.size <= SMALL}
    param_numel = {n: math.prod(t.dims) for n, t in init.items()
                   if t.data_type in PARAM_TYPES and math.prod(t.dims) > 1}
    sources = {n: frozenset([n]) if n in param_numel else frozenset() for n in init}
    dynamic = set(data_inputs)
    producer: dict[str, int] = {}
    consumers: dict[str, list[int]] = {}
    for i, node in enumerate(nodes):
        for t in node.input:
            if t:
                consumers.setdefault(t, []).append(i)
        for t in node.output:
            producer[t] = i
        ins = [t for t in node.input if t]
        is_dyn = node.op_type not in SHAPE_OPS and (
            any(t in dynamic for t in ins) or any(t in dynamic for t in _subgraph_names(node)))
        if node.op_type == "Constant" and node.output:
            arr = constant_array(node)
            out = node.output[0]
            if arr is not None:
                if arr.size <= SMALL:
                    values[out] = arr
                try:
                    dtype = onnx.helper.np_dtype_to_tensor_dtype(arr.dtype)
                except (KeyError, TypeError, ValueError):
                    dtype = TensorProto.UNDEFINED
                if dtype in PARAM_TYPES and arr.size > 1:
                    param_numel[out] = int(arr.size)
                    sources[out] = frozenset([out])
                    continue
            sources[out] = frozenset()
            continue
        if is_dyn:
            dynamic.update(t for t in node.output if t)
            continue
        derived = frozenset().union(*(sources.get(t, frozenset()) for t in ins)) if ins else frozenset()
        for t in node.output:
            sources[t] = derived
        if node.op_type in ("Identity", "Cast", "Squeeze", "Unsqueeze", "Reshape") and ins and ins[0] in values:
            values[node.output[0]] = values[ins[0]]  # the same numbers, viewed differently
    name = graph.name or "onnx model"
    return GraphInfo(label, name, nodes, data_inputs, elem_types, full, full2, dynamic, sources, param_numel,
                     values, producer, consumers, frozenset(o.name for o in graph.output), warnings)
