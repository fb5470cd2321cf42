"""Import an ONNX model as an editable :class:`~explorer.core.workload.model.Model` (``docs/onnx-import.md``).

``import_onnx(path_or_bytes)`` runs ONNX shape inference, maps operators to layer kinds (``ops``), and
cross-checks the result against the graph itself: ``graph_macs`` is computed straight from the ONNX shapes of
every Conv, ConvTranspose, Gemm and MatMul, ``graph_params`` from the initializers the layers read. A
disagreement with the built layer table is reported in ``warnings`` (never hidden).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from explorer.core.importers.onnx.graph import (INTEGER_TYPES, GraphInfo, OnnxImportError, load_proto, prepare,
                                                reading_node)
from explorer.core.importers.onnx.nodes import attr
from explorer.core.importers.onnx.ops import Mapper
from explorer.core.importers.registry import Imported
from explorer.core.workload.layers import Context
from explorer.core.workload.model import Model, build_table

__all__ = ["OnnxImport", "OnnxImportError", "import_onnx", "load_imported"]


@dataclass(frozen=True)
class OnnxImport:
    model: Model
    unsupported: tuple[tuple[str, int], ...]  # (op_type, count): operators carried as opaque with unknown work
    warnings: tuple[str, ...]
    graph_params: int  # parameter elements the layers read from initializers (per layer; a tied head excluded)
    graph_macs: int  # per sample, from the ONNX shapes of Conv, ConvTranspose, Gemm and MatMul
    skipped: tuple[tuple[str, int], ...] = ()  # (op_type, count): no-work views and constant/shape arithmetic
    attention_patterns: int = 0  # Q K^T -> softmax -> . V patterns recognized (kept as separate rows)


def import_onnx(source: str | Path | bytes, *, dims: Mapping[str, int] | None = None,
                name: str | None = None) -> OnnxImport:
    """Read an ONNX model from a path or bytes. ``dims`` sizes symbolic input dimensions other than the batch
    (e.g. ``{"sequence": 128}``); ``name`` overrides the model's name (default: the file's stem)."""
    is_bytes = isinstance(source, (bytes, bytearray, memoryview))
    label = "<onnx bytes>" if is_bytes else str(source)
    proto = load_proto(source, label)
    graph = prepare(proto, label, dims)
    mapper = Mapper(graph).run()
    if not mapper.layers:
        raise OnnxImportError(f"{label}: no operator reads the graph's inputs; there is nothing to analyze")
    default_name = (proto.graph.name or "ONNX model") if is_bytes else Path(source).stem
    model = Model.make(name or default_name, _input_description(graph), mapper.layers)
    graph_macs = graph_mac_count(graph)
    graph_params = mapper.param_elems
    unsupported = tuple(sorted(mapper.unsupported.items(), key=lambda kv: (-kv[1], kv[0])))
    warnings = mapper.warnings + _cross_check(model, graph_macs, graph_params)
    if unsupported:
        listed = ", ".join(f"{op} x{n}" for op, n in unsupported)
        warnings.append(f"unsupported operators carried as opaque layers with their traffic and no work: {listed}")
    return OnnxImport(
        model=model,
        unsupported=unsupported,
        warnings=tuple(warnings),
        graph_params=graph_params,
        graph_macs=graph_macs,
        skipped=tuple(sorted(mapper.skipped.items(), key=lambda kv: (-kv[1], kv[0]))),
        attention_patterns=mapper.attention_patterns,
    )


def load_imported(path: str | Path, *, dims: Mapping[str, int] | None = None, name: str | None = None) -> Imported:
    """The registry's loader (``explorer.core.importers``, entry ``onnx``): :func:`import_onnx` as an
    :class:`Imported` whose details carry the cross-check figures and the unsupported operators."""
    r = import_onnx(path, dims=dims, name=name)
    details = {"unsupported": r.unsupported, "skipped": r.skipped, "graph_macs": r.graph_macs,
               "graph_params": r.graph_params, "attention_patterns": r.attention_patterns}
    return Imported("model", r.model, warnings=r.warnings, details=details)


def graph_mac_count(g: GraphInfo) -> int:
    """MACs per sample read off the ONNX graph (batch 1 shapes), independently of the layer kinds."""
    total = 0
    for i, n in enumerate(g.nodes):
        if not g.node_dynamic(i):
            continue
        with reading_node(g, i):
            if n.op_type in ("Conv", "ConvTranspose") and n.domain in ("", "ai.onnx"):
                w = g.shape(n.input[1], i)
                spatial = g.shape(n.output[0] if n.op_type == "Conv" else n.input[0], i)
                total += math.prod(spatial) * w[1] * math.prod(w[2:])
            elif n.op_type in ("MatMul", "Gemm") and n.domain in ("", "ai.onnx"):
                a = g.shape(n.input[0], i)
                k = a[0] if n.op_type == "Gemm" and attr(n, "transA", 0) else a[-1]
                total += math.prod(g.shape(n.output[0], i)) * k
    return total


def _input_description(g: GraphInfo) -> dict[str, int]:
    used = [t for t in g.data_inputs if t in g.consumers] or g.data_inputs
    t = used[0]
    s = tuple(max(1, d) for d in g.sample(t, None))
    if len(s) == 3:
        return {"channels": s[0], "height": s[1], "width": s[2]}
    if len(s) == 2 and g.elem_types.get(t) not in INTEGER_TYPES:
        return {"tokens": s[0], "hidden": s[1]}
    if len(s) == 1 and g.elem_types.get(t) in INTEGER_TYPES:
        return {"tokens": s[0]}
    if len(s) == 1:
        return {"features": s[0]}
    if len(s) == 2:  # integer ids in rows
        return {"tokens": math.prod(s)}
    return {"features": math.prod(s) if s else 1}


def _cross_check(model: Model, graph_macs: int, graph_params: int) -> list[str]:
    table = build_table(model, Context())
    out = [f"layer {i} ({model.layers[i].name}) does not fit its input: {msg}" for i, msg in table.errors]
    macs, params = table.total("macs"), table.total("params")
    if macs != graph_macs:
        out.append(f"the layers count {macs:,.0f} MACs per sample but the ONNX graph's shapes give {graph_macs:,}")
    if params != graph_params:
        out.append(f"the layers count {params:,.0f} parameters but the graph's initializers they read hold "
                   f"{graph_params:,}")
    return out
