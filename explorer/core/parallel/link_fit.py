"""Fit a link's latency (alpha) and per-direction bandwidth to measured collectives (``docs/calibration.md``).

The model is the alpha-beta cost of :mod:`.collectives` (ring by default: for all-reduce
``t = 2 (p - 1) alpha + 2 (p - 1) / p x n / B``), fitted by least squares on ``log(predicted / measured)`` per
message (``scipy.optimize.least_squares``), so a 5 % miss on a 20 us message weighs as much as one on a 50 ms
message. ``B`` is what one device sends in one direction, the figure a system file states per domain; a ring at
full speed shows it as nccl-tests' bus bandwidth. The error is reported on the bus bandwidth (the curve
nccl-tests prints): ``busbw_predicted / busbw_measured - 1 = measured / predicted - 1`` per message, and its mean
absolute value (MAPE), over all messages and over those of at least 1 MiB.

Pure numpy/scipy over arrays; the nccl-tests reader is :mod:`explorer.core.importers.nccl_tests`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from explorer.core.hardware.system import Domain, System

from .collectives import ALGORITHMS, BUS_FACTOR, collective_time

MIB = 2**20
ABOVE = MIB  # the bus-bandwidth error is also reported over the messages of at least this size
LEVELS = ("scale-up", "scale-out")
JOINS = ("sum", "soft")  # the latency and bandwidth terms added (alpha-beta), or joined with a fitted sharpness
_LOWER = np.array([0.0, 1e-3, 0.2])  # alpha in us, bandwidth in GB/s, sharpness inside the fit
_UPPER = np.array([1e4, 1e5, 1.0])


@dataclass(frozen=True, eq=False)
class LinkFit:
    """The fitted ``alpha`` (s per step) and ``bandwidth`` (B/s per direction per device) of ``op`` on ``ranks``,
    with per message: ``size`` (B), ``measured`` and ``predicted`` (s), ``busbw_measured`` and ``busbw_predicted``
    (B/s) and ``error`` (predicted / measured bus bandwidth - 1)."""

    op: str
    ranks: int
    algorithm: str
    alpha: float
    bandwidth: float
    size: np.ndarray
    measured: np.ndarray
    predicted: np.ndarray
    busbw_measured: np.ndarray
    busbw_predicted: np.ndarray
    error: np.ndarray
    at_bound: tuple[str, ...] = ()
    sharpness: float = 1.0  # the join of the two terms (collectives.join): 1 with join 'sum'
    join: str = "sum"  # 'sum' (alpha-beta) or 'soft' (the sharpness fitted too)

    @property
    def mape(self) -> float:
        """Mean absolute error of the bus bandwidth over every fitted message, as a fraction."""
        return float(np.mean(np.abs(self.error)))

    def above(self, size: float = ABOVE) -> np.ndarray:
        return self.size >= size

    @property
    def mape_above(self) -> float:
        """The same over the messages of at least 1 MiB (NaN when there are none)."""
        sel = self.above()
        return float(np.mean(np.abs(self.error[sel]))) if sel.any() else float("nan")

    @property
    def max_error_above(self) -> float:
        sel = self.above()
        return float(np.max(np.abs(self.error[sel]))) if sel.any() else float("nan")


def fit_link(op: str, size, time, ranks: int, algorithm: str = "ring", min_size: float = 0.0,
             join: str = "sum") -> LinkFit:
    """Fit alpha and the per-direction bandwidth to measured ``time`` (s) of ``op`` over messages of ``size`` (B)
    on ``ranks`` ranks; messages below ``min_size`` bytes are left out of the fit (and of the result). ``join``
    'soft' also fits the sharpness (0.2 to 1) that joins the latency and bandwidth terms
    (:func:`.collectives.join`); 'sum' keeps it at 1 (the alpha-beta model)."""
    if join not in JOINS:
        raise ValueError(f"join: expected one of {', '.join(JOINS)}, got {join!r}")
    if op not in BUS_FACTOR or op == "send_recv":
        raise ValueError(f"op: expected all_reduce, all_gather, reduce_scatter or all_to_all, got {op!r}")
    if algorithm not in ALGORITHMS:
        raise ValueError(f"algorithm: expected one of {', '.join(ALGORITHMS)}, got {algorithm!r}")
    if isinstance(ranks, bool) or not isinstance(ranks, (int, np.integer)) or ranks < 2:
        raise ValueError(f"ranks: expected a whole number >= 2, got {ranks!r}")
    n, t = np.asarray(size, dtype=float), np.asarray(time, dtype=float)
    if n.shape != t.shape or n.ndim != 1:
        raise ValueError("size and time: expected two arrays of the same length")
    if not (np.all(np.isfinite(n)) and np.all(n > 0)):
        raise ValueError("size: expected message sizes > 0 bytes")
    if not (np.all(np.isfinite(t)) and np.all(t > 0)):
        raise ValueError("time: expected measured times > 0 s")
    keep = n >= min_size
    n, t = n[keep], t[keep]
    if n.size < 3:
        raise ValueError(f"size: a fit needs at least 3 messages of {min_size:g} B or more, got {n.size}")
    p = float(ranks)
    share = float(BUS_FACTOR[op](p))
    busbw = n / t * share

    soft = join == "soft"

    def model(x):
        return collective_time(op, n, p, x[1] * 1e9, x[0] * 1e-6, algorithm, x[2] if soft else 1.0)

    big = np.argmax(n)
    guess = np.array([float(t.min()) * 1e6 / (2 * (p - 1)), float(busbw[big]) / 1e9, 0.8])
    k = 3 if soft else 2
    lower, upper = _LOWER[:k], _UPPER[:k]
    x0 = np.clip(guess[:k], lower + 0.01, upper * 0.999)  # inside the bounds, whatever a table claims
    from scipy.optimize import least_squares  # here: scipy.optimize costs ~0.5 s to import

    res = least_squares(lambda x: np.log(model(x) / t), x0, bounds=(lower, upper),
                        x_scale=np.array([max(x0[0], 0.1), x0[1], 0.5][:k]))
    x = res.x if soft else np.append(res.x, 1.0)
    predicted = model(x)
    at_bound = tuple(name for name, v, lo, hi in zip(("alpha", "bandwidth", "sharpness")[:k], x, lower, upper)
                     if np.isclose(v, lo) or np.isclose(v, hi))
    return LinkFit(op, int(ranks), algorithm, float(x[0]) * 1e-6, float(x[1]) * 1e9, n, t, predicted, busbw,
                   n / predicted * share, t / predicted - 1.0, at_bound, float(x[2]), join)


def level_domain(system: System, ranks: int, level: str | None = None) -> Domain:
    """The domain a run of ``ranks`` ranks measured: ``level`` ('scale-up' or 'scale-out'), or by default the
    innermost domain holding that many devices. A ValueError names the field when the system has no such level
    or the ranks do not fit in it."""
    if level is not None and level not in LEVELS:
        raise ValueError(f"level: expected one of {', '.join(LEVELS)}, got {level!r}")
    if level is None:
        domain = system.domain_for(ranks)
        if domain is None:
            raise ValueError(f"ranks: {ranks} ranks do not fit in {system.id} ({system.devices} devices)")
        return domain
    domain = system.scale_up if level == "scale-up" else system.scale_out
    if domain is None:
        raise ValueError(f"level: {system.id} states no {level} domain")
    if ranks > domain.size:
        raise ValueError(f"level: {ranks} ranks do not fit in {system.id}'s {level} domain of {domain.size} "
                         f"devices")
    if level == "scale-out" and system.scale_up is not None and ranks <= system.scale_up.size:
        raise ValueError(f"level: {ranks} ranks fit in {system.id}'s scale-up domain ({system.scale_up.size} "
                         "devices); a run on so few ranks measures the scale-up link")
    return domain
