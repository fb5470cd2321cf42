"""Collectives timed by the alpha-beta model, on the link of the domain they cross.

Symbols (SI): ``n`` the message in bytes (for all-reduce, all-gather and reduce-scatter the full buffer one rank
holds after the operation; for all-to-all the bytes one rank holds before it), ``p`` the ranks in the group,
``B`` the bandwidth one device can send in **one direction** (B/s), ``alpha`` the start-up latency per step (s).

    ring all-reduce       2 (p - 1) alpha + 2 (p - 1) / p * n / B
    tree all-reduce       2 ceil(log2 p) alpha + 2 n / B          (pipelined reduce, then broadcast)
    ring reduce-scatter   (p - 1) alpha + (p - 1) / p * n / B
    ring all-gather       (p - 1) alpha + (p - 1) / p * n / B
    all-to-all            (p - 1) alpha + (p - 1) / p * n / B      (pairwise exchange on a switch or torus)
    send / receive        alpha + n / B
    hierarchical all-reduce over p = p_in x p_out (an inner domain of p_in ranks inside an outer one):
        reduce-scatter(n, p_in, inner) + all-reduce(n / p_in, p_out, outer) + all-gather(n, p_in, inner)

References: R. Thakur, R. Rabenseifner, W. Gropp, "Optimization of Collective Communication Operations in MPICH",
IJHPCA 19(1), 2005 (the ring and tree costs); NVIDIA nccl-tests, doc/PERFORMANCE.md (algorithm vs bus bandwidth).
``algorithm="auto"`` takes the faster of ring and tree for each message, as NCCL's tuner does.

Bandwidth conventions (NCCL's tests print both): the **algorithm bandwidth** is n / t; the **bus bandwidth**
multiplies it by the share of the data each link really carries, 2 (p - 1) / p for all-reduce and (p - 1) / p for
all-gather, reduce-scatter and all-to-all, 1 for send/receive, so bus bandwidth can be compared with the link's
per-direction figure whatever p is. An unknown latency (NaN) counts as 0: the time is then a lower bound.

The chapter's gradient synchronization (:func:`transfer_time`, :func:`no_overlap_scaling`) is the simplest case: a
one-way stream of the payload over the per-direction bandwidth, T_sync = n / B, and on N devices without overlap
S = N T_step / (T_step + T_sync), efficiency S / N.
"""

from __future__ import annotations

import numpy as np

OPERATIONS = ("all_reduce", "all_gather", "reduce_scatter", "all_to_all", "send_recv")
ALGORITHMS = ("ring", "tree", "auto")
BUS_FACTOR = {  # share of n each link carries, as a function of p (nccl-tests' busbw / algbw)
    "all_reduce": lambda p: 2.0 * (p - 1) / p,
    "all_gather": lambda p: (p - 1) / p,
    "reduce_scatter": lambda p: (p - 1) / p,
    "all_to_all": lambda p: (p - 1) / p,
    "send_recv": lambda p: np.ones_like(np.asarray(p, dtype=float)),
}


def _alpha(alpha) -> np.ndarray:
    return np.nan_to_num(np.asarray(alpha, dtype=float), nan=0.0)


def join(latency, transfer, sharpness=1.0) -> np.ndarray:
    """The latency and bandwidth terms of a collective joined: their sum (``sharpness`` 1, the alpha-beta model),
    or the soft join ``(L**s + W**s) ** (1 / s)`` of a link fitted with a sharpness (``--join soft``,
    docs/calibration.md): s < 1 ramps up to the full bandwidth more slowly than the sum, as measured collectives
    do while NCCL adds channels and changes protocol with the message size."""
    s = np.asarray(sharpness, dtype=float)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        return np.where(s == 1.0, latency + transfer, (latency ** s + transfer ** s) ** (1.0 / s))


def collective_time(op: str, n, p, bandwidth, alpha=0.0, algorithm: str = "ring", sharpness=1.0) -> np.ndarray:
    """Seconds for one collective (broadcasts over arrays of n, p, bandwidth, alpha, sharpness). p = 1 costs
    nothing. ``sharpness`` joins the latency and bandwidth terms (:func:`join`; 1: their sum)."""
    if op not in OPERATIONS:
        raise ValueError(f"operation: expected one of {', '.join(OPERATIONS)}, got {op!r}")
    if algorithm not in ALGORITHMS:
        raise ValueError(f"algorithm: expected one of {', '.join(ALGORITHMS)}, got {algorithm!r}")
    n, p, bw, a = (np.asarray(x, dtype=float) for x in (n, p, bandwidth, alpha))
    a = _alpha(a)
    with np.errstate(invalid="ignore", divide="ignore"):
        if op == "send_recv":
            t = join(a, n / bw, sharpness)
        elif op == "all_reduce":
            ring = join(2.0 * (p - 1) * a, 2.0 * (p - 1) / p * n / bw, sharpness)
            tree = join(2.0 * np.ceil(np.log2(np.maximum(p, 1))) * a, 2.0 * n / bw, sharpness)
            t = {"ring": ring, "tree": tree, "auto": np.fmin(ring, tree)}[algorithm]
        else:  # all_gather, reduce_scatter, all_to_all: one pass of (p - 1) steps
            t = join((p - 1) * a, (p - 1) / p * n / bw, sharpness)
    return np.where(p <= 1, 0.0, t)


def hierarchical_all_reduce(n, p_inner, p_outer, bw_inner, bw_outer, alpha_inner=0.0, alpha_outer=0.0,
                            algorithm: str = "ring", sharpness_inner=1.0, sharpness_outer=1.0) -> np.ndarray:
    """All-reduce over p_inner x p_outer ranks: reduce-scatter inside, all-reduce of 1/p_inner across, all-gather."""
    n = np.asarray(n, dtype=float)
    p_inner = np.asarray(p_inner, dtype=float)
    return (collective_time("reduce_scatter", n, p_inner, bw_inner, alpha_inner, sharpness=sharpness_inner)
            + collective_time("all_reduce", n / p_inner, p_outer, bw_outer, alpha_outer, algorithm, sharpness_outer)
            + collective_time("all_gather", n, p_inner, bw_inner, alpha_inner, sharpness=sharpness_inner))


def bus_bandwidth(op: str, n, p, time) -> np.ndarray:
    """nccl-tests' bus bandwidth (B/s): algorithm bandwidth n / t times the share each link carries."""
    p = np.asarray(p, dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.asarray(n, dtype=float) / np.asarray(time, dtype=float) * BUS_FACTOR[op](p)


def transfer_time(n, bandwidth, alpha=0.0) -> np.ndarray:
    """A one-way stream of n bytes at the per-direction bandwidth: alpha + n / B (the chapter's T_sync)."""
    return _alpha(alpha) + np.asarray(n, dtype=float) / np.asarray(bandwidth, dtype=float)


def no_overlap_scaling(step_time, sync_time, devices) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(overhead fraction T_sync / T_step, speedup N T_step / (T_step + T_sync), efficiency = speedup / N)."""
    t, s, n = (np.asarray(x, dtype=float) for x in (step_time, sync_time, devices))
    speedup = n * t / (t + s)
    return s / t, speedup, speedup / n
