"""Layer kinds: parameter schemas, shape inference and work counts.

Conventions (``docs/model-file.md`` states them for users):

* Shapes are per sample, batch excluded: images ``(C, H, W)``, token sequences ``(S, H)``, vectors ``(F,)``.
* ``1 MAC = 2 FLOP``. Non-MAC work per element: relu/relu6 1, sigmoid 4, silu 4, gelu 8, tanh 4, add/multiply 1,
  batchnorm (inference, folded scale and shift) 2, layernorm 6 (the chapter's count: mean 1, variance 2,
  normalize 3), rmsnorm 4, softmax 3 (exp, sum, divide: the chapter's count), pooling 1 per window element.
* ``params`` are the stored parameters, ``active_params`` those one token computes with: the same except in a
  mixture of experts, where a token runs only its ``top_k`` routed experts (``layers/moe.py``).
* Traffic counts every tensor once (the chapter's ideal-reuse model): inputs + weights read + outputs (+ KV cache).
  Element counts are turned into bytes by the analyses at the chosen precision.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from explorer.core.files import names

Shape = tuple[int, ...]


class ShapeError(ValueError):
    """The layer does not fit the tensor it receives (e.g. a channel mismatch)."""


class ParamError(ValueError):
    """A layer parameter is missing, of the wrong type, or out of range. The message names it."""


@dataclass(frozen=True)
class Param:
    name: str
    type: type  # int | float | bool | str
    default: Any = None  # None = required
    minimum: float | None = 1
    choices: tuple | None = None
    help: str = ""

    @property
    def required(self) -> bool:
        return self.default is None


#: How attention runs: ``naive`` writes the S x S scores to memory and reads them back (softmax in between);
#: ``fused`` (FlashAttention) keeps them on chip and streams K and V once per query block (analysis/flash.py).
ATTENTION = ("naive", "fused")
#: Which positions the LM head (a ``dense`` with ``head: true``) computes logits for in prefill: ``last`` (the
#: default, as serving engines run it: the next token of each sequence) or ``all`` (training, scoring).
LM_HEAD = ("all", "last")
#: What a pass computes: a prefill, one decode step, or one training step (forward + backward + optimizer).
PHASES = ("prefill", "decode", "train")


@dataclass(frozen=True)
class Context:
    """Assumptions that change the work: batch, sequence length, phase, how attention runs, the LM head's rows."""

    batch: int = 1
    seq_len: int | None = None  # overrides the model's token count when given
    phase: str = "prefill"  # prefill | decode | train (PHASES; decode: one new token per sequence against a KV
    # cache; train: the training step's forward, backward and optimizer rows, workload/train_step.py)
    attention: str = "naive"  # naive | fused (ATTENTION)
    lm_head: str = "last"  # last | all (LM_HEAD): serving engines compute the next token's logits only


@dataclass(frozen=True)
class AttentionShape:
    """What a fused attention kernel streams, for the K/V re-reads that depend on the device's on-chip memory
    (analysis/flash.py). Carried by the scores and context rows: each streams one of K, V (or the latent)."""

    streams: int  # K/V streams: batch x KV heads (batch for latent attention's absorbed decode)
    group: int  # query heads sharing one stream (G = heads / kv_heads)
    queries: int  # query positions per sequence (1 in decode)
    keys: int  # key positions attended (the cache in decode)
    width: int  # elements per key position this row streams (head_dim of K or V; the latent)
    dim: int  # the head dimension d that sizes the blocks
    causal: bool
    window: int = 0


@dataclass
class Row:
    """The work of one executed operator, batch included (element counts; bytes come later)."""

    name: str
    kind: str
    macs: float = 0.0
    other_flops: float = 0.0  # FLOPs not counted as MACs (norms, softmax, activations)
    params: float = 0.0  # stored parameters (for the model's size)
    active_params: float | None = None  # parameters each token computes with (None = params; MoE: top_k experts)
    weight_elems: float = 0.0  # parameter elements read per execution (embeddings read only looked-up rows)
    input_elems: float = 0.0
    output_elems: float = 0.0
    kv_read_elems: float = 0.0
    kv_cache_elems: float = 0.0  # KV cache resident after this operator (for the memory footprint)
    state_bytes: float = 0.0  # bytes moved in a fixed format, not the analysis's (the optimizer's fp32 states)
    gemm: tuple[int, int, int] = (0, 0, 0)  # (M, N, K) of one GEMM
    gemm_count: int = 0  # independent GEMMs of that shape (groups, heads x batch)
    out_shape: Shape = ()
    layer_index: int = -1  # index of the top-level layer this row belongs to
    count: int = 1  # repeat multiplier (blocks with repeat > 1)
    attention: AttentionShape | None = None  # the K/V stream of an attention product (scores, context)


@dataclass(frozen=True)
class LayerKind:
    kind: str
    group: str  # palette group: linear algebra, convolution, normalization, activation, attention, blocks, other
    params: tuple[Param, ...]
    expand: Callable[[dict, Shape, Context, str], tuple[Shape, list[Row]]]
    summary: str = ""
    is_block: bool = False

    def check(self, raw: dict, where: str) -> dict:
        """Validate and complete parameters; raise ParamError naming ``where.param``. A set of parameters that
        passed is remembered (:func:`_checked_key`): the same set is checked once, not once per context a work
        table is built in and per block a sub-layer runs in (a new dict each call: callers may keep or change it)."""
        values = tuple(raw.values())  # _checked_key(id(self), raw), inline: a check per sub-layer per context
        types = tuple(map(type, values))
        key = (None if float in types and any(type(v) is float and v == 0.0 for v in values)
               else (id(self), tuple(raw), values, types))
        if key is not None:
            try:
                got = _CHECKED.get(key)
            except TypeError:  # a value that cannot be a key (a list): checked as it is
                got = key = None
            if got is not None and got[0] is self:
                return dict(got[1])
        out = self._check(raw, where)
        if key is not None:
            if len(_CHECKED) >= MAX_CHECKED:
                _CHECKED.clear()
            _CHECKED[key] = (self, out)  # the kind itself kept: its id is not reused while the entry lives
            return dict(out)
        return out

    def _schema(self) -> tuple[frozenset, dict]:
        """The names a layer of this kind may give, and each parameter's default as checked (those whose default
        passes :func:`_coerce`; a default that does not is checked, and fails, each time as before): made once per
        kind (the kind and its parameters are frozen, :func:`_coerce` a pure function of them)."""
        schema = self.__dict__.get("_schema_made")
        if schema is None:
            defaults = {}
            for p in self.params:
                if p.default is not None:
                    try:
                        defaults[p.name] = _coerce(p, p.default, p.name)
                    except ParamError:
                        pass
            schema = (frozenset({p.name for p in self.params} | {"kind", "name", "repeat", "input_shape"}), defaults)
            object.__setattr__(self, "_schema_made", schema)
        return schema

    def _check(self, raw: dict, where: str) -> dict:
        known, defaults = self._schema()
        if not known.issuperset(raw):
            unknown = sorted(set(raw) - known)
            raise ParamError(f"{where}: unknown parameter(s) {names(unknown)} for '{self.kind}'")
        out = {}
        for p in self.params:
            name = p.name
            if name in raw:
                value = raw[name]
            elif name in defaults:  # the default, as _coerce returns it
                out[name] = defaults[name]
                continue
            else:
                value = p.default
            if value is None:
                raise ParamError(f"{where}.{name}: is required for '{self.kind}'")
            out[name] = _coerce(p, value, f"{where}.{name}")
        return out


#: parameter sets that passed :meth:`LayerKind.check`, by :func:`_checked_key` -> (the kind, the completed parameters)
_CHECKED: dict[tuple, tuple[LayerKind, dict]] = {}
MAX_CHECKED = 1024  # emptied when full (a model of many distinct layers: each is checked as before); ~1 MB at most


def _checked_key(kind: object, raw: dict) -> tuple | None:
    """What a check's outcome depends on: the kind (its object's id: two kinds may share a name), the names and
    values, and the values' types (``True == 1`` and ``1 == 1.0``, yet a bool is not a number and an int stays an
    int). None for a float zero (``-0.0 == 0.0`` but its sign is kept); a value that is not hashable (a list) makes
    a key the memo cannot hold, and the check runs as it is."""
    values = tuple(raw.values())
    types = tuple(map(type, values))
    if float in types and any(type(v) is float and v == 0.0 for v in values):
        return None
    return kind, tuple(raw), values, types


def clear_checked() -> None:
    """Forget the parameter sets checked (with the work tables' caches: a first build pays every check)."""
    _CHECKED.clear()


#: the largest whole-number parameter taken: 2^53, the last integer every float holds exactly
MAX_WHOLE = 2**53


def _coerce(p: Param, value: Any, where: str) -> Any:
    if type(value) is int and p.type is int and -MAX_WHOLE <= value <= MAX_WHOLE:  # the common case, as below
        if p.minimum is not None and value < p.minimum:
            raise ParamError(f"{where}: must be at least {p.minimum:g}, got {value!r}")
        return value
    if p.type is bool:
        if not isinstance(value, bool):
            raise ParamError(f"{where}: expected true or false, got {value!r}")
        return value
    if p.type is str:
        if not isinstance(value, str) or (p.choices and value not in p.choices):
            raise ParamError(f"{where}: expected one of {', '.join(p.choices or ())}, got {value!r}")
        return value
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ParamError(f"{where}: expected a number, got {value!r}")
    if not math.isfinite(value):  # before the whole-number check: int() of inf or nan raises
        raise ParamError(f"{where}: expected a finite number, got {value!r}")
    if p.type is int:
        if value != int(value):
            raise ParamError(f"{where}: expected a whole number, got {value!r}")
        value = int(value)
        if abs(value) > MAX_WHOLE:  # beyond it floats lose whole numbers, and products of such overflow
            raise ParamError(f"{where}: must be at most 2^53 = {MAX_WHOLE:,}, got {value:.3g}")
    if p.minimum is not None and value < p.minimum:
        raise ParamError(f"{where}: must be at least {p.minimum:g}, got {value!r}")
    return value


REGISTRY: dict[str, LayerKind] = {}


def layer_kind(kind: str, group: str, params: tuple[Param, ...] = (), summary: str = "", is_block: bool = False):
    """Register a layer kind's ``expand(params, in_shape, ctx, name) -> (out_shape, rows)``."""

    def register(fn):
        REGISTRY[kind] = LayerKind(kind, group, params, fn, summary, is_block)
        return fn

    return register


def numel(shape: Shape) -> int:
    return math.prod(shape) if shape else 1


def conv_out(size: int, kernel: int, stride: int, padding: int, dilation: int = 1) -> int:
    return (size + 2 * padding - dilation * (kernel - 1) - 1) // stride + 1


def need_rank(shape: Shape, ranks: tuple[int, ...], kind: str, what: str) -> None:
    if len(shape) not in ranks:
        raise ShapeError(f"'{kind}' needs {what}, got a tensor of shape {format_shape(shape)}")


def format_shape(shape: Shape) -> str:
    return "(" + ", ".join(str(s) for s in shape) + ")"


def run(kind: str, params: dict, in_shape: Shape, ctx: Context, name: str) -> tuple[Shape, list[Row]]:
    """Expand a registered kind with already-checked params (used by blocks to compose layers)."""
    lk = REGISTRY[kind]
    full = lk.check(params, name)
    return lk.expand(full, in_shape, ctx, name)


@dataclass
class Expansion:
    """Helper for blocks: chains sub-layers, threading the shape through."""

    ctx: Context
    prefix: str
    shape: Shape
    rows: list[Row] = field(default_factory=list)

    def add(self, kind: str, label: str, **params) -> Shape:
        lk, where = REGISTRY[kind], f"{self.prefix}.{label}"  # :func:`run`, inline (~10 sub-layers a block)
        self.shape, rows = lk.expand(lk.check(params, where), self.shape, self.ctx, where)
        self.rows.extend(rows)
        return self.shape
