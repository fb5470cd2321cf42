"""The fast analytic estimate of a replica under load (for live panels and the load curve), vectorized over rates.

Steady state at an arrival rate lambda (requests/s), mean prompt P tokens computed (cached prefix excluded),
mean answer O tokens, mean context c = I + O / 2, E tokens per decode step (1; speculative decoding: Leviathan's
E), t_d(b) = decode(b, c) from the step surface:

prefill as its own steps:
    rho_p = lambda x prefill(1, P)                 share of the time spent in prefill steps
    b     = lambda x (O - 1) / E x t_d(b) / (1 - rho_p)     Little's law over the decode phase (fixed point)
    TPOT  = t_d(b) / E / (1 - rho_p)                 decode steps, stretched by the prefills between them
    TTFT_q = q x t_d(b) x (1 - e^-b) + prefill(1, P_q) + W_q
             (the step running when a request arrives, its prefill, the wait W for the prefills ahead of it as
              an M/D/1 queue: W = rho_p x prefill / (2 (1 - rho_p)), its quantile W x ln(1 / (1 - q)))
chunked prefill (chunk C tokens a step; a decoder puts v = 1 token in a step, v = k + 1 with speculative decoding):
    t     = mixed(b, c, p), p = lambda x P x t       the prompt tokens that arrive per step ride along
    b     = lambda x (O - 1) / E x t;  TPOT = t / E
    TTFT_q = q x t + ceil(P_q / (C - v b)) x t
Stable while b stays within the batch cap (max_batch, and the KV blocks over a sequence of c tokens) and
rho_p < 1 (chunked: p <= C - b); above that the queue grows without bound (TTFT = inf), and the replica runs as at
its capacity (the highest stable rate): its batch, step time (TPOT) and throughput.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from .memory import ReplicaMemory
from .result import Latency, ServingResult, slo_checks
from .simulate import Policy, Speculative
from .surface import StepSurface, combined
from .surfaces import KeyedCache
from .workload import PERCENTILES, SLO, Workload

_Q = {k: v / 100 for k, v in PERCENTILES.items()}


@dataclass(frozen=True)
class Setup:
    """Everything the estimate and the simulation share for one replica."""

    surface: StepSurface
    memory: ReplicaMemory
    policy: Policy = field(default_factory=Policy)
    spec: Speculative | None = None
    replicas: int = 1
    busy_w: float | None = None  # power of a device while a step runs (its TDP, the cost model's assumption)
    idle_w: float = 0.0  # power of a device between steps (0: neglected, as the cost model does)
    usd_per_s: float | None = None  # what one device costs per second (rented, or owned: TCO / lifetime)

    def step(self, b, c):
        b = np.maximum(np.asarray(b, dtype=float), 1.0)
        return self.spec.step(self.surface, b, c) if self.spec else self.surface.decode(b, c)

    def energy_and_cost(self, busy_share: float, tokens_per_s: float) -> tuple[float, float]:
        """(J per output token, USD per million output tokens) of one replica whose devices run steps a share
        ``busy_share`` of the time and deliver ``tokens_per_s``; NaN where the power or the price is not known."""
        devices = self.surface.devices
        with np.errstate(invalid="ignore", divide="ignore"):
            watts = devices * ((self.busy_w if self.busy_w is not None else math.nan) * busy_share
                               + self.idle_w * (1 - busy_share))
            energy = watts / tokens_per_s if tokens_per_s > 0 else math.nan
            usd = self.usd_per_s if self.usd_per_s is not None else math.nan
            cost = devices * usd / tokens_per_s * 1e6 if tokens_per_s > 0 else math.nan
        return float(energy), float(cost)

    @property
    def time_model(self) -> str:
        """The time model of the step times: ideal | calibrated (the surface's)."""
        return self.surface.time_model

    @property
    def time_source(self) -> str:
        """Where the step times come from (spec | partly calibrated | calibrated), a speculative draft's surface
        counted as a part: never more certain than the least certain one."""
        surfaces = [self.surface] + ([self.spec.draft] if self.spec is not None and self.spec.draft is not None
                                     else [])
        return combined(s.time_source for s in surfaces)

    @property
    def time_label(self) -> str:
        """The label for text and titles: 'spec', or the calibrated model's source with its kernel counts
        (:attr:`~.surface.StepSurface.time_label`); 'partly calibrated (...)' when a draft's surface differs."""
        label = self.surface.time_label
        if self.time_source != self.surface.time_source:
            return f"{self.time_source} (target: {label}; draft: {self.spec.draft.time_label})"
        return label

    @property
    def tokens_per_step(self) -> float:
        return self.spec.tokens_per_step if self.spec else 1.0

    def mixed(self, b, c, p):
        """A chunked step's seconds: ``b`` decoders at context ``c`` (speculative: their drafts and verification)
        and ``p`` prompt tokens."""
        return self.spec.mixed(self.surface, b, c, p) if self.spec else self.surface.mixed(b, c, p)

    @property
    def decoder_tokens(self) -> int:
        """Tokens a decoder puts in a chunked step: 1, or k + 1 verified with speculative decoding."""
        return self.spec.k + 1 if self.spec else 1

    def batch_cap(self, context: float) -> float:
        return float(min(self.policy.max_batch, self.memory.max_sequences(math.ceil(context) + 1)))

    def prompt_s(self, p: float) -> float:
        """Seconds of a prefill step of one prompt of ``p`` tokens."""
        return float(self.surface.prefill(1, p))


def _prompt(workload: Workload, setup: Setup) -> tuple[float, float, float]:
    """(mean input, mean prompt computed, mean output) in tokens."""
    i_mean, o_mean = workload.mean_lengths()
    bs = setup.memory.block_size
    whole = (workload.prefix_tokens // bs) * bs
    cached = workload.prefix_hit_rate * min(whole, max(((i_mean - 1) // bs) * bs, 0))
    return i_mean, i_mean - cached, o_mean


def _fixed_point(setup: Setup, lam: np.ndarray, p: float, o: float, c: float):
    """Per rate: (decode batch b, step seconds t, prefill share rho_p, stable)."""
    e = setup.tokens_per_step
    cap = setup.batch_cap(c)
    pol = setup.policy
    b = np.ones_like(lam)
    if pol.chunked:  # chunk steps carry min(P, C - b) prompt tokens; the other steps decode only
        for _ in range(60):
            t, busy_c, _ = _chunked(setup, b, c, lam, p)
            b = np.minimum(lam * max(o - 1, 0) / e * t, cap + 1)
        stable = (b <= cap) & (busy_c < 1)
        b = np.minimum(b, cap)
        t, busy_c, _ = _chunked(setup, b, c, lam, p)
        return b, t, busy_c, stable
    tp = setup.prompt_s(p)
    rho = lam * tp
    for _ in range(60):
        t = setup.step(b, c)
        b = np.minimum(lam * max(o - 1, 0) / e * t / np.maximum(1 - rho, 1e-9), cap + 1)
    stable = (b <= cap) & (rho < 1)
    b = np.minimum(b, cap)
    return b, setup.step(b, c), rho, stable


def _chunked(setup: Setup, b, c: float, lam, p: float):
    """Chunked prefill: (mean step seconds = TPOT, share of the time in chunk steps, one chunk step's seconds)."""
    room = np.maximum(setup.policy.chunk - b * setup.decoder_tokens, 1.0)
    pc = np.minimum(p, room)
    t_c = setup.mixed(b, c, pc)
    busy_c = lam * (p / pc) * t_c  # chunk steps per second x their time
    t_d = setup.step(np.maximum(b, 1), c)
    steps = np.maximum(1 - busy_c, 0) / t_d + lam * p / pc
    return 1.0 / steps, busy_c, t_c


CAPACITIES = KeyedCache(256)  # capacity by (workload, setup): the estimate, the load curve and the planner share it


def capacity(workload: Workload, setup: Setup) -> float:
    """The highest stable arrival rate [requests/s] of one replica (bisection on the estimate's stability), kept by
    its inputs (:data:`CAPACITIES`; many setups searched at once: :func:`~.stack.capacities`)."""
    key = ("capacity", workload, setup)
    try:
        hash(key)
    except TypeError:  # a workload with a trace: not kept
        return float(search_capacity(workload, setup, 1)[0])
    return CAPACITIES.get(key, lambda: float(search_capacity(workload, setup, 1)[0]))


def search_capacity(workload: Workload, setup, rows: int) -> list[float]:
    """The capacity search of ``setup``: a :class:`Setup` (``rows`` 1) or a :class:`~.stack.SetupStack` of
    ``rows`` setups, each row's search its own (the same midpoints, the same floats as one setup's alone)."""
    i_mean, p, o = _prompt(workload, setup)
    c = i_mean + o / 2

    def stable(rates: np.ndarray) -> np.ndarray:  # (rows, M) rates -> (rows, M) bools, element-wise
        lam = rates[0] if isinstance(setup, Setup) else rates  # a lone setup's rates: one row, as (M,)
        return _fixed_point(setup, lam, p, o, c)[3].reshape(rates.shape)

    # doubling from 1 request/s while stable and below 1e9 (every candidate at once, the first failure taken)
    his = [1.0]
    while his[-1] < 1e9:
        his.append(his[-1] * 2)
    ok = stable(np.tile(his, (rows, 1))).tolist()
    ks = [next(i for i, h in enumerate(his) if not row[i] or h >= 1e9) for row in ok]
    return bisect_rows([his[k - 1] if k else 0.0 for k in ks], [his[k] for k in ks], 50, stable)


BISECT_LEVELS = 5  # halvings per call of a batched bisection (31 rates a call)


def bisect(lo: float, hi: float, halvings: int, test: Callable[[list[float]], dict[float, bool]]) -> float:
    """The ``lo`` of ``halvings`` halvings of [lo, hi] keeping the half whose lower end passes, as the loop
    ``mid = (lo + hi) / 2; lo, hi = (mid, hi) if ok(mid) else (lo, mid)`` finds it; ``test`` answers for many
    rates at once, so every midpoint the next :data:`BISECT_LEVELS` halvings could visit is tested in one call
    (the same midpoints, the same floats: the same answer)."""
    done = 0
    while done < halvings:
        levels = min(BISECT_LEVELS, halvings - done)
        ok = test(_midpoints(lo, hi, levels))
        for _ in range(levels):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if ok[mid] else (lo, mid)
        done += levels
    return lo


def bisect_rows(lo: list[float], hi: list[float], halvings: int,
                test: Callable[[np.ndarray], np.ndarray]) -> list[float]:
    """:func:`bisect` of each row's [lo, hi] (lists, one entry per row), ``test`` answering an array (rows,
    midpoints) element-wise: every row's candidate midpoints of the next :data:`BISECT_LEVELS` halvings in one
    call, each row walked as :func:`bisect` walks it (the midpoints in :func:`_midpoints`'s order: node n's
    halves are 2n + 1, 2n + 2)."""
    lo, hi = list(lo), list(hi)
    done = 0
    while done < halvings:
        levels = min(BISECT_LEVELS, halvings - done)
        mids = [_midpoints(a, b, levels) for a, b in zip(lo, hi)]
        ok = test(np.array(mids)).tolist()
        for r, (row, passed) in enumerate(zip(mids, ok)):
            n = 0
            for _ in range(levels):
                if passed[n]:
                    lo[r], n = row[n], 2 * n + 2
                else:
                    hi[r], n = row[n], 2 * n + 1
        done += levels
    return lo


def _midpoints(lo: float, hi: float, levels: int) -> list[float]:
    """Every midpoint a bisection of [lo, hi] can test in its next ``levels`` halvings, each computed as the
    bisection computes it."""
    out, spans = [], [(lo, hi)]
    for _ in range(levels):
        nxt = []
        for a, b in spans:
            m = (a + b) / 2
            out.append(m)
            nxt += [(a, m), (m, b)]
        spans = nxt
    return out


def estimate(workload: Workload, setup: Setup, slo: SLO, rates=None) -> list[ServingResult]:
    """The analytic estimate at each rate (default: the workload's rate), for the whole set of replicas: each
    replica gets rate / replicas."""
    rates = np.atleast_1d(np.asarray([workload.mean_rate()] if rates is None else rates, dtype=float))
    i_mean, p, o = _prompt(workload, setup)
    return results_at(workload, setup, slo, rates, _fixed_point(setup, rates / setup.replicas, p, o, i_mean + o / 2))


def results_at(workload: Workload, setup: Setup, slo: SLO, rates: np.ndarray, fixed: tuple,
               at_capacity: tuple | None = None) -> list[ServingResult]:
    """:func:`estimate`'s results at ``rates`` from its fixed point there (``fixed``: b, t, rho, stable per rate);
    ``at_capacity``: the fixed point at the replica's capacity (b, t, rho, each (1,)), computed here where needed
    and not given (the stacked answers give it: :func:`~.stack.answers`)."""
    i_mean, p, o = _prompt(workload, setup)
    c = i_mean + o / 2
    e = setup.tokens_per_step
    b, t, rho, stable = fixed
    saturated = math.nan
    if not stable.all():  # above capacity the replica runs as at its capacity: that batch, step and throughput
        saturated = capacity(workload, setup)
        b_s, t_s, rho_s = at_capacity or _fixed_point(setup, np.array([saturated]), p, o, c)[:3]
        b, t, rho = (np.where(stable, x, x_s[0]) for x, x_s in ((b, b_s), (t, t_s), (rho, rho_s)))
    pol = setup.policy
    if pol.chunked:
        tpot = t / e
    else:
        tpot = t / e / np.maximum(1 - rho, 1e-9)
    out = []
    lengths = workload.lengths
    prompts = []  # per quantile: its prompt tokens computed and (prefill steps) its prefill step's seconds
    for name, q in [("mean", 0.5), *_Q.items()]:
        pq = (lengths.input_quantile(q) if workload.trace is None else float(
            np.quantile(workload.trace.input, q))) - (i_mean - p)
        if name == "mean":
            pq = p
        prompts.append((name, q, pq, None if pol.chunked else float(setup.surface.prefill(1, max(pq, 1)))))
    for j, r in enumerate(rates):
        ttft = {}
        for name, q, pq, tp in prompts:
            rj = rho[j]
            if pol.chunked:  # the step running on arrival, then one chunk step per chunk of the prompt
                room = max(pol.chunk - b[j] * setup.decoder_tokens, 1.0)
                full, last = divmod(max(pq, 1.0), room)
                tp = full * float(setup.mixed(b[j], c, room)) + (float(setup.mixed(b[j], c, last)) if last else 0.0)
                lead = q * t[j]
            else:  # the decode step running on arrival (when one is), then the prompt's own prefill step (the same
                lead = q * t[j] * (1 - math.exp(-b[j]))  # at every rate: computed once per quantile, above)
            # the wait for the prompts ahead (an M/D/1 queue of prefill work at utilization rho)
            w_mean = rj * tp / (2 * (1 - rj)) if rj < 1 else math.inf
            if name == "mean":
                w = w_mean
            else:  # P(wait > 0) = rho; the wait beyond that about exponential with mean W / rho
                w = (w_mean / rj) * math.log(rj / (1 - q)) if rj > 1 - q else 0.0
            ttft[name] = lead + tp + w
        if not stable[j]:
            ttft = dict.fromkeys(ttft, math.inf)
        lat_ttft = Latency(ttft["mean"], ttft["p50"], ttft["p90"], ttft["p99"])
        tp_j = float(tpot[j])
        lat_tpot = Latency(tp_j, tp_j, tp_j, tp_j)
        e2e = {k: v + (o - 1) * tp_j for k, v in ttft.items()}
        lat_e2e = Latency(e2e["mean"], e2e["p50"], e2e["p90"], e2e["p99"])
        checks = slo_checks(slo, lat_ttft, lat_tpot, lat_e2e)
        served = r if stable[j] else setup.replicas * saturated  # the queue grows; the replicas serve their capacity
        busy = min(1.0, (1 - math.exp(-b[j])) * (1 - rho[j]) + rho[j]) if stable[j] else 1.0
        energy, cost = setup.energy_and_cost(busy, float(served * o) / setup.replicas)
        out.append(ServingResult(
            method="analytic", rate=float(r), replicas=setup.replicas, devices=setup.surface.devices,
            ttft=lat_ttft, tpot=lat_tpot, e2e=lat_e2e, request_throughput=float(served),
            throughput=float(served * o), goodput=float(served if all(ch.met for ch in checks) else 0.0),
            slo=checks, kv_utilization=float(min(b[j] * setup.memory.blocks_for(c) / max(setup.memory.blocks, 1),
                                                 1.0)),
            mean_batch=float(b[j]), stable=bool(stable[j]), busy_share=busy, energy_per_token=energy,
            cost_per_million=cost))
    return out


@dataclass(frozen=True, eq=False)
class LoadCurve:
    """Throughput per device against per-user tokens/s as the load rises (the analytic estimate); ``knee``: the
    index of the highest rate meeting every service level (-1: none)."""

    rates: np.ndarray  # requests/s offered to all replicas
    throughput_per_device: np.ndarray  # output tokens/s per device
    per_user: np.ndarray  # tokens/s each user sees (1 / TPOT)
    ttft: np.ndarray  # seconds at the TTFT target's percentile (p90 when none)
    tpot: np.ndarray
    stable: np.ndarray
    meets: np.ndarray
    knee: int
    capacity: float  # requests/s

    def to_dict(self) -> dict:
        def fin(a):
            return [float(x) if math.isfinite(x) else None for x in a]

        return {"rates_per_s": fin(self.rates), "throughput_tokens_per_s_per_device": fin(self.throughput_per_device),
                "per_user_tokens_per_s": fin(self.per_user), "ttft_s": fin(self.ttft), "tpot_s": fin(self.tpot),
                "stable": self.stable.tolist(), "slo_met": self.meets.tolist(), "knee": self.knee,
                "knee_rate_per_s": float(self.rates[self.knee]) if self.knee >= 0 else None,
                "capacity_per_s": self.capacity}


def load_curve(workload: Workload, setup: Setup, slo: SLO, points: int = 24) -> LoadCurve:
    cap = capacity(workload, setup) * setup.replicas
    rates = curve_rates(workload, cap, points)
    return curve_of(slo, rates, estimate(workload, setup, slo, rates), cap)


def curve_rates(workload: Workload, cap: float, points: int = 24) -> np.ndarray:
    """The load curve's rates: ``points`` up to 1.1 x the replicas' capacity ``cap``; the workload's rate alone
    where nothing is stable."""
    return np.linspace(cap / points, cap * 1.1, points) if cap > 0 else np.array([workload.mean_rate()])


def curve_of(slo: SLO, rates: np.ndarray, res: list[ServingResult], cap: float) -> LoadCurve:
    """The load curve of the estimates ``res`` at ``rates`` (the replicas' capacity ``cap``)."""
    pct = slo.ttft_pct if slo.ttft is not None else "p90"
    meets = np.array([r.slo_met and r.stable for r in res])
    knee = int(np.flatnonzero(meets)[-1]) if meets.any() else -1
    return LoadCurve(rates, np.array([r.throughput_per_device for r in res]),
                     np.array([1.0 / r.tpot.mean if r.tpot.mean > 0 else math.inf for r in res]),
                     np.array([r.ttft.at(pct) for r in res]), np.array([r.tpot.mean for r in res]),
                     np.array([r.stable for r in res]), meets, knee, cap)
