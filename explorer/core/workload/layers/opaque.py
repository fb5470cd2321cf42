"""An operator with no layer kind of its own, carried with its tensor sizes (models imported from ONNX).

It keeps the operator in the work table (its traffic counts toward the roofline) instead of dropping it. Its
work is what the importer could count: MACs for convolutions and GEMMs no layer kind expresses (3-D and
transposed convolutions), one FLOP per element for element-wise arithmetic and reductions, and zero for pure
data movement (concat, slice) and for operators it does not understand (listed as unsupported). All counts are
per sample; the batch multiplies them.

``op_type`` (text) and ``output_shape`` (a list of whole numbers) describe the operator rather than size its
work. They are validated here (``OpaqueKind.check``) and kept out of the generic numeric schema in ``params``,
which the builder's form edits.
"""

from __future__ import annotations

from dataclasses import dataclass

from explorer.core.files import names
from explorer.core.workload.layers.base import (
    REGISTRY,
    Context,
    LayerKind,
    Param,
    ParamError,
    Row,
    Shape,
    _coerce,
    numel,
)

PARAMS = (
    Param("input_elems", int, 0, minimum=0, help="activation elements read per sample; 0 = the input tensor"),
    Param("output_elems", int, 0, minimum=0, help="elements written per sample; 0 = the output shape"),
    Param("weight_elems", int, 0, minimum=0, help="constant (weight) elements read per execution"),
    Param("params", int, -1, minimum=-1, help="stored parameters (-1 = weight_elems)"),
    Param("macs", float, 0, minimum=0, help="multiply-accumulates per sample, when known"),
    Param("flops", float, 0, minimum=0, help="FLOPs per sample that are not MACs, when known"),
)
DESCRIPTIVE = ("op_type", "output_shape")


@dataclass(frozen=True)
class OpaqueKind(LayerKind):
    def check(self, raw: dict, where: str) -> dict:
        known = {p.name for p in self.params} | set(DESCRIPTIVE) | {"kind", "name", "repeat", "input_shape"}
        unknown = sorted(set(raw) - known)
        if unknown:
            raise ParamError(f"{where}: unknown parameter(s) {names(unknown)} for '{self.kind}'")
        out = {p.name: _coerce(p, raw.get(p.name, p.default), f"{where}.{p.name}") for p in self.params}
        op = raw.get("op_type", "op")
        if not isinstance(op, str) or not op:
            raise ParamError(f"{where}.op_type: expected the operator's name as text, got {op!r}")
        shape = raw.get("output_shape", ())
        if not isinstance(shape, (list, tuple)) or not all(
                isinstance(d, int) and not isinstance(d, bool) and d > 0 for d in shape):
            raise ParamError(f"{where}.output_shape: expected a list of positive whole numbers, got {shape!r}")
        out["op_type"], out["output_shape"] = op, tuple(shape)
        return out


def opaque(p: dict, in_shape: Shape, ctx: Context, name: str):
    out = p["output_shape"] or in_shape
    b = ctx.batch
    params = p["weight_elems"] if p["params"] < 0 else p["params"]
    inputs = p["input_elems"] or numel(in_shape)
    outputs = p["output_elems"] or numel(out)
    return out, [Row(name, "opaque", macs=b * p["macs"], other_flops=b * p["flops"], params=params,
                     weight_elems=p["weight_elems"], input_elems=b * inputs, output_elems=b * outputs,
                     out_shape=out)]


# registered by hand (not with @layer_kind) for its own check of the descriptive fields
REGISTRY["opaque"] = OpaqueKind(
    "opaque", "other", PARAMS, opaque,
    "an operator with no layer kind (imported): its tensor sizes, and its work when known",
)
