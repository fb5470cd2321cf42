"""The interpolation behind the context axis (:mod:`.context_axis`): where a model's work changes formula over
(batch, sequence length) in one phase (:func:`plane`), and the solvers that build a few tables and interpolate the
rest: :class:`_Run` along the length at one batch, :class:`_Plane` along the batch and the length.

Between the breakpoints every number of a work table is ``sum_{i <= 1, j <= deg} c_ij b^i s^j``: affine in the
batch ``b`` (each sequence's rows of work; not for a mixture of experts or LoRA adapters, whose weights read grow as
``1 - (1 - p)^b``), and a polynomial of degree ``deg`` in the length ``s``, 1 in decode (one new token against ``s``
cached positions: only the attention rows' keys, K/V reads, cache, score entries and an absorbed MLA's GEMM width grow
with ``s``), 2 in prefill (causal attention counts ``s (s + 1) / 2`` query-key pairs; the rest is ``b x s`` rows of
work). The breakpoints: a sliding window ``W`` (keys ``min(s, W)``: ``s <= W`` or not), an embedding's rows read
(``min(tokens x tables, rows)``: ``b s tables <= rows`` in prefill, ``b tables <= rows`` in decode). A region is the
points on one side of every breakpoint (in prefill the embedding's cuts a hyperbola through the grid: regions are not
rectangles). Each region: the tables at 2 batches x ``deg + 1`` lengths (the nodes), the polynomial through them at
every point (Newton's divided differences along the length, vectorized over rows and lengths, then affine along the
batch), checked against tables built at a few of its points (the probes, a safeguard against a breakpoint missed);
where a probe differs, a layer reports a shape error or the rows change, the batches are split in two, down to one
batch, whose run of lengths is done the same way along the length alone (nodes, probes, split in two on a failed
check, down to runs short enough to build outright). Entries whose node values are whole numbers (element counts,
GEMM dimensions) and whose value is within rounding of one are rounded to it, which makes them exact; the rest are
within floating-point rounding (``tests/core/test_context_axis.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from itertools import chain
from operator import attrgetter

import numpy as np

from explorer.core.workload.layers import REGISTRY, Context, ParamError
from explorer.core.workload.model import NUMERIC, LayerTable, Model

PROBES = 2  # built tables each run's polynomial is checked against (decode: 1, module docstring)
#: Layer kinds whose prefill work is a polynomial of degree <= 2 in the tokens (between the breakpoints below);
#: others (a mixture of experts' expected experts touched, convolutions, pooling) build one table per context.
PREFILL_POLYNOMIAL = frozenset({"embedding", "dense", "matmul", "attention", "mla", "transformer_block", "rmsnorm",
                                "layernorm", "add", "multiply", "gelu", "relu", "relu6", "sigmoid", "silu", "tanh",
                                "softmax"})
_ATT = ("streams", "group", "queries", "keys", "width", "dim")  # the K/V stream's numbers that vary with s
RTOL = 1e-12


class ContextError(ValueError):
    """A context the model does not take (a layer's shape error); the message names the context and the layer,
    ``context`` is that context."""

    def __init__(self, message: str, context: Context | None = None):
        super().__init__(message)
        self.context = context


@dataclass(frozen=True)
class Plane:
    """Where a model's work changes formula over (batch ``b``, sequence length ``s``) in one phase: each window
    ``W`` (``s <= W`` or not) and each embedding's (rows, tables) (its rows read ``min(tokens x tables, rows)``:
    ``b s tables <= rows`` in prefill, ``b tables <= rows`` in decode). ``batch_affine``: every number is affine
    in ``b`` between them (no mixture of experts or LoRA adapters, whose weights read grow as ``1 - (1 - p)^b``, and
    only the kinds of :data:`PREFILL_POLYNOMIAL`)."""

    phase: str
    windows: tuple[int, ...]
    tokens: tuple[tuple[int, int], ...]
    batch_affine: bool

    def signature(self, b: np.ndarray, s: np.ndarray) -> np.ndarray:
        """(P, K) which side of each condition every point (b, s) lies on (True: at or below the breakpoint)."""
        sides = [s <= w for w in self.windows]
        for rows, tables in self.tokens:
            sides.append((b * s if self.phase == "prefill" else b) * tables <= rows)
        return np.stack(sides, axis=1) if sides else np.zeros((len(b), 0), dtype=bool)

    def lengths(self, sides: np.ndarray, b: int) -> tuple[int, int]:
        """The sequence lengths [lo, hi] that keep batch ``b`` on the ``sides`` of every condition."""
        lo, hi = 1, 2**62
        for w, below in zip(self.windows, sides):
            lo, hi = (lo, min(hi, w)) if below else (max(lo, w + 1), hi)
        if self.phase == "prefill":
            for (rows, tables), below in zip(self.tokens, sides[len(self.windows):]):
                cut = rows // (b * tables)  # b s tables <= rows  <=>  s <= rows // (b tables)
                lo, hi = (lo, min(hi, cut)) if below else (max(lo, cut + 1), hi)
        return lo, hi


def _degree(ctx: Context) -> int:
    return 1 if ctx.phase == "decode" else 2


def plane(model: Model, phase: str) -> Plane | None:
    """The model's :class:`Plane` in ``phase``, or None where its work is not a piecewise polynomial in the length:
    prefill through a kind outside :data:`PREFILL_POLYNOMIAL` or a mixture of experts (its expected experts touched
    is exponential in the tokens). Decode reads the length only through the attention's keys (layers/attention.py,
    layers/mla.py: the new token is one row of every other layer), so every kind qualifies there."""
    if phase not in ("prefill", "decode"):
        return None
    windows: set[int] = set()
    tokens: set[tuple[int, int]] = set()
    affine = True
    for i, spec in enumerate(model.layers):
        polynomial = spec.kind in PREFILL_POLYNOMIAL
        if phase == "prefill" and not polynomial:
            return None
        try:
            p = REGISTRY[spec.kind].check(spec.params, spec.name or f"layer {i}")
        except ParamError:
            return None  # the single tables report it
        if phase == "prefill" and p.get("experts"):
            return None
        if not polynomial or p.get("experts") or p.get("lora_rank"):
            affine = False
        if p.get("window"):
            windows.add(int(p["window"]))
        if spec.kind == "embedding":
            tables = 1 + (1 if p["position_embeddings"] else 0) + (1 if p["token_types"] else 0)
            tokens.add((p["num_embeddings"] + p["position_embeddings"] + p["token_types"], tables))
    return Plane(phase, tuple(sorted(windows)), tuple(sorted(tokens)), affine)


def breakpoints(model: Model, ctx: Context) -> list[float] | None:
    """The sequence lengths where the model's work changes formula at ``ctx``'s batch and phase (a run of lengths is
    split there), or None where it is not a piecewise polynomial in the length (:func:`plane`): a sliding window
    ``W`` (keys ``min(s, W)``), and in prefill an embedding's rows read, ``min(batch x s x tables, rows)``
    (layers/linear.py)."""
    pl = plane(model, ctx.phase)
    if pl is None:
        return None
    out = [float(w) for w in pl.windows]
    if ctx.phase == "prefill":
        out += [rows / (ctx.batch * tables) for rows, tables in pl.tokens]
    return sorted(set(out))


def _matrix(t: LayerTable) -> np.ndarray:
    """(F, L) every number of a table that may vary with s: the numeric columns, GEMM (M, N, K) and count, and
    each attention row's stream numbers (0 where a row has none)."""
    nc = len(NUMERIC)
    out = np.zeros((nc + 4 + len(_ATT), len(t)))
    block = t.__dict__.get("_numbers")  # a built table's columns, GEMM and count: rows of one block, this order
    if block is not None:
        out[:nc + 4] = block
    else:
        for i, c in enumerate(NUMERIC):
            out[i] = t.columns[c]
        out[nc:nc + 3] = t.gemm.T
        out[nc + 3] = t.gemm_count
    rows = [r for r, a in enumerate(t.attention) if a is not None]
    if rows:
        get = attrgetter(*_ATT)
        out[nc + 4:, rows] = np.array([get(t.attention[r]) for r in rows], dtype=float).T
    return out


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
        self.fixed: dict[int, np.ndarray] = {}  # id of an interpolated block's numbers -> its (F, L) fixed entries

    def table(self, s: int) -> LayerTable:
        return self.build(self.model, replace(self.base, seq_len=s))

    def _fail(self, s: int, t: LayerTable) -> None:
        _fail(self.model, replace(self.base, seq_len=s), t)

    def solve(self, lo: int, hi: int) -> list[tuple[LayerTable, np.ndarray | None]]:
        """The lengths seqs[lo:hi] in order, in pieces: (the table of one length's rows, None) where built outright;
        (the table of its rows, the (k, F, L) numbers of k consecutive lengths) where interpolated."""
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
        nodes = [0, n - 1] if deg == 1 else [0, n // 2, n - 1]
        probes = [n // 2] if deg == 1 else [n // 4, 3 * n // 4]
        tables = {i: self.table(seqs[i]) for i in nodes + probes}
        ref = tables[nodes[0]]
        ok = all(not t.errors and len(t) and _same_rows(ref, t) for t in tables.values())
        if ok:
            ys = np.stack([_matrix(tables[i]) for i in nodes])
            values, fixed = _interpolated(np.array([seqs[i] for i in nodes], dtype=float), ys,
                                         np.array(seqs, dtype=float))
            ok = all(_close(values[i], _matrix(tables[i])) for i in probes)
        if not ok:
            mid = lo + n // 2
            return self.solve(lo, mid) + self.solve(mid, hi)
        values[nodes] = ys  # the nodes exactly as built
        self.fixed[id(values)] = fixed  # kept with its block (the pieces hold ``values`` while this is read)
        return [(ref, values)]


def _fail(model: Model, ctx: Context, t: LayerTable) -> None:
    if t.errors:
        i, msg = t.errors[0]
        raise ContextError(f"batch {ctx.batch}, seq_len {ctx.seq_len}, {ctx.phase}: layer {i}: {msg}", ctx)
    if not len(t):
        raise ContextError(f"model: {model.name} has no work to analyze", ctx)


def _interpolate(xs: np.ndarray, ys: np.ndarray, at: np.ndarray) -> np.ndarray:
    """:func:`_interpolated`'s numbers alone."""
    return _interpolated(xs, ys, at)[0]


def _interpolated(xs: np.ndarray, ys: np.ndarray, at: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The polynomial through the nodes (xs, ys (n, F, L)) at ``at``: (A, F, L), and (F, L) which entries were
    copied (the same bit for bit at every one of ``at``: the generate task's repeated rows, read with no search).
    Entries whose node values are all whole numbers and which are within rounding of one rounded to it (element
    counts, GEMM dimensions: exact).

    Only the entries that differ between the nodes are interpolated (in decode: the attention rows' K/V numbers);
    the others are copied: the polynomial through equal finite values ``c`` is ``c`` exactly (its divided
    differences are ``+0.0``: ``c + (+-0.0) = c``), except ``c = -0.0`` (``-0.0 + 0.0 = +0.0``), which is
    interpolated with the moving entries, as is any entry not bit for bit equal at every node or not finite. So
    every float is :func:`_newton`'s. The result is a view of an (F, A, L) array: a block of consecutive lengths
    is its table's columns (F, k x L) without a copy (``context_axis._from_numbers``)."""
    n, f, rows = ys.shape
    flat = ys.reshape(n, f * rows)
    first = flat[0]
    bits = flat.view(np.int64)
    fixed = (bits == bits[0]).all(axis=0) & np.isfinite(first) & ~((first == 0) & np.signbit(first))
    buf = np.empty((f, len(at), rows))
    buf[...] = ys[0][:, None, :]
    values = buf.transpose(1, 0, 2)
    idx = np.flatnonzero(~fixed)
    if len(idx):
        moving = flat[:, idx].reshape(n, 1, len(idx))
        got = _rounded(_newton(xs, moving, at), _whole(moving, 1))
        values[:, idx // rows, idx % rows] = got.reshape(len(at), len(idx))
    return values, fixed.reshape(f, rows)


def _whole(ys: np.ndarray, axes: int) -> np.ndarray:
    """(F, L) the entries to round: whole numbers at every node (``ys``'s first ``axes`` axes), and not the same at
    all of them (a constant is interpolated exactly)."""
    axis = tuple(range(axes))
    return np.all(ys == np.rint(ys), axis=axis) & np.any(ys != ys[(slice(0, 1),) * axes], axis=axis)


def _rounded(values: np.ndarray, whole: np.ndarray) -> np.ndarray:
    """``values`` (A, F, L) with each entry within rounding of a whole number rounded to it where ``whole`` (F, L)
    (in place where contiguous; only those entries are read and written)."""
    values = np.ascontiguousarray(values)  # (a view of it reshaped below, written in place)
    flat = values.reshape(len(values), -1)
    idx = np.flatnonzero(whole.reshape(-1))
    if not len(idx):
        return values
    sub = flat[:, idx]
    r = np.rint(sub)
    tol = np.abs(r)
    np.maximum(tol, 1.0, out=tol)
    tol *= 1e-9
    sub -= r
    np.abs(sub, out=sub)
    flat[:, idx] = np.where(sub <= tol, r, flat[:, idx])
    return values


def _close(got: np.ndarray, want: np.ndarray) -> bool:
    return bool(np.all(np.abs(got - want) <= RTOL * np.abs(want)))


class _Plane:
    """The tables of one (phase, attention, LM head) at points (batch, length) on one side of every breakpoint
    of a batch-affine :class:`Plane`: every number is ``sum_{i<=1, j<=deg} c_ij b^i s^j`` there (linear in the
    batch; degree 1 in the length in decode, 2 in prefill). Built at the tensor grid of 2 batches x ``deg + 1``
    lengths (the nodes: the region's smallest and largest batch, lengths that keep both on the region's sides),
    the rest interpolated (along the length at each node batch, then along the batch), checked against the
    tables built at :data:`PLANE_PROBES` of its points; a failed check splits the batches in two, down to one
    batch, done along the length alone (:class:`_Run`)."""

    def __init__(self, model: Model, base: Context, pl: Plane, build: Callable):
        self.model, self.base, self.pl, self.build = model, base, pl, build

    def table(self, b: int, s: int) -> LayerTable:
        return self.build(self.model, replace(self.base, batch=int(b), seq_len=int(s)))

    def solve(self, b: np.ndarray, s: np.ndarray, sides: np.ndarray, at: np.ndarray, out) -> None:
        """The points (b[k], s[k]), sorted by batch then length, all on ``sides``, into ``out`` at ``at[k]``."""
        batches = np.unique(b)
        deg = _degree(self.base)
        if len(batches) == 1:
            run = _Run(self.model, replace(self.base, batch=int(batches[0])), s.tolist(), self.build)
            out.put(at, run.solve(0, len(s)))
            return
        b0, b1 = int(batches[0]), int(batches[-1])
        lo0, hi0 = self.pl.lengths(sides, b0)
        lo1, hi1 = self.pl.lengths(sides, b1)
        lo, hi = max(lo0, lo1, int(s.min())), min(hi0, hi1, int(s.max()))
        lengths = np.unique(s)
        if len(lengths) <= deg + 1 and lo <= lengths[0] and lengths[-1] <= hi:
            xs = lengths.astype(float)  # every length a node (at most deg + 1): only the batch is interpolated
        else:
            xs = np.array([lo, hi] if deg == 1 else [lo, (lo + hi) // 2, hi], dtype=float)
        few = len(b) <= len(xs) * 2 + len(PLANE_PROBES)  # too few points to interpolate: built one by one
        ok = (len(xs) < deg + 1 or hi - lo >= deg) and not few
        if ok:
            nodes = [[self.table(bb, x) for x in xs] for bb in (b0, b1)]
            ref = nodes[0][0]
            picks = _probes(b, s, lo, hi)
            probes = [self.table(b[k], s[k]) for k in picks]
            ok = all(not t.errors and len(t) and _same_rows(ref, t) for t in chain(*nodes, probes))
        if ok:
            ys = np.stack([[_matrix(t) for t in row] for row in nodes])  # (2, deg + 1, F, L)
            us, inv = np.unique(s, return_inverse=True)
            v0, v1 = (_newton(xs, ys[i], us.astype(float)) for i in (0, 1))
            v1 -= v0
            v1 /= b1 - b0
            values = v1[inv]
            values *= (b - b0).astype(float)[:, None, None]
            values += v0[inv]
            values = _rounded(values, _whole(ys, 2))
            ok = all(_close(values[k], _matrix(t)) for k, t in zip(picks, probes))
        if not ok:
            if few:
                out.put(at, [self._outright(bb, ss) for bb, ss in zip(b.tolist(), s.tolist())])
                return
            low = b < batches[len(batches) // 2]
            self.solve(b[low], s[low], sides, at[low], out)
            self.solve(b[~low], s[~low], sides, at[~low], out)
            return
        for k, t in zip(picks, probes):  # the probes exactly as built
            values[k] = _matrix(t)
        out.put_block(at, ref, values)

    def _outright(self, b: int, s: int) -> tuple[LayerTable, None]:
        t = self.table(b, s)
        _fail(self.model, replace(self.base, batch=b, seq_len=s), t)
        return t, None


#: where the plane's probes sit, as fractions of its batch and length ranges (snapped to the nearest point)
PLANE_PROBES = ((0.5, 0.5), (0.25, 0.75), (0.75, 0.25))


def _probes(b: np.ndarray, s: np.ndarray, lo: int, hi: int) -> list[int]:
    """The points checked: the nearest to each of :data:`PLANE_PROBES`, and the one farthest outside the nodes'
    lengths [lo, hi] (where the interpolation extrapolates: its rounding grows there)."""
    u = (b - b.min()) / max(b.max() - b.min(), 1)
    v = (s - s.min()) / max(s.max() - s.min(), 1)
    picks = [int(np.argmin((u - pu) ** 2 + (v - pv) ** 2)) for pu, pv in PLANE_PROBES]
    outside = np.maximum(np.maximum(lo - s, s - hi), 0)
    if outside.max() > 0:
        picks.append(int(np.argmax(outside)))
    return sorted(set(picks))
