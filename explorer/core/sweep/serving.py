"""A serving sweep: every (device, precision, batch cap, arrival rate) configuration served under continuous
batching, each one the discrete-event simulation of ``hwexplorer serve --simulate`` (or its analytic estimate),
in parallel over local processes or a Dask cluster (:mod:`explorer.core.pmap`).

Each (device, precision, batch cap) has one replica :class:`~explorer.core.serving.analytic.Setup`: its step-time
surface (one analysis pass over the surface's grid) and its memory. The setups are built **once, in the parent**,
and shipped to the workers with the shared inputs (pickled once per worker process, or scattered once to a Dask
cluster); a task is then only ``(setup index, rate)`` and runs :func:`simulate_point`: the same calls as
``serve``'s :func:`~explorer.core.serving.serve.answer` (``simulate_replicas`` then ``summarize``), at the same
seed. So a row equals ``hwexplorer serve MODEL --device D --precision P --max-batch B --rate R --simulate
--requests N --seed S`` for that configuration, whichever executor ran it.

Every configuration draws its requests from the same seed (``--seed``): common random numbers, so two devices are
compared on the same arrival pattern and lengths (at one rate), and the result never depends on which process
ran which configuration.

Without ``simulate`` the rows are the analytic estimate, all rates of a setup in one vectorized call, in process.

Rows are in grid order: device, then precision, then batch cap, then rate (the last varies fastest).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np

from explorer.core.formats import TensorFormats
from explorer.core.hardware.device import Device
from explorer.core.pmap import parallel_map
from explorer.core.serving.analytic import Setup, estimate
from explorer.core.serving.result import ServingResult
from explorer.core.serving.serve import device_setup, simulate_replicas, summarize
from explorer.core.serving.simulate import Policy
from explorer.core.serving.workload import SLO, Workload
from explorer.core.workload.model import Model

from .pareto import pareto_mask
from .serving_columns import BOOLS, COLUMNS, INTS, NAMES, OBJECTIVES

__all__ = [
    "COLUMNS",
    "NAMES",
    "ServingGrid",
    "ServingSweepResult",
    "SimInputs",
    "build_setups",
    "serving_sweep",
    "simulate_point",
]

_VALUES = NAMES[NAMES.index("ttft_p50_ms"):NAMES.index("slo_met") + 1]  # the columns a served configuration fills


@dataclass(frozen=True)
class ServingGrid:
    """The axes of a serving sweep besides the devices: precisions, batch caps (the engine's max batch) and
    arrival rates [requests/s]."""

    precisions: tuple[str, ...] = ("fp16",)
    max_batches: tuple[int, ...] = (256,)
    rates: tuple[float, ...] = (1.0,)

    def __post_init__(self):
        if not self.precisions:
            raise ValueError("--precision: give at least one precision")
        if not self.max_batches or any(isinstance(b, bool) or not isinstance(b, int) or b < 1
                                       for b in self.max_batches):
            raise ValueError(f"--batch: expected whole numbers >= 1, got {self.max_batches!r}")
        if not self.rates or any(not math.isfinite(r) or r <= 0 for r in self.rates):
            raise ValueError(f"--rate: expected rates > 0 requests/s, got {self.rates!r}")


@dataclass(frozen=True, eq=False)
class SimInputs:
    """What every simulated configuration shares, shipped once per worker: the workload (its rate replaced per
    configuration), the service levels, the requests and seed, and every setup (None where the model leaves no
    room for the KV cache)."""

    workload: Workload
    slo: SLO
    requests: int
    seed: int
    setups: tuple[Setup | None, ...]


@dataclass(frozen=True, eq=False)
class ServingSweepResult:
    """Column arrays of N rows in grid order (see :data:`COLUMNS`); ``notes``: what is unknown and why."""

    model_name: str
    columns: dict
    notes: tuple[str, ...]
    names: tuple[str, ...] = NAMES

    def __len__(self) -> int:
        return len(self.columns["device"])

    @property
    def front(self) -> np.ndarray:
        """Indices of the Pareto-front rows, lowest TPOT P90 first."""
        idx = np.flatnonzero(self.columns["pareto"])
        return idx[np.argsort(self.columns["tpot_p90_ms"][idx], kind="stable")]


def build_setups(model: Model, devices: Sequence[Device], grid: ServingGrid, workload: Workload,
                 policy: Policy, formats: TensorFormats | None = None, utilization: float = 0.9,
                 block_size: int = 16, idle_w: float = 0.0, usd_per_s: float | None = None,
                 time_model: str = "ideal") -> tuple[Setup, ...]:
    """One setup per (device, precision, batch cap), in grid order: :func:`device_setup` as ``serve`` builds it,
    its step times under ``time_model`` (the surfaces are cached per device, so a device's precisions and caps share
    their work tables)."""
    return tuple(device_setup(model, d, workload, replace(policy, max_batch=b), precision=p, formats=formats,
                              utilization=utilization, block_size=block_size, idle_w=idle_w, usd_per_s=usd_per_s,
                              time_model=time_model)
                 for d in devices for p in grid.precisions for b in grid.max_batches)


def result_values(r: ServingResult) -> tuple:
    """The row values of one served configuration, in :data:`_VALUES` order (ms for latencies)."""
    return (r.ttft.p50 * 1e3, r.ttft.p90 * 1e3, r.ttft.p99 * 1e3, r.tpot.p50 * 1e3, r.tpot.p90 * 1e3,
            r.tpot.p99 * 1e3, r.e2e.p90 * 1e3, r.throughput_per_device, r.request_throughput, r.goodput,
            r.cost_per_million, r.energy_per_token, r.mean_batch, r.kv_utilization, int(r.preemptions),
            bool(r.stable), bool(r.slo_met))


def simulate_point(shared: SimInputs, item: tuple[int, float]) -> tuple:
    """One configuration's simulation: ``item`` = (setup index, rate [requests/s]). The task every executor runs
    (module-level, so it pickles by reference); deterministic in its inputs (the seed is ``shared.seed``)."""
    k, rate = item
    setup = shared.setups[k]
    workload = replace(shared.workload, rate=float(rate))
    req, runs = simulate_replicas(workload, setup, shared.requests, shared.seed)
    return result_values(summarize(req, runs, setup, shared.slo, workload.mean_rate()))


def serving_sweep(model: Model, devices: Sequence[Device], grid: ServingGrid, workload: Workload, slo: SLO,
                  setups: Sequence[Setup], simulate: bool = False, requests: int = 2000, seed: int = 0,
                  workers: int | None = 1, cluster: str | None = None,
                  progress: Callable[[int, int], None] | None = None) -> ServingSweepResult:
    """Every configuration of ``grid`` on ``devices`` (``setups`` from :func:`build_setups`): simulated on the
    executor chosen by ``workers`` / ``cluster`` (:func:`explorer.core.pmap.parallel_map`), or estimated."""
    n_rate = len(grid.rates)
    fits = [s.memory.blocks >= 1 for s in setups]
    timed = [_timed(s) for s in setups]  # False: no peak at that precision (the steps' times are unknown)
    served = [f and t for f, t in zip(fits, timed)]
    n = len(setups) * n_rate
    values: list[tuple | None] = [None] * n
    if simulate:
        todo = [(k, r) for k, s in enumerate(setups) if served[k] for r in grid.rates]
        shared = SimInputs(workload, slo, requests, seed, tuple(s if f else None for s, f in zip(setups, served)))
        done = parallel_map(simulate_point, shared, todo, workers=workers, cluster=cluster, progress=progress)
        slots = [k * n_rate + j for k, f in enumerate(served) if f for j in range(n_rate)]
        for slot, v in zip(slots, done):
            values[slot] = v
    else:
        for k, s in enumerate(setups):
            if served[k]:
                for j, r in enumerate(estimate(workload, s, slo, list(grid.rates))):
                    values[k * n_rate + j] = result_values(r)
            if progress:
                progress((k + 1) * n_rate, n)
    cols = _columns(devices, grid, values, fits, served, "simulation" if simulate else "analytic",
                    requests if simulate else 0, [s.time_source for s in setups])
    untimed = {}
    for (d, p), t in zip([(d.id, p) for d in devices for p in grid.precisions for _ in grid.max_batches], timed):
        if not t:
            untimed.setdefault(p, {})[d] = None
    notes = tuple(f"no {p} peak (serving unknown at {p}, not served): {', '.join(ids)}" for p, ids in untimed.items())
    served_rows = np.repeat(np.asarray(served, dtype=bool), n_rate)
    return with_front(ServingSweepResult(model.name, cols, notes + _notes(cols, served_rows)))


def _timed(setup: Setup) -> bool:
    """Whether every step time of the setup's surface is known (finite and > 0)."""
    s = setup.surface
    return bool(np.all(np.isfinite(s.decode_s)) and np.all(s.decode_s > 0) and np.all(np.isfinite(s.prefill_s))
                and np.all(s.prefill_s > 0))


def _columns(devices, grid: ServingGrid, values, fits, served, method: str, requests: int,
             sources: Sequence[str]) -> dict:
    keys = [(d.id, p, b, r) for d in devices for p in grid.precisions for b in grid.max_batches for r in grid.rates]
    fit_rows = np.repeat(np.asarray(fits, dtype=bool), len(grid.rates))
    blank = (math.nan,) * 14 + (0, False, False)
    rows = [v if v is not None else blank for v in values]
    cols = {
        "device": np.array([k[0] for k in keys], dtype=object),
        "precision": np.array([k[1] for k in keys], dtype=object),
        "max_batch": np.array([k[2] for k in keys], dtype=int),
        "rate_per_s": np.array([k[3] for k in keys], dtype=float),
        "method": np.array([method] * len(keys), dtype=object),
        "requests": np.where(np.repeat(np.asarray(served, dtype=bool), len(grid.rates)), requests, 0).astype(int),
        "time_source": np.repeat(np.array(sources, dtype=object), len(grid.rates)),
    }
    for c, name in enumerate(_VALUES):
        kind = bool if name in BOOLS else int if name in INTS else float
        cols[name] = np.array([row[c] for row in rows], dtype=kind)
    cols["fits"] = fit_rows
    cols["pareto"] = np.zeros(len(keys), dtype=bool)
    return cols


def _notes(cols: dict, served: np.ndarray) -> tuple[str, ...]:
    """What is unknown and why; ``served``: the rows answered (they fit and their steps are timed)."""
    notes = []
    no_room = sorted({str(d) for d, f in zip(cols["device"], cols["fits"]) if not f})
    if no_room:
        notes.append(f"no room for the KV cache after the weights (not served): {', '.join(no_room)}")
    for name, why in (("cost_per_million_tokens_usd", ("cost unknown (no cloud price in the catalog; give "
                       "--hourly-price)")), ("energy_per_token_j", "energy unknown (no TDP in the catalog)")):
        ids = sorted({str(d) for d, v, f in zip(cols["device"], cols[name], served) if f and not math.isfinite(v)})
        if ids:
            notes.append(f"{why}: {', '.join(ids)}")
    over = int(np.count_nonzero(served & ~cols["stable"]))
    if over:
        notes.append(f"{over} configuration(s) above capacity: the queue grows, latencies grow with the run")
    return tuple(notes)


def with_front(result: ServingSweepResult) -> ServingSweepResult:
    """``result`` with its ``pareto`` column over the stable rows that fit (columns made read-only)."""
    cols = dict(result.columns)
    objectives = np.column_stack([np.asarray(cols[name], dtype=float) for name, _ in OBJECTIVES])
    pareto = np.zeros(len(cols["device"]), dtype=bool)
    candidates = np.flatnonzero(cols["fits"] & cols["stable"])
    if len(candidates):
        pareto[candidates] = pareto_mask(objectives[candidates], tuple(m for _, m in OBJECTIVES))
    cols["pareto"] = pareto
    for a in cols.values():
        a.setflags(write=False)
    return replace(result, columns=cols)
