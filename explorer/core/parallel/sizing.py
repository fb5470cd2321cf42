"""Fleet sizing on systems: how many devices and nodes reach a target rate under a latency limit, with real layouts.

This replaces the single-device planner's even split (``ceil(memory / capacity)`` units at no communication cost)
when systems are chosen. A system's layout serves ``dp`` replicas of ``tp x pp`` devices each; one replica delivers
``throughput / dp`` at the layout's latency. For a target rate R:

    replicas = ceil(R / replica throughput);  devices = replicas x tp x pp;  nodes = ceil(devices / node devices)

Among the layouts of a system that fit and meet the latency limit, the one needing the fewest devices is chosen
(ties: the lower latency). Without a target, one replica. Capital = devices x the device's price (a quote, else the
catalog's): the chassis, switches and network are not priced (no sourced figures); the plan says so.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from .compare import SystemResult
from .layout import Layout

NOT_PRICED = "device prices only: chassis, NVSwitch trays, NICs and network switches are not priced"


@dataclass(frozen=True)
class SystemPlan:
    """One system under the requirements; time in s, money in USD (NaN: unknown), rates in the analysis's unit."""

    system_id: str
    name: str
    device_id: str
    layout: Layout | None
    replica_devices: int  # tp x pp
    replica_throughput: float
    latency: float
    comm_share: float
    replicas: int
    devices: int
    nodes: int
    price_per_device: float
    capital: float
    meets_latency: bool | None  # None: no limit
    feasible: bool
    reason: str
    batch: int = 0  # the batch a search chose (0: the analysis's batch, not searched)


def size_fleet(results: Sequence[SystemResult], target: float | None = None, latency_limit: float | None = None,
               price: Mapping[str, float] | None = None) -> tuple[SystemPlan, ...]:
    """One :class:`SystemPlan` per system result, in the given order; ``price``: USD per device by device id."""
    price = price or {}
    out = []
    for res in results:
        out.append(_plan(res, target, latency_limit, price))
    return tuple(out)


def _plan(res: SystemResult, target, latency_limit, price) -> SystemPlan:
    s, dev = res.system, res.device
    unit_price = float(price.get(dev.id, dev.price.value if dev.price is not None else math.nan))
    empty = dict(system_id=s.id, name=s.name, device_id=dev.id, price_per_device=unit_price)
    r = res.analysis
    if r is None:
        return SystemPlan(**empty, layout=None, replica_devices=0, replica_throughput=math.nan, latency=math.nan,
                          comm_share=math.nan, replicas=0, devices=0, nodes=0, capital=math.nan,
                          meets_latency=None, feasible=False, reason=res.error or "no valid layout")
    size = np.array([lay.tp * lay.pp for lay in r.layouts])
    dp = np.array([lay.dp for lay in r.layouts])
    with np.errstate(invalid="ignore", divide="ignore"):
        per_replica = r.throughput / dp
        replicas = np.ceil(target / per_replica) if target is not None else np.ones(len(r))
    fast = np.ones(len(r), bool) if latency_limit is None else r.latency <= latency_limit
    ok = r.fits & fast & np.isfinite(replicas) & (replicas >= 1)
    devices = np.where(ok, replicas * size, np.inf)
    if ok.any():
        k = int(np.lexsort((r.latency, devices))[0])
        reason = ""
    else:
        k = res.chosen
        reason = ("no layout holds the model in device memory" if not r.fits.any() else
                  f"no layout meets the latency limit of {latency_limit * 1e3:.3g} ms (fastest "
                  f"{np.nanmin(r.latency) * 1e3:.3g} ms)" if latency_limit is not None else "throughput unknown")
    n_rep = int(replicas[k]) if np.isfinite(replicas[k]) else 0
    n_dev = n_rep * int(size[k])
    return SystemPlan(**empty, layout=r.layouts[k], replica_devices=int(size[k]),
                      replica_throughput=float(per_replica[k]), latency=float(r.latency[k]),
                      comm_share=float(r.comm_share[k]), replicas=n_rep, devices=n_dev,
                      nodes=math.ceil(n_dev / max(s.node_devices, 1)) if n_dev else 0,
                      capital=n_dev * unit_price if n_dev else math.nan,
                      meets_latency=None if latency_limit is None else bool(fast[k]), feasible=bool(ok.any()),
                      reason=reason)
