"""The report's Serving section: per device, one replica serving the state's workload (``docs/serving.md``): its
capacity, the latency percentiles against the service levels (the discrete-event simulation at the workload's rate
beside the analytic estimate), and at the service level (the knee: the highest rate meeting every target) the cost
per million output tokens and the energy per output token. Plain rows of text (and numbers for the CSV) that the
PDF, HTML and CSV writers format. Qt-free.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..core.serving.analytic import estimate
from ..core.serving.result import ServingResult
from ..core.serving.serve import ServingAnswer, answer, device_setup, simulate_replicas, summarize
from ..core.session.serving_choice import ServingChoice

SIMULATED = 2000  # requests simulated per device (the CLI's default)


@dataclass(frozen=True, eq=False)
class ServingRow:
    name: str
    answer: ServingAnswer
    simulation: ServingResult | None  # at the workload's rate (None: not simulated)
    at_knee: ServingResult | None  # the estimate at the service-level knee (None: no rate meets the targets)


@dataclass(frozen=True, eq=False)
class ServingSection:
    choice: ServingChoice | None = None
    rows: tuple[ServingRow, ...] = ()
    time_model: str = "ideal"  # the step times' model (ideal | calibrated); each row's source is its setup's

    def __bool__(self) -> bool:
        return bool(self.rows)


def build_serving_section(model, devices, choice: ServingChoice, precision: str = "fp16", formats=None,
                          simulate_n: int = SIMULATED, answers=None, time_model: str = "ideal") -> ServingSection:
    """The section for ``devices`` (one replica each) under ``choice``, the step times of ``time_model``;
    ``answers`` (one per device) are reused when given (the session's results), else computed."""
    w, slo = choice.workload, choice.slo
    if answers is None:
        answers = [answer(w, device_setup(model, d, w, choice.policy, precision, formats, choice.memory_utilization,
                                          choice.block_size, time_model=time_model), slo) for d in devices]
    rows = []
    for d, a in zip(devices, answers):
        sim = None
        if simulate_n:
            req, runs = simulate_replicas(w, a.setup, simulate_n)
            sim = summarize(req, runs, a.setup, slo, w.mean_rate())
        knee = None
        if a.curve.knee >= 0:
            knee = estimate(w, a.setup, slo, [float(a.curve.rates[a.curve.knee])])[0]
        rows.append(ServingRow(d.name, a, sim, knee))
    return ServingSection(choice, tuple(rows), time_model)


CAPACITY_HEADERS = ("Device", "KV cache", "Max sequences", "Capacity", "Knee (service level)",
                    "Per device at knee", "Cost / M tokens at knee", "Energy / token at knee", "Times")
LATENCY_HEADERS = ("Device", "Method", "TTFT P50", "TTFT P90", "TTFT P99", "TPOT mean", "Goodput",
                   "Service levels")
NOTE = ("One replica per device under continuous batching at the workload's rate. Capacity: the highest stable "
        "arrival rate (analytic). Knee: the highest rate on the load curve meeting every service level; cost per "
        "million output tokens at the device's cloud price per hour (catalog) and energy per output token (the "
        "device at its TDP while a step runs, idle power neglected) are at that rate. Percentiles: the discrete-"
        "event simulation of the requests stated, beside the analytic estimate; docs/serving.md states the model. "
        "Times: where each device's step times come from (spec: datasheet figures, the ideal model; calibrated or "
        "partly calibrated: curves fitted to measured kernels, the calibrated model; docs/calibration.md).")


def times_text(section: ServingSection) -> str:
    """The section's time model and, under the calibrated model, each device's source with its kernel counts and
    sources (a line under the tables)."""
    if section.time_model == "ideal":
        return "Step times: the ideal model (spec: datasheet figures)."
    return "Step times: the calibrated model. " + " ".join(
        f"{r.name}: {r.answer.setup.time_label}." for r in section.rows)


def _ms(x: float) -> str:
    return "\u2014" if x is None or not math.isfinite(x) else f"{x * 1e3:.4g} ms"


def _num(x: float, unit: str, digits: int = 4) -> str:
    return "\u2014" if x is None or not math.isfinite(x) else f"{x:,.{digits}g} {unit}"


def capacity_rows(section: ServingSection) -> list[list[str]]:
    out = []
    for r in section.rows:
        m, c, k = r.answer.setup.memory, r.answer.curve, r.at_knee
        seqs = m.max_sequences(section.choice.input_tokens + section.choice.output_tokens)
        out.append([r.name, f"{m.blocks:,} blocks of {m.block_size} tokens", f"{seqs:,}",
                    _num(c.capacity, "req/s"), _num(float(c.rates[c.knee]), "req/s") if c.knee >= 0 else "none",
                    _num(k.throughput_per_device, "tokens/s") if k else "\u2014",
                    _num(k.cost_per_million, "USD", 3) if k else "\u2014",
                    _num(k.energy_per_token, "J", 3) if k else "\u2014", r.answer.setup.time_source])
    return out


def _verdict(res: ServingResult) -> str:
    if not res.slo:
        return "no targets"
    return "; ".join(f"{c.metric.upper()} {c.percentile.upper()} {_ms(c.value_s)} vs {_ms(c.target_s)}: "
                     f"{'met' if c.met else 'missed'}" for c in res.slo)


def latency_rows(section: ServingSection) -> list[list[str]]:
    out = []
    for r in section.rows:
        for method, res in (("analytic", r.answer.estimate), (f"simulated ({r.simulation.requests:,} requests)"
                                                              if r.simulation else "", r.simulation)):
            if res is None:
                continue
            out.append([r.name, method, _ms(res.ttft.p50), _ms(res.ttft.p90), _ms(res.ttft.p99), _ms(res.tpot.mean),
                        _num(res.goodput, "req/s"), _verdict(res)])
    return out


def csv_rows(section: ServingSection) -> list[list]:
    """One row per device and method, SI units in the header; empty cells: unknown."""
    head = ["device", "method", "rate [requests/s]", "input [tokens]", "output [tokens]", "capacity [requests/s]",
            "knee rate [requests/s]", "TTFT P50 [s]", "TTFT P90 [s]", "TTFT P99 [s]", "TPOT mean [s]",
            "TTFT target [s]", "TTFT percentile", "TPOT target [s]", "TPOT percentile", "service levels met",
            "goodput [requests/s]", "throughput per device [tokens/s]", "cost per million tokens [USD]",
            "energy per token [J]", "KV blocks", "block size [tokens]", "time model", "time source"]
    c = section.choice
    rows = [head]
    for r in section.rows:
        m, curve = r.answer.setup.memory, r.answer.curve
        knee = float(curve.rates[curve.knee]) if curve.knee >= 0 else math.nan
        for method, res in (("analytic", r.answer.estimate), ("simulation", r.simulation),
                            ("analytic at knee", r.at_knee)):
            if res is None:
                continue
            rows.append([r.name, method, res.rate, c.input_tokens, c.output_tokens, curve.capacity, knee,
                         res.ttft.p50, res.ttft.p90, res.ttft.p99, res.tpot.mean,
                         c.ttft if c.ttft is not None else math.nan, c.ttft_pct,
                         c.tpot if c.tpot is not None else math.nan, c.tpot_pct, res.slo_met, res.goodput,
                         res.throughput_per_device, res.cost_per_million, res.energy_per_token, m.blocks,
                         m.block_size, section.time_model, r.answer.setup.time_source])
    return rows
