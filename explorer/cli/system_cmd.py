"""``analyze MODEL --system SYS [--nodes N] [--tp N --pp N --ep N --dp N | --best]``: a model on a system of many
devices under one layout or every valid one (docs/cli.md, "Systems")."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from ..core.analysis.time_source import heading, system_time_sources
from ..core.hardware.capacity import format_capacity
from ..core.hardware.system import System
from ..core.hardware.system_file import SystemFileError, load_system_file
from ..core.money import parse_usd
from ..core.parallel.collectives import ALGORITHMS
from ..core.parallel.compare import OBJECTIVES, choose
from ..core.parallel.layout import Layout, LayoutError, candidates, check, why_none
from ..core.parallel.layout_cost import LayoutCost, layout_cost
from ..core.parallel.link_energy import LinkEnergy, link_energy
from ..core.parallel.system_pass import (
    COLLECTIVE_FORMATS,
    Options,
    SystemAnalysis,
    analyze_system,
    model_shape,
)
from ..core.units import UnitError, format_bytes, format_si
from .common import CliError, is_path, text_table

DEGREES = ("tp", "pp", "ep", "dp", "microbatches")


def add_system_args(p) -> None:
    g = p.add_argument_group("systems of many devices (instead of --device)")
    g.add_argument("--system", metavar="SYS", help="a system id from the catalog (catalog list --systems) or a system "
                   "file (.yaml/.json)")
    g.add_argument("--nodes", type=int, default=1, help="a cluster of N such systems over the system's own "
                   "scale-out network (default 1)")
    for name, what in (("tp", "tensor"), ("pp", "pipeline"), ("ep", "expert"), ("dp", "data/replica")):
        g.add_argument(f"--{name}", type=int, default=None, help=f"{what}-parallel degree")
    g.add_argument("--microbatches", type=int, default=None, help="pipeline micro-batches per replica (default 1)")
    g.add_argument("--best", nargs="?", const="throughput", choices=OBJECTIVES, default=None,
                   help="rank every valid layout and pick the best by throughput per device (default), latency or "
                        "cost per million tokens; the default when no degree is given")
    g.add_argument("--price", metavar="USD", default=None, help='a quote per device (e.g. "30000 USD") for the cost '
                   "per million tokens, instead of the catalog's list price")
    add_pass_options(g)


def add_pass_options(g) -> None:
    """The system pass's options (overlap, offload, collective algorithm and format, skew): the same names wherever
    a command times a system layout; :func:`options_from_args` reads them."""
    g.add_argument("--overlap", action="store_true", help="hide communication behind compute (default: exposed)")
    g.add_argument("--offload", action="store_true", help="stream what does not fit from host memory over the "
                   "host link")
    g.add_argument("--collective", choices=ALGORITHMS, default="auto", help="all-reduce algorithm (default auto: the "
                   "faster of ring and tree per message)")
    g.add_argument("--collective-format", choices=COLLECTIVE_FORMATS, default="engine",
                   help="element size of collectives and pipeline sends: engine (default: the activation format, at "
                        "least 16-bit, as TensorRT-LLM and vLLM all-reduce), activations (the activation format as "
                        "it is, e.g. 1 B for fp8), fp8 (TensorRT-LLM's low-precision all-reduce: 32/31 B)")
    g.add_argument("--skew", type=float, default=0.0, help="expert routing skew s >= 0: the busiest group gets "
                   "(1 + s) / ep of the tokens (default 0, uniform)")


def options_from_args(args) -> Options:
    """The system pass's options given by :func:`add_pass_options` (a skew < 0 is one CliError)."""
    if args.skew < 0 or not math.isfinite(args.skew):
        raise CliError(f"--skew: must be a number >= 0, got {args.skew}")
    return Options(overlap=args.overlap, algorithm=args.collective, skew=args.skew, offload=args.offload,
                   collective_format=args.collective_format)


def options_json(options: Options) -> dict:
    """The options as the JSON of ``analyze --system`` names them."""
    return {"overlap": options.overlap, "collective": options.algorithm, "skew": options.skew,
            "offload": options.offload, "collective_format": options.collective_format}


def resolve_system(spec: str, nodes: int, db_url: str | None = None, base: System | None = None) -> System:
    """A system file, or a system id of the catalog database (shipped or imported; ``--db``), times ``nodes``
    (``base``: that system, already read, times ``nodes``)."""
    if nodes < 1:
        raise CliError(f"--nodes: must be a positive whole number, got {nodes}")
    try:
        if base is not None:
            system = base
        elif is_path(spec) or Path(spec).exists():
            if not Path(spec).exists():
                raise CliError(f"--system: no such file: {spec}")
            system = load_system_file(spec)
        else:
            system = _from_catalog(spec, db_url)
        return system.with_nodes(nodes) if nodes > 1 else system
    except (SystemFileError, UnitError) as exc:
        raise CliError(f"--system {spec}: {exc}") from None
    except ValueError as exc:
        raise CliError(f"--{exc!s}" if str(exc).startswith("nodes") else f"--system {spec}: {exc}") from None


def project_system(model_arg: str, spec: str, nodes: int = 1, db_url: str | None = None) -> System:
    """:func:`resolve_system`, with the link fits a project MODEL uses on the system's levels stored on their domains
    before the cluster of ``nodes`` is made (``resolve.with_project_links``; the app applies them the same way)."""
    from .resolve import with_project_links

    system = with_project_links(model_arg, resolve_system(spec, 1, db_url))
    if nodes == 1:
        return system
    return resolve_system(spec, nodes, db_url, base=system)


def _from_catalog(spec: str, db_url: str | None) -> System:
    from ..store.errors import CatalogDatabaseError, UnknownSystemError
    from ..store.resolve import resolve_system as catalog_system

    try:
        return catalog_system(spec, db_url)
    except UnknownSystemError as exc:
        hint = (f"did you mean {', '.join(exc.close_matches)}?" if exc.close_matches
                else "see 'hwexplorer catalog list --systems'")
        raise CliError(f"--system: unknown system {spec!r} in the catalog; {hint}") from None
    except CatalogDatabaseError as exc:
        raise CliError(str(exc)) from None


def layouts_from_args(args, model, ctx, system: System) -> tuple[list[Layout], str | None]:
    """The layouts to analyse and the objective to rank them by (None: the one layout given)."""
    if args.skew < 0 or not math.isfinite(args.skew):
        raise CliError(f"--skew: must be a number >= 0, got {args.skew}")
    shape = model_shape(model, ctx)
    given = {d: getattr(args, d) for d in DEGREES if getattr(args, d) is not None}
    if args.best is not None and set(given) - {"microbatches"}:
        raise CliError(f"--best: give either --best or the degrees ({', '.join('--' + d for d in given)}), not both")
    if args.best is not None or not set(given) - {"microbatches"}:
        found = candidates(shape, system.devices, given.get("microbatches", 1))
        if not found:
            raise CliError(f"--system {system.id}: no valid layout of {model.name} on {system.devices} devices "
                           f"at batch {ctx.batch}: {why_none(shape, system.devices)}")
        return found, args.best or "throughput"
    tp, pp, ep = given.get("tp", 1), given.get("pp", 1), given.get("ep", 1)
    if "dp" not in given and (tp < 1 or pp < 1 or system.devices % (tp * pp)):
        name = "tp" if "tp" in given else "pp"
        raise CliError(f"--{name}: tp {tp} x pp {pp} does not divide the system's {system.devices} devices")
    dp = given.get("dp", max(1, system.devices // max(tp * pp, 1)))
    layout = Layout(tp, pp, ep, dp, given.get("microbatches", 1))
    try:
        check(layout, shape, system.devices)
    except LayoutError as exc:
        raise CliError(f"--{exc}") from None
    return [layout], None


def run_system(args, model, ctx, formats) -> int:
    from .resolve import project_devices

    system = project_system(args.model, args.system, args.nodes, getattr(args, "db", None))  # a project's link fits
    device = project_devices(args.model, [system.device_id], getattr(args, "db", None))[0]
    layouts, objective = layouts_from_args(args, model, ctx, system)
    options = Options(overlap=args.overlap, algorithm=args.collective, skew=args.skew, offload=args.offload,
                      collective_format=args.collective_format, time_model=getattr(args, "time_model", "ideal"))
    quotes = {}
    if getattr(args, "price", None) is not None:
        try:
            usd = parse_usd(args.price, "--price")  # "$30k", "30000 USD", "1.2M USD"
        except UnitError as exc:
            raise CliError(str(exc)) from None
        if not (math.isfinite(usd) and usd > 0):
            raise CliError(f"--price: must be a positive amount of money per device, got {args.price!r}")
        quotes = {device.id: usd}
    r = analyze_system(model, system, device, layouts, args.precision, ctx, formats, options)
    cost = layout_cost(r, quotes)
    chosen, order = choose(r, objective, cost.cost_per_million)
    if args.json:
        from .common import print_json

        print_json(system_json(r, chosen, order, objective, options, cost))
    else:
        print_system(r, chosen, order, objective, options, cost)
    return 0


def _n(x) -> float | None:
    x = float(x)
    return x if math.isfinite(x) else None


def _energy_json(e: LinkEnergy, k: int, batch: int) -> dict:
    """Joules per step and device (on the device, over each link, total) and per token or sequence (all devices)."""
    total = _n(e.total[k])
    return {"device_J": _n(e.device[k]),
            "links_J": {name: _n(j) for name, j in zip(e.names, e.joules[k])},
            "links_total_J": _n(e.links[k]), "links_known_J": _n(e.known_links[k]),
            "links_unknown": list(e.unknown[k]), "total_J": total,
            "per_unit_J": None if total is None else total * e.devices / max(batch, 1)}


def _energy_per_bit(link) -> float | None:
    return None if link is None or link.energy is None else link.energy.value / 8.0


def _cost_json(c: LayoutCost | None) -> dict | None:
    if c is None:
        return None
    return {"price_per_device_usd": _n(c.price_per_device), "price_source": c.price_source or None,
            "tdp_W": _n(c.tdp), "tco_per_device_usd": _n(c.tco_per_device), "unit": c.unit, "years": c.years,
            "utilization": c.utilization, "unknown_because": c.reason or None}


def system_json(r: SystemAnalysis, chosen: int, order, objective, options: Options,
                cost: LayoutCost | None = None) -> dict:
    s = r.system
    e = link_energy(r)
    sources = system_time_sources(r)
    return {
        "model": r.model.name,
        "system": {"id": s.id, "name": s.name, "device": s.device_id, "devices": s.devices, "nodes": s.nodes,
                   "domains": [{"name": d.name, "scope": d.scope, "size": d.size, "topology": d.topology,
                                "bandwidth_per_direction_Bps": _n(s.bandwidth(d)), "latency_s": _n(d.alpha),
                                "energy_per_bit_J": _energy_per_bit(d.link),
                                "energy_note": d.link.energy.note if d.link.energy is not None else None,
                                "calibrated": _fit_json(d.calibration)}
                               for d in s.domains],
                   "host_link": None if s.host_link is None else {
                       "name": s.host_link.name, "bandwidth_per_direction_Bps": _n(s.host_bandwidth()),
                       "energy_per_bit_J": _energy_per_bit(s.host_link),
                       "energy_note": s.host_link.energy.note if s.host_link.energy is not None else None}},
        "precision": r.precision, "phase": r.ctx.phase, "batch": r.ctx.batch, "seq_len": r.ctx.seq_len,
        "options": {"overlap": options.overlap, "collective": options.algorithm, "skew": options.skew,
                    "offload": options.offload, "collective_format": options.collective_format,
                    "collective_element_bytes": _n(r.collective_bytes)},
        "objective": objective,
        "time_model": r.time_model, "kernel_source": r.kernel_source, "calibrated_links": list(r.calibrated_links),
        "cost": _cost_json(cost),
        "chosen": r.layouts[chosen].to_dict(),
        "layouts": [dict(r.layouts[k].to_dict(), label=r.layouts[k].label(), fits=bool(r.fits[k]),
                         memory_bytes=_n(r.memory_bytes[k]), weight_bytes=_n(r.weight_bytes[k]),
                         kv_cache_bytes=_n(r.kv_bytes[k]), activation_bytes=_n(r.activation_bytes[k]),
                         step_time_s=_n(r.step_time[k]), latency_s=_n(r.latency[k]),
                         compute_time_s=_n(r.compute_time[k]), comm_time_s=_n(r.comm_time[k]),
                         bubble_time_s=_n(r.bubble_time[k]), send_time_s=_n(r.send_time[k]),
                         host_time_s=_n(r.host_time[k]), throughput=_n(r.throughput[k]),
                         throughput_per_device=_n(r.throughput_per_device[k]), throughput_unit=r.throughput_unit,
                         comm_share=_n(r.comm_share[k]), expert_imbalance=_n(r.imbalance[k]),
                         level_bytes={name: _n(b) for name, b in zip(r.level_names, r.level_bytes[k])},
                         host_bytes=_n(r.host_bytes[k]) if r.host_bytes is not None else None,
                         cost_per_million_usd=_n(cost.cost_per_million[k]) if cost is not None else None,
                         energy=_energy_json(e, k, r.ctx.batch), time_source=sources[k])
                    for k in order],
    }


def _fit_json(fit) -> dict | None:
    """A domain's stored link fit (calibrate link --save): None when it has none."""
    if fit is None:
        return None
    return {"alpha_s": fit.alpha.value, "bandwidth_per_direction_Bps": fit.bandwidth.value, "op": fit.op,
            "ranks": fit.ranks, "algorithm": fit.algorithm, "source": fit.alpha.source, "conditions": fit.conditions}


def times_line(r: SystemAnalysis, k: int) -> str:
    """Where the times of layout ``k`` come from (docs/calibration.md, "Where a time comes from")."""
    label = system_time_sources(r)[k]
    if r.time_model == "ideal":
        return f"-- times: {heading(label)}"
    fits = {d.name: d.calibration.alpha.source for d in r.system.domains if d.calibration is not None}
    links = ", ".join(f"{n} ({fits[n]})" if fits.get(n) else n for n in r.calibrated_links) or "none"  # the fit's key
    return (f"-- times: {heading(label)}; calibrated model: kernels {r.kernel_source}, fitted links: {links}"
            " (other links at their stated figures)")


def _ms(x) -> str:
    return "\u2014" if not np.isfinite(x) else f"{x * 1e3:.3g}"


def print_system(r: SystemAnalysis, chosen: int, order, objective, options: Options,
                 cost: LayoutCost | None = None) -> None:
    s = r.system
    print(f"{r.model.name} on {s.name}: {s.devices} x {r.device.name} ({s.nodes} node{'s' * (s.nodes > 1)}), "
          f"{r.precision}, {r.ctx.phase}, batch {r.ctx.batch}"
          + (f", context {r.ctx.seq_len}" if r.ctx.seq_len else ""))
    for d in s.domains:
        lat = "latency not stated" if not np.isfinite(d.alpha) else f"{d.alpha * 1e6:.3g} us"
        fit = d.calibration
        fitted = "" if fit is None else (f"; fitted {format_si(fit.bandwidth.value, 'B/s')}, "
                                         f"{fit.alpha.value * 1e6:.3g} us ({fit.op} on {fit.ranks} ranks"
                                         f"{', used' if d.name in r.calibrated_links else ', not used: ideal model'})")
        print(f"  {d.scope:9} {d.name}: {d.size} devices, {format_si(s.bandwidth(d), 'B/s')} per device and "
              f"direction, {lat}{fitted}")
    unstated = [d.name for d in s.domains if not np.isfinite(d.alpha)]
    bpe = r.collective_bytes
    print(f"  communication {'overlapped with compute' if options.overlap else 'exposed (no overlap)'}, "
          f"all-reduce {options.algorithm}, {bpe:.3g} B per element ({options.collective_format})" + ("; latency not stated for " + ", ".join(unstated)
                                               + ": its times are lower bounds (bandwidth only)" if unstated else ""))
    unit = r.throughput_unit
    headers = ["", "layout", "fits", "mem/dev [GB]", "step [ms]", "latency [ms]", "compute [ms]", "comm [ms]",
               "bubble [ms]", f"{unit}", f"{unit}/device", "comm %", f"USD/M {unit.split('/')[0]}"]
    rows = [["*" if k == chosen else "", r.layouts[k].label(), "yes" if r.fits[k] else "NO",
             f"{r.memory_bytes[k] / 1e9:.3g}", _ms(r.step_time[k]), _ms(r.latency[k]), _ms(r.compute_time[k]),
             _ms(r.comm_time[k]), _ms(r.bubble_time[k]), f"{r.throughput[k]:.4g}",
             f"{r.throughput_per_device[k]:.4g}", f"{100 * r.comm_share[k]:.3g}",
             _usd(cost.cost_per_million[k] if cost is not None else math.nan)] for k in order[:12]]
    print(text_table(headers, rows))
    if len(order) > 12:
        print(f"  ... {len(order) - 12} more layouts (--json lists them all)")
    k = chosen
    why = f"best {objective}" if objective else "as given"
    print(f"-- chosen ({why}): {r.layouts[k].label()}: per device weights {format_bytes(r.weight_bytes[k])}, KV cache "
          f"{format_bytes(r.kv_bytes[k])}, activations {format_bytes(r.activation_bytes[k])} of "
          f"{format_capacity(r.capacity)}")
    ladder = ", ".join(f"{name} {format_bytes(b)}" for name, b in zip(r.level_names, r.level_bytes[k]))
    if ladder:
        print(f"-- bytes each device sends per step: {ladder}")
    print(times_line(r, k))
    print(energy_line(link_energy(r), k))
    if cost is not None:
        print(cost_line(cost, k, objective))
    if r.imbalance[k] > 1:
        print(f"-- experts: the busiest of {r.layouts[k].ep} groups gets {r.imbalance[k]:.3f} x the mean load "
              "(uniform routing, multinomial)")
    if not r.fits[k]:
        print("-- does NOT fit: no layout holds the model in device memory (try --offload, more --nodes or a lower "
              "precision)")


def _joules(x: float) -> str:
    return "unknown" if not np.isfinite(x) else format_si(x, "J")


def energy_line(e: LinkEnergy, k: int) -> str:
    """The chosen layout's energy per step and device: on the device, over each link (pJ/bit), and the total."""
    parts = [f"on the device {_joules(e.device[k])}"]
    for name, j, b, epb in zip(e.names, e.joules[k], e.nbytes[k], e.energy_per_byte):
        if b > 0:
            rate = "energy not stated" if not np.isfinite(epb) else f"{epb / 8 * 1e12:.3g} pJ/bit"
            parts.append(f"{name} {_joules(j)} ({rate})")
    total = _joules(e.total[k])
    if e.unknown[k]:
        least = _joules(e.device[k] + e.known_links[k])
        total += f" (links of unknown energy: {', '.join(e.unknown[k])}; at least {least})"
    return f"-- energy per step and device: {'; '.join(parts)}; total {total}"


def _usd(x: float) -> str:
    return "\u2014" if not np.isfinite(x) else f"{x:.3g}"


def cost_line(c: LayoutCost, k: int, objective: str | None) -> str:
    """The chosen layout's cost per million tokens, its price and assumptions, or why it is unknown."""
    if not c.priced:
        after = "; ranked by throughput per device after any priced layout" if objective == "cost" else ""
        return f"-- cost per million {c.unit}s unknown: {c.reason}{after}"
    return (f"-- cost: {c.cost_per_million[k]:.4g} USD per million {c.unit}s ({c.price_source} "
            f"{c.price_per_device:,.0f} USD per device, TDP {c.tdp:g} W, {c.years:g} years at {c.utilization:.0%} utilization; devices only: "
            "chassis and network not priced)")
