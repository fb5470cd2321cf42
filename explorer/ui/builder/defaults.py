"""New layers dropped from the palette: parameters that fit the tensor at the drop position, unique names,
and the short "key parameters" text each row of the layer stack shows. Qt-free helpers for the builder."""

from __future__ import annotations

import re
from collections.abc import Iterable

from explorer.core.workload.layers import REGISTRY, Shape
from explorer.core.workload.model import LayerSpec, Model

FALLBACK_FEATURES = 512
FALLBACK_CHANNELS = 64

#: short labels for the parameters shown in a row (others show their own name)
SHORT = {"out_channels": "out", "kernel_size": "k", "stride": "s", "padding": "p", "dilation": "d", "groups": "g",
         "in_features": "in", "out_features": "out", "num_embeddings": "vocab", "embedding_dim": "dim",
         "position_embeddings": "pos", "token_types": "types", "kv_heads": "kv", "head_dim": "head_dim",
         "ffn_hidden": "ffn", "mid_channels": "mid", "expand_ratio": "t", "num_features": "features",
         "norm_position": "norm@", "cls_token": "cls", "position_embedding": "pos"}


def _heads_for(hidden: int) -> int:
    """A head count that divides the hidden size, preferring 64-wide heads."""
    if hidden >= 64 and hidden % 64 == 0:
        return hidden // 64
    for heads in (8, 4, 2):
        if hidden % heads == 0:
            return heads
    return 1


def fitting_params(kind: str, in_shape: Shape) -> dict:
    """Values for the required parameters of ``kind`` that make it fit ``in_shape`` where that is possible."""
    last = in_shape[-1] if in_shape else FALLBACK_FEATURES
    image = len(in_shape) == 3
    channels = in_shape[0] if image else FALLBACK_CHANNELS
    if kind == "dense":
        return {"in_features": last, "out_features": last}
    if kind == "matmul":
        m = in_shape[0] if len(in_shape) == 2 else FALLBACK_FEATURES
        return {"m": m, "n": last, "k": last}
    if kind == "embedding":
        return {"num_embeddings": 32000, "embedding_dim": 768}
    if kind == "conv2d":
        return {"out_channels": channels, "kernel_size": 3, "padding": 1}
    if kind in ("maxpool", "avgpool"):
        return {"kernel_size": 2}
    if kind in ("attention", "transformer_block"):
        return {"heads": _heads_for(last)}
    if kind == "bottleneck":
        return {"mid_channels": max(1, channels // 4) if channels % 4 == 0 else FALLBACK_CHANNELS}
    if kind == "inverted_residual":
        return {"out_channels": channels}
    if kind == "embedding_bag":  # stacks its vectors under a (D,) or (N, D) tensor: D is the last dimension
        return {"num_tables": 8, "rows_per_table": 100_000,
                "embedding_dim": last if len(in_shape) in (1, 2) else FALLBACK_CHANNELS}
    return {p.name: FALLBACK_CHANNELS for p in REGISTRY[kind].params if p.required}


def unique_name(base: str, taken: Iterable[str]) -> str:
    """``base_1``, ``base_2``...: the first not in ``taken`` (a trailing ``_<n>`` of ``base`` is replaced)."""
    taken = set(taken)
    stem = re.sub(r"_\d+$", "", base) or "layer"
    n = 1
    while f"{stem}_{n}" in taken:
        n += 1
    return f"{stem}_{n}"


def layer_names(model: Model) -> list[str]:
    return [spec.name or f"{spec.kind}{i}" for i, spec in enumerate(model.layers)]


def new_layer(kind: str, in_shape: Shape, model: Model) -> LayerSpec:
    """A layer of ``kind`` named uniquely in ``model`` with parameters fitting ``in_shape``."""
    if kind not in REGISTRY:
        raise ValueError(f"kind: unknown layer kind {kind!r}")
    return LayerSpec.make(kind, unique_name(kind, layer_names(model)), **fitting_params(kind, in_shape))


def duplicates(specs: Iterable[LayerSpec], model: Model) -> tuple[LayerSpec, ...]:
    """Copies of ``specs`` with names that do not clash with the model's or each other's."""
    taken = layer_names(model)
    out = []
    for spec in specs:
        name = unique_name(spec.name or spec.kind, taken)
        taken.append(name)
        out.append(LayerSpec(spec.kind, name, spec.items, spec.repeat))
    return tuple(out)


def key_parameters(spec: LayerSpec) -> str:
    """``out=64 k=3 s=2``: the parameters set on the layer (defaults omitted), in schema order."""
    kind = REGISTRY.get(spec.kind)
    params = spec.params
    order = [p.name for p in kind.params] if kind else list(params)
    parts = []
    for name in order:
        if name not in params:
            continue
        value = params[name]
        if isinstance(value, bool):
            value = "yes" if value else "no"
        parts.append(f"{SHORT.get(name, name)}={value}")
    return " ".join(parts)
