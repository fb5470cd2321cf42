"""``hwexplorer sweep MODEL --device ... --rate 2,5,10/s [--simulate] [--workers N] [--cluster ADDRESS]``: the
serving sweep (docs/sweep.md, "Serving sweeps"): each (device, precision, batch cap, rate) served like ``serve``
does, simulated in parallel over local processes or a Dask cluster, or estimated analytically."""

from __future__ import annotations

import importlib.util
import math
import re

import numpy as np

from ..core.pmap import EXTRA, PoolError, check_workers
from ..core.serving.workload import WorkloadError
from ..core.sweep.serving_columns import COLUMNS, OBJECTIVES
from .common import CliError, print_json, text_table
from .progress import ProgressBar
from .serving_args import (
    _rate,
    _slo,
    _workload,
    add_workload_args,
    check_engine,
    policy_from_args,
    power_price,
)

RATE_HELP = ("serving sweep: arrival rates in requests/s, a comma list such as 2,5,10/s (a unit on the last "
             "applies to bare numbers); switches sweep to serving: rows of TTFT, TPOT, goodput per configuration")


def add_args(p) -> None:
    """The serving sweep's options: serve's workload, service levels and engine (serving_args), the simulation
    and its executor."""
    add_workload_args(p, rate_default=None, rate_help=RATE_HELP)
    s = p.add_argument_group("serving sweep: simulation and executor (with --rate)")
    s.add_argument("--simulate", action="store_true", help="run the discrete-event simulation of each "
                   "configuration (default: the analytic estimate, in process)")
    s.add_argument("--requests", type=int, default=2000, help="requests simulated per configuration (2000)")
    s.add_argument("--seed", type=int, default=0, help="random seed of arrivals and lengths, the same for every "
                   "configuration (default 0)")
    s.add_argument("--workers", type=int, default=None, metavar="N", help="local worker processes for the "
                   "simulations (default: the CPUs this process may use; 1: in process)")
    s.add_argument("--cluster", metavar="ADDRESS", default=None, help="run the simulations on a Dask distributed "
                   f"cluster, e.g. tcp://host:8786 (needs {EXTRA}; the workers need hardware-explorer too)")
    s.add_argument("--idle-power", metavar="POWER", default=None, help="a device's power between steps, e.g. "
                   "90W (default 0, as serve)")
    s.add_argument("--hourly-price", metavar="USD/H", default=None, help="what one device costs per hour, e.g. "
                   "'2.5 USD/h' (default: the catalog's cloud price, as serve)")


def parse_rates(text: str) -> tuple[float, ...]:
    """``"2,5,10/s"`` -> (2.0, 5.0, 10.0) requests/s: each item a rate as ``serve --rate`` takes it; a unit on the
    last item applies to the bare numbers before it (``1,2/min``); sorted, duplicates dropped."""
    items = [s.strip() for s in str(text).split(",")]
    if not all(items):
        raise CliError(f"--rate: expected rates such as 2,5,10/s, got {text!r}")
    m = re.fullmatch(r"[-+0-9.eE]+\s*(\S.*)", items[-1])
    unit = m.group(1) if m else ""
    out = []
    for item in items:
        bare = re.fullmatch(r"[-+0-9.eE]+", item)
        out.append(_rate(item + unit if bare and unit else item))
    return tuple(sorted(set(out)))


def check_args(args) -> None:
    """What a serving sweep cannot take, and the counts; CliError naming the option."""
    if args.system:
        raise CliError("--system: a serving sweep serves devices (hwexplorer serve --system serves one system)")
    for opt, value in (("--seq-len", args.seq_len), ("--phase", args.phase)):
        if value is not None:
            raise CliError(f"{opt}: a serving sweep takes its lengths from --input/--output (or --lengths) and "
                           "runs both phases; leave it out with --rate")
    check_engine(args)
    if args.requests < 1:
        raise CliError(f"--requests: must be a whole number >= 1, got {args.requests}")
    try:
        check_workers(args.workers)
    except PoolError as exc:
        raise CliError(str(exc)) from None
    if args.cluster is not None:
        if not args.simulate:
            raise CliError("--cluster: runs simulations; give --simulate too")
        if not args.cluster.strip():
            raise CliError("--cluster: expected a scheduler address such as tcp://host:8786")
        if importlib.util.find_spec("distributed") is None:
            raise CliError(f"--cluster: needs dask.distributed, an optional extra: {EXTRA}")


def check_not_serving(args) -> None:
    """A roofline sweep (no --rate) given a serving sweep's option: CliError naming it."""
    for opt, given in (("--simulate", args.simulate), ("--workers", args.workers is not None),
                       ("--cluster", args.cluster is not None)):
        if given:
            raise CliError(f"{opt}: simulations are of a serving sweep; give --rate too (e.g. --rate 2,5,10/s)")


def run(args, model, devices, batches: tuple[int, ...] | None, precisions: tuple[str, ...]) -> int:
    """The serving sweep of ``model`` on ``devices``; ``batches``: the --batch list (the engine's batch caps), None
    for --max-batch alone."""
    from ..core.sweep import table_io
    from ..core.sweep.serving import ServingGrid, build_setups, serving_sweep
    from .serve_cmd import times_json, times_line, times_of

    check_args(args)
    rates = parse_rates(args.rate)
    slo, workload = _slo(args), _workload(args)
    idle, price = power_price(args)
    policy = policy_from_args(args)
    try:
        grid = ServingGrid(precisions, batches or (args.max_batch,), rates)
        setups = build_setups(model, devices, grid, workload, policy, None, args.memory_utilization,
                              args.block_size, idle, price, time_model=args.time_model)
    except (ValueError, WorkloadError) as exc:
        msg = str(exc)
        raise CliError(msg if msg.startswith("--") else f"sweep: {msg}") from None
    workers = check_workers(args.workers)
    total = len(setups) * len(rates)
    executor = ({"kind": "dask", "cluster": args.cluster} if args.cluster else
                {"kind": "processes", "workers": workers} if args.simulate and workers > 1 and total > 1 else
                {"kind": "in-process", "workers": 1})
    with ProgressBar("simulating" if args.simulate else "estimating", total, unit="configurations",
                     enabled=not args.json) as bar:
        try:
            result = serving_sweep(model, devices, grid, workload, slo, setups, args.simulate, args.requests,
                                   args.seed, workers, args.cluster,
                                   progress=(lambda done, n: bar(done / n)) if bar.active else None)
        except PoolError as exc:
            raise CliError(str(exc)) from None
        except (ValueError, WorkloadError) as exc:
            raise CliError(f"sweep: {' '.join(str(exc).split())}") from None
    try:
        table_io.write(result, args.out)
    except OSError as exc:
        raise CliError(f"--out: cannot write {args.out} ({exc.strerror})") from None
    if args.json:
        print_json({**_json(result, model, devices, grid, workload, slo, args, executor),
                    **times_json(args.time_model, *setups)})
        return 0
    how = (f"simulated ({args.requests} requests each, seed {args.seed}) " + (
        f"on the Dask cluster at {args.cluster}" if executor["kind"] == "dask" else
        f"on {workers} local processes" if executor["kind"] == "processes" else "in process")
           if args.simulate else "estimated analytically")
    print(f"{model.name}: {len(result)} configurations ({len(devices)} device(s) x {len(precisions)} precision(s) "
          f"x {len(grid.max_batches)} batch cap(s) x {len(rates)} rate(s)), {how}, written to {args.out}")
    for note in result.notes:
        print(f"note: {note}")
    source = times_of(*setups)[0]
    print(times_line(args.time_model, source, f"{source} (each row's in its time_source column)"))
    print(f"Pareto front ({len(result.front)} of {int(np.count_nonzero(result.columns['fits'] & result.columns['stable']))}"
          " stable configurations; minimizing TTFT P90, TPOT P90, cost and energy per token, maximizing "
          "throughput per device; unknown figures rank last):")
    print(front_table(result))
    return 0


def _f(x: float, digits: int = 4) -> str:
    return "\u2014" if not np.isfinite(x) else f"{x:.{digits}g}"


def front_table(r) -> str:
    c = r.columns
    headers = ["device", "precision", "max batch", "rate [req/s]", "TTFT P50/P90/P99 [ms]", "TPOT P90 [ms]",
               "goodput [req/s]", "throughput [tokens/s/device]", "cost [USD/1M tokens]", "energy [J/token]",
               "SLO"]
    rows = [[str(c["device"][i]), str(c["precision"][i]), str(c["max_batch"][i]), _f(c["rate_per_s"][i]),
             "/".join(_f(c[f"ttft_{p}_ms"][i], 3) for p in ("p50", "p90", "p99")), _f(c["tpot_p90_ms"][i], 3),
             _f(c["goodput_per_s"][i], 3), _f(c["throughput_per_device_tok_s"][i]),
             _f(c["cost_per_million_tokens_usd"][i], 3), _f(c["energy_per_token_j"][i], 3),
             "met" if c["slo_met"][i] else "missed"] for i in r.front]
    return text_table(headers, rows)


def _value(a, i):
    v = a[i]
    if a.dtype.kind == "f":
        return float(v) if math.isfinite(v) else None
    return v.item() if hasattr(v, "item") else v


def _json(result, model, devices, grid, workload, slo, args, executor) -> dict:
    c = result.columns
    i_mean, o_mean = workload.mean_lengths()
    row = [{n: _value(c[n], i) for n, _, _ in COLUMNS} for i in range(len(result))]
    return {
        "model": model.name, "out": str(args.out), "configurations": len(result),
        "method": "simulation" if args.simulate else "analytic",
        "requests": args.requests if args.simulate else 0, "seed": args.seed, "executor": executor,
        "grid": {"devices": [d.id for d in devices], "precision": list(grid.precisions),
                 "max_batch": list(grid.max_batches), "rate_per_s": list(grid.rates)},
        "workload": {"arrival": workload.arrival, "lengths": workload.lengths.kind,
                     "mean_input_tokens": i_mean, "mean_output_tokens": o_mean,
                     "prefix_tokens": workload.prefix_tokens, "prefix_hit_rate": workload.prefix_hit_rate},
        "slo": [{"metric": m, "percentile": p, "target_s": t} for m, t, p in slo.targets()],
        "columns": [{"name": n, "unit": u, "doc": d} for n, u, d in COLUMNS],
        "objectives": [{"name": n, "minimize": m} for n, m in OBJECTIVES],
        "notes": list(result.notes),
        "rows": row,
        "pareto": [row[i] for i in result.front],
    }
