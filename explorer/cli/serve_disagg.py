"""``serve --disaggregate P:D|auto [--decode-device DEV] --kv-link BW``: separate prefill and decode pools
(docs/serving.md, "Disaggregated prefill and decode")."""

from __future__ import annotations

import math
import re

from ..core.serving.analytic import Setup
from ..core.serving.disagg import (
    FIRST_TOKENS,
    KvLink,
    PoolChoice,
    simulate_disaggregated,
    summarize_disaggregated,
)
from ..core.serving.disagg_estimate import estimate_disaggregated
from ..core.serving.disagg_search import METHODS, search
from ..core.units import UnitError, format_si, parse_si
from .common import CliError, text_table


def add_args(p) -> None:
    g = p.add_argument_group("disaggregated prefill and decode (--device or --system replicas)")
    g.add_argument("--disaggregate", metavar="P:D|auto", default=None, help="simulate P prefill and D decode "
                   "replicas, or search every pool size up to --max-pool for the cheapest meeting the service levels")
    g.add_argument("--decode-device", metavar="DEV", default=None, help="the decode pool's device (default --device)")
    g.add_argument("--decode-system", metavar="SYS", default=None, help="the decode pool's system, its replicas a "
                   "serving layout there (with --system; default the --system's layout)")
    g.add_argument("--decode-tp", type=int, default=None, help="the decode replica's tensor-parallel degree on "
                   "--decode-system (default: the prefill replica's where it fits, else the smallest that leaves "
                   "room for the KV cache)")
    g.add_argument("--kv-link", metavar="BW|auto", default=None, help="the link the KV cache crosses, bandwidth per "
                   "direction, e.g. '50 GB/s', or auto (with --system: the scale-out network both systems share; "
                   "required with --disaggregate)")
    g.add_argument("--kv-link-latency", metavar="TIME", default="0 s", help="its latency per transfer (default 0 s)")
    g.add_argument("--first-token", choices=FIRST_TOKENS, default="prefill", help="which pool streams the user's "
                   "first token: prefill (default; DistServe, Splitwise: TTFT is the prefill pool's) or decode (vLLM's "
                   "disaggregated-prefill proxy: TTFT = prefill + KV transfer + the decode pool's first step)")
    g.add_argument("--max-pool", type=int, default=4, help="the largest pool --disaggregate auto tries (4)")
    g.add_argument("--pool-search", choices=METHODS, default="estimate", help="how --disaggregate auto searches: "
                   "estimate (default: the analytic estimate ranks every size, the simulation settles the cheapest "
                   "and those within 15 %% of the service levels) or simulate (every size simulated)")


def pools(args) -> tuple[int, int] | None:
    """(P, D), or None for auto; a malformed value is one CliError."""
    text = args.disaggregate.strip()
    if text == "auto":
        if args.max_pool < 1:
            raise CliError(f"--max-pool: must be >= 1, got {args.max_pool}")
        return None
    m = re.fullmatch(r"(\d+):(\d+)", text)
    if not m or int(m.group(1)) < 1 or int(m.group(2)) < 1:
        raise CliError(f"--disaggregate: expected P:D (replicas >= 1 each) or auto, got {text!r}")
    return int(m.group(1)), int(m.group(2))


def check_args(args) -> None:
    """--decode-system and --decode-tp only where they mean something; one CliError naming the option."""
    if args.decode_system is not None:
        if not args.system:
            raise CliError("--decode-system: give --system too (the prefill pool's system); a decode pool on "
                           "another device is --decode-device DEV")
        if not args.disaggregate:
            raise CliError("--decode-system: only with --disaggregate P:D|auto (separate prefill and decode pools)")
        if args.decode_device:
            raise CliError("--decode-device: give either --decode-device or --decode-system, not both")
    if args.decode_tp is not None and args.decode_system is None:
        raise CliError("--decode-tp: the decode replica's layout on --decode-system; give --decode-system SYS")
    if args.decode_tp is not None and args.decode_tp < 1:
        raise CliError(f"--decode-tp: must be a whole number >= 1, got {args.decode_tp}")


def decode_system_setup(args, model, workload, placed, common: dict):
    """The decode pool's replica on --decode-system: (its setup, (system, device, layout)); bad input is one
    CliError naming the option."""
    from dataclasses import replace

    from ..core.parallel.layout import LayoutError
    from ..core.serving.disagg_systems import decode_layouts, decode_setup
    from ..core.serving.serve import system_setup
    from .resolve import project_devices
    from .system_cmd import options_from_args, project_system

    try:  # a project MODEL's device calibrations and link fits apply here too (resolve.py)
        system = project_system(args.model, args.decode_system, 1, getattr(args, "db", None))
    except CliError as exc:
        raise CliError(str(exc).replace("--system", "--decode-system", 1)) from None
    device = project_devices(args.model, [system.device_id], getattr(args, "db", None))[0]
    options = replace(options_from_args(args), time_model=getattr(args, "time_model", "ideal"))
    try:
        layouts = decode_layouts(model, system, workload, args.decode_tp, placed[2] if placed else None)
        layout, setup = decode_setup(model, system, layouts, lambda lay: system_setup(
            model, system, device, lay, workload, options=options, **common))
    except LayoutError as exc:
        raise CliError(f"--decode-{exc}") from None
    except ValueError as exc:
        msg = str(exc)
        option = "--decode-tp" if args.decode_tp is not None else "--decode-system"
        raise CliError(msg if msg.startswith("--") else f"{option}: {msg}") from None
    return setup, (system, device, layout)


def pools_json(prefill: Setup, placed, decode: Setup, decode_placed) -> dict:
    """Each pool's replica on its system: the system, its device, the layout and devices per replica."""
    def one(setup: Setup, where) -> dict:
        system, device, layout = where
        return {"system": system.id, "device": device.id, "layout": {**layout.to_dict(), "dp": 1},
                "layout_label": f"TP{layout.tp} PP{layout.pp}", "devices_per_replica": setup.surface.devices,
                "kv_bytes_per_token": setup.memory.kv_per_token * setup.memory.devices}

    return {"prefill": one(prefill, placed), "decode": one(decode, decode_placed)}


def link_and_source(args, placed=None) -> tuple[KvLink, str]:
    """--kv-link as given, or (auto) the systems' shared network, and where it came from in words: ``placed`` is
    ((system, device, layout) of the prefill replica, that of the decode replica), None on --device."""
    if args.kv_link is None:
        raise CliError("--kv-link: give the bandwidth the KV cache crosses between the pools, e.g. '50 GB/s'")
    if args.kv_link.strip() == "auto":
        if placed is None:
            raise CliError("--kv-link: auto reads the systems' networks (with --system); on --device give the "
                           "bandwidth, e.g. '50 GB/s'")
        from ..core.serving.disagg_systems import auto_kv_link

        (sp, _, lp), (sd, _, ld) = placed
        try:
            found = auto_kv_link(sp, lp, sd, ld)
        except ValueError as exc:
            raise CliError(str(exc)) from None
        return found.link, found.source
    return _given_link(args), "given (--kv-link, --kv-link-latency)"


def _given_link(args) -> KvLink:
    try:
        return KvLink(parse_si(args.kv_link, "bandwidth", "--kv-link"),
                      parse_si(args.kv_link_latency, "time", "--kv-link-latency"))
    except UnitError as exc:
        raise CliError(str(exc)) from None
    except ValueError as exc:
        raise CliError(str(exc)) from None


def run(args, workload, prefill: Setup, decode: Setup, slo, n: int, placed=None) -> dict:
    """The disaggregated answer as the JSON object documented in docs/cli.md (``placed``: see
    :func:`link_and_source`)."""
    link, source = link_and_source(args, placed)
    chosen = pools(args)
    i_mean, _ = workload.mean_lengths()
    per_token = prefill.memory.kv_per_token * prefill.memory.devices
    out = {"kv_link": {"bandwidth_Bps": link.bandwidth, "latency_s": link.latency}, "kv_link_source": source,
           "kv_bytes_per_token": per_token, "kv_bytes_per_request": per_token * i_mean,
           "kv_transfer_s": float(link.seconds(per_token * i_mean)), "first_token": args.first_token}
    try:
        if chosen is not None:
            from dataclasses import replace

            p, d = replace(prefill, replicas=chosen[0]), replace(decode, replicas=chosen[1])
            res = summarize_disaggregated(simulate_disaggregated(workload, p, d, link, n, args.seed, args.router,
                                                                 args.first_token), p, d, slo, workload.mean_rate())
            est = estimate_disaggregated(workload, p, d, link, slo, first_token=args.first_token)[0]
            out.update(prefill_replicas=chosen[0], decode_replicas=chosen[1], result=res.to_dict(),
                       estimate=est.to_dict(), search=None, pool_search=None)
            out["_result"], out["_estimate"] = res, est
            return out
        found = search(workload, prefill, decode, link, slo, n, args.max_pool, args.seed, args.pool_search,
                       args.router, args.first_token)
        best, tried = found.best, list(found.tried)
    except ValueError as exc:
        raise CliError(f"serve: {exc}") from None
    est = None
    if best:
        from dataclasses import replace

        est = estimate_disaggregated(workload, replace(prefill, replicas=best.prefill_replicas),
                                     replace(decode, replicas=best.decode_replicas), link, slo,
                                     first_token=args.first_token)[0]
    out.update(prefill_replicas=best.prefill_replicas if best else None,
               decode_replicas=best.decode_replicas if best else None,
               result=best.result.to_dict() if best else None, estimate=est.to_dict() if est else None,
               search=[_choice(c) for c in tried],
               pool_search={"method": found.method, "sizes": len(tried), "simulated": found.simulated})
    out["_result"], out["_estimate"] = (best.result if best else None), est
    out["_tried"] = tried
    return out


def _choice(c: PoolChoice) -> dict:
    r = c.result
    return {"prefill_replicas": c.prefill_replicas, "decode_replicas": c.decode_replicas, "cost": c.cost,
            "cost_unit": c.cost_unit, "simulated": c.simulated, "slo_met": r.slo_met, "stable": r.stable,
            "ttft_p90_s": r.ttft.p90 if math.isfinite(r.ttft.p90) else None,
            "tpot_p90_s": r.tpot.p90 if math.isfinite(r.tpot.p90) else None,
            "throughput_tokens_per_s": r.throughput}


def print_disagg(data: dict, result_lines) -> None:
    link = data["kv_link"]
    pools_ = data.get("pools")
    if pools_:
        p, d = pools_["prefill"], pools_["decode"]
        print(f"disaggregated pools: prefill replicas {p['layout_label']} on {p['system']} ({p['devices_per_replica']}"
              f" x {p['device']}), decode replicas {d['layout_label']} on {d['system']} ({d['devices_per_replica']} x "
              f"{d['device']})")
    print(f"disaggregated: the prompt's KV cache ({data['kv_bytes_per_token']:.4g} B per token, "
          f"{data['kv_bytes_per_request']:.4g} B for a mean prompt: {data['kv_transfer_s'] * 1e3:.3g} ms) over "
          f"{format_si(link['bandwidth_Bps'], 'B/s')} per direction, {link['latency_s'] * 1e6:.3g} us latency")
    if not data["kv_link_source"].startswith("given"):
        print(f"  link {data['kv_link_source']}")
    if data["first_token"] == "decode":
        print("  the first token streams from the decode pool: TTFT = prefill + KV transfer + its first decode step")
    tried = data.get("_tried")
    if tried:
        rows = [[f"{c.prefill_replicas}", f"{c.decode_replicas}", f"{c.cost:.4g} {c.cost_unit}",
                 "simulated" if c.simulated else "estimated", _ms(c.result.ttft.p90), _ms(c.result.tpot.p90),
                 f"{c.result.throughput:.4g}", "yes" if c.result.slo_met and c.result.stable else "no"]
                for c in tried]
        print(text_table(["prefill", "decode", "cost", "by", "TTFT P90 [ms]", "TPOT P90 [ms]", "tokens/s", "SLO"],
                         rows))
        ps = data["pool_search"]
        print(f"  {ps['sizes']} pool sizes searched, {ps['simulated']} simulated" + (
            " (the estimate ranked them; only the cheapest it passes and those within 15 % of the service levels "
            "are simulated)" if ps["method"] == "estimate" else " (every size)"))
    if data["_result"] is None:
        print("  no pool size up to --max-pool meets the service levels")
        return
    print(f"  {data['prefill_replicas']} prefill + {data['decode_replicas']} decode replicas"
          + (" (the cheapest meeting the service levels)" if tried else "") + ":")
    print("  simulation:")
    print("\n".join(result_lines(data["_result"])))
    if data.get("_estimate") is not None:
        print("  estimate (analytic, core/serving/disagg_estimate.py):")
        print("\n".join(result_lines(data["_estimate"])))


def _ms(x: float) -> str:
    return "\u2014" if not math.isfinite(x) else f"{x * 1e3:.3g}"
