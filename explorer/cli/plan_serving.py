"""``hwexplorer plan MODEL --device ... --rate 10/s --input 1024 --output 256 --ttft-p90 500ms --tpot-p90 50ms``:
the planner's requirements as a serving workload and service levels (docs/serving.md "Planning by serving",
JSON fields in docs/cli.md). Per device, :func:`explorer.core.serving.fleet.size_fleet` finds the highest rate one
replica serves within the service levels and the fewest replicas for the rate; this module ranks them by the
chosen basis (buy: owned TCO, rent: the catalog's or --rent's price, cheaper: the cheaper of the two) and says
why a device meets no load. With ``--system`` a replica is a layout of tp x pp devices of the system
(:func:`explorer.core.serving.system_fleet.size_system`: every tensor-parallel layout sized, the cheapest kept);
devices and systems are ranked together."""

from __future__ import annotations

import math
from dataclasses import replace

from ..core.analysis.time_source import heading
from ..core.serving.analytic import estimate
from ..core.serving.fleet import SECONDS_PER_YEAR, size_fleet
from ..core.serving.serve import device_setup
from ..core.serving.system_fleet import size_system
from ..core.serving.workload import SLO, Workload, WorkloadError
from ..core.units import UnitError, format_bytes, parse_quantity
from .common import CliError, parse_pairs, print_json, text_table
from .resolve import load_model_arg, project_devices
from .serve_cmd import _workload_json
from .serving_args import _slo, _workload, check_engine, policy_from_args
from .system_cmd import options_json
from .tensor_args import formats_from_args

#: options of the throughput plan that have no meaning when planning by serving (the service levels replace them)
_NOT_WITH_RATE = (("target", "--target"), ("latency", "--latency (give --ttft-p90, --tpot-p90 ...)"),
                  ("search_batch", "--search-batch"), ("budget", "--budget"), ("power_cap", "--power-cap"))


def _refuse_throughput_options(args) -> None:
    for name, option in _NOT_WITH_RATE:
        if getattr(args, name, None) is not None:
            raise CliError(f"--rate: plans by serving; {option} is for the throughput plan, not with --rate")
    if getattr(args, "sensitivity", False):
        raise CliError("--rate: plans by serving; --sensitivity is for the throughput plan, not with --rate")


def _no_load_reason(workload: Workload, setup, slo: SLO) -> str:
    """Why no arrival rate meets the service levels: the targets missed by a lone request (the lowest load)."""
    lone = estimate(workload, setup, slo, [1e-6 * max(workload.mean_rate(), 1e-3)])[0]
    missed = [f"{c.metric.upper()} {c.percentile.upper()} {c.value_s * 1e3:.3g} ms > target {c.target_s * 1e3:.3g} "
              f"ms" for c in lone.slo if not c.met]
    if missed:
        return "cannot meet the service levels at any load: a request alone gives " + ", ".join(missed)
    return "cannot meet the service levels at any load (the queue at the lowest sizable rate misses them)"


def _rank(rows: list[dict], basis: str) -> list[dict]:
    def per_million(r: dict) -> float:
        buy, rent = r["cost_per_million_usd"], r["rented_per_million_usd"]
        known = [x for x in (buy, rent) if x is not None]
        pick = {"buy": buy, "rent": rent, "cheaper": min(known) if known else None}[basis]
        r["rank_basis"] = (None if pick is None else basis if basis != "cheaper"
                           else ("buy" if pick == buy else "rent"))
        r["rank_cost_per_million_usd"] = pick
        return pick

    ordered = sorted(rows, key=lambda r: (not r["feasible"], per_million(r) is None, per_million(r) or 0.0))
    for i, r in enumerate(ordered, 1):
        r["rank"] = i
    return ordered


def _num(x) -> float | None:
    x = float(x)
    return x if math.isfinite(x) else None


def run_plan_serving(args) -> int:
    _refuse_throughput_options(args)
    check_engine(args)
    slo = _slo(args)
    workload = _workload(args)
    if not slo.targets():
        raise CliError("--rate: planning by serving needs a service level, e.g. --ttft-p90 500ms --tpot-p90 50ms")
    if not args.device and not args.system:
        raise CliError("--device: give at least one --device DEV or --system SYS")
    try:
        electricity = float(parse_quantity(args.electricity, "energy_price", "--electricity").to("USD/kWh").magnitude)
    except UnitError as exc:
        raise CliError(str(exc)) from None
    if not (args.years > 0 and math.isfinite(args.years)):
        raise CliError(f"--years: must be > 0, got {args.years}")
    if not args.pue >= 1:
        raise CliError(f"--pue: must be >= 1, got {args.pue}")
    quotes = parse_pairs(args.price, "--quote", "money")
    rents = parse_pairs(args.cloud_price, "--rent", "money_rate")
    model, _ = load_model_arg(args.model)
    devices = project_devices(args.model, args.device, getattr(args, "db", None)) if args.device else []
    systems = _systems(args)
    options = _options(args)
    ids = {d.id for d in devices} | {d.id for _, d in systems}
    for option, given in (("--quote", quotes), ("--rent", rents)):
        unknown = sorted(set(given) - ids)
        if unknown:
            raise CliError(f"{option}: {', '.join(unknown)} is not one of the devices ({', '.join(sorted(ids))})")
    time_model = getattr(args, "time_model", "ideal")
    common = {"policy": policy_from_args(args), "precision": args.precision, "formats": formats_from_args(args),
              "utilization": args.memory_utilization, "block_size": args.block_size}
    sized, rows = [], []
    try:
        for d in devices:
            setup = device_setup(model, d, workload, usd_per_s=rents.get(d.id), time_model=time_model, **common)
            if setup.memory.blocks < 1:
                rows.append(_row(d.id, d.name, f"no room for the KV cache: weights {format_bytes(setup.memory.weights)}"
                                 f" of {format_bytes(setup.memory.capacity)} x {setup.memory.utilization:g}"))
                rows[-1].update(time_source=setup.time_source, time_label=setup.time_label)
            else:
                sized.append((setup, d))
        fleet = size_fleet(workload, [s for s, _ in sized], [d for _, d in sized], slo, quotes, args.years,
                           electricity, args.pue) if sized else ()
        layouts = [(sy, d, size_system(model, sy, d, workload, slo, quotes=quotes, years=args.years,
                                       usd_per_kwh=electricity, pue=args.pue, usd_per_s=rents.get(d.id),
                                       options=replace(options, time_model=time_model), **common))
                   for sy, d in systems]
    except (ValueError, WorkloadError) as exc:
        msg = str(exc)
        raise CliError(msg if msg.startswith("--") else f"plan: {msg}") from None
    setups = {d.id: s for s, d in sized}
    seconds = args.years * SECONDS_PER_YEAR
    _, o = workload.mean_lengths()
    for f in fleet:
        setup = setups[f.device_id]
        row = _row(f.device_id, f.name, f.reason if f.feasible else _no_load_reason(workload, setup, slo))
        row.update(time_source=setup.time_source, time_label=setup.time_label)
        usd_s = setup.usd_per_s if setup.usd_per_s is not None else math.nan
        row.update(feasible=f.feasible, slo_rate_per_s=_num(f.slo_rate) if f.feasible else 0.0,
                   price_usd=_num(f.price_per_device), price_source=f.price_source or None,
                   rent_usd_per_hour=_num(usd_s * 3600), reason=row["reason"] or None)
        if f.feasible:
            row.update(replicas=f.replicas, devices=f.replicas * setup.surface.devices, busy_share=_num(f.busy_share),
                       output_tokens_per_s=workload.mean_rate() * o, capital_usd=_num(f.capital), tco_usd=_num(f.tco),
                       rent_usd=_num(f.replicas * setup.surface.devices * usd_s * seconds),
                       cost_per_million_usd=_num(f.cost_per_million),
                       rented_per_million_usd=_num(f.rented_per_million))
        rows.append(row)
    rows += [_system_row(sy, d, sized_system, workload, seconds, slo) for sy, d, sized_system in layouts]
    ranked = _rank(rows, args.rank)
    data = {"mode": "serving", "model": model.name, "precision": args.precision, "time_model": time_model,
            "workload": _workload_json(workload),
            "slo": [{"metric": m, "percentile": p, "target_s": t} for m, t, p in slo.targets()],
            "assumptions": {"years": args.years, "electricity_usd_per_kwh": electricity, "pue": args.pue,
                            "memory_utilization": args.memory_utilization, "max_batch": args.max_batch},
            "rank_by": args.rank, "devices": ranked,
            "system_options": dict(options_json(options), nodes=args.nodes) if systems else None,
            "notes": {"system_replica": "with --system a replica is one layout of tp x pp devices; every tensor-"
                                        "parallel layout is sized and the cheapest kept (docs/serving.md)"}}
    if args.json:
        print_json(data)
    else:
        print_plan_serving(data)
    return 0


def _systems(args) -> list:
    """(system, its device) per --system, in the order given."""
    if not args.system:
        return []
    from .system_cmd import project_system

    db = getattr(args, "db", None)  # a project's device overrides, calibrations and link fits (resolve.py)
    systems = [project_system(args.model, spec, args.nodes, db) for spec in dict.fromkeys(args.system)]
    devs = {d.id: d for d in project_devices(args.model, sorted({s.device_id for s in systems}), db)}
    return [(s, devs[s.device_id]) for s in systems]


def _options(args):
    """The system pass's options of ``--overlap`` ... (their defaults without --system; given without one: one
    CliError naming the option)."""
    from .serving_args import refuse_system_serving_args
    from .system_cmd import options_from_args

    if not args.system:
        refuse_system_serving_args(args)
    return options_from_args(args)


def _system_row(system, device, sized_system, workload: Workload, seconds: float, slo: SLO) -> dict:
    """A system's row: its chosen layout's fleet, and every layout searched (``layouts``)."""
    best, fleets, setups = sized_system
    f = best.fleet
    row = _row(system.id, system.name, "" if best.feasible else
               (f"no layout on its {system.devices} devices leaves room for the KV cache after the weights ("
                + ", ".join(x.label for x in fleets) + ")" if all(x.fleet is None for x in fleets) else
                _no_load_reason(workload, setups[best.layout], slo)), kind="system", device=device.id)
    layouts = [{"layout": x.replica.to_dict(), "label": x.label, "replica_devices": x.replica_devices,
                "time_source": setups[x.layout].time_source,
                "slo_rate_per_s": _num(x.fleet.slo_rate) if x.fleet else 0.0,
                "replicas": x.fleet.replicas if x.feasible else None, "devices": x.devices if x.feasible else None,
                "cost_per_million_usd": _num(x.fleet.cost_per_million) if x.feasible else None,
                "reason": x.reason or None} for x in fleets]
    row.update(layout=best.replica.to_dict(), layout_label=best.label, replica_devices=best.replica_devices,
               layouts=layouts, time_source=setups[best.layout].time_source,
               time_label=setups[best.layout].time_label)
    if f is None:
        return row
    setup = setups[best.layout]
    usd_s = setup.usd_per_s if setup.usd_per_s is not None else math.nan
    row.update(price_usd=_num(f.price_per_device), price_source=f.price_source or None,
               rent_usd_per_hour=_num(usd_s * 3600))
    if best.feasible:
        _, o = workload.mean_lengths()
        row.update(feasible=True, reason=f.reason or None, slo_rate_per_s=_num(f.slo_rate), replicas=f.replicas,
                   devices=best.devices, nodes=best.nodes, busy_share=_num(f.busy_share),
                   output_tokens_per_s=workload.mean_rate() * o, capital_usd=_num(f.capital), tco_usd=_num(f.tco),
                   rent_usd=_num(best.devices * usd_s * seconds), cost_per_million_usd=_num(f.cost_per_million),
                   rented_per_million_usd=_num(f.rented_per_million))
    return row


def _row(device_id: str, name: str, reason: str, kind: str = "device", device: str | None = None) -> dict:
    return {"id": device_id, "name": name, "kind": kind, "device": device or device_id, "layout": None,
            "layout_label": None, "replica_devices": 1, "nodes": None, "layouts": None,
            "rank": 0, "feasible": False, "reason": reason or None,
            "slo_rate_per_s": 0.0, "replicas": None, "devices": None, "busy_share": None, "output_tokens_per_s": None,
            "price_usd": None, "price_source": None, "rent_usd_per_hour": None, "capital_usd": None, "tco_usd": None,
            "rent_usd": None, "cost_per_million_usd": None, "rented_per_million_usd": None, "rank_basis": None,
            "rank_cost_per_million_usd": None, "time_source": None, "time_label": None}


def _f(x, fmt: str) -> str:
    return "\u2014" if x is None else format(x, fmt)


def print_plan_serving(data: dict) -> None:
    w = data["workload"]
    levels = ", ".join(f"{s['metric'].upper()} {s['percentile'].upper()} {s['target_s'] * 1e3:.4g} ms"
                       for s in data["slo"])
    a = data["assumptions"]
    print(f"{data['model']}, {data['precision']}: serving {w['rate_per_s']:.4g} requests/s ({w['arrival']}), input "
          f"{w['mean_input_tokens']:.4g} and output {w['mean_output_tokens']:.4g} tokens (mean); service levels "
          f"{levels}; ranked by {data['rank_by']}")
    print(f"ownership: {a['years']:g} years, {a['electricity_usd_per_kwh']:g} USD/kWh, PUE {a['pue']:g}; a replica "
          "is one device, or one layout of tp x pp devices of a system")
    rows = [[f"#{r['rank']}", r["id"], r["layout_label"] or "1 device",
             _f(r["slo_rate_per_s"] if r["feasible"] else None, ".3g"),
             _f(r["replicas"], "d"), _f(r["devices"], "d"), _f(r["capital_usd"], ",.0f"), _f(r["tco_usd"], ",.0f"),
             _f(r["rent_usd"], ",.0f"), _f(r["cost_per_million_usd"], ".3g"), _f(r["rented_per_million_usd"], ".3g"),
             r["time_source"] or "\u2014"]
            for r in data["devices"]]
    o = data.get("system_options")
    if o:
        print(f"systems: {o['nodes']} node{'s' * (o['nodes'] > 1)} each, communication "
              f"{'overlapped with compute' if o['overlap'] else 'exposed'}, all-reduce {o['collective']}, "
              f"collectives in {o['collective_format']} format, skew {o['skew']:g}"
              + (", offload to host" if o["offload"] else ""))
    print(text_table(["rank", "device or system", "replica", "rate/replica [req/s]", "replicas", "devices",
                      "capital [USD]", "TCO [USD]", "rent [USD]", "owned [USD/M out tok]", "rented [USD/M out tok]",
                      "times"], rows))
    for r in data["devices"]:
        if r["reason"]:
            print(f"{r['id']}: {r['reason']}")
        if r["layouts"]:
            print(f"{r['id']} layouts searched (replica of tp x pp {r['device']}): " + "; ".join(
                x["label"] + (f" {_f(x['slo_rate_per_s'], '.3g')} req/s -> {x['devices']} devices, "
                              f"{_f(x['cost_per_million_usd'], '.3g')} USD/M" if x["devices"] else
                              f": {x['reason']}") for x in r["layouts"]))
    print(f"times: the {data['time_model']} model (spec = datasheet figures, calibrated = fitted to measurements)")
    if data["time_model"] != "ideal":
        for r in data["devices"]:
            if r["time_label"]:
                print(f"-- {r['id']}: {heading(r['time_source'])}; {r['time_label']}")
