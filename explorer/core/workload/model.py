"""Models: an input description plus an ordered list of layers; the model file; the per-operator work table.

The model file (``docs/model-file.md``) is JSON::

    {"format": 1, "name": "GPT-2 (124M)", "input": {"tokens": 1024},
     "layers": [{"kind": "embedding", "name": "wte", "num_embeddings": 50257, ...},
                {"kind": "transformer_block", "name": "h", "repeat": 12, "heads": 12}]}
"""

from __future__ import annotations

import functools
import json
import threading
from collections import OrderedDict, deque
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Iterable, Mapping

import numpy as np

from explorer.core.files import NestingError, atomic_write_text, parse_nested
from explorer.core.workload import layer_memo
from explorer.core.workload.layers import REGISTRY, Context, ParamError, Shape
from explorer.core.workload.seq_diff import changed_span
from explorer.core.workload.train_step import train_step_table
from explorer.core.workload.work_table import (  # noqa: F401 - LayerStatus, LayerTable, NUMERIC: read from here too
    NUMERIC,
    LayerStatus,
    LayerTable,
    fresh_table,
    patch_table,
)

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

    def __hash__(self) -> int:
        """The fields' hash (as the dataclass's own), made once per spec: a model's hash reads every layer's."""
        cached = self.__dict__.get("_hash")
        if cached is None:
            cached = hash((self.kind, self.name, self.items, self.repeat))
            object.__setattr__(self, "_hash", cached)
        return cached

    def __getstate__(self) -> dict:  # a hash is only valid in the process that made it (str hashes are salted)
        return {k: v for k, v in self.__dict__.items() if k != "_hash"}

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

    def to_json(self) -> str:
        """``json.dumps(self.to_dict())``, compact (no spaces), made once per spec: a 10,000-layer model's autosave
        joins the texts of the specs an edit kept instead of encoding every layer again."""
        text = self.__dict__.get("_json")
        if text is None:
            text = json.dumps(self.to_dict(), separators=(",", ":"))
            object.__setattr__(self, "_json", text)
        return text

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
        if isinstance(repeat, bool) or not isinstance(repeat, int) or not 1 <= repeat <= 2**53:
            raise ModelError(f"{where}.repeat: expected a whole number >= 1 and at most 2^53, got {repeat!r}")
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

    def __hash__(self) -> int:
        """Cached (the work table is looked up by model on every analysis pass), and made from the layers' hashes
        of a model hashed before when the two share most layer objects (:func:`_layer_hashes`): an edit of one
        layer of a 10,000-layer model hashes one layer, not 10,000."""
        cached = self.__dict__.get("_hash")
        if cached is None:
            cached = hash((self.name, self.input, _layer_hashes(self.layers).tobytes()))
            object.__setattr__(self, "_hash", cached)
        return cached

    def __getstate__(self) -> dict:  # as LayerSpec's: the hash is made again in another process
        return {k: v for k, v in self.__dict__.items() if k != "_hash"}

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
            if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= 2**53:
                raise ModelError(f"{where}: input.{k}: expected a whole number >= 1 and at most 2^53, got {v!r}")
        layers = data.get("layers")
        if not isinstance(layers, list):
            raise ModelError(f"{where}: layers: expected a list")
        specs = tuple(LayerSpec.from_dict(x, f"{where}: layers[{i}]") for i, x in enumerate(layers))
        return cls(name, tuple(inp.items()), specs)


# --------------------------------------------------------------------------------------------- model hash
#: The layers of the models hashed last and their per-layer hashes (int64), newest last: a model that shares most
#: of its layers with one of them (an edit replaced, added or removed a few and kept the other objects) copies
#: their hashes and hashes only the layers that differ. The tuples are kept (a few references each).
_HASHED: deque[tuple[tuple[LayerSpec, ...], np.ndarray]] = deque(maxlen=4)
_HASHED_LOCK = threading.Lock()  # the serving and training workers hash models too


def _hash_all(layers) -> np.ndarray:
    return np.fromiter(map(hash, layers), dtype=np.int64, count=len(layers))


def _from_base(layers: tuple, base: tuple, hashes: np.ndarray) -> np.ndarray | None:
    """``layers``' hashes from ``base``'s when the two differ in one run of at most a quarter of the layers (the
    common prefix and suffix kept, the run between them hashed); None otherwise."""
    start, stop, stop_base = changed_span(base, layers)
    if stop - start > len(layers) // 4 + 1:
        return None
    return np.concatenate((hashes[:start], _hash_all(layers[start:stop]), hashes[stop_base:]))


def _layer_hashes(layers: tuple[LayerSpec, ...]) -> np.ndarray:
    """Each layer's hash, in order (int64): from a model hashed before where they share most layers, else all."""
    with _HASHED_LOCK:
        bases = list(_HASHED)
    out = None
    for base, hashes in reversed(bases):
        if base is layers:
            return hashes
        if abs(len(base) - len(layers)) <= len(layers) // 4 + 1:
            out = _from_base(layers, base, hashes)
            if out is not None:
                break
    if out is None:
        out = _hash_all(layers)
    out.flags.writeable = False
    with _HASHED_LOCK:
        _HASHED.append((layers, out))
    return out


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


def layers_json(model: Model) -> str:
    """``json.dumps(model.to_dict()["layers"], separators=(",", ":"))``, from each spec's :meth:`LayerSpec.to_json`."""
    return "[" + ",".join(spec.to_json() for spec in model.layers) + "]"


def dumps_model(model: Model) -> str:
    return json.dumps(model.to_dict(), indent=2) + "\n"


def save_model_file(model: Model, path: str | Path) -> None:
    atomic_write_text(path, dumps_model(model))


# --------------------------------------------------------------------------------------------- work table
#: The last table built per (input, context), the base an edited model's table is patched from (work_table.py):
#: a few contexts (the workspace's, a training run's micro-batches), least recently used first out.
_LAST: OrderedDict[tuple, tuple[Model, LayerTable]] = OrderedDict()
_LAST_SIZE = 8
_LAST_LOCK = threading.Lock()  # the serving and training workers build tables too


def _fresh(model: Model, ctx: Context = Context()) -> LayerTable:  # noqa: B008 - as build_table
    """The table built from scratch, every layer expanded (no cache read or written): ``build_table.__wrapped__``,
    for grids larger than the cache and as the tests' reference."""
    if ctx.phase == "train":
        forward = _fresh(model, replace(ctx, phase="prefill", lm_head="all"))
        return train_step_table(forward, LayerTable, LayerStatus)
    if ctx.seq_len is None and model.default_seq_len() is not None:
        ctx = replace(ctx, seq_len=model.default_seq_len())
    return fresh_table(model.layers, model.input_shape(ctx), ctx)


@functools.lru_cache(maxsize=64)
def build_table(model: Model, ctx: Context = Context()) -> LayerTable:
    """Infer shapes layer by layer and count work. A layer that does not fit is flagged with the reason and
    passes its input through unchanged, so the layers after it are still analyzed. Phase ``train``: the training
    step's forward, backward and optimizer rows (:mod:`.train_step`), the forward as prefill with every
    position's logits.

    Cached per (model, context); a model not seen yet is patched from the last table built in the same context when
    it differs from that one's model in a few layers (an edit: only they are expanded again, work_table.py), which
    gives the same table as :func:`_fresh` (``build_table.__wrapped__``)."""
    if ctx.phase == "train":
        forward = build_table(model, replace(ctx, phase="prefill", lm_head="all"))
        return train_step_table(forward, LayerTable, LayerStatus)
    if ctx.seq_len is None and model.default_seq_len() is not None:  # decode attends to the model's full context
        ctx = replace(ctx, seq_len=model.default_seq_len())
    key = (model.input, ctx)
    with _LAST_LOCK:
        last = _LAST.get(key)
    shape = model.input_shape(ctx)
    table = None
    if last is not None and last[0] is not model:
        table = patch_table(last[0].layers, last[1], model.layers, shape, ctx)
    elif last is not None:
        table = last[1]
    if table is None:
        table = fresh_table(model.layers, shape, ctx)
    with _LAST_LOCK:
        _LAST[key] = (model, table)
        _LAST.move_to_end(key)
        while len(_LAST) > _LAST_SIZE:
            _LAST.popitem(last=False)
    return table


build_table.__wrapped__ = _fresh  # uncached and never patched


def _clear() -> None:
    _lru_clear()
    with _LAST_LOCK:
        _LAST.clear()
    with _HASHED_LOCK:
        _HASHED.clear()
    layer_memo.clear()


_lru_clear = build_table.cache_clear
build_table.cache_clear = _clear
