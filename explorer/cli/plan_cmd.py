"""``hwexplorer plan MODEL --device DEV ... --target RATE``: which device, how many, what it costs (docs/cli.md)."""

from __future__ import annotations

import math
from dataclasses import replace

from ..core.analysis.batch_search import DEFAULT_CAP, BatchSearch, search_batch
from ..core.analysis.cost import CostAssumptions
from ..core.analysis.evaluate import MODELS, evaluate
from ..core.analysis.procurement import (
    RANK_BASES,
    PlanResult,
    Requirements,
    format_usd,
    parse_latency,
    parse_rate,
)
from ..core.analysis.sensitivity import Sensitivity, sensitivity
from ..core.analysis.time_model import as_time_model
from ..core.analysis.time_source import SPEC, device_time_sources, heading
from ..core.money import parse_usd
from ..core.session.results import Results
from ..core.units import UnitError, format_si, parse_quantity, parse_si
from ..report.sensitivity_section import break_even_table, sensitivity_table
from .analyze_cmd import add_workload_args, workload_from_args
from .common import CliError, parse_pairs, print_json, text_table
from .serving_args import add_system_serving_args, refuse_system_serving_args
from .serving_args import add_workload_args as add_serving_args
from .tensor_args import formats_from_args


def add_parser(sub) -> None:
    p = sub.add_parser("plan", help="size and cost a deployment: checks, units, TCO, buy vs rent, ranking",
                       description="The chapter's three feasibility checks, the units needed to reach a target, "
                                   "capital, energy and TCO, buy vs rent, and a ranking of every DEV.")
    p.add_argument("model", metavar="MODEL", help="a template id (e.g. gpt2) or a model file (.json)")
    add_workload_args(p)
    p.add_argument("--system", action="append", metavar="SYS",
                   help="size on systems instead of devices: a system id or file (repeatable); each system's "
                        "layouts, the fewest devices that meet the target and the latency limit")
    add_requirement_args(p, target_required=False)
    add_serving_args(p, rate_default=None)
    add_system_serving_args(p)
    p.add_argument("--search-batch", nargs="?", type=int, const=DEFAULT_CAP, default=None, metavar="CAP",
                   help="instead of --batch, run each device at the power of two up to CAP (default "
                        f"{DEFAULT_CAP}) that meets --latency at the lowest cost, and say why; with --system, "
                        "each system's batch and layout together (the fewest devices)")
    p.add_argument("--sensitivity", action="store_true",
                   help="add how the ranking changes with prices +/-20 %%, utilization 30-90 %%, the electricity "
                        "price (x0.5, x2) and the horizon (1, 3, 5 years), and the buy vs rent break-even per device")
    p.add_argument("--json", action="store_true", help="print one JSON object (SI units, USD)")
    p.set_defaults(func=run)


def add_requirement_args(p, target_required: bool) -> None:
    """Requirement and ownership options shared by plan and report."""
    p.add_argument("--target", required=target_required, metavar="RATE",
                   help='fleet throughput, e.g. "2000 tokens/s" or "500 inferences/s" (also picks the phase: '
                        "tokens/s -> decode, inferences/s -> prefill, unless --phase is given)")
    p.add_argument("--latency", metavar="TIME", help='latency limit per inference or decode step, e.g. "50 ms", or '
                                                     'a frame rate whose period is the budget, e.g. "30 FPS"')
    p.add_argument("--budget", metavar="USD", help='e.g. "500000 USD" (compared with the capital cost)')
    p.add_argument("--budget-covers", choices=("capital", "tco"), default="capital",
                   help="what the budget pays for (default capital)")
    p.add_argument("--power-cap", metavar="POWER", help='e.g. "10 kW"')
    p.add_argument("--power-scope", choices=("node", "site"), default="site",
                   help="site: every unit at TDP x PUE; node: one unit's TDP (default site)")
    p.add_argument("--years", type=float, default=3.0, help="ownership horizon in years (default 3)")
    p.add_argument("--electricity", default="0.12 USD/kWh", metavar="PRICE", help='default "0.12 USD/kWh"')
    p.add_argument("--pue", type=float, default=1.3, help="power usage effectiveness, >= 1 (default 1.3)")
    p.add_argument("--utilization", type=float, default=0.6,
                   help="average duty cycle for energy and cost per million, in (0, 1] (default 0.6)")
    p.add_argument("--time-model", choices=MODELS, default="ideal",
                   help="the times the plan sizes with: ideal (default; datasheet figures) or calibrated (the "
                        "devices' fitted kernel curves and the systems' fitted links where stored; each time says "
                        "which it is: spec, partly calibrated or calibrated)")
    p.add_argument("--rank", choices=RANK_BASES, default="buy",
                   help="rank by buy (the TCO of owning), rent (the same units rented around the clock for the "
                        "horizon) or cheaper (the cheaper of the two per device; a rent-only device is ranked by "
                        "rent); default buy")
    p.add_argument("--quote", "--price", dest="price", action="append", default=[], metavar="DEV=USD",
                   help='a purchase quote replacing the catalog price, e.g. nvidia-h100-sxm5="$30k" or "30000 USD" '
                        "(repeatable)")
    p.add_argument("--rent", "--cloud-price", dest="cloud_price", action="append", default=[], metavar="DEV=USD/h",
                   help='a rent price per unit-hour replacing the catalog cloud price, e.g. nvidia-h100-sxm5="$4.10/h" '
                        "(repeatable)")


def _quantity(text: str | None, kind: str, option: str) -> float | None:
    if text is None:
        return None
    try:
        return parse_si(text, kind, option)
    except UnitError as exc:
        raise CliError(str(exc)) from None


def _money(text: str | None, option: str) -> float | None:
    if text is None:
        return None
    try:
        return parse_usd(text, option)
    except UnitError as exc:
        raise CliError(str(exc)) from None


def with_project_quotes(req: Requirements, model_arg: str, ids: set[str]) -> Requirements:
    """When MODEL is a project file, its quotes (the one store, with their sources) for the devices given, under
    the quotes of --quote and --rent, which win."""
    from pathlib import Path

    from ..core.session.project import SUFFIX, load_project

    if Path(model_arg).suffix.lower() != SUFFIX or not Path(model_arg).exists():
        return req
    stored = load_project(model_arg).requirements  # already read once by MODEL: a bad file stopped there
    fields = {}
    for name in ("price", "cloud_price"):
        given = getattr(req, name)
        quotes = {k: v for k, v in getattr(stored, name).items() if k in ids and k not in given}
        notes = {k: v for k, v in getattr(stored, f"{name}_source").items() if k in quotes}
        fields[name], fields[f"{name}_source"] = {**quotes, **given}, notes
    return replace(req, **fields)


def prepare(args):
    """Parse requirements, choose the phase from the target's unit, then evaluate: (analysis, requirements, costs)."""
    target, unit = None, "tokens/s"
    try:
        if args.target is not None:
            target, unit = parse_rate(args.target, "--target")
        latency = parse_latency(args.latency, "--latency") if args.latency is not None else None
    except UnitError as exc:
        raise CliError(str(exc)) from None
    if target is not None and args.phase is None:
        args.phase = "decode" if unit == "tokens/s" else "prefill"
    model, ctx, devices = workload_from_args(args)
    try:
        electricity = float(parse_quantity(args.electricity, "energy_price", "--electricity").to("USD/kWh").magnitude)
    except UnitError as exc:
        raise CliError(str(exc)) from None
    try:
        costs = CostAssumptions(years=args.years, electricity_usd_per_kwh=electricity, pue=args.pue,
                                utilization=args.utilization)
        req = Requirements(target=target, target_unit=unit, latency=latency,
                           budget=_money(args.budget, "--budget"), budget_covers=args.budget_covers,
                           power_cap=_quantity(args.power_cap, "power", "--power-cap"), power_scope=args.power_scope,
                           price=parse_pairs(args.price, "--quote", "money"),
                           cloud_price=parse_pairs(args.cloud_price, "--rent", "money_rate"),
                           rank_by=getattr(args, "rank", "buy"))
        req = with_project_quotes(req, args.model, {d.id for d in devices})
    except ValueError as exc:
        raise CliError(str(exc)) from None
    analysis = evaluate(model, devices, args.precision, ctx, formats=formats_from_args(args))
    if analysis.table.errors:
        i, msg = analysis.table.errors[0]
        raise CliError(f"layer {i} ({model.layers[i].name or model.layers[i].kind}): {msg}")
    analysis = as_time_model(analysis, getattr(args, "time_model", "ideal"))  # what every step below times with
    ids = set(analysis.devices.ids)
    for option, given in (("--quote", req.price), ("--rent", req.cloud_price)):
        unknown = sorted(set(given) - ids)
        if unknown:
            raise CliError(f"{option}: {', '.join(unknown)} is not one of the devices ({', '.join(sorted(ids))})")
    return analysis, req, costs


def run(args) -> int:
    if args.rate is not None:  # plan by serving: a workload and service levels (docs/serving.md)
        from .plan_serving import run_plan_serving

        return run_plan_serving(args)
    refuse_system_serving_args(args)
    if args.target is None:
        raise CliError("--target: give --target RATE (throughput) or --rate with service levels (serving)")
    if args.system:
        from .plan_systems import run_plan_systems

        return run_plan_systems(args)
    analysis, req, costs = prepare(args)
    search = None
    try:
        if getattr(args, "search_batch", None) is not None:
            search = search_batch(analysis.model, analysis.devices, analysis.precision, analysis.ctx, req, costs,
                                  cap=args.search_batch, time_model=args.time_model)
            result = search.result
        else:
            result = Results.of_analysis(analysis, costs, req).plan
    except ValueError as exc:
        raise CliError(str(exc).replace("max_batch:", "--search-batch:")) from None
    sens = None
    if getattr(args, "sensitivity", False):
        if search is not None:
            raise CliError("--sensitivity: give it without --search-batch (it varies the plan at one batch)")
        try:
            sens = sensitivity(analysis, req, costs)
        except ValueError as exc:
            raise CliError(str(exc)) from None
    if args.json:
        data = plan_json(result, args.time_model)
        if search is not None:
            data["batch_search"] = search_json(search)
        if sens is not None:
            data["sensitivity"] = sensitivity_json(sens)
        print_json(data)
    else:
        print_plan(result, search, args.time_model)
        if sens is not None:
            print()
            print_sensitivity(sens)
    return 0


def sensitivity_json(s: Sensitivity) -> dict:
    return {
        "scenarios": [{"group": x.group, "label": x.label, "best": x.best or None, "order": list(x.order),
                       "rank_cost_usd": {k: _num(v) for k, v in x.cost.items()}, "changed": x.changed}
                      for x in s.scenarios],
        "stable": s.stable,
        "break_even": [{"id": b.id, "price_usd": _num(b.price), "rent_usd_per_hour": _num(b.rent_per_hour),
                        "electricity_usd_per_hour": _num(b.electricity_per_hour),
                        "hours": _num(b.hours), "months": _num(b.months),
                        "breaks_even": None if math.isnan(b.hours) else math.isfinite(b.hours),
                        "verdict": b.verdict or None} for b in s.break_even],
    }


def print_sensitivity(s: Sensitivity) -> None:
    print(f"sensitivity ({s.baseline.requirements.rank_by} ranking; "
          f"{'the same #1 in every scenario' if s.stable else 'the #1 changes in some scenarios'}):")
    print(text_table(*sensitivity_table(s)))
    print()
    print("buy vs rent break-even (owning is cheaper after price / (rent - electricity) per unit-hour):")
    print(text_table(*break_even_table(s)))


def search_json(s: BatchSearch) -> dict:
    """The batch search's grid (rows: batches; columns: devices) and its choice per device."""
    return {"batches": list(s.batches), "device_ids": list(s.ids),
            "rank_cost_usd": [[_num(x) for x in row] for row in s.rank_cost],
            "latency_s": [[_num(x) for x in row] for row in s.latency],
            "feasible": s.feasible.tolist(),
            "chosen": dict(zip(s.ids, s.chosen)), "time_model": s.time_model, "why": dict(zip(s.ids, s.why))}


def _num(x) -> float | None:
    x = float(x)
    return x if math.isfinite(x) else None


def plan_json(r: PlanResult, time_model: str = "ideal") -> dict:
    req, cost = r.requirements, r.cost
    sources = dict(zip(r.analysis.devices.ids, device_time_sources(r.analysis, time_model)))
    return {
        "time_model": time_model,
        "requirements": {"target": req.target, "target_unit": r.unit, "latency_s": req.latency, "budget_usd": req.budget,
                         "budget_covers": req.budget_covers, "power_cap_w": req.power_cap,
                         "power_scope": req.power_scope, "rank_by": req.rank_by},
        "assumptions": {"years": cost.years, "electricity_usd_per_kwh": cost.electricity_usd_per_kwh,
                        "pue": cost.pue, "utilization": cost.utilization,
                        "notes": {topic: text for topic, text in r.assumptions}},
        "devices": [{
            "id": d.id, "name": d.name, "rank": d.rank, "reason": d.reason, "feasible": d.feasible,
            "time_source": sources.get(d.id, SPEC),
            "checks": [{"name": c.name, "status": c.status, "verdict": verdict, "label": label,
                        "value": _num(c.value), "limit": _num(c.limit), "unit": c.unit, "detail": c.detail,
                        "missing": c.missing or None} for c, (verdict, label) in zip(d.checks, d.verdicts)],
            "latency_s": _num(d.latency), "throughput_per_unit": _num(d.throughput_per_unit), "shards": d.shards,
            "units": d.units or None, "price_usd": _num(d.price), "capital_usd": _num(d.capital),
            "energy_cost_usd": _num(d.energy_cost), "tco_usd": _num(d.tco), "fleet_power_w": _num(d.fleet_power),
            "cost_per_million_usd": _num(d.cost_per_million), "cloud_cost_usd": _num(d.cloud_cost),
            "break_even_hours": _num(d.break_even_hours),
            "breaks_even": None if math.isnan(d.break_even_hours) else math.isfinite(d.break_even_hours),
            "buy_or_rent": d.buy_or_rent or None, "within_budget": d.within_budget, "within_power": d.within_power,
            "missing": list(d.missing),
            "rank_basis": d.rank_basis or None, "rank_cost_usd": _num(d.rank_cost),
            "rank_cost_per_million_usd": _num(d.rank_cost_per_million), "lacks": list(d.lacks),
            "batch": d.batch or r.analysis.ctx.batch,
        } for d in r.ranked],
    }


def print_plan(r: PlanResult, search: BatchSearch | None = None, time_model: str = "ideal") -> None:
    req = r.requirements
    a = r.analysis
    sources = dict(zip(a.devices.ids, device_time_sources(a, time_model)))
    target = f"{req.target:,.0f} {r.unit}" if req.target is not None else "none (one replica per device)"
    batch = (f"batch searched over {search.batches[0]}-{search.batches[-1]} per device under the {search.time_model} "
             "model" if search is not None else f"batch {a.ctx.batch}")
    print(f"{a.model.name}: {a.ctx.phase}, {batch}, {a.precision}; target {target}"
          + (f", latency limit {format_si(req.latency, 's', 3)}" if req.latency else "")
          + (f", budget {format_usd(req.budget)} ({req.budget_covers})" if req.budget else "")
          + (f", power cap {format_si(req.power_cap, 'W', 3)} per {req.power_scope}" if req.power_cap else ""))
    print(f"ownership: {r.cost.years:g} years, {r.cost.electricity_usd_per_kwh:g} USD/kWh, PUE {r.cost.pue:g}, "
          f"utilization {r.cost.utilization:.0%}")
    print(f"times: the {time_model} model")
    for d in r.ranked:
        print()
        print(f"#{d.rank} {d.name} [{d.id}]: {d.reason}")
        print(f"   times {heading(sources.get(d.id, SPEC))}")
        for c, (_, label) in zip(d.checks, d.verdicts):  # a split model reads SPLIT OVER N UNITS, not FAIL
            print(f"   {c.title:<26} {label:<7} {c.detail or 'no ' + c.missing}")
        if d.units:
            print(f"   units {d.units}, capital {format_usd(d.capital)}, electricity {format_usd(d.energy_cost)}, "
                  f"TCO {format_usd(d.tco)}, power {format_si(d.fleet_power, 'W', 3)} at the wall")
        if d.buy_or_rent:
            months = (f"{d.break_even_months:.1f} months" if math.isfinite(d.break_even_months) else "never")
            print(f"   buy vs rent: {d.buy_or_rent} (break-even {months}; renting costs "
                  f"{format_usd(d.cloud_cost)} over the horizon)")
        if d.missing:
            print(f"   missing: {', '.join(d.missing)}")
        if d.lacks:
            print(f"   no {' and no '.join(d.lacks)} (catalog or quote)")
