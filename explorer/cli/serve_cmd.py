"""``hwexplorer serve MODEL --device D | --system S ... --rate 10/s --input 1024 --output 256 --ttft-p90 500ms``:
serving under load (docs/serving.md; JSON fields in docs/cli.md)."""

from __future__ import annotations

import json
import math
from dataclasses import replace

from ..core.analysis.evaluate import MODELS
from ..core.analysis.time_source import heading
from ..core.files import atomic_write_text
from ..core.precision import PRECISIONS
from ..core.serving.analytic import Setup
from ..core.serving.result import ServingResult
from ..core.serving.serve import ServingAnswer, answer, device_setup, system_setup
from ..core.serving.simulate import ROUTERS, Speculative
from ..core.serving.surface import combined
from ..core.serving.trace_export import chrome_trace
from ..core.serving.workload import (
    Workload,
    WorkloadError,
)
from ..core.units import format_bytes, parse_si
from ..core.workload.layers import Context
from . import serve_disagg
from .common import CliError, print_json, text_table
from .progress import ProgressBar
from .resolve import load_model_arg, project_devices
from .serving_args import _slo, _workload, check_engine, policy_from_args, power_price
from .serving_args import add_workload_args as add_serving_args
from .system_cmd import add_system_args, layouts_from_args, options_from_args, options_json, project_system
from .tensor_args import add_format_args, formats_from_args


def add_parser(sub) -> None:
    p = sub.add_parser("serve", help="serving under load: latency percentiles, throughput and goodput",
                       description="Continuous batching of MODEL on a device or a system layout at an arrival "
                                   "rate: TTFT, TPOT and end-to-end percentiles, throughput, goodput against the "
                                   "service levels, the load curve (docs/serving.md).")
    p.add_argument("model", metavar="MODEL", help="a template id (e.g. llama3-8b) or a model file")
    p.add_argument("--device", "-d", metavar="DEV", help="a device id or device file (one replica per device)")
    p.add_argument("--precision", default="fp16", choices=PRECISIONS, help="numeric precision (default fp16)")
    p.add_argument("--time-model", choices=MODELS, default="ideal",
                   help="the step times: ideal (default; datasheet figures) or calibrated (the device's fitted kernel "
                        "curves and, on --system, the system's fitted links where stored; a device without a "
                        "calibration keeps the ideal times; the output says which: spec, partly calibrated or "
                        "calibrated)")
    add_format_args(p)
    add_system_args(p)
    add_serving_args(p)
    p.add_argument("--trace", metavar="FILE", help="replay a request trace (CSV or JSONL: arrival time [s], input "
                   "and output tokens) instead of --rate and the lengths")
    e = p.add_argument_group("replicas, power, price and speculative decoding")
    e.add_argument("--replicas", type=int, default=1, help="replicas of --device behind the router (1)")
    e.add_argument("--router", choices=ROUTERS, default="round-robin", help="how requests are spread over the "
                   "replicas in the simulation: round-robin (default) or least-outstanding")
    e.add_argument("--idle-power", metavar="POWER", default=None, help="a device's power between steps, e.g. "
                   "90W (default 0: neglected, as the cost model does; a step runs at the device's TDP)")
    e.add_argument("--hourly-price", metavar="USD/H", default=None, help="what one device costs per hour, e.g. "
                   "'2.5 USD/h', for the cost per million tokens (default: the catalog's cloud price, where it has "
                   "one)")
    e.add_argument("--spec-k", type=int, default=None, help="speculative decoding: draft tokens per step")
    e.add_argument("--spec-acceptance", type=float, default=0.7, help="draft token acceptance rate 0-1 (0.7)")
    e.add_argument("--spec-draft-cost", type=float, default=0.1, help="a draft step's time / the target's decode "
                   "step (0.1; ignored with --spec-draft)")
    e.add_argument("--spec-draft", metavar="MODEL", default=None, help="the draft model (a template id or model "
                   "file): its own decode steps on the replica's device are the draft cost")
    serve_disagg.add_args(p)
    r = p.add_argument_group("simulation and output")
    r.add_argument("--simulate", action="store_true", help="also run the discrete-event simulation")
    r.add_argument("--requests", type=int, default=2000, help="requests simulated (default 2000)")
    r.add_argument("--seed", type=int, default=0, help="random seed of arrivals and lengths (default 0)")
    r.add_argument("--trace-out", metavar="FILE", help="write the simulated schedule as a Chrome/Perfetto trace "
                   "(.json; implies --simulate)")
    r.add_argument("--json", action="store_true", help="print one JSON object (SI units)")
    p.set_defaults(func=run)


def _check_counts(args) -> None:
    check_engine(args)
    for name in ("replicas", "requests"):
        if getattr(args, name) < 1:
            raise CliError(f"--{name.replace('_', '-')}: must be a whole number >= 1, got {getattr(args, name)}")


def _common(args) -> dict:
    """The setup's keyword arguments shared by every replica: formats, memory, power and price."""
    idle, price = power_price(args)
    return {"idle_w": idle, "usd_per_s": price, "precision": args.precision, "formats": formats_from_args(args),
            "utilization": args.memory_utilization, "block_size": args.block_size,
            "policy": policy_from_args(args), "time_model": args.time_model}


def _with_draft(args, spec, device, workload: Workload, common: dict):
    """``spec`` with the draft model's own decode surface on ``device`` (one device: the draft is not sharded)."""
    if spec is None or not args.spec_draft:
        return spec
    from dataclasses import replace

    from ..core.serving.serve import grid_for
    from ..core.serving.surfaces import device_surface

    draft, _ = load_model_arg(args.spec_draft)
    g = grid_for(workload, common["policy"], spec, args.block_size)
    return replace(spec, draft=device_surface(draft, device, g, args.precision, common["formats"],
                                              time_model=common["time_model"]))


def _setup(args, model, workload: Workload) -> tuple[Setup, str]:
    """The replica's setup and its description; on --system, ``args._placed`` is (system, device, layout)."""
    spec = None
    if args.spec_k is not None:
        try:
            spec = Speculative(args.spec_k, args.spec_acceptance, args.spec_draft_cost)
        except ValueError as exc:
            raise CliError(str(exc)) from None
    common = {**_common(args), "spec": spec}
    if args.spec_draft and spec is None:
        raise CliError("--spec-draft: give --spec-k too (the draft tokens per step)")
    try:
        if args.system:
            from ..core.parallel.compare import choose
            from ..core.parallel.system_pass import analyze_system

            system = project_system(args.model, args.system, args.nodes, getattr(args, "db", None))
            device = project_devices(args.model, [system.device_id], getattr(args, "db", None))[0]
            i_mean, o_mean = workload.mean_lengths()
            ctx = Context(batch=system.devices * 16, seq_len=int(i_mean + o_mean / 2), phase="decode")
            layouts, objective = layouts_from_args(args, model, ctx, system)
            options = replace(options_from_args(args), time_model=args.time_model)
            ranked = analyze_system(model, system, device, layouts, args.precision, ctx, common["formats"], options)
            cost = None
            if objective == "cost":  # the layouts' cost per million tokens at the --price quote or list price
                from ..core.parallel.layout_cost import layout_cost

                quotes = {device.id: parse_si(args.price, "money", "--price")} if args.price is not None else {}
                cost = layout_cost(ranked, quotes).cost_per_million
            layout = layouts[choose(ranked, objective, cost)[0]]
            common["spec"] = _with_draft(args, spec, device, workload, common)
            setup = system_setup(model, system, device, layout, workload, options=options, **common)
            args._placed = (system, device, layout)
            return setup, (f"{system.id} {layout.label()} ({layout.dp} replica{'s' * (layout.dp > 1)} x " \
                          f"{layout.tp * layout.pp} {device.id})")
        if not args.device:
            raise CliError("--device: give --device DEV or --system SYS")
        device = project_devices(args.model, [args.device], getattr(args, "db", None))[0]
        common["spec"] = _with_draft(args, spec, device, workload, common)
        setup = device_setup(model, device, workload, replicas=args.replicas, **common)
        return setup, f"{device.id} ({args.replicas} replica{'s' * (args.replicas > 1)} x 1 device)"
    except (ValueError, WorkloadError) as exc:
        msg = str(exc)
        raise CliError(msg if msg.startswith("--") else f"serve: {msg}") from None


def run(args) -> int:
    if args.system and args.device:
        raise CliError("--system: give either --system or --device, not both")
    if args.system and args.decode_device:
        raise CliError("--decode-device: with --system both pools are replicas of the system's layout; a decode "
                       "pool on another system is --decode-system SYS")
    serve_disagg.check_args(args)
    _check_counts(args)
    slo = _slo(args)
    workload = _workload(args)
    model, _ = load_model_arg(args.model)
    setup, where = _setup(args, model, workload)
    if setup.memory.blocks < 1:
        raise CliError(f"--device: no room for the KV cache: weights {format_bytes(setup.memory.weights)} and "
                       f"activations leave nothing of {format_bytes(setup.memory.capacity)} x "
                       f"{setup.memory.utilization} per device")
    n = args.requests if workload.trace is None else min(args.requests, len(workload.trace))
    simulate_n = n if (args.simulate or args.trace_out) else 0
    # a progress bar on stderr while the simulation runs: only on a terminal, never with --json (cli/progress.py)
    with ProgressBar("simulating", simulate_n, enabled=bool(simulate_n) and not args.json) as bar:
        try:
            ans = answer(workload, setup, slo, simulate_n, args.seed, record=bool(args.trace_out),
                         router=args.router, progress=bar if bar.active else None)
        except ValueError as exc:
            raise CliError(f"serve: {exc}") from None
        bar(1.0)
    if args.trace_out:
        atomic_write_text(args.trace_out, json.dumps(chrome_trace(ans.runs, model.name)))
    disagg = decode = None
    if args.disaggregate:
        decode = setup  # on --system: both pools are replicas of the chosen layout (tp x pp devices each)
        placed = getattr(args, "_placed", None)
        pools = None
        if args.decode_device:
            device = project_devices(args.model, [args.decode_device], getattr(args, "db", None))[0]
            decode = device_setup(model, device, workload, **_common(args))
        elif args.decode_system:
            decode, decode_placed = serve_disagg.decode_system_setup(args, model, workload, placed, _common(args))
            pools = serve_disagg.pools_json(setup, placed, decode, decode_placed)
            placed = (placed, decode_placed)
        elif placed is not None:
            pools = serve_disagg.pools_json(setup, placed, setup, placed)
            placed = (placed, placed)
        disagg = serve_disagg.run(args, workload, setup, decode, slo, n, placed)
        disagg["pools"] = pools
    if args.json:
        data = answer_json(ans, model.name, where, args)
        data["disaggregated"] = {k: v for k, v in disagg.items() if not k.startswith("_")} if disagg else None
        print_json({**data, **times_json(args.time_model, setup, decode)})
    else:
        print_answer(ans, model.name, where, args)
        if disagg:
            serve_disagg.print_disagg(disagg, _result_lines)
        print(times_line(args.time_model, *times_of(setup, decode)))
    return 0


def times_of(*setups: Setup | None) -> tuple[str, str]:
    """(time source, label) of the step times of ``setups`` (a disaggregated decode pool on another device is a
    second part): spec | partly calibrated | calibrated, and the label with kernel counts and sources."""
    found = list(dict.fromkeys(s for s in setups if s is not None))
    source = combined(s.time_source for s in found)
    if len(found) == 1 or len({s.time_label for s in found}) == 1:
        return source, found[0].time_label
    return source, f"{source} (" + "; ".join(f"{s.surface.source}: {s.time_label}" for s in found) + ")"


def times_json(time_model: str, *setups: Setup | None) -> dict:
    """The JSON's ``time_model``, ``time_source`` and ``time_label`` (docs/cli.md)."""
    source, label = times_of(*setups)
    return {"time_model": time_model, "time_source": source, "time_label": label}


def times_line(time_model: str, source: str, label: str) -> str:
    """The closing line of the text output: where the serving times come from (docs/calibration.md)."""
    if time_model == "ideal":
        return f"-- times: {heading(source)}"
    return f"-- times: {heading(source)}; calibrated model: {label}"


def _workload_json(w: Workload) -> dict:
    i_mean, o_mean = w.mean_lengths()
    out = {"rate_per_s": w.mean_rate() if math.isfinite(w.mean_rate()) else None,
           "arrival": "trace" if w.trace is not None else w.arrival,
           "lengths": "trace" if w.trace is not None else w.lengths.kind,
           "mean_input_tokens": i_mean, "mean_output_tokens": o_mean,
           "prefix_tokens": w.prefix_tokens, "prefix_hit_rate": w.prefix_hit_rate}
    if w.trace is None and w.lengths.kind != "histogram":
        out.update(input_tokens=list(w.lengths.input), output_tokens=list(w.lengths.output))
    return out


def answer_json(ans: ServingAnswer, model: str, where: str, args) -> dict:
    s = ans.setup
    return {
        "model": model, "replica": where, "replicas": s.replicas, "devices_per_replica": s.surface.devices,
        "precision": args.precision, "workload": _workload_json(ans.workload),
        "engine": {"max_batch": s.policy.max_batch, "max_batched_tokens": s.policy.max_batched_tokens,
                   "chunked_prefill": s.policy.chunked, "chunk_tokens": s.policy.chunk,
                   "speculative": None if s.spec is None else {
                       "k": s.spec.k, "acceptance": s.spec.acceptance,
                       "draft_cost": None if s.spec.draft is not None else s.spec.draft_cost,
                       "draft_model": args.spec_draft,
                       "tokens_per_step": s.spec.tokens_per_step},
                   "router": args.router},
        "memory_per_device": s.memory.to_dict(),
        "max_sequences": s.memory.max_sequences(int(sum(ans.workload.mean_lengths()))),
        "system_options": dict(options_json(options_from_args(args)), nodes=args.nodes) if args.system else None,
        "estimate": ans.estimate.to_dict(), "curve": ans.curve.to_dict(),
        "simulation": ans.simulation.to_dict() if ans.simulation else None,
    }


def _ms(x: float) -> str:
    return "\u2014" if x is None or not math.isfinite(x) else f"{x * 1e3:.3g}"


def _result_lines(r: ServingResult) -> list[str]:
    lines = [(f"  TTFT [ms] mean {_ms(r.ttft.mean)}, P50 {_ms(r.ttft.p50)}, P90 {_ms(r.ttft.p90)}, P99 {_ms(r.ttft.p99)}"
             f"; TPOT [ms] mean {_ms(r.tpot.mean)}, P50 {_ms(r.tpot.p50)}, P90 {_ms(r.tpot.p90)}, "
             f"P99 {_ms(r.tpot.p99)}; end-to-end P90 {_ms(r.e2e.p90)} ms"),
             f"  throughput {r.throughput:.4g} output tokens/s ({r.throughput_per_replica:.4g} per replica, "
             f"{r.throughput_per_device:.4g} per device), {r.request_throughput:.3g} requests/s, goodput "
             f"{r.goodput:.3g} requests/s; mean batch {r.mean_batch:.3g}, KV cache {100 * r.kv_utilization:.3g}% used"
             + (f", {r.preemptions} preemptions" if r.method == "simulation" else "")]
    if math.isfinite(r.energy_per_token) or math.isfinite(r.cost_per_million):
        energy = (f"{r.energy_per_token:.3g} J per output token (devices at TDP {100 * r.busy_share:.3g}% of the "
                  "time, at the idle power otherwise)") if math.isfinite(r.energy_per_token) else "energy unknown (no TDP)"
        cost = (f"{r.cost_per_million:.3g} USD per million output tokens" if math.isfinite(r.cost_per_million)
                else "cost unknown (give --hourly-price)")
        lines.append(f"  {energy}; {cost}")
    if not r.stable:
        lines.append("  ABOVE CAPACITY: the queue grows without bound (latencies grow with the run)")
    for c in r.slo:
        lines.append(f"  {c.metric.upper()} {c.percentile.upper()} {_ms(c.value_s)} ms against {_ms(c.target_s)} "
                     f"ms: {'met' if c.met else 'MISSED'}")
    return lines


def print_answer(ans: ServingAnswer, model: str, where: str, args) -> None:
    w, s, m = ans.workload, ans.setup, ans.setup.memory
    i_mean, o_mean = w.mean_lengths()
    arrivals = "a replayed trace" if w.trace is not None else f"{w.rate:.4g} requests/s ({w.arrival})"
    print(f"{model} on {where}, {args.precision}: {arrivals}, input {i_mean:.4g} and output {o_mean:.4g} tokens "
          f"(mean)")
    tokens = round(i_mean + o_mean)
    print(f"memory per device: weights {format_bytes(m.weights)}, activations {format_bytes(m.activation)}, "
          f"runtime reserve {format_bytes(m.reserved)} (utilization {m.utilization:g}), KV cache "
          f"{format_bytes(m.kv_budget)} = {m.blocks} blocks of {m.block_size} tokens -> "
          f"{m.max_sequences(tokens)} sequences of {tokens} tokens (batch cap {s.policy.max_batch})")
    if args.system:
        o = options_from_args(args)
        print(f"system pass: communication {'overlapped with compute' if o.overlap else 'exposed'}, all-reduce "
              f"{o.algorithm}, collectives in {o.collective_format} format, skew {o.skew:g}"
              + (", offload to host" if o.offload else "") + f", {args.nodes} node{'s' * (args.nodes > 1)}")
    if s.spec:
        print(f"speculative decoding: k {s.spec.k}, acceptance {s.spec.acceptance:g} -> "
              f"{s.spec.tokens_per_step:.3g} tokens per target step (Leviathan et al. 2023)")
    print("estimate (analytic):")
    print("\n".join(_result_lines(ans.estimate)))
    c = ans.curve
    knee = f"{c.rates[c.knee]:.3g} requests/s" if c.knee >= 0 else "none of the rates below"
    print(f"load curve: capacity {c.capacity:.3g} requests/s; the service levels hold up to {knee}")
    rows = [["*" if k == c.knee else "", f"{c.rates[k]:.3g}", f"{c.throughput_per_device[k]:.4g}",
             f"{c.per_user[k]:.3g}", _ms(c.ttft[k]), _ms(c.tpot[k]),
             "yes" if c.meets[k] else ("no" if c.stable[k] else "over capacity")]
            for k in range(0, len(c.rates), max(1, len(c.rates) // 12))]
    print(text_table(["", "rate [req/s]", "tokens/s/device", "tokens/s/user", "TTFT [ms]", "TPOT [ms]", "SLO"],
                     rows))
    if ans.simulation:
        r = ans.simulation
        print(f"simulation ({r.requests} requests, seed {args.seed}, {r.duration_s:.3g} s simulated):")
        print("\n".join(_result_lines(r)))
        top = sorted(zip(r.batch_sizes.tolist(), r.batch_share.tolist()), key=lambda x: -x[1])[:5]
        print("  decode batch sizes (share of steps): " + ", ".join(f"{b}: {100 * f:.2g}%" for b, f in top))
    if args.trace_out:
        print(f"schedule written to {args.trace_out} (open in ui.perfetto.dev)")
