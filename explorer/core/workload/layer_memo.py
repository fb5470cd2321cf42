"""A layer's rows made once per (kind, parameters, repeat, input shape) and context: the work table of a model whose
layers repeat (N x the same block, each layer with its own name) is assembled from a few expansions instead of one
per layer.

A layer's rows depend on its kind, its parameters, its repeat, the shape it receives and the context, and on its
name only through the rows' names and the error message (``"<name>.<label>"``, ``"<name>: ..."``). So a layer is
expanded once with a placeholder for its name; every layer with the same key takes those rows' numbers (kept as the
columns of one matrix per context), its kinds, shapes and attention streams, and the names with the placeholder
replaced by its own. An expansion whose row names do not start with the placeholder is not kept (each such layer
is expanded as before). ``tests/core/test_work_table.py`` holds the assembled tables equal to the layer-by-layer
expansion, exactly, on every template and on random models.

The memo is bounded: ``MAX_ROWS`` distinct rows per context (a model of all-distinct layers, an imported graph,
expands its layers past the bound as before) and ``MAX_CONTEXTS`` contexts (a serving grid has ~155).
"""

from __future__ import annotations

import operator
import threading
from collections import OrderedDict
from itertools import chain

import numpy as np

from explorer.core.workload.layers import REGISTRY, Context, ParamError, Row, Shape, ShapeError, format_shape
from explorer.core.workload.layers.base import clear_checked

#: the numbers of a row, in the matrix's order: the numeric columns, then GEMM (M, N, K) and the GEMM count
NUMERIC = ("macs", "other_flops", "params", "active_params", "weight_elems", "input_elems", "output_elems",
           "kv_read_elems", "kv_cache_elems", "state_bytes", "count")
WIDTH = len(NUMERIC) + 4
MAX_ROWS = 1024  # distinct rows kept per context
MAX_CONTEXTS = 192  # contexts kept
PLACEHOLDER = "\x00"  # the name a layer is expanded under (a layer's name replaces it)


def expand_layer(i: int, spec, shape: Shape, ctx: Context, name: str | None = None
                 ) -> tuple[Shape, list[Row], str | None, Shape]:
    """Layer ``i`` (a :class:`~explorer.core.workload.model.LayerSpec`) receiving ``shape``: ``(out shape, rows,
    error, the shape it computes on)``. A layer that does not fit is flagged with the reason and passes its input
    through unchanged, so the layers after it are still analyzed. ``name``: the name it is expanded under (the
    spec's, or ``kind<i>``, when not given; the memo passes its placeholder instead of copying the spec)."""
    if name is None:
        name = spec.name or f"{spec.kind}{i}"
    kind = REGISTRY[spec.kind]
    raw = dict(spec.items)
    try:
        explicit = raw.get("input_shape")
        if explicit is not None:  # graphs with branches (imported models) give each layer its own input
            if not (isinstance(explicit, (list, tuple)) and explicit
                    and all(isinstance(d, int) and not isinstance(d, bool) and d > 0 for d in explicit)):
                raise ParamError(f"{name}.input_shape: expected a list of positive whole numbers")
            shape = tuple(explicit)
        params = kind.check(raw, name)
        out, rows = kind.expand(params, shape, ctx, name)
        if kind.is_block and spec.repeat > 1 and out != shape:  # a repeated block maps its output to its input
            raise ShapeError(f"repeat {spec.repeat} needs the block to keep its shape, "
                             f"but {format_shape(shape)} becomes {format_shape(out)}")
        error = None
    except (ShapeError, ParamError) as exc:
        out, rows, error = shape, [], str(exc)
    repeat = spec.repeat
    for r in rows:
        r.layer_index = i
        r.count = repeat
        if r.active_params is None:  # a row that does not say otherwise computes with all its parameters
            r.active_params = r.params
    return out, rows, error, shape


_NUMBERS = operator.attrgetter(*NUMERIC, "gemm", "gemm_count")  # one C call per row
_PLAIN, _GEMM = operator.attrgetter(*NUMERIC, "gemm_count"), operator.attrgetter("gemm")  # the memo's, in C
N_NUMERIC, N_PLAIN = len(NUMERIC), len(NUMERIC) + 1


_KIND, _OUT_SHAPE, _ATTENTION, _NAME = (operator.attrgetter(a) for a in ("kind", "out_shape", "attention", "name"))
_SUFFIX = operator.itemgetter(slice(1, None))  # a row name without the placeholder
_STARTS = operator.methodcaller("startswith", PLACEHOLDER)


def row_numbers(r: Row) -> tuple[float, ...]:
    *numbers, gemm, gemm_count = _NUMBERS(r)
    return (*numbers, *gemm, gemm_count)


class _Memo:
    """One context's expansions: key -> (row ids, name suffixes, out shape, error with the placeholder, the shape
    computed on), and the distinct rows' numbers, kinds, shapes and attention streams by row id."""

    def __init__(self):
        self.entries: dict = {}
        self.numbers: list[tuple] = []  # per row: its NUMERIC columns and GEMM count (one C call each)
        self.gemms: list[tuple] = []  # per row: its GEMM (M, N, K)
        self.kinds: list[str] = []
        self.out_shapes: list[Shape] = []
        self.attention: list = []
        self.lock = threading.Lock()
        self._matrix = np.zeros((WIDTH, 0))

    def matrix(self) -> np.ndarray:
        """(WIDTH, rows) the distinct rows' numbers (made again only when rows were added)."""
        with self.lock:
            n = len(self.numbers)
            if self._matrix.shape[1] != n:
                # fromiter over the flattened tuples: the same float conversion as np.array's, ~40 % less time
                plain = np.fromiter(chain.from_iterable(self.numbers), float, n * N_PLAIN).reshape(n, N_PLAIN)
                made = np.empty((WIDTH, n))
                made[:N_NUMERIC] = plain[:, :N_NUMERIC].T
                made[N_NUMERIC:WIDTH - 1] = np.fromiter(chain.from_iterable(self.gemms), float, n * 3).reshape(n, 3).T
                made[WIDTH - 1] = plain[:, N_NUMERIC]
                self._matrix = made
            return self._matrix


_MEMOS: OrderedDict[Context, _Memo] = OrderedDict()
_MEMOS_LOCK = threading.Lock()


def memo_for(ctx: Context) -> _Memo:
    with _MEMOS_LOCK:
        memo = _MEMOS.get(ctx)
        if memo is None:
            memo = _MEMOS[ctx] = _Memo()
            while len(_MEMOS) > MAX_CONTEXTS:
                _MEMOS.popitem(last=False)
        else:
            _MEMOS.move_to_end(ctx)
        return memo


def clear() -> None:
    """Forget every context's expansions and the parameter sets checked (a first build pays all of them again)."""
    with _MEMOS_LOCK:
        _MEMOS.clear()
    clear_checked()


class Assembler:
    """Collects layers' rows (by row id into the context's memo, or rows of its own past the memo's bound) and
    makes the table's parts from them at once."""

    def __init__(self, ctx: Context):
        self.ctx, self.memo = ctx, memo_for(ctx)
        self.ids: list[int] = []
        self.names: list[str] = []
        self.layers: list[int] = []  # layer index, rows (ints: no object the collector tracks per layer)
        self.counts: list[int] = []
        self.own: list[Row] = []  # rows not in the memo (ids from -1 down)

    def add(self, i: int, spec, shape: Shape) -> tuple[Shape, Shape, str | None, int]:
        """Layer ``i`` receiving ``shape``: ``(the shape it computes on, out shape, error, rows)``."""
        name = spec.name or f"{spec.kind}{i}"
        key = (spec.kind, spec.items, spec.repeat, shape)
        try:
            entry = self.memo.entries.get(key)
            if entry is None:
                entry = self._learn(key, spec, shape)
        except TypeError:  # a parameter that cannot be a key (a list): expanded as it is
            entry = None
        if entry is not None:
            ids, suffixes, out, error, seen = entry
            self.ids.extend(ids)
            # as the layer's expansion names its rows (an importer's name may not be text: bytes kept as given)
            self.names.extend([f"{name}{s}" if s else name for s in suffixes])
            self.layers.append(i)
            self.counts.append(len(ids))
            return seen, out, error.replace(PLACEHOLDER, name) if error else None, len(ids)
        out, rows, error, seen = expand_layer(i, spec, shape, self.ctx)
        for r in rows:
            self.own.append(r)
            self.ids.append(-len(self.own))
            self.names.append(r.name)
        self.layers.append(i)
        self.counts.append(len(rows))
        return seen, out, error, len(rows)

    def _learn(self, key, spec, shape: Shape):
        """Expand under the placeholder name and keep it (None: not kept, the memo is full or a row's name does
        not start with the placeholder)."""
        memo = self.memo
        if len(memo.numbers) >= MAX_ROWS or PLACEHOLDER in spec.name:
            return None
        out, rows, error, seen = expand_layer(0, spec, shape, self.ctx, PLACEHOLDER)
        names = list(map(_NAME, rows))
        if not all(map(_STARTS, names)):
            return None
        with memo.lock:
            if key in memo.entries:  # another thread learnt it meanwhile
                return memo.entries[key]
            start = len(memo.numbers)
            memo.numbers.extend(map(_PLAIN, rows))
            memo.gemms.extend(map(_GEMM, rows))
            memo.kinds.extend(map(_KIND, rows))
            memo.out_shapes.extend(map(_OUT_SHAPE, rows))
            memo.attention.extend(map(_ATTENTION, rows))
            entry = (tuple(range(start, start + len(rows))), tuple(map(_SUFFIX, names)), out, error, seen)
            memo.entries[key] = entry
        return entry

    def numbers(self) -> np.ndarray:
        """(WIDTH, rows) the rows' numbers in order: the :data:`NUMERIC` columns, then GEMM M, N, K and count
        (C-contiguous: each column a contiguous row of it)."""
        memo, own = self.memo, self.own
        matrix = memo.matrix()
        if not own:
            return matrix.take(self.ids, axis=1) if self.ids else np.zeros((WIDTH, 0))
        ids = np.array(self.ids, dtype=np.intp)
        # own rows after the memo's: ids -1, -2, ... become len, len + 1, ...
        matrix = np.hstack([matrix, np.array([row_numbers(r) for r in own], dtype=float).reshape(-1, WIDTH).T])
        ids = np.where(ids < 0, memo_rows(matrix, own) - 1 - ids, ids)
        return matrix.take(ids, axis=1) if len(ids) else np.zeros((WIDTH, 0))

    def row_parts(self) -> tuple[np.ndarray, tuple, tuple, tuple]:
        """``(numbers, names, kinds, attention)`` of the rows: :meth:`numbers` and the rows' tuples (for callers
        that keep the rows of many contexts together: the serving surfaces' segments)."""
        lookup = _Lookup(self.memo, self.own)
        return (self.numbers(), tuple(self.names), tuple(lookup.kinds(self.ids)),
                tuple(lookup.attention(self.ids)))

    def parts(self) -> dict:
        """The table's row parts: names, kinds, layer_index, gemm, gemm_count, columns, out_shapes, attention, and
        ``numbers``: the (WIDTH, rows) block whose rows the columns, GEMM M, N, K and count are (:meth:`numbers`)."""
        taken = self.numbers()
        lookup = _Lookup(self.memo, self.own)
        listed = self.ids
        *columns, m, n, k, gemm_count = taken  # each a contiguous row of ``taken``
        gemm = np.empty((taken.shape[1], 3))
        gemm[:, 0], gemm[:, 1], gemm[:, 2] = m, n, k
        return {
            "names": tuple(self.names),
            "kinds": tuple(lookup.kinds(listed)),
            "layer_index": np.repeat(np.array(self.layers, dtype=int), self.counts),
            "gemm": gemm,
            "gemm_count": gemm_count,
            "columns": dict(zip(NUMERIC, columns)),
            "out_shapes": tuple(lookup.out_shapes(listed)),
            "attention": tuple(lookup.attention(listed)),
            "numbers": taken,  # the (WIDTH, rows) block the columns above are rows of (context_plane._matrix's)
        }


def memo_rows(matrix: np.ndarray, own: list) -> int:
    """The memo's rows in ``matrix`` (the own rows follow them)."""
    return matrix.shape[1] - len(own)


class _Lookup:
    def __init__(self, memo: _Memo, own: list[Row]):
        self.memo, self.own = memo, own

    def _pick(self, values: list, attr: str, ids: list[int]) -> list:
        own = self.own
        if not own:  # every row from the memo (ids >= 0): looked up in C
            return list(map(values.__getitem__, ids))
        return [values[k] if k >= 0 else getattr(own[-1 - k], attr) for k in ids]

    def kinds(self, ids):
        return self._pick(self.memo.kinds, "kind", ids)

    def out_shapes(self, ids):
        return self._pick(self.memo.out_shapes, "out_shape", ids)

    def attention(self, ids):
        return self._pick(self.memo.attention, "attention", ids)
