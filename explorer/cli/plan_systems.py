"""``hwexplorer plan MODEL --system SYS [--system SYS ...] --target RATE``: devices and nodes per system with real
layouts and their communication (docs/cli.md, "plan --system")."""

from __future__ import annotations

import math

from ..core.analysis.procurement import format_usd, parse_latency, parse_rate
from ..core.parallel.batch_layout_search import plan_time_source, search_system_batch
from ..core.parallel.compare import size_on_systems
from ..core.parallel.sizing import NOT_PRICED, SystemPlan, size_fleet
from ..core.parallel.system_pass import Options
from ..core.units import UnitError, format_si
from .common import CliError, parse_pairs, print_json, text_table
from .tensor_args import formats_from_args


def run_plan_systems(args) -> int:
    from .analyze_cmd import workload_from_args
    from .resolve import project_devices
    from .system_cmd import project_system

    try:
        target, unit = parse_rate(args.target, "--target") if args.target is not None else (None, "tokens/s")
        latency = parse_latency(args.latency, "--latency") if args.latency is not None else None
    except UnitError as exc:
        raise CliError(str(exc)) from None
    if target is not None and args.phase is None:
        args.phase = "decode" if unit == "tokens/s" else "prefill"
    for option in ("budget", "power_cap"):
        if getattr(args, option, None) is not None:
            raise CliError(f"--{option.replace('_', '-')}: not used with --system yet (the system plan prices "
                           "devices only)")
    model, ctx, _ = workload_from_args(args)
    if target is not None and unit != ("tokens/s" if ctx.phase == "decode" else "inferences/s"):
        raise CliError(f"--target: given in {unit} but the {ctx.phase} phase counts "
                       f"{'tokens/s' if ctx.phase == 'decode' else 'inferences/s'}")
    db = getattr(args, "db", None)  # a project's device overrides, calibrations and link fits (resolve.py)
    systems = [project_system(args.model, spec, 1, db) for spec in dict.fromkeys(args.system)]
    devices = {d.id: d for d in project_devices(args.model, sorted({s.device_id for s in systems}), db)}
    price = parse_pairs(args.price, "--quote", "money")
    unknown = sorted(set(price) - set(devices))
    if unknown:
        raise CliError(f"--quote: {', '.join(unknown)} is not the device of any --system ({', '.join(sorted(devices))})")
    hardware = [(s, devices[s.device_id]) for s in systems]
    time_model = getattr(args, "time_model", "ideal")
    search = None
    if getattr(args, "search_batch", None) is not None:  # the batch and the layout, searched together
        try:
            search = search_system_batch(model, hardware, args.precision, ctx, target, latency, price,
                                         formats_from_args(args), options=Options(time_model=time_model),
                                         cap=args.search_batch)
        except ValueError as exc:
            raise CliError(str(exc).replace("max_batch:", "--search-batch:")) from None
        plans = search.result
        sources = list(search.result_sources)
    else:
        results = size_on_systems(model, hardware, args.precision, ctx, formats_from_args(args),
                                  options=Options(time_model=time_model))
        plans = size_fleet(results, target, latency, price)
        sources = [plan_time_source(r, p) for r, p in zip(results, plans)]
    rate_unit = "tokens/s" if ctx.phase == "decode" else "inferences/s"
    if args.json:
        data = {"model": model.name, "phase": ctx.phase, "batch": ctx.batch, "precision": args.precision,
                "target": target, "target_unit": rate_unit, "latency_s": latency, "time_model": time_model,
                "notes": {"sizing": "replicas = ceil(target / replica throughput); devices = replicas x tp x pp; "
                                    "the layout needing the fewest devices that fits and meets the latency limit",
                          "prices": NOT_PRICED},
                "systems": [dict(_plan_json(p), time_source=src) for p, src in zip(plans, sources)]}
        if search is not None:
            data["batch_search"] = {
                "batches": list(search.batches), "system_ids": [p.system_id for p in plans],
                "devices": [[int(x) if math.isfinite(x) else None for x in row] for row in search.devices],
                "latency_s": [[_n(float(x)) for x in row] for row in search.latency],
                "chosen": {p.system_id: b for p, b in zip(plans, search.chosen)}, "time_model": search.time_model,
                "time_sources": [list(row) for row in search.sources],
                "why": {p.system_id: w for p, w in zip(plans, search.why)}}
        print_json(data)
        return 0
    batch = (f"batch searched over {search.batches[0]}-{search.batches[-1]} per system under the "
             f"{search.time_model} model" if search is not None else f"batch {ctx.batch} per system")
    print(f"{model.name}: {ctx.phase}, {batch}, {args.precision}; target "
          + (f"{target:,.0f} {rate_unit}" if target else "none (one replica)")
          + (f", latency limit {format_si(latency, 's', 3)}" if latency else ""))
    print(f"times: the {time_model} model (per system: spec = datasheet figures, calibrated = fitted to measurements)")
    headers = ["system", *(["batch"] if search is not None else []), "layout", "replica", f"{rate_unit}/replica",
               "latency [ms]", "comm %", "replicas", "devices", "nodes", "price/device", "capital", "times", "feasible"]
    rows = [[p.name[:48], *([str(p.batch)] if search is not None else []), p.layout.label() if p.layout else "\u2014",
             f"{p.replica_devices} dev",
             _g(p.replica_throughput), _g(p.latency * 1e3), _g(100 * p.comm_share), str(p.replicas),
             str(p.devices), str(p.nodes), format_usd(p.price_per_device), format_usd(p.capital), src,
             "yes" if p.feasible else "NO: " + p.reason] for p, src in zip(plans, sources)]
    print(text_table(headers, rows))
    if search is not None:
        for p, why in zip(plans, search.why):
            print(f"-- {p.name.split(' (')[0]}: {why}")
    print(f"-- {NOT_PRICED}")
    return 0


def _g(x: float) -> str:
    return "\u2014" if not math.isfinite(x) else f"{x:.4g}"


def _n(x: float) -> float | None:
    return x if math.isfinite(x) else None


def _plan_json(p: SystemPlan) -> dict:
    return {"system": p.system_id, "name": p.name, "device": p.device_id,
            "layout": p.layout.to_dict() if p.layout else None, "replica_devices": p.replica_devices,
            "replica_throughput": _n(p.replica_throughput), "latency_s": _n(p.latency), "comm_share": _n(p.comm_share),
            "replicas": p.replicas, "devices": p.devices, "nodes": p.nodes,
            "price_per_device_usd": _n(p.price_per_device), "capital_usd": _n(p.capital),
            "meets_latency": p.meets_latency, "feasible": p.feasible, "reason": p.reason or None,
            "batch": p.batch or None}
