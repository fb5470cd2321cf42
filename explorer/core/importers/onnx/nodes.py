"""Small helpers on ONNX nodes shared by the operator mapping (``ops``) and the pattern finder (``patterns``),
so that neither has to import the other."""

from __future__ import annotations

import onnx


def attr(node: onnx.NodeProto, name: str, default=None):
    """A node attribute's value (strings decoded), or ``default`` when the node does not set it."""
    for a in node.attribute:
        if a.name == name:
            value = onnx.helper.get_attribute_value(a)
            return value.decode() if isinstance(value, bytes) else value
    return default
