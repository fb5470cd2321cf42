"""Models: an input description plus an ordered list of layers; the model file; the per-operator work table.

The model file (``docs/model-file.md``) is JSON::

    {"format": 1, "name": "GPT-2 (124M)", "input": {"tokens": 1024},
     "layers": [{"kind": "embedding", "name": "wte", "num_embeddings": 50257, ...},
                {"kind": "transformer_block", "name": "h", "repeat": 12, "heads": 12}]}
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Iterable, Mapping

import numpy as np

from explorer.core.files import NestingError, atomic_write_text, parse_nested
from explorer.core.workload.layers import (
    REGISTRY,
    AttentionShape,
    Context,
    ParamError,
    Row,
    Shape,
    ShapeError,
    format_shape,
)
from explorer.core.workload.train_step import train_step_table

FORMAT = 1
INPUT_FORMS = (("channels", "height", "width"), ("tokens", "hidden"), ("tokens",), ("features",))


class ModelError(ValueError):
    """A malformed model or model file; the message names the file and field."""


def _hashable(value: Any) -> Any:
    """JSON lists become tuples so models stay hashable (the work table is cached per model)."""
    return tuple(_hashable(v) for v in value) if isinstance(value, list) else value


@dataclass(frozen=True)
class LayerSpec:
    kind: str
    name: str = ""
    items: tuple[tuple[str, Any], ...] = ()  # parameters as given (defaults are not written out)
    repeat: int = 1

    @property
    def params(self) -> dict[str, Any]:
        return dict(self.items)

    @classmethod
    def make(cls, kind: str, name: str = "", repeat: int = 1, **params) -> "LayerSpec":
        return cls(kind, name, tuple(params.items()), repeat)

    def with_params(self, **changes) -> "LayerSpec":
        merged = dict(self.items)
        merged.update(changes)
        return replace(self, items=tuple(merged.items()))

    def to_dict(self) -> dict:
        out: dict[str, Any] = {"kind": self.kind}
        if self.name:
            out["name"] = self.name
        if self.repeat != 1:
            out["repeat"] = self.repeat
        out.update((k, list(v) if isinstance(v, tuple) else v) for k, v in self.items)
        return out

    @classmethod
    def from_dict(cls, data: Any, where: str) -> "LayerSpec":
        if not isinstance(data, dict):
            raise ModelError(f"{where}: expected an object with a 'kind'")
        kind = data.get("kind")
        if not isinstance(kind, str) or kind not in REGISTRY:
            raise ModelError(f"{where}.kind: unknown layer kind {kind!r}; known: {', '.join(sorted(REGISTRY))}")
        name = data.get("name", "")
        if not isinstance(name, str):
            raise ModelError(f"{where}.name: expected text")
        repeat = data.get("repeat", 1)
        if isinstance(repeat, bool) or not isinstance(repeat, int) or repeat < 1:
            raise ModelError(f"{where}.repeat: expected a whole number >= 1, got {repeat!r}")
        items = tuple((k, _hashable(v)) for k, v in data.items() if k not in ("kind", "name", "repeat"))
        spec = cls(kind, name, items, repeat)
        try:
            REGISTRY[kind].check(data, where)
        except ParamError as exc:
            raise ModelError(str(exc)) from None
        return spec


@dataclass(frozen=True)
class Model:
    name: str
    input: tuple[tuple[str, int], ...]
    layers: tuple[LayerSpec, ...] = ()

    def __hash__(self) -> int:  # cached: the work table is looked up by model on every analysis pass
        cached = self.__dict__.get("_hash")
        if cached is None:
            cached = hash((self.name, self.input, self.layers))
            object.__setattr__(self, "_hash", cached)
        return cached

    @classmethod
    def make(cls, name: str, input: Mapping[str, int], layers: Iterable[LayerSpec] = ()) -> "Model":
        return cls(name, tuple(input.items()), tuple(layers))

    @property
    def input_dict(self) -> dict[str, int]:
        return dict(self.input)

    def input_shape(self, ctx: Context) -> Shape:
        d = self.input_dict
        if "channels" in d:
            return (d["channels"], d["height"], d["width"])
        if "tokens" in d:
            tokens = 1 if ctx.phase == "decode" else (ctx.seq_len or d["tokens"])
            return (tokens, d["hidden"]) if "hidden" in d else (tokens,)
        return (d["features"],)

    def default_seq_len(self) -> int | None:
        return self.input_dict.get("tokens")

    def to_dict(self) -> dict:
        return {"format": FORMAT, "name": self.name, "input": dict(self.input),
                "layers": [layer.to_dict() for layer in self.layers]}

    @classmethod
    def from_dict(cls, data: Any, where: str = "<model>") -> "Model":
        if not isinstance(data, dict):
            raise ModelError(f"{where}: expected a JSON object")
        if data.get("format") != FORMAT:
            raise ModelError(f"{where}: format: this version reads format {FORMAT}, got {data.get('format')!r}")
        name = data.get("name")
        if not isinstance(name, str) or not name:
            raise ModelError(f"{where}: name: is required")
        inp = data.get("input")
        if not isinstance(inp, dict) or tuple(sorted(inp)) not in {tuple(sorted(f)) for f in INPUT_FORMS}:
            forms = "; ".join("{" + ", ".join(f) + "}" for f in INPUT_FORMS)
            raise ModelError(f"{where}: input: expected one of {forms}, got {inp!r}")
        for k, v in inp.items():
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ModelError(f"{where}: input.{k}: expected a whole number >= 1, got {v!r}")
        layers = data.get("layers")
        if not isinstance(layers, list):
            raise ModelError(f"{where}: layers: expected a list")
        specs = tuple(LayerSpec.from_dict(x, f"{where}: layers[{i}]") for i, x in enumerate(layers))
        return cls(name, tuple(inp.items()), specs)


def load_model_file(path: str | Path) -> Model:
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ModelError(f"{path}: cannot read ({exc.strerror})") from None
    try:
        data = parse_nested(json.loads, text)
    except NestingError as exc:
        raise ModelError(f"{path}: {exc}") from None
    except json.JSONDecodeError as exc:
        raise ModelError(f"{path}: line {exc.lineno}: invalid JSON ({exc.msg})") from None
    return Model.from_dict(data, str(path))


def dumps_model(model: Model) -> str:
    return json.dumps(model.to_dict(), indent=2) + "\n"


def save_model_file(model: Model, path: str | Path) -> None:
    atomic_write_text(path, dumps_model(model))


# --------------------------------------------------------------------------------------------- work table
NUMERIC = ("macs", "other_flops", "params", "active_params", "weight_elems", "input_elems", "output_elems",
           "kv_read_elems", "kv_cache_elems", "state_bytes", "count")


@dataclass(frozen=True)
class LayerStatus:
    """What the builder shows per top-level layer."""

    in_shape: Shape
    out_shape: Shape
    error: str | None
    first_row: int
    n_rows: int


@dataclass(frozen=True, eq=False)
class LayerTable:
    """Per-operator work as numpy arrays (batch included, element counts), plus per-layer status."""

    names: tuple[str, ...]
    kinds: tuple[str, ...]
    layer_index: np.ndarray
    gemm: np.ndarray  # (rows, 3) M, N, K
    gemm_count: np.ndarray
    columns: Mapping[str, np.ndarray] = field(default_factory=dict)
    status: tuple[LayerStatus, ...] = ()
    out_shapes: tuple[Shape, ...] = ()
    attention: tuple[AttentionShape | None, ...] = ()  # per row: the K/V stream of an attention product, or None

    def __getattr__(self, item):  # table.macs etc.
        columns = self.__dict__.get("columns", {})
        if item in columns:
            return columns[item]
        raise AttributeError(item)

    @property
    def flops(self) -> np.ndarray:
        return 2.0 * self.columns["macs"] + self.columns["other_flops"]

    @property
    def errors(self) -> list[tuple[int, str]]:
        return [(i, s.error) for i, s in enumerate(self.status) if s.error]

    def __len__(self) -> int:
        return len(self.names)

    def total(self, column: str) -> float:
        if column == "flops":
            return float(np.sum(self.flops * self.columns["count"]))
        return float(np.sum(self.columns[column] * self.columns["count"]))


@functools.lru_cache(maxsize=64)
def build_table(model: Model, ctx: Context = Context()) -> LayerTable:
    """Infer shapes layer by layer and count work. A layer that does not fit is flagged with the reason and
    passes its input through unchanged, so the layers after it are still analyzed. Phase ``train``: the training
    step's forward, backward and optimizer rows (:mod:`.train_step`), the forward as prefill with every
    position's logits."""
    if ctx.phase == "train":
        forward = build_table(model, replace(ctx, phase="prefill", lm_head="all"))
        return train_step_table(forward, LayerTable, LayerStatus)
    if ctx.seq_len is None and model.default_seq_len() is not None:  # decode attends to the model's full context
        ctx = replace(ctx, seq_len=model.default_seq_len())
    rows: list[Row] = []
    status: list[LayerStatus] = []
    shape = model.input_shape(ctx)
    for i, spec in enumerate(model.layers):
        name = spec.name or f"{spec.kind}{i}"
        kind = REGISTRY[spec.kind]
        first = len(rows)
        try:
            explicit = spec.params.get("input_shape")
            if explicit is not None:  # graphs with branches (imported models) give each layer its own input
                if not (isinstance(explicit, (list, tuple)) and explicit
                        and all(isinstance(d, int) and not isinstance(d, bool) and d > 0 for d in explicit)):
                    raise ParamError(f"{name}.input_shape: expected a list of positive whole numbers")
                shape = tuple(explicit)
            params = kind.check(spec.params, name)
            out, new_rows = kind.expand(params, shape, ctx, name)
            if kind.is_block and spec.repeat > 1 and out != shape:  # a repeated block maps its output to its input
                raise ShapeError(f"repeat {spec.repeat} needs the block to keep its shape, "
                                 f"but {format_shape(shape)} becomes {format_shape(out)}")
            error = None
        except (ShapeError, ParamError) as exc:
            out, new_rows, error = shape, [], str(exc)
        for r in new_rows:
            r.layer_index = i
            r.count = spec.repeat
        rows.extend(new_rows)
        status.append(LayerStatus(shape, out, error, first, len(new_rows)))
        shape = out
    for r in rows:  # a row that does not say otherwise computes with all its parameters
        if r.active_params is None:
            r.active_params = r.params
    columns = {c: np.array([getattr(r, c) for r in rows], dtype=float) for c in NUMERIC}
    for a in columns.values():
        a.setflags(write=False)
    return LayerTable(
        names=tuple(r.name for r in rows),
        kinds=tuple(r.kind for r in rows),
        layer_index=np.array([r.layer_index for r in rows], dtype=int),
        gemm=np.array([r.gemm for r in rows], dtype=float).reshape(-1, 3),
        gemm_count=np.array([r.gemm_count for r in rows], dtype=float),
        columns=columns,
        status=tuple(status),
        out_shapes=tuple(r.out_shape for r in rows),
        attention=tuple(r.attention for r in rows),
    )
