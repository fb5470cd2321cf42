"""``serve --disaggregate P:D|auto [--decode-device DEV] --kv-link BW``: separate prefill and decode pools
(docs/serving.md, "Disaggregated prefill and decode")."""

from __future__ import annotations

import math
import re

from ..core.serving.analytic import Setup
from ..core.serving.disagg import (
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
    g = p.add_argument_group("disaggregated prefill and decode (a --device replica)")
    g.add_argument("--disaggregate", metavar="P:D|auto", default=None, help="simulate P prefill and D decode "
                   "replicas, or search every pool size up to --max-pool for the cheapest meeting the service levels")
    g.add_argument("--decode-device", metavar="DEV", default=None, help="the decode pool's device (default --device)")
    g.add_argument("--kv-link", metavar="BW", default=None, help="the link the KV cache crosses, bandwidth per "
                   "direction, e.g. '50 GB/s' (required with --disaggregate)")
    g.add_argument("--kv-link-latency", metavar="TIME", default="0 s", help="its latency per transfer (default 0 s)")
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


def link_of(args) -> KvLink:
    if args.kv_link is None:
        raise CliError("--kv-link: give the bandwidth the KV cache crosses between the pools, e.g. '50 GB/s'")
    try:
        return KvLink(parse_si(args.kv_link, "bandwidth", "--kv-link"),
                      parse_si(args.kv_link_latency, "time", "--kv-link-latency"))
    except UnitError as exc:
        raise CliError(str(exc)) from None
    except ValueError as exc:
        raise CliError(str(exc)) from None


def run(args, workload, prefill: Setup, decode: Setup, slo, n: int) -> dict:
    """The disaggregated answer as the JSON object documented in docs/cli.md."""
    link = link_of(args)
    chosen = pools(args)
    out = {"kv_link": {"bandwidth_Bps": link.bandwidth, "latency_s": link.latency},
           "kv_bytes_per_token": prefill.memory.kv_per_token * prefill.memory.devices}
    try:
        if chosen is not None:
            from dataclasses import replace

            p, d = replace(prefill, replicas=chosen[0]), replace(decode, replicas=chosen[1])
            res = summarize_disaggregated(simulate_disaggregated(workload, p, d, link, n, args.seed, args.router),
                                          p, d, slo, workload.mean_rate())
            est = estimate_disaggregated(workload, p, d, link, slo)[0]
            out.update(prefill_replicas=chosen[0], decode_replicas=chosen[1], result=res.to_dict(),
                       estimate=est.to_dict(), search=None, pool_search=None)
            out["_result"], out["_estimate"] = res, est
            return out
        found = search(workload, prefill, decode, link, slo, n, args.max_pool, args.seed, args.pool_search,
                       args.router)
        best, tried = found.best, list(found.tried)
    except ValueError as exc:
        raise CliError(f"serve: {exc}") from None
    est = None
    if best:
        from dataclasses import replace

        est = estimate_disaggregated(workload, replace(prefill, replicas=best.prefill_replicas),
                                     replace(decode, replicas=best.decode_replicas), link, slo)[0]
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
    print(f"disaggregated: the prompt's KV cache ({data['kv_bytes_per_token']:.4g} B per token) over "
          f"{format_si(link['bandwidth_Bps'], 'B/s')} per direction, {link['latency_s'] * 1e6:.3g} us latency")
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
