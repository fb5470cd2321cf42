"""Many contexts in one table: the work of every context (batch, sequence length, phase) stacked, built from a few
tables per (batch, phase) instead of one per context (issue 22, "many contexts in one pass").

Within one (batch, phase, attention, LM head) group the contexts differ only in the sequence length ``s``, and every
number of the work table is a polynomial in ``s`` on each piece between the model's breakpoints (a sliding window
``W`` clips the keys at ``min(s, W)``):

* decode (one new token against ``s`` cached positions): degree 1. The rows are the same; only the attention rows'
  keys, K/V reads, cache, score entries (and an absorbed MLA's GEMM width) grow with ``s``;
* prefill (``s`` tokens): degree 2 (causal attention counts ``s (s + 1) / 2`` query-key pairs, the rest is
  ``batch x s`` rows of work).

A run of sequence lengths is first cut at the model's breakpoints (:func:`breakpoints`: windows, the embedding's
rows read saturating at the table's size in prefill); a model whose prefill is not such a polynomial (a mixture
of experts: the expected experts touched is exponential in the tokens; convolutions) builds one table per context.
Each piece is built as: the tables at ``degree + 1`` of its lengths (the nodes), the polynomial through them
evaluated at every other length (Newton's divided differences, vectorized over rows and lengths), and checked
against a built table at more of its lengths (the probes, a safeguard: two in prefill; one in decode, where every
number is ``a + b min(s, W)`` summed over windows, concave, so one probe inside a piece finds a breakpoint missed).
Where a probe differs, a layer reports a shape error or the rows change, the piece is split in two and each half
done the same way, down to pieces short enough to build outright. Entries whose node values are whole numbers
(element counts, GEMM dimensions) and whose value is within rounding of one are rounded to it, which makes them
exact; the rest are within floating-point rounding (``tests/core/test_context_axis.py`` holds the stacked table
equal to the loop of single tables to 1e-12 on
random dense, GQA, sliding-window, MoE and MLA models).

The stacked table carries what the analysis pass reads: names, kinds, layer indices, GEMM shapes and counts, the
numeric columns, and (only when attention is ``fused``, the one reader) each attention row's K/V stream.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from itertools import chain, pairwise

import numpy as np

from explorer.core.workload.layers import REGISTRY, AttentionShape, Context, ParamError
from explorer.core.workload.model import NUMERIC, LayerTable, Model, build_table

PROBES = 2  # built tables each run's polynomial is checked against (decode: 1, module docstring)
#: Layer kinds whose prefill work is a polynomial of degree <= 2 in the tokens (between the breakpoints below);
#: others (a mixture of experts' expected experts touched, convolutions, pooling) build one table per context.
PREFILL_POLYNOMIAL = frozenset({"embedding", "dense", "matmul", "attention", "mla", "transformer_block", "rmsnorm",
                                "layernorm", "add", "multiply", "gelu", "relu", "relu6", "sigmoid", "silu", "tanh",
                                "softmax"})
_ATT = ("streams", "group", "queries", "keys", "width", "dim")  # the K/V stream's numbers that vary with s
RTOL = 1e-12


class ContextError(ValueError):
    """A context the model does not take (a layer's shape error); the message names the context and the layer."""


@dataclass(frozen=True, eq=False)
class StackedContexts:
    """One table holding every context's rows in turn; ``starts[k]`` is context k's first row, ``sizes[k]`` its
    row count; ``builds`` the single tables built to make it."""

    contexts: tuple[Context, ...]
    table: LayerTable
    starts: np.ndarray
    sizes: np.ndarray
    builds: int


def _group(ctx: Context) -> tuple:
    """What a run of sequence lengths shares: every field of the context but the length."""
    return ctx.batch, ctx.phase, ctx.attention, ctx.lm_head


def _degree(ctx: Context) -> int:
    return 1 if ctx.phase == "decode" else 2


def breakpoints(model: Model, ctx: Context) -> list[float] | None:
    """The sequence lengths where the model's work changes formula in ``ctx``'s phase (a run of lengths is split
    there), or None where it is not a piecewise polynomial in the length: a sliding window ``W`` (keys
    ``min(s, W)``), and in prefill an embedding's rows read, ``min(batch x s x tables, rows)`` (layers/linear.py).
    Decode reads the length only through the attention's keys (layers/attention.py, layers/mla.py: the new token
    is one row of every other layer), so every kind qualifies there."""
    if ctx.phase not in ("prefill", "decode"):
        return None
    out: list[float] = []
    for i, spec in enumerate(model.layers):
        if ctx.phase == "prefill" and spec.kind not in PREFILL_POLYNOMIAL:
            return None
        try:
            p = REGISTRY[spec.kind].check(spec.params, spec.name or f"layer {i}")
        except ParamError:
            return None  # the single tables report it
        if ctx.phase == "prefill" and p.get("experts"):
            return None
        if p.get("window"):
            out.append(float(p["window"]))
        if spec.kind == "embedding" and ctx.phase == "prefill":
            tables = 1 + (1 if p["position_embeddings"] else 0) + (1 if p["token_types"] else 0)
            rows = p["num_embeddings"] + p["position_embeddings"] + p["token_types"]
            out.append(rows / (ctx.batch * tables))
    return sorted(set(out))


def _matrix(t: LayerTable) -> np.ndarray:
    """(F, L) every number of a table that may vary with s: the numeric columns, GEMM (M, N, K) and count, and
    each attention row's stream numbers (0 where a row has none)."""
    att = np.array([[getattr(a, f) for f in _ATT] if a is not None else [0] * len(_ATT) for a in t.attention],
                   dtype=float).reshape(len(t), len(_ATT))
    return np.vstack([np.stack([t.columns[c] for c in NUMERIC]), t.gemm.T, t.gemm_count[None, :], att.T])


def _same_rows(a: LayerTable, b: LayerTable) -> bool:
    return (len(a) == len(b) and a.names == b.names and a.kinds == b.kinds
            and np.array_equal(a.layer_index, b.layer_index)
            and [x is None for x in a.attention] == [x is None for x in b.attention])


def _newton(xs: np.ndarray, ys: np.ndarray, at: np.ndarray) -> np.ndarray:
    """The polynomial through (xs[i], ys[i]) (ys: (n, F, L)) evaluated at ``at`` (A,): (A, F, L)."""
    if len(xs) == 2:  # affine: (s - x0) (y1 - y0) / (x1 - x0), exact where the true value is a whole number
        return ys[0] + ((at - xs[0])[:, None, None] * (ys[1] - ys[0])) / (xs[1] - xs[0])
    coef = [ys[0]]
    diff = list(ys)
    for k in range(1, len(xs)):
        diff = [(diff[i + 1] - diff[i]) / (xs[i + k] - xs[i]) for i in range(len(diff) - 1)]
        coef.append(diff[0])
    out = np.broadcast_to(coef[-1], (len(at),) + ys.shape[1:]).copy()
    for k in range(len(xs) - 2, -1, -1):
        out = out * (at - xs[k])[:, None, None] + coef[k]
    return out


class _Run:
    """The tables of one group (batch, phase, ...) at its sorted sequence lengths, built or interpolated."""

    def __init__(self, model: Model, base: Context, seqs: Sequence[int], build: Callable):
        self.model, self.base, self.seqs, self.build = model, base, list(seqs), build
        self.built: dict[int, LayerTable] = {}

    def table(self, s: int) -> LayerTable:
        t = self.built.get(s)
        if t is None:
            t = self.built[s] = self.build(self.model, replace(self.base, seq_len=s))
        return t

    def _fail(self, s: int, t: LayerTable) -> None:
        if t.errors:
            i, msg = t.errors[0]
            raise ContextError(f"batch {self.base.batch}, seq_len {s}, {self.base.phase}: layer {i}: {msg}")
        if not len(t):
            raise ContextError(f"model: {self.model.name} has no work to analyze")

    def solve(self, lo: int, hi: int) -> list[tuple[LayerTable, np.ndarray | None]]:
        """Per length seqs[lo:hi]: (the table of its rows, its (F, L) numbers, or None where built outright)."""
        seqs = self.seqs[lo:hi]
        deg = _degree(self.base)
        n = len(seqs)
        if n <= deg + 1 + PROBES:
            out = []
            for s in seqs:
                t = self.table(s)
                self._fail(s, t)
                out.append((t, None))
            return out
        nodes = np.array([0, n - 1] if deg == 1 else [0, n // 2, n - 1])
        probes = np.array([n // 2] if deg == 1 else [n // 4, 3 * n // 4])
        picks = np.r_[nodes, probes]
        tables = {int(i): self.table(seqs[i]) for i in picks}
        ref = tables[int(nodes[0])]
        ok = all(not t.errors and len(t) and _same_rows(ref, t) for t in tables.values())
        if ok:
            xs = np.array([seqs[i] for i in nodes], dtype=float)
            ys = np.stack([_matrix(tables[int(i)]) for i in nodes])
            whole = np.all(ys == np.rint(ys), axis=0)
            values = _newton(xs, ys, np.array(seqs, dtype=float))
            r = np.rint(values)  # whole where the nodes are and the value is within rounding of one
            values = np.where(whole & (np.abs(values - r) <= 1e-9 * np.maximum(1.0, np.abs(r))), r, values)
            for i in probes:
                want = _matrix(tables[int(i)])
                if not np.all(np.abs(values[i] - want) <= RTOL * np.abs(want)):
                    ok = False
                    break
        if not ok:
            mid = lo + n // 2
            return self.solve(lo, mid) + self.solve(mid, hi)
        for i in nodes:  # the nodes exactly as built
            values[i] = _matrix(tables[int(i)])
        return [(ref, values[k]) for k in range(n)]


def _from_numbers(ref: LayerTable, blocks: np.ndarray, fused: bool) -> LayerTable:
    """A table of ``k`` contexts with ``ref``'s rows and the numbers ``blocks`` (k, F, L)."""
    k, _, n = blocks.shape
    nc = len(NUMERIC)
    flat = blocks.transpose(1, 0, 2).reshape(blocks.shape[1], k * n)
    flat.setflags(write=False)  # tables are shared (cached): read-only like build_table's
    columns = {c: flat[i] for i, c in enumerate(NUMERIC)}
    attention: tuple = ()
    if fused:
        att = flat[nc + 4:]
        kinds = list(ref.attention) * k
        attention = tuple(
            None if a is None else AttentionShape(*(int(v) for v in att[:, r]), a.causal, a.window)
            for r, a in enumerate(kinds))
    return LayerTable(names=ref.names * k, kinds=ref.kinds * k, layer_index=np.tile(ref.layer_index, k),
                      gemm=np.ascontiguousarray(flat[nc:nc + 3].T), gemm_count=flat[nc + 3], columns=columns,
                      attention=attention)


def stack_tables(tables: Sequence[LayerTable]) -> LayerTable:
    """One table whose rows are every table's rows in turn (only what the analysis pass reads); tuples joined
    with chain, not sum() (which copies the growing tuple at every table: quadratic)."""
    cols = tables[0].columns
    return LayerTable(
        names=tuple(chain.from_iterable(t.names for t in tables)),
        kinds=tuple(chain.from_iterable(t.kinds for t in tables)),
        layer_index=np.concatenate([t.layer_index for t in tables]),
        gemm=np.concatenate([t.gemm for t in tables]),
        gemm_count=np.concatenate([t.gemm_count for t in tables]),
        columns={c: np.concatenate([t.columns[c] for t in tables]) for c in cols},
        attention=tuple(chain.from_iterable(t.attention for t in tables)),
    )


def stack_contexts(model: Model, contexts: Sequence[Context], build: Callable = build_table) -> StackedContexts:
    """Every context's work rows, in ``contexts`` order, as one table. Raises :class:`ContextError` naming the
    first context the model does not take. ``build``: how a single table is built (``build_table``, cached, or
    its uncached ``build_table.__wrapped__`` for grids larger than the cache)."""
    counter = {"n": 0}

    def counted(m, c):
        counter["n"] += 1
        return build(m, c)

    parts: list[LayerTable] = []
    sizes: list[int] = []
    k = 0
    contexts = list(contexts)
    while k < len(contexts):
        base = contexts[k]
        j = k + 1
        if base.seq_len is not None and base.phase in ("prefill", "decode"):
            key = _group(base)
            while (j < len(contexts) and contexts[j].seq_len is not None and _group(contexts[j]) == key
                   and contexts[j].seq_len > contexts[j - 1].seq_len):
                j += 1
        if j - k == 1:
            t = counted(model, base)
            _Run(model, base, [base.seq_len], counted)._fail(base.seq_len, t)
            parts.append(t)
            sizes.append(len(t))
        else:
            seqs = [c.seq_len for c in contexts[k:j]]
            run = _Run(model, replace(base, seq_len=None), seqs, counted)
            cuts = breakpoints(model, base)
            if cuts is None:  # one table per context
                solved = [(t, None) for t in (run.table(s) for s in seqs)]
                for s, (t, _) in zip(seqs, solved):
                    run._fail(s, t)
            else:  # runs between breakpoints: s <= x | s > x
                edges = np.searchsorted(np.array(seqs, dtype=float), cuts, side="right")
                edges = [0, *sorted({int(e) for e in edges if 0 < e < len(seqs)}), len(seqs)]
                solved = [x for a, b in pairwise(edges) for x in run.solve(a, b)]
            i = 0
            while i < len(solved):  # consecutive interpolated lengths sharing rows become one block
                ref, numbers = solved[i]
                if numbers is None:
                    parts.append(ref)
                    sizes.append(len(ref))
                    i += 1
                    continue
                e = i
                while e < len(solved) and solved[e][1] is not None and solved[e][0] is ref:
                    e += 1
                parts.append(_from_numbers(ref, np.stack([x[1] for x in solved[i:e]]),
                                           base.attention == "fused"))
                sizes += [len(ref)] * (e - i)
                i = e
        k = j
    table = parts[0] if len(parts) == 1 else stack_tables(parts)
    if table.attention and len(table.attention) != len(table):  # built and interpolated blocks mixed, not fused
        table = replace(table, attention=())
    size = np.array(sizes, dtype=int)
    return StackedContexts(contexts=tuple(contexts), table=table, sizes=size,
                           starts=np.concatenate([[0], np.cumsum(size)[:-1]]).astype(int), builds=counter["n"])
