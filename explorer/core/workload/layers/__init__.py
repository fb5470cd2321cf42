"""Layer kinds, registered on import. ``REGISTRY`` maps a kind name to its schema and expansion."""

# registration side effects:
from explorer.core.workload.layers import (  # noqa: F401
    attention,
    blocks,
    conv,
    elementwise,
    linear,
    mla,
    moe,
    opaque,
    recommendation,
)
from explorer.core.workload.layers.base import (
           ATTENTION,
           LM_HEAD,
           PHASES,
           REGISTRY,
           AttentionShape,
           Context,
           LayerKind,
           Param,
           ParamError,
           Row,
           Shape,
           ShapeError,
           format_shape,
)

GROUPS = ("linear algebra", "convolution", "normalization", "activation", "attention", "blocks", "other")

__all__ = ["ATTENTION", "LM_HEAD", "PHASES", "REGISTRY", "GROUPS", "AttentionShape", "Context", "LayerKind", "Param",
           "ParamError", "Row", "Shape", "ShapeError", "format_shape"]
