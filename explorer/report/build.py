"""Collect everything a comparison report shows into one frozen :class:`ReportData` (Qt-free).

Numbers come from the results bundle the panels read too (:class:`explorer.core.session.results.Results`: the
analysis as given, the procurement plan and its costs, the roofline, energy and tiling views); the analysis is not
evaluated again here. The PDF, HTML and CSV writers only format what this module collects.
"""

from __future__ import annotations

import datetime as _dt
import math
from dataclasses import dataclass

import numpy as np

from explorer.core.hardware.capacity import CAPACITY_NOTE, device_capacity
from explorer.core.hardware.device import Cited, Device

from .. import __version__
from ..core.analysis.cost import CostAssumptionsLike, CostResult
from ..core.analysis.energy_view import EnergyView, energy_table
from ..core.analysis.evaluate import ModelAnalysis
from ..core.analysis.procurement import PlanResult, Requirements, format_usd
from ..core.analysis.roofline_view import RooflineResult
from ..core.analysis.sensitivity import Sensitivity, sensitivity
from ..core.analysis.tiling_view import TilingView, default_row
from ..core.analysis.time_source import device_time_sources
from ..core.session.results import Results
from ..core.units import format_bytes, format_si
from .serving_section import ServingSection
from .systems_section import SystemsSection
from .times import time_statement, training_on_ideal
from .training_section import TrainingSection

_PDF_MAP = str.maketrans({"\u2264": "<=", "\u2265": ">=", "\u2308": "ceil(", "\u2309": ")", "\u03b7": "eta",
                          "\u2192": "->", "\u2212": "-", "\u2009": " ", "\u202f": " ", "\u2248": "~"})


def pdf_text(s: str) -> str:
    """Text the PDF's standard fonts can show (Windows-1252): a few symbols spelled out, others replaced."""
    return str(s).translate(_PDF_MAP).encode("cp1252", "replace").decode("cp1252")


@dataclass(frozen=True)
class Metric:
    """One summary row: ``values`` in ``unit`` (what the CSV holds; str for text metrics), ``display`` per device."""

    key: str
    label: str
    unit: str
    values: tuple
    display: tuple[str, ...]


@dataclass(frozen=True)
class SourceRow:
    device: str
    figure: str
    value: str
    title: str  # the cited source's title, or the default or user entry that supplied the figure
    url: str
    date: str


@dataclass(frozen=True, eq=False)
class ReportData:
    title: str
    subtitle: str
    created: str  # ISO date
    generator: str
    workload: str
    analysis: ModelAnalysis  # with the plan's quotes and cloud prices applied
    cost: CostResult
    plan: PlanResult
    roofline: tuple[RooflineResult, ...]  # one per device (its operator points)
    energy: EnergyView
    tiling: tuple[TilingView, ...]  # one per device, the GEMM row losing most time to the fringe
    summary: tuple[Metric, ...]
    assumptions: tuple[tuple[str, str], ...]
    sources: tuple[SourceRow, ...]
    method: tuple[tuple[str, str], ...]
    recommendation: str
    systems: SystemsSection = SystemsSection()  # the model on systems of many devices (empty: none chosen)
    sensitivity: Sensitivity | None = None  # the ranking under changed prices, utilization, electricity, horizon
    training: TrainingSection = TrainingSection()  # the model trained on systems (empty: none asked for)
    serving: ServingSection = ServingSection()  # serving under load (empty: no serving part)
    time_model: str = "ideal"  # the times' model (ideal | calibrated); the summary's "time_source" row per device

    @property
    def device_names(self) -> tuple[str, ...]:
        return tuple(d.name for d in self.analysis.devices.devices)

    @property
    def device_ids(self) -> tuple[str, ...]:
        return self.analysis.devices.ids

    @property
    def model_name(self) -> str:
        return self.analysis.model.name if self.analysis.model is not None else "model"


def _fmt(x: float, unit: str, digits: int = 3) -> str:
    return format_si(x, unit, digits) if math.isfinite(x) else "\u2014"


def _pct(x: float) -> str:
    return f"{100 * x:.1f}%" if math.isfinite(x) else "\u2014"


def memory_bound_share(analysis: ModelAnalysis) -> np.ndarray:
    """Per device, the share of the modelled time spent in memory-bound operators (D,)."""
    share = np.nan_to_num(analysis.time_share, nan=0.0)
    return np.sum(np.where(analysis.memory_bound & analysis.bound_known, share, 0.0), axis=0)


def plan_metrics(plan_result: PlanResult, ids: tuple[str, ...]) -> tuple[Metric, ...]:
    """The configuration the plan recommends per device: units (and the split), the latency of the split replica,
    the fleet's cost on the ranking's basis and the one cost per million the report uses."""
    plans = [plan_result.by_id(i) for i in ids]
    unit = plan_result.unit.split("/")[0].removesuffix("s")
    years = plan_result.cost.years
    phase = "decode step" if plan_result.unit == "tokens/s" else "inference"

    def units(p):
        if not p.units:
            return "\u2014"
        text = f"{p.units} unit{'s' if p.units != 1 else ''}"
        if p.shards > 1:
            text += f" ({p.units // p.shards} \u00d7 split over {p.shards} units)"
        return text + (f", batch {p.batch}" if p.batch else "")

    def latency(p):
        if not math.isfinite(p.latency):
            return "\u2014"
        return _fmt(p.latency, "s") + (f" (split over {p.shards} units)" if p.shards > 1 else "")

    def fleet(p):
        if not math.isfinite(p.rank_cost):
            return "not costed: no " + " or ".join(p.lacks) if p.lacks else "\u2014"
        return f"{format_usd(p.rank_cost)} ({'buy TCO' if p.rank_basis == 'buy' else 'rent'})"

    def per_million(p):
        return f"${p.rank_cost_per_million:.3g}" if math.isfinite(p.rank_cost_per_million) else "\u2014"

    verdicts = tuple(f"#{p.rank}, " + {True: "feasible", False: "infeasible", None: "incomplete"}[p.feasible]
                     for p in plans)
    return (
        Metric("plan_rank", "Plan: rank", "", tuple(p.rank for p in plans), verdicts),
        Metric("plan_units", "Plan: units", "", tuple(p.units or math.nan for p in plans),
               tuple(units(p) for p in plans)),
        Metric("plan_latency", f"Plan: latency per {phase}", "s", tuple(p.latency for p in plans),
               tuple(latency(p) for p in plans)),
        Metric("plan_cost", f"Plan: fleet cost, {years:g} years", "USD", tuple(p.rank_cost for p in plans),
               tuple(fleet(p) for p in plans)),
        Metric("plan_cost_per_million", f"Plan: cost per million {unit}s", "USD",
               tuple(p.rank_cost_per_million for p in plans), tuple(per_million(p) for p in plans)),
    )


COST_PER_MILLION_DEFINITION = (
    "the plan's fleet cost on the ranking's basis (buy: purchase price + electricity of all its "
    "units; rent: the same units rented around the clock) over the horizon, divided by the {unit}s served at the "
    "target throughput times the utilization over the horizon, times 10^6")


def summary_metrics(analysis: ModelAnalysis, cost: CostResult, energy: EnergyView,
                    quoted: frozenset[str] = frozenset(), plan_result: PlanResult | None = None,
                    time_model: str = "ideal") -> tuple[Metric, ...]:
    tot, dev = analysis.totals, analysis.devices
    sources = device_time_sources(analysis, time_model)
    unit = cost.unit
    n = len(dev)
    mem_share = memory_bound_share(analysis)
    known_bound = np.isfinite(tot.time) & (tot.time > 0)
    bound = tuple(("memory" if s >= 0.5 else "compute") if k else "\u2014" for s, k in zip(mem_share, known_bound))
    bound_disp = tuple(f"{b} ({100 * (s if b == 'memory' else 1 - s):.0f}% of time)" if k else "\u2014"
                       for b, s, k in zip(bound, mem_share, known_bound))
    shards = [plan_result.by_id(i).shards if plan_result is not None else 1 for i in dev.ids]
    fits = tuple("\u2014" if not math.isfinite(c) else "yes" if f else
                 f"no: split over {s} units" if s > 1 else "no" for f, c, s in zip(tot.fits, dev.capacity, shards))
    per_tflops = 1e12

    def m(key, label, unit_, values, display):
        return Metric(key, label, unit_, tuple(values), tuple(display))

    latency_label = {"decode": "Latency per decode step", "train": "Time per training step"}.get(
        analysis.ctx.phase, "Latency per inference")
    plan_rows = plan_metrics(plan_result, dev.ids) if plan_result is not None else ()
    return plan_rows + (
        m("latency", latency_label + " (one unit)", "s", tot.time, [_fmt(t, "s") for t in tot.time]),
        m("time_source", f"Times from ({time_model} model)", "", sources, sources),
        m("throughput", "Throughput (one unit)", tot.throughput_unit, tot.throughput,
          [f"{x:,.0f} {tot.throughput_unit}" if math.isfinite(x) else "\u2014" for x in tot.throughput]),
        m("energy", f"Energy per {unit} (one unit)", "J", energy.device_total,
          [_fmt(e, "J") for e in energy.device_total]),
        m("bound", "Bound (share of time)", "", bound, bound_disp),
        m("utilization", "Utilization of peak", "fraction", tot.utilization, [_pct(u) for u in tot.utilization]),
        m("fringe_tax", "Fringe tax (mapping loss)", "fraction",
          np.where(analysis.total_mapping_known, 1 - tot.mapping_efficiency, np.nan),
          [_pct(1 - e) if known else "unknown (no matrix-engine data)"
           for e, known in zip(tot.mapping_efficiency, analysis.total_mapping_known)]),
        m("memory_needed", "Memory needed", "B", [tot.memory_bytes] * n, [format_bytes(tot.memory_bytes)] * n),
        m("memory_capacity", "Memory capacity", "B", dev.capacity,
          [device_capacity(d) for d in dev.devices]),
        m("fits", "Fits in one unit's memory", "", fits, fits),
        m("price", "Price per unit", "USD", cost.price,
          [format_usd(p) + (" (quote)" if i in quoted else "") for p, i in zip(cost.price, dev.ids)]),
        m("price_per_peak", f"Price per peak TFLOP/s ({dev.precision})", "USD/(TFLOP/s)",
          cost.price_per_peak * per_tflops, [format_usd(v * per_tflops) for v in cost.price_per_peak]),
        m("price_per_sustained", "Price per sustained TFLOP/s", "USD/(TFLOP/s)", cost.price_per_sustained * per_tflops,
          [format_usd(v * per_tflops) for v in cost.price_per_sustained]),
        m("tco", f"TCO per unit ({cost.years:g} years)", "USD", cost.tco, [format_usd(v) for v in cost.tco]),
    )


def _cited_row(device: Device, figure: str, cited: Cited | None) -> SourceRow | None:
    if cited is None:
        return None
    src = device.source_of(cited)
    if src is not None:
        return SourceRow(device.name, figure, cited.text, src.title, src.url, src.date)
    return SourceRow(device.name, figure, cited.text, cited.note or "entered by the user (no source cited)", "", "")


def figure_sources(analysis: ModelAnalysis, requirements: Requirements) -> tuple[SourceRow, ...]:
    """Where every device figure the analysis, the cost model and the plan used comes from."""
    rows: list[SourceRow | None] = []
    for j, device in enumerate(analysis.devices.devices):
        precision = analysis.devices.compute_of(j)  # the analysis precision, or this device's fallback
        rows.append(_cited_row(device, f"peak {precision}", device.peak.get(precision)))
        for level in device.memory:
            if level.role == "registers":
                continue
            rows.append(_cited_row(device, f"{level.name} capacity", level.capacity))
            rows.append(_cited_row(device, f"{level.name} bandwidth", level.bandwidth))
        for row in energy_table(device, precision):
            cited = None if row.is_default else _energy_cited(device, row)
            rows.append(_cited_row(device, f"energy: {row.label}", cited) if cited is not None else
                        SourceRow(device.name, f"energy: {row.label}", f"{row.value * 1e12:.3g} p{row.unit}",
                                  row.source, "", ""))
        eng = device.matrix_engine
        if eng is not None:
            for name in ("sm_count", "units", "rows", "cols"):
                rows.append(_cited_row(device, f"matrix engine {name.replace('_', ' ')}", getattr(eng, name)))
        rows.append(_cited_row(device, "TDP", device.tdp))
        if device.id in requirements.price:
            rows.append(SourceRow(device.name, "price", format_usd(requirements.price[device.id]),
                                  "quote entered for this plan" + _quote_note(requirements.price_source, device.id),
                                  "", ""))
        else:
            rows.append(_cited_row(device, "price", device.price))
        if device.id in requirements.cloud_price:
            rows.append(SourceRow(device.name, "cloud price", f"${requirements.cloud_price[device.id] * 3600:.2f}/h",
                                  "cloud price entered for this plan"
                                  + _quote_note(requirements.cloud_price_source, device.id), "", ""))
        else:
            rows.append(_cited_row(device, "cloud price", device.cloud_price))
        if device.efficiency_compute != 1.0 or device.efficiency_memory != 1.0:
            rows.append(SourceRow(device.name, "efficiency factors", f"compute {device.efficiency_compute:g}, "
                                  f"memory {device.efficiency_memory:g}", "device file (assumed)", "", ""))
    return tuple(r for r in rows if r is not None)


def _quote_note(notes, device_id: str) -> str:
    return f": {notes[device_id]}" if device_id in notes else ""


def references(sources) -> tuple[tuple[tuple[int, SourceRow], ...], dict[tuple[str, str, str], int]]:
    """Number each distinct source (title, URL, date) in order of first use: ((n, row), ...) and row key -> n."""
    numbers: dict[tuple[str, str, str], int] = {}
    firsts = []
    for row in sources:
        key = (row.title, row.url, row.date)
        if key not in numbers:
            numbers[key] = len(numbers) + 1
            firsts.append((numbers[key], row))
    return tuple(firsts), numbers


def _energy_cited(device: Device, row) -> Cited | None:
    if row.key == "mac":
        return device.energy_per_mac.get(row.label.split(" at ")[-1])
    return device.memory[int(row.key[7:-1])].energy


METHOD = (
    ("Roofline", "I = FLOPs / bytes (each tensor counted once); attainable = min(peak \u00d7 eta_c, I \u00d7 BW \u00d7 eta_m); "
                 "ridge = peak / BW. An operator is memory-bound when I < ridge."),
    ("Modelled time", "t = max(FLOPs / (peak \u00d7 eta_c \u00d7 mapping efficiency), max over memory levels of traffic / "
                      "(level bandwidth \u00d7 eta_m)); traffic adds the re-reads of operands that do not fit on chip. "
                      "Latency = sum of t over operators \u00d7 repeat count; throughput = batch / latency."),
    ("Utilization and fringe tax", "utilization = (total FLOPs / latency) / peak; fringe tax = 1 - mapping "
                                   "efficiency (MAC-weighted), the idle PEs or tile slots of partial folds and waves."),
    ("Energy", "E = sum over memory levels of traffic \u00d7 energy per byte + MACs \u00d7 energy per MAC (other FLOPs at half "
               "a MAC); per inference or token = E / batch. Missing figures use Horowitz's 45 nm table."),
    ("Memory check", "M_req = weights + KV cache + largest operator's activations; pass when M_req <= capacity."),
    ("Latency floor", "T_mem = bytes per pass / BW; pass when T_mem <= latency limit (cannot be beaten by compute)."),
    ("Compute check", "T_compute = FLOPs / (peak \u00d7 eta_c \u00d7 mapping efficiency); pass when <= the frame or token "
                      "budget (30 FPS -> 33.3 ms)."),
    ("Units", "units = replica \u00d7 ceil(target / (replica \u00d7 throughput per unit)), replica = ceil(M_req / capacity)."),
    ("Cost", "price per peak TFLOP/s = price / peak; per sustained = price / achieved FLOP/s; electricity = TDP \u00d7 "
             "utilization \u00d7 PUE \u00d7 hours \u00d7 price per kWh; TCO = price + electricity (per unit, as in the Summary's per-unit rows). "
             "Cost per million: the plan's fleet cost on the ranking's basis / (target \u00d7 utilization \u00d7 "
             "seconds) \u00d7 10^6, the only cost per million this report shows."),
    ("Buy versus rent", "break-even hours = price / (cloud price per hour - electricity per hour); buy when the "
                        "break-even falls inside the horizon."),
)


def summary_caption(data) -> str:
    """What the Summary's rows mean: the plan's rows for the fleet, the others for one unit."""
    c = data.cost
    return (f"The rows marked \"Plan\" describe the configuration the procurement plan sizes for each device (its "
            f"units, split and fleet cost over {c.years:g} years); the other rows are one unit of each device "
            "running the workload above. Cost per million: " + COST_PER_MILLION_DEFINITION.format(unit=c.unit)
            + f" ({c.utilization:.0%} utilization). \u2014 marks a figure the catalog does not give (see Sources).")


def model_statement(analysis: ModelAnalysis) -> str:
    """The model as a committee reads it: name, parameters, the format of each tensor, phase and lengths."""
    t, ctx = analysis.table, analysis.ctx
    params = t.total("params")
    fm = analysis.devices.formats
    tensors = (f"weights, activations and KV cache in {analysis.precision.upper()}" if fm is None
               else fm.label())
    seq = ctx.seq_len or (analysis.model.default_seq_len() if analysis.model is not None else None)
    lengths = (f"{'context' if ctx.phase == 'decode' else 'sequence'} {seq} tokens, " if seq else "")
    name = analysis.model.name if analysis.model is not None else "model"
    size = (f"{params / 1e9:.4g} billion" if params >= 1e9 else f"{params / 1e6:.4g} million" if params >= 1e6
            else f"{params:,.0f}")
    return f"{name}: {size} parameters; {tensors}; {ctx.phase}, {lengths}batch {ctx.batch}"


def price_statement(result: PlanResult) -> str:
    """Which device lacks which price (neither the catalog nor a quote gives it)."""
    lacking = [f"{d.name}: no {' and no '.join(d.lacks)}" for d in result.devices if d.lacks]
    return "; ".join(lacking) if lacking else "every device has a purchase and a rent price"


def _workload(analysis: ModelAnalysis) -> str:
    ctx = analysis.ctx
    seq = ctx.seq_len or (analysis.model.default_seq_len() if analysis.model is not None else None)
    parts = [ctx.phase, f"batch {ctx.batch}"]
    if seq:
        parts.append(f"{'context' if ctx.phase == 'decode' else 'sequence'} {seq} tokens")
    fm = analysis.devices.formats
    parts.append(analysis.precision.upper() if fm is None else f"{fm.label()}, computing at {fm.compute.upper()}")
    if ctx.attention == "fused":
        parts.append("fused attention (FlashAttention)")
    if ctx.phase == "prefill":  # decode computes one position per sequence either way
        parts.append("LM head on the last position" if ctx.lm_head == "last" else "LM head on every position")
    return ", ".join(parts)


def _assumptions(data_plan: PlanResult, analysis: ModelAnalysis, time_model: str = "ideal",
                 sections: tuple = (None, False, False)) -> tuple[tuple[str, str], ...]:
    req = data_plan.requirements
    t = analysis.table
    params, active = t.total("params"), t.total("active_params")
    rows = [("Model", model_statement(analysis)),
            ("Workload", _workload(analysis)),
            ("Parameters", format_si(params, "params", 4) + (f", {format_si(active, 'params', 4)} active per token"
                                                           if active != params else "")),
            ("Times", time_statement(analysis, time_model, *sections))]
    if req.target is not None:
        rows.append(("Target", f"{req.target:,.0f} {req.target_unit}"))
    if req.latency is not None:
        rows.append(("Latency limit", format_si(req.latency, "s", 3)))
    if req.budget is not None:
        rows.append(("Budget", f"{format_usd(req.budget)} ({'TCO' if req.budget_covers == 'tco' else 'capital'})"))
    if req.power_cap is not None:
        rows.append(("Power cap", f"{format_si(req.power_cap, 'W', 3)} per {req.power_scope}"))
    rows += list(data_plan.assumptions)
    rows.append(("Ranking", {"buy": "by the TCO of buying the plan's units", "rent": "by renting the plan's units",
                             "cheaper": "by the cheaper of buying and renting, per device"}[req.rank_by]))
    rows.append(("Cost per million", COST_PER_MILLION_DEFINITION.format(unit=data_plan.cost.unit)))
    rows.append(("Prices", price_statement(data_plan)))
    rows.append(("Capacities", CAPACITY_NOTE))
    dev = analysis.devices
    if dev.formats is not None:
        rows.append(("Tensor formats", "; ".join(dev.formats.notes())))
    rows += [(f"Precision: {d.name}", note) for d, note in zip(dev.devices, dev.precision_notes) if note]
    for device, used in zip(analysis.devices.devices, analysis.devices.defaults_used):
        if used:
            rows.append((f"Defaults: {device.name}", ", ".join(used)))
    return tuple(rows)


def default_title(analysis: ModelAnalysis) -> str:
    """The title a report gets when none is given: the model and the device count (the GUI prefills it)."""
    model_name = analysis.model.name if analysis.model is not None else "model"
    n = len(analysis.devices)
    return f"{model_name} on {n} accelerator{'s' if n != 1 else ''}"


def build_report(analysis: ModelAnalysis, assumptions: CostAssumptionsLike, requirements: Requirements | None = None,
                 *, title: str | None = None, created: _dt.date | None = None,
                 systems: SystemsSection = SystemsSection(),
                 training: TrainingSection = TrainingSection(),
                 serving: ServingSection = ServingSection(), time_model: str | None = None) -> ReportData:
    """Everything the report shows, for the analysis's model and devices. ``analysis`` carries the times of
    ``time_model`` already (:func:`as_time_model`); by default the model is the assumptions' ``time_model`` (the
    app's state), else ideal. The report says which, and per device where its times come from."""
    if analysis is None or not len(analysis.devices):
        raise ValueError("devices: select at least one device for a report")
    time_model = time_model or getattr(assumptions, "time_model", None) or "ideal"
    req = requirements or Requirements()
    results = Results.of_analysis(analysis, assumptions, req)  # the bundle the panels and the CLI read too
    result = results.plan
    a, cost = result.analysis, result.cost
    n = len(a.devices)
    roofline = tuple(results.roofline(d) for d in range(n))
    energy = results.energy(0)
    tiling = tuple(results.tiling(default_row(a, -1, d), d) for d in range(n))
    best = result.ranked[0]
    recommendation = (f"{best.name}: {best.reason}." if best.feasible and math.isfinite(best.rank_cost) else
                      "No device meets every requirement with the figures available; see the procurement plan.")
    return ReportData(
        title=title or default_title(a),
        subtitle="Hardware comparison and procurement plan",
        created=(created or _dt.date.today()).isoformat(), generator=f"Hardware Explorer {__version__}",
        workload=_workload(a), analysis=a, cost=cost, plan=result, roofline=roofline, energy=energy, tiling=tiling,
        summary=summary_metrics(a, cost, energy, frozenset(req.price), result, time_model),
        assumptions=_assumptions(result, a, time_model, (systems, training_on_ideal(training, time_model),
                                                         bool(serving) and serving.time_model != time_model)),
        time_model=time_model,
        sources=figure_sources(a, req), method=METHOD, recommendation=recommendation, systems=systems,
        sensitivity=sensitivity(analysis, req, assumptions) if req.target is not None else None,
        training=training, serving=serving,
    )
