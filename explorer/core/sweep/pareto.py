"""The Pareto front of a sweep: the points no other point beats on every objective.

Objectives are columns of an (N, K) array with a direction each (minimize or maximize). A point ``a``
dominates ``b`` when it is at least as good on every objective and strictly better on one.

NaN (an unknown figure, e.g. the cost of a device without a price) is handled explicitly: it ranks *worse
than every known value* of its objective, and two unknowns tie. So a point with an unknown cost can still be on
the front when it is the best on another objective, but its unknown cost never beats a known one; and a point
never dominates another through an objective it does not know better. Exact duplicates are all kept.

How (exact at every step; 10^6-point sweep, 476,000 fitting points, front of 673: ~2 s before):

1. Thinning: the points in blocks of a few consecutive points (8, then 32, then 128 of those left), every pair of a
   block compared at once (one (b, b, blocks) array per objective, the blocks along its contiguous axis, so that
   each comparison is one long loop: 2-3x faster than (blocks, b, b) with its loops of b); a point that any point
   dominates is not on the front, so dropping it loses nothing. A sweep's neighbours (the same context on other devices, the next batch)
   dominate each other often: 476,000 points -> ~5,000.
2. Sort and sweep: what is left sorted lexicographically (a point can only be dominated by a point before it), in
   blocks of :data:`CHUNK`: a block's points checked against the front found so far, then against each other.
   A point dominated by a point that is not on the front is dominated by a front point (transitivity), so checking
   against the front alone is complete.
"""

from __future__ import annotations

import numpy as np

#: The sweep's objectives, in column order, and whether each is minimized.
OBJECTIVES = (("latency_s", True), ("throughput_per_device_tok_s", False),
              ("cost_per_million_tokens_usd", True), ("energy_per_token_j", True))


CHUNK = 256  # points per block of the sort-and-sweep step
THIN = (8, 32, 128)  # block sizes of the thinning passes, in turn
PAIRS = 1 << 22  # (point, point) pairs per comparison array (4 MB of booleans per objective)


def pareto_mask(values: np.ndarray, minimize: tuple[bool, ...] | np.ndarray) -> np.ndarray:
    """(N,) True for the non-dominated rows of ``values`` (N, K); ``minimize`` (K,) per objective."""
    values = np.asarray(values, dtype=float)
    if values.ndim != 2:
        raise ValueError(f"values: expected an (N, K) array, got shape {values.shape}")
    minimize = np.asarray(minimize, dtype=bool)
    if minimize.shape != (values.shape[1],):
        raise ValueError(f"minimize: expected {values.shape[1]} directions, got {minimize.shape}")
    # every objective as "smaller is better", unknown as +inf (worse than any known value; two unknowns tie)
    costs = np.where(minimize[None, :], values, -values)
    costs[np.isnan(costs)] = np.inf
    index = np.arange(len(costs))
    for size in THIN:
        if len(costs) <= 4 * size:
            break
        keep = ~_dominated_in_blocks(costs, size)
        costs, index = costs[keep], index[keep]
    mask = np.zeros(len(values), dtype=bool)
    mask[index[_front(costs)]] = True
    return mask


def dominated_by_offset(values: np.ndarray, minimize: tuple[bool, ...] | np.ndarray, candidate: np.ndarray,
                        offset: int) -> np.ndarray:
    """(N,) True where the point ``offset`` positions before or after it dominates it, both being ``candidate``
    (N,) (NaN ranked as in :func:`pareto_mask`). Such a point is not on the front of the candidates, so dropping it
    first loses nothing; ``values`` is a list of K (N,) columns or an (N, K) array. A sweep's points in (precision,
    context, device) order with ``offset`` the device count compare each point with the same device at the
    previous context: a decode step at the next length is slower, no more productive, dearer and costlier in energy
    on the same device, so this drops most of a sweep's points in a few passes over the columns."""
    cols = [values[:, j] for j in range(values.shape[1])] if isinstance(values, np.ndarray) else list(values)
    n = len(candidate)
    out = np.zeros(n, dtype=bool)
    if offset <= 0 or offset >= n:
        return out
    m = n - offset
    before_le, before_lt = np.ones(m, dtype=bool), np.zeros(m, dtype=bool)  # the earlier point <= / < the later one
    after_le, after_lt = np.ones(m, dtype=bool), np.zeros(m, dtype=bool)
    for col, smaller in zip(cols, np.asarray(minimize, dtype=bool)):
        c = np.asarray(col, dtype=float)
        c = c if smaller else -c
        c = np.where(np.isnan(c), np.inf, c)  # unknown: worse than every known value; two unknowns tie
        early, late = c[:m], c[offset:]
        before_le &= early <= late
        before_lt |= early < late
        after_le &= late <= early
        after_lt |= late < early
    both = candidate[:m] & candidate[offset:]
    out[offset:] |= both & before_le & before_lt
    out[:m] |= both & after_le & after_lt
    return out


def _dominated_in_blocks(costs: np.ndarray, size: int) -> np.ndarray:
    """(N,) True where another point of the same block of ``size`` consecutive rows dominates the row; the blocks
    compared :data:`PAIRS` pairs at a time (bounded memory). The blocks run along the arrays' last, contiguous axis
    ((dominator, dominated, block) per objective): every comparison one long loop, not one per short block row."""
    n, k = costs.shape
    blocks = -(-n // size)
    flat = np.full((k, blocks * size), np.inf)  # padding rows of +inf dominate nothing
    flat[:, :n] = costs.T
    x = np.ascontiguousarray(flat.reshape(k, blocks, size).transpose(0, 2, 1))  # [objective, position, block]
    out = np.empty((size, blocks), dtype=bool)
    step = max(1, PAIRS // (size * size))
    for a in range(0, blocks, step):
        xs = x[:, :, a:a + step]
        w = xs.shape[2]
        le, lt, tmp = (np.empty((size, size, w), dtype=bool) for _ in range(3))
        for j in range(k):
            q, p = xs[j, :, None, :], xs[j, None, :, :]  # [dominator, dominated, block]
            if j == 0:
                np.less_equal(q, p, out=le)
                np.less(q, p, out=lt)
            else:
                le &= np.less_equal(q, p, out=tmp)
                lt |= np.less(q, p, out=tmp)
        np.logical_or.reduce(np.logical_and(le, lt, out=le), axis=0, out=out[:, a:a + w])
    return out.T.reshape(-1)[:n]


def _dominated_by(points: np.ndarray, by: np.ndarray) -> np.ndarray:
    """(len(points),) True where a row of ``by`` dominates the row of ``points`` (both objective-major: (K, N))."""
    out = np.zeros(points.shape[1], dtype=bool)
    if not by.shape[1]:
        return out
    step = max(1, PAIRS // by.shape[1])
    for a in range(0, points.shape[1], step):
        p = points[:, a:a + step]
        le = lt = None
        for j in range(len(p)):
            q, pj = by[j][None, :], p[j][:, None]
            le = q <= pj if le is None else np.logical_and(le, q <= pj, out=le)
            lt = q < pj if lt is None else np.logical_or(lt, q < pj, out=lt)
        out[a:a + step] = np.any(np.logical_and(le, lt, out=le), axis=1)
    return out


def _front(costs: np.ndarray) -> np.ndarray:
    """Indices of the non-dominated rows of ``costs`` (every objective minimized, no NaN)."""
    order = np.lexsort(costs.T[::-1])  # a point dominates only points after it in this order
    costs = np.ascontiguousarray(costs[order].T)  # (K, N)
    keep, front = [], costs[:, :0]
    for start in range(0, costs.shape[1], CHUNK):
        block = costs[:, start:start + CHUNK]
        left = np.flatnonzero(~_dominated_by(block, front))
        block = block[:, left]
        new = ~_dominated_by(block, block)
        keep.append(start + left[new])
        front = np.concatenate([front, block[:, new]], axis=1)
    return order[np.concatenate(keep)] if keep else order
