"""``hwexplorer report ... --serving --rate 10/s --input 1024 --output 256 --ttft-p90 500ms --tpot-p90 50ms``: the
report's Serving section (docs/serving.md), with the workload and service-level options of ``hwexplorer serve``
(a fixed input and output length; the same units and checks)."""

from __future__ import annotations

from ..core.serving.workload import ARRIVALS, PERCENTILES
from ..core.session.serving_choice import ServingChoice
from .common import CliError
from .serving_args import METRICS, _range, _rate, _slo, _slo_help

DEFAULTS = ServingChoice()


def add_args(p) -> None:
    g = p.add_argument_group("serving section (any of these adds it; docs/serving.md)")
    g.add_argument("--serving", action="store_true", help="add a Serving section: per device the capacity, latency "
                   "percentiles against the service levels, cost per million tokens and energy per token at the "
                   "service level")
    g.add_argument("--rate", default=None, help=f"arrival rate, e.g. 10/s or 600/min (default {DEFAULTS.rate:g}/s)")
    g.add_argument("--arrival", choices=ARRIVALS, default=None, help="arrival process (default poisson)")
    g.add_argument("--input", default=None, help=f"prompt tokens (default {DEFAULTS.input_tokens})")
    g.add_argument("--output", default=None, help=f"answer tokens (default {DEFAULTS.output_tokens})")
    for metric in METRICS:
        for pct in PERCENTILES:
            g.add_argument(f"--{metric}-{pct}", metavar="TIME", default=None, help=_slo_help(metric, pct) + (
                " (default: TTFT P90 500 ms and TPOT P90 50 ms when no service level is given)"
                if (metric, pct) == ("ttft", "p90") else ""))
    g.add_argument("--max-batch", type=int, default=None, help="sequences in a step (256)")
    g.add_argument("--chunked-prefill", action="store_true", default=None, help="chunk prompts into decode steps")
    g.add_argument("--chunk", type=int, default=None, help="tokens in a chunked step (512)")
    g.add_argument("--block-size", type=int, default=None, help="KV-cache block [tokens] (16)")
    g.add_argument("--memory-utilization", type=float, default=None, help="share of device memory the engine "
                   "uses (0.9)")
    g.add_argument("--serving-requests", type=int, default=2000, help="requests simulated per device (2000; 0: the "
                   "analytic estimate only)")


def _given(args) -> bool:
    names = ["rate", "arrival", "input", "output", "max_batch", "chunked_prefill", "chunk", "block_size",
             "memory_utilization"] + [f"{m}_{p}" for m in METRICS for p in PERCENTILES]
    return bool(args.serving) or any(getattr(args, n) is not None for n in names)


def choice_from_args(args) -> ServingChoice | None:
    """The serving part the options ask for (None: no Serving section); bad input -> CliError naming the option."""
    if not _given(args):
        return None
    values = {}
    if args.rate is not None:
        values["rate"] = _rate(args.rate)
    if args.arrival is not None:
        values["arrival"] = args.arrival
    for option, field in (("input", "input_tokens"), ("output", "output_tokens")):
        text = getattr(args, option)
        if text is not None:
            low, high = _range(text, f"--{option}")
            if low != high:
                raise CliError(f"--{option}: the report's serving section takes one length, got {text!r}")
            values[field] = low
    slo = _slo(args)
    if slo.targets():
        values.update(ttft=slo.ttft, tpot=slo.tpot, e2e=slo.e2e, ttft_pct=slo.ttft_pct, tpot_pct=slo.tpot_pct,
                      e2e_pct=slo.e2e_pct)
    for option, field in (("max_batch", "max_batch"), ("chunk", "chunk"), ("block_size", "block_size"),
                          ("memory_utilization", "memory_utilization")):
        if getattr(args, option) is not None:
            values[field] = getattr(args, option)
    if args.chunked_prefill:
        values["chunked"] = True
    if args.serving_requests < 0:
        raise CliError(f"--serving-requests: must be >= 0, got {args.serving_requests}")
    try:
        return ServingChoice(**values).checked()
    except ValueError as exc:
        field = str(exc).split(":", 1)[0]
        option = {"input_tokens": "input", "output_tokens": "output", "chunked": "chunked-prefill"}.get(field, field)
        raise CliError(f"--{option.replace('_', '-')}:{str(exc).split(':', 1)[1]}") from None


def section_from_args(args, analysis):
    """The Serving section for the analysis's model and devices (None when not asked for)."""
    choice = choice_from_args(args)
    if choice is None:
        return None
    from ..report.serving_section import build_serving_section

    try:
        return build_serving_section(analysis.model, analysis.devices.devices, choice, analysis.precision,
                                     analysis.devices.formats, args.serving_requests,
                                     time_model=getattr(args, "time_model", "ideal"))
    except ValueError as exc:
        raise CliError(str(exc)) from None
