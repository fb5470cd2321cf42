"""``hwexplorer sweep MODEL --device ... --batch 1,2,4..256 --seq-len 512..32768 --precision fp16,fp8 --out F``:
a design-space grid in one analysis pass per precision, every point streamed to CSV/Parquet, the Pareto front
printed (docs/sweep.md)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from ..core.precision import PRECISIONS
from ..core.sweep.grid import PHASES, Grid, parse_names, parse_values
from ..core.sweep.pareto import OBJECTIVES
from ..core.sweep.run import COLUMNS, SweepResult, combine, sweep
from ..core.sweep.systems import sweep_systems
from ..core.sweep.table_io import OutputError, check_output, write
from ..core.workload.layers import ATTENTION
from . import sweep_serving
from .common import CliError, is_path, print_json, text_table
from .resolve import load_model_arg, with_project_overrides


def add_parser(sub) -> None:
    p = sub.add_parser(
        "sweep", help="a design-space sweep: batch x sequence length x phase x precision x device, or served rates",
        description="Every combination of --batch, --seq-len, --phase and --precision on every --device, in one "
                    "analysis pass per precision; every point written to --out, the Pareto front (latency, "
                    "throughput per device, cost per million tokens, energy per token) printed. Lists: comma-"
                    "separated; a..b doubles from a up to b (1,2,4..256 is 1, 2, 4, 8, ..., 256). With --rate: a "
                    "serving sweep, every --device x --precision x --batch (the engine's batch cap) x --rate "
                    "served as serve does (TTFT, TPOT, goodput, cost and energy per token), each configuration "
                    "simulated with --simulate on local processes (--workers) or a Dask cluster (--cluster).")
    p.add_argument("model", metavar="MODEL", help="a template id (e.g. llama2-7b) or a model file (.json)")
    p.add_argument("--device", "-d", action="append", metavar="DEV", default=[],
                   help="a catalog device id or a device file (repeatable); 'all': every catalog device")
    p.add_argument("--system", "-s", action="append", metavar="SYS", default=[],
                   help="a catalog system id or a system file (repeatable), each at its best layout by throughput "
                        "per device (one system pass per point: slower than devices)")
    p.add_argument("--batch", default=None, metavar="LIST", help="batch sizes, e.g. 1,2,4..256 (default 1; with "
                   "--rate: the engine's batch caps, default --max-batch)")
    p.add_argument("--seq-len", default=None, metavar="LIST",
                   help="sequence lengths in tokens, e.g. 512..32768 (prefill: prompt tokens; decode: KV-cache "
                        "positions; default: the model's own)")
    p.add_argument("--precision", default="fp16", metavar="LIST",
                   help=f"precisions, e.g. fp16,fp8 (default fp16; known: {', '.join(PRECISIONS)})")
    p.add_argument("--phase", default=None, metavar="LIST",
                   help="prefill, decode or prefill,decode (default: the model's own phase)")
    p.add_argument("--attention", choices=ATTENTION, default="naive",
                   help="naive (default) or fused (FlashAttention); as in analyze")
    p.add_argument("--time-model", choices=("ideal", "calibrated"), default="ideal",
                   help="ideal (default) or calibrated: the devices' fitted kernel curves (and on --system the stored "
                        "link fits) where they have them, as analyze --time-model; each point's time_source says "
                        "which (spec, partly calibrated, calibrated)")
    p.add_argument("--out", "-o", required=True, metavar="FILE",
                   help="results.csv, or results.parquet (needs pyarrow: pip install 'hwexplorer[sweep]')")
    p.add_argument("--json", action="store_true",
                   help="print one JSON object (the grid, the columns with units, the notes, the Pareto front)")
    sweep_serving.add_args(p)
    p.set_defaults(func=run)


def _devices(specs: list[str], db_url: str | None, extra: tuple[str, ...] = ()):
    """Device files and catalog ids, the catalog opened once; 'all' is every catalog device. ``extra``: ids
    fetched in the same opening (systems' devices), returned apart as {id: device}."""
    from explorer.core.hardware.device_file import DeviceFileError, load_device_file
    from explorer.store.engine import open_catalog
    from explorer.store.errors import UnknownDeviceError

    from ..core.units import UnitError

    files = {s: None for s in specs if is_path(s)}
    ids = [s.strip() for s in specs if s not in files]
    for spec in files:
        if not Path(spec).exists():
            raise CliError(f"--device: no such file: {spec}")
        try:
            files[spec] = load_device_file(spec)
        except (DeviceFileError, UnitError, ValueError) as exc:
            raise CliError(f"--device {spec}: {exc}") from None
    found, others = {}, {}
    if ids or extra:
        with open_catalog(db_url) as repo:
            try:
                catalog = repo.devices(None if "all" in ids else ids) if ids else ()
            except UnknownDeviceError as exc:
                raise CliError(f"--device: {exc}") from None
            try:
                others = {d.id: d for d in repo.devices(list(dict.fromkeys(extra)))} if extra else {}
            except UnknownDeviceError as exc:
                raise CliError(f"--system: {exc}") from None
        found = {d.id: d for d in catalog}
    devices = [*files.values(), *(found.values() if "all" in ids else (found[i] for i in ids))]
    seen = [d.id for d in devices]
    dup = sorted({i for i in seen if seen.count(i) > 1})
    if dup:
        raise CliError(f"--device: {', '.join(dup)} given more than once")
    return devices, others


def _grid(args, phase_default: str) -> Grid:
    try:
        return Grid(
            batches=parse_values(args.batch or "1", "--batch"),
            seq_lens=parse_values(args.seq_len, "--seq-len") if args.seq_len is not None else None,
            phases=parse_names(args.phase or phase_default, "--phase", PHASES),
            precisions=parse_names(args.precision, "--precision", PRECISIONS),
            attention=args.attention,
        )
    except ValueError as exc:
        raise CliError(str(exc)) from None


def _progress(done: int, total: int) -> None:
    end = "\n" if done >= total else ""
    print(f"\rsweep: {done}/{total} points written", end=end, file=sys.stderr, flush=True)


def _num(x) -> float | None:
    x = float(x)
    return x if np.isfinite(x) else None


def _f(x: float, scale: float = 1.0, digits: int = 4) -> str:
    return "\u2014" if not np.isfinite(x) else f"{x * scale:.{digits}g}"


def front_table(r: SweepResult) -> str:
    c = r.columns
    headers = ["device", "layout", "precision", "phase", "batch", "seq_len [tokens]", "latency [ms]",
               "throughput [tokens/s/device]", "cost [USD/1M tokens]", "energy [mJ/token]", "memory [GB]", "times"]
    rows = [[str(c["device"][i]), str(c["layout"][i]) or "\u2014", str(c["precision"][i]), str(c["phase"][i]), str(c["batch"][i]),
             str(c["seq_len"][i]), _f(c["latency_s"][i], 1e3), _f(c["throughput_per_device_tok_s"][i]),
             _f(c["cost_per_million_tokens_usd"][i]) + ("" if c["cost_source"][i] != "cloud price" else " (cloud)"),
             _f(c["energy_per_token_j"][i], 1e3), _f(c["memory_bytes"][i], 1e-9), str(c["time_source"][i])]
            for i in r.front]
    return text_table(headers, rows)


def run(args) -> int:
    try:
        check_output(args.out)
    except OutputError as exc:
        raise CliError(f"--out: {exc}") from None
    model, phase_default = load_model_arg(args.model)
    if not args.device and not args.system:
        raise CliError("--device: give at least one --device DEV or --system SYS")
    if args.rate is not None:  # a serving sweep (sweep_serving.py)
        sweep_serving.check_args(args)
        try:
            batches = parse_values(args.batch, "--batch") if args.batch is not None else None
            precisions = parse_names(args.precision, "--precision", PRECISIONS)
        except ValueError as exc:
            raise CliError(str(exc)) from None
        devices, _ = _devices(args.device, getattr(args, "db", None))
        devices = with_project_overrides(args.model, devices, getattr(args, "db", None))
        return sweep_serving.run(args, model, devices, batches, precisions)
    sweep_serving.check_not_serving(args)
    grid = _grid(args, phase_default)
    db = getattr(args, "db", None)
    systems = []
    if args.system:
        from .system_cmd import project_system

        systems = [project_system(args.model, spec, 1, db) for spec in args.system]  # a project's link fits on them
        ids = [s.id for s in systems]
        if len(set(ids)) < len(ids):
            raise CliError(f"--system: {', '.join(sorted({i for i in ids if ids.count(i) > 1}))} given more than once")
    devices, system_devices = _devices(args.device, db, tuple(s.device_id for s in systems))
    # a project MODEL: its device overrides and chosen calibrations, as analyze and plan apply them
    both = with_project_overrides(args.model, [*devices, *system_devices.values()], db)  # one pass, each named once
    devices, system_devices = both[:len(devices)], dict(zip(system_devices, both[len(devices):]))
    try:
        parts = [sweep(model, devices, grid, time_model=args.time_model)] if devices else []
        if systems:
            parts.append(sweep_systems(model, [(s, system_devices[s.device_id]) for s in systems], grid,
                                       time_model=args.time_model))
        result = parts[0] if len(parts) == 1 else combine(parts)
    except ValueError as exc:
        raise CliError(str(exc)) from None
    try:
        write(result, args.out, progress=None if args.json else _progress)
    except OSError as exc:
        raise CliError(f"--out: cannot write {args.out} ({exc.strerror})") from None
    if args.json:
        c = result.columns
        print_json({
            "model": model.name, "out": str(args.out), "points": len(result), "passes": result.passes,
            "grid": {"batch": list(grid.batches), "seq_len": sorted(set(c["seq_len"].tolist())),
                     "phase": list(grid.phases), "precision": list(grid.precisions),
                     "devices": [d.id for d in devices], "systems": [s.id for s in systems],
                     "attention": grid.attention},
            "columns": [{"name": n, "unit": u, "doc": d} for n, u, d in COLUMNS],
            "objectives": [{"name": n, "minimize": m} for n, m in OBJECTIVES],
            "notes": list(result.notes),
            "time_model": args.time_model, "time_sources": _time_sources(result),
            "pareto": [{n: (_num(c[n][i]) if c[n].dtype.kind == "f" else c[n][i].item()
                            if hasattr(c[n][i], "item") else c[n][i]) for n, _, _ in COLUMNS} for i in result.front],
        })
        return 0
    print(f"{model.name}: {len(result)} points ({len(grid.precisions)} precision(s) x "
          f"{len(result) // len(grid.precisions) // (len(devices) + len(systems))} contexts x {len(devices)} "
          f"device(s) and {len(systems)} system(s)) in {result.passes} analysis pass(es), written to {args.out}")
    for note in result.notes:
        print(f"note: {note}")
    print(f"-- times: {args.time_model} model; time_source of the points: "
          + ", ".join(f"{k} {v:,}" for k, v in _time_sources(result).items()))
    n_fit = int(np.count_nonzero(result.columns["fits"]))
    print(f"Pareto front ({len(result.front)} of {n_fit} points that fit memory; minimizing latency, cost and "
          f"energy per token, maximizing throughput per device; unknown figures rank last):")
    print(front_table(result))
    return 0


def _time_sources(result) -> dict[str, int]:
    """How many points each time source labels (docs/calibration.md, "Where a time comes from")."""
    labels, counts = np.unique(result.columns["time_source"].astype(str), return_counts=True)
    return {str(k): int(v) for k, v in zip(labels, counts)}
