"""The serving workload, service-level and engine options shared by ``hwexplorer serve`` and ``hwexplorer plan
--rate`` (docs/serving.md, docs/cli.md): one definition of each option, one parser of each value."""

from __future__ import annotations

import math
import re

from ..core.serving.simulate import Policy
from ..core.serving.workload import (
    ARRIVALS,
    PERCENTILES,
    SLO,
    Lengths,
    Workload,
    WorkloadError,
    read_histogram,
    read_trace,
)
from ..core.units import UnitError, parse_quantity, parse_si
from .common import CliError

METRICS = ("ttft", "tpot", "e2e")
ENGINE_COUNTS = ("max_batch", "max_batched_tokens", "chunk", "block_size")


def add_workload_args(p, rate_default: str | None = "1/s", rate_help: str | None = None) -> None:
    """--rate, --arrival, --input, --output, --lengths, the prefix cache, the service levels and the engine's
    batching and memory options (a plan adds them with ``rate_default=None``: --rate then switches plan to serving;
    ``rate_help``: the sweep's own words for its list of rates)."""
    w = p.add_argument_group("serving workload")
    w.add_argument("--rate", default=rate_default, help=rate_help or "arrival rate in requests/s, e.g. 10/s, "
                   "600/min or 10" + (f" (default {rate_default})" if rate_default else " (plan: plans by serving)"))
    w.add_argument("--arrival", choices=ARRIVALS, default="poisson", help="arrival process (default poisson)")
    w.add_argument("--input", default="1024", help="prompt tokens: N, or LOW-HIGH drawn uniformly (default 1024)")
    w.add_argument("--output", default="256", help="answer tokens: N, or LOW-HIGH drawn uniformly (default 256)")
    w.add_argument("--lengths", metavar="CSV", help="a CSV (or JSONL) of (input, output) token lengths to draw "
                   "from instead of --input/--output")
    w.add_argument("--prefix-tokens", type=int, default=0, help="a prompt prefix shared by every request [tokens]")
    w.add_argument("--prefix-hit-rate", type=float, default=0.0, help="share of requests finding the prefix in "
                   "the prefix cache, 0-1 (default 0)")
    s = p.add_argument_group("service levels (times with a unit, e.g. 500ms)")
    for metric in METRICS:
        for pct in PERCENTILES:
            s.add_argument(f"--{metric}-{pct}", metavar="TIME", default=None, help=_slo_help(metric, pct))
    e = p.add_argument_group("serving engine")
    e.add_argument("--max-batch", type=int, default=256, help="sequences in a step (vLLM max_num_seqs; 256)")
    e.add_argument("--max-batched-tokens", type=int, default=8192, help="prompt tokens in a prefill step (8192)")
    e.add_argument("--chunked-prefill", action="store_true", help="chunk prompts into the decode steps")
    e.add_argument("--chunk", type=int, default=512, help="tokens in a chunked step, decode tokens included (512)")
    e.add_argument("--block-size", type=int, default=16, help="KV-cache block [tokens] (16)")
    e.add_argument("--memory-utilization", type=float, default=0.9, help="share of device memory the engine "
                   "uses (vLLM gpu_memory_utilization; 0.9)")


def add_system_serving_args(p) -> None:
    """``plan --rate --system``'s system options, named as ``analyze --system`` names them: the nodes of a cluster and
    the system pass's options (overlap, offload, collective algorithm and format, skew)."""
    from .system_cmd import add_pass_options

    g = p.add_argument_group("system layouts serving (plan --rate --system)")
    g.add_argument("--nodes", type=int, default=1, help="each --system as a cluster of N such systems over its own "
                   "scale-out network (default 1)")
    add_pass_options(g)


#: the options of :func:`add_system_serving_args` and their defaults
SYSTEM_SERVING_DEFAULTS = (("nodes", 1), ("overlap", False), ("offload", False), ("collective", "auto"),
                           ("collective_format", "engine"), ("skew", 0.0))


def refuse_system_serving_args(args) -> None:
    """The throughput plan times systems with the default options: a system option given without --rate is one
    CliError naming it."""
    for name, default in SYSTEM_SERVING_DEFAULTS:
        if getattr(args, name, default) != default:
            raise CliError(f"--{name.replace('_', '-')}: applies only to plan --rate with --system (systems "
                           "serving); the throughput plan sizes systems with the default system-pass options")


def _slo_help(metric: str, pct: str) -> str:
    what = {"ttft": "time to first token", "tpot": "time per output token", "e2e": "end-to-end latency"}[metric]
    return f"{what} at {pct.upper()}"


def check_engine(args) -> None:
    """The engine's counts >= 1 and the memory share in (0, 1]; else CliError naming the option."""
    for name in ENGINE_COUNTS:
        if getattr(args, name) < 1:
            raise CliError(f"--{name.replace('_', '-')}: must be a whole number >= 1, got {getattr(args, name)}")
    if not 0 < args.memory_utilization <= 1:
        raise CliError(f"--memory-utilization: must be in (0, 1], got {args.memory_utilization}")


def power_price(args) -> tuple[float, float | None]:
    """(--idle-power in W, --hourly-price in USD/s or None: the catalog's cloud price); CliError naming the option."""
    try:
        idle = parse_si(args.idle_power, "power", "--idle-power") if args.idle_power is not None else 0.0
        price = (parse_si(args.hourly_price, "money_rate", "--hourly-price") if args.hourly_price is not None
                 else None)
    except UnitError as exc:
        raise CliError(str(exc)) from None
    if idle < 0 or (price is not None and price < 0):
        raise CliError(f"--{'idle-power' if idle < 0 else 'hourly-price'}: must be >= 0")
    return idle, price


def policy_from_args(args) -> Policy:
    return Policy(args.max_batch, args.max_batched_tokens, args.chunked_prefill, args.chunk)


def _rate(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        try:
            q = parse_quantity(text.replace("req", "").replace("requests", ""), "frequency", "--rate")
        except UnitError:
            raise CliError(f"--rate: {text!r} is not a rate; expected requests per second such as 10/s, "
                           "600/min or 10") from None
        value = float(q.to("1/s").magnitude)
    if not math.isfinite(value) or value <= 0:
        raise CliError(f"--rate: must be > 0 requests/s, got {text!r}")
    return value


def _range(text: str, option: str) -> tuple[int, int]:
    m = re.fullmatch(r"\s*(-?\d+)\s*(?:-\s*(-?\d+)\s*)?", text)
    if not m:
        raise CliError(f"{option}: expected N or LOW-HIGH tokens, got {text!r}")
    low = int(m.group(1))
    high = int(m.group(2)) if m.group(2) is not None else low
    if low < 1 or high < low:
        raise CliError(f"{option}: tokens must be >= 1 with LOW <= HIGH, got {text!r}")
    return low, high


def _slo(args) -> SLO:
    values, pcts = {}, {}
    for metric in METRICS:
        given = [(pct, getattr(args, f"{metric}_{pct}")) for pct in PERCENTILES
                 if getattr(args, f"{metric}_{pct}") is not None]
        if len(given) > 1:
            raise CliError(f"--{metric}-{given[1][0]}: one percentile per service level "
                           f"(--{metric}-{given[0][0]} is given too)")
        if given:
            pct, text = given[0]
            option = f"--{metric}-{pct}"
            try:
                seconds = float(parse_quantity(text, "time", option).to("s").magnitude)
            except UnitError as exc:
                raise CliError(str(exc)) from None
            if seconds <= 0:
                raise CliError(f"{option}: must be a time > 0, got {text!r}")
            values[metric], pcts[metric + "_pct"] = seconds, pct
    return SLO(**values, **pcts)


def _workload(args) -> Workload:
    try:
        if getattr(args, "trace", None):
            return Workload(trace=read_trace(args.trace), prefix_tokens=args.prefix_tokens,
                            prefix_hit_rate=args.prefix_hit_rate)
        rate = _rate(args.rate)
        if args.lengths:
            lengths = read_histogram(args.lengths)
        else:
            ins, outs = _range(args.input, "--input"), _range(args.output, "--output")
            fixed = ins[0] == ins[1] and outs[0] == outs[1]
            lengths = Lengths("fixed" if fixed else "uniform", ins, outs)
        return Workload(rate=rate, arrival=args.arrival, lengths=lengths, prefix_tokens=args.prefix_tokens,
                        prefix_hit_rate=args.prefix_hit_rate)
    except WorkloadError as exc:
        raise CliError(str(exc)) from None
