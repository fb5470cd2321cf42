"""The serving answer as one frozen result (the CLI, and later a panel and the report, read it): latency
percentiles, throughput, goodput, KV utilization, batch sizes; from the simulation or the analytic estimate."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .workload import SLO


@dataclass(frozen=True)
class Latency:
    """Seconds: mean and the P50/P90/P99 percentiles (inf: the queue grows without bound)."""

    mean: float
    p50: float
    p90: float
    p99: float

    @staticmethod
    def of(samples: np.ndarray) -> Latency:
        x = samples[np.isfinite(samples)]
        if not len(x):
            return Latency(math.nan, math.nan, math.nan, math.nan)
        p50, p90, p99 = np.percentile(x, [50, 90, 99])
        return Latency(float(x.mean()), float(p50), float(p90), float(p99))

    def at(self, pct: str) -> float:
        return float(getattr(self, pct))

    def to_dict(self) -> dict:
        return {k: (v if math.isfinite(v) else None) for k, v in
                (("mean_s", self.mean), ("p50_s", self.p50), ("p90_s", self.p90), ("p99_s", self.p99))}


@dataclass(frozen=True)
class SloCheck:
    metric: str  # ttft | tpot | e2e
    percentile: str
    target_s: float
    value_s: float
    met: bool


def slo_checks(slo: SLO, ttft: Latency, tpot: Latency, e2e: Latency) -> tuple[SloCheck, ...]:
    lat = {"ttft": ttft, "tpot": tpot, "e2e": e2e}
    out = []
    for metric, target, pct in slo.targets():
        value = lat[metric].at(pct)
        out.append(SloCheck(metric, pct, target, value, bool(math.isfinite(value) and value <= target)))
    return tuple(out)


@dataclass(frozen=True, eq=False)
class ServingResult:
    """The service at one arrival rate. Rates in requests/s, throughput in output tokens/s (input tokens are
    not counted), over all ``replicas``; ``per_device`` divides by replicas x devices per replica."""

    method: str  # simulation | analytic
    rate: float  # offered requests/s
    replicas: int
    devices: int  # devices per replica
    ttft: Latency
    tpot: Latency
    e2e: Latency
    request_throughput: float  # completed requests/s
    throughput: float  # output tokens/s
    goodput: float  # requests/s meeting every service level
    slo: tuple[SloCheck, ...]
    kv_utilization: float  # mean share of the KV blocks in use
    mean_batch: float  # mean sequences per decode step
    stable: bool  # False: above capacity, the queue grows
    preemptions: int = 0
    batch_sizes: np.ndarray | None = None  # (S,) decode batch sizes seen
    batch_share: np.ndarray | None = None  # (S,) share of decode steps at each
    requests: int = 0
    duration_s: float = math.nan
    busy_share: float = math.nan  # share of the time a step is running
    energy_per_token: float = math.nan  # J per output token: devices at TDP while busy, at idle power between
    cost_per_million: float = math.nan  # USD per million output tokens at the devices' price per hour

    @property
    def throughput_per_replica(self) -> float:
        return self.throughput / self.replicas

    @property
    def throughput_per_device(self) -> float:
        return self.throughput / (self.replicas * self.devices)

    @property
    def slo_met(self) -> bool:
        return all(c.met for c in self.slo)

    def to_dict(self) -> dict:
        def num(x):
            return float(x) if x is not None and math.isfinite(x) else None

        out = {"method": self.method, "rate_per_s": self.rate, "replicas": self.replicas,
               "devices_per_replica": self.devices, "stable": self.stable,
               "ttft": self.ttft.to_dict(), "tpot": self.tpot.to_dict(), "e2e": self.e2e.to_dict(),
               "request_throughput_per_s": num(self.request_throughput),
               "throughput_tokens_per_s": num(self.throughput),
               "throughput_tokens_per_s_per_replica": num(self.throughput_per_replica),
               "throughput_tokens_per_s_per_device": num(self.throughput_per_device),
               "goodput_per_s": num(self.goodput), "slo_met": self.slo_met,
               "slo": [{"metric": c.metric, "percentile": c.percentile, "target_s": c.target_s,
                        "value_s": num(c.value_s), "met": c.met} for c in self.slo],
               "kv_utilization": num(self.kv_utilization), "mean_batch": num(self.mean_batch),
               "preemptions": self.preemptions, "requests": self.requests, "duration_s": num(self.duration_s),
               "busy_share": num(self.busy_share), "energy_per_token_j": num(self.energy_per_token),
               "cost_per_million_tokens_usd": num(self.cost_per_million)}
        if self.batch_sizes is not None:
            out["batch_distribution"] = [{"batch": int(b), "share": float(s)}
                                         for b, s in zip(self.batch_sizes, self.batch_share)]
        return out


def met_mask(slo: SLO, ttft: np.ndarray, tpot: np.ndarray, e2e: np.ndarray) -> np.ndarray:
    """Per request: True where every target is met by that request (a one-token answer has no TPOT to miss)."""
    ok = np.isfinite(ttft) & np.isfinite(e2e)
    for metric, target, _ in slo.targets():
        x = {"ttft": ttft, "tpot": tpot, "e2e": e2e}[metric]
        ok &= (x <= target) | (np.isnan(x) & (metric == "tpot"))
    return ok

