"""``hwexplorer train MODEL --system SYS ...``: the training step, memory, MFU and the time and cost to train on T
tokens, under one layout or every valid one ranked (docs/cli.md "train", docs/training.md)."""

from __future__ import annotations

import math

import numpy as np

from ..core.analysis.evaluate import MODELS
from ..core.analysis.time_source import PARTLY, SPEC, heading
from ..core.parallel.collectives import ALGORITHMS
from ..core.parallel.layout import LayoutError
from ..core.training.compare import train_on_system
from ..core.training.cost import TrainingCost
from ..core.training.layout import TrainingLayout, check
from ..core.training.memory import RECOMPUTE, SCHEDULES
from ..core.training.step import (
    STEP_PARTS,
    TrainingAnalysis,
    TrainingSetup,
    training_shape,
    with_lora,
)
from ..core.units import format_bytes, format_si
from ..core.workload.layers import Context
from ..core.workload.model import build_table
from .common import CliError, print_json, text_table
from .resolve import load_model_arg, project_devices
from .system_cmd import project_system

DEGREES = ("tp", "pp", "dp", "cp", "ep")


def add_parser(sub) -> None:
    p = sub.add_parser("train", help="time, memory, MFU and cost of training a model on a system",
                       description="The training step of MODEL on SYS (x --nodes): forward, backward, "
                       "recomputation, pipeline bubble, TP/CP/DP communication and the optimizer; memory per device "
                       "under ZeRO; MFU; time and cost to train on --tokens. Global batch in sequences.")
    p.add_argument("model", metavar="MODEL", help="a template id (e.g. llama3-70b) or a model file (.json)")
    p.add_argument("--system", required=True, metavar="SYS", help="a system id (catalog list --systems) or file")
    p.add_argument("--nodes", type=int, default=1, help="a cluster of N such systems (default 1)")
    p.add_argument("--tokens", default="1e12", help="tokens to train on (default 1e12), e.g. 2e12")
    p.add_argument("--global-batch", type=int, required=True, help="sequences per optimizer step")
    p.add_argument("--seq-len", type=int, required=True, help="tokens per sequence")
    p.add_argument("--micro-batch", type=int, default=1, help="sequences per micro-batch (default 1)")
    for name, what in (("tp", "tensor"), ("pp", "pipeline"), ("dp", "data"), ("cp", "context")):
        p.add_argument(f"--{name}", type=int, default=None, help=f"{what}-parallel degree")
    p.add_argument("--ep", type=int, default=None, help="expert-parallel degree (a mixture of experts; divides tp)")
    p.add_argument("--schedule", default="1f1b", help=f"pipeline schedule: {', '.join(SCHEDULES)} (default 1f1b)")
    p.add_argument("--virtual-stages", type=int, default=1, help="virtual stages per device (interleaved)")
    p.add_argument("--best", action="store_true", help="rank every valid layout by step time (the default when no "
                   "degree is given)")
    p.add_argument("--zero", type=int, default=1, help="ZeRO stage 0-3 (default 1; 3 = FSDP)")
    p.add_argument("--recompute", default="selective", help=f"activation recomputation: {', '.join(RECOMPUTE)} "
                   "(default selective)")
    p.add_argument("--lora", type=int, default=0, metavar="RANK", help="LoRA fine-tuning with adapters of this rank "
                   "(default 0: full training)")
    p.add_argument("--lora-targets", default="q,k,v,o", help="projections with adapters (default q,k,v,o; or all)")
    p.add_argument("--no-sp", action="store_true", help="no sequence parallelism with TP")
    p.add_argument("--attention", choices=("fused", "naive"), default="fused",
                   help="fused (FlashAttention; default) keeps no s x s matrix; naive keeps it")
    p.add_argument("--overlap", action="store_true", help="overlap DP reduction with the backward pass and TP/CP "
                   "communication with compute (default: exposed)")
    p.add_argument("--collective", choices=ALGORITHMS, default="auto", help="all-reduce algorithm (default auto)")
    p.add_argument("--time-model", choices=MODELS, default="ideal",
                   help="the rows' compute times: ideal (default; the roofline with the device's efficiency factors) "
                        "or calibrated (the device's fitted curves, 'calibrate kernels --save'; a device without "
                        "them keeps the ideal times, and the output says so)")
    p.add_argument("--json", action="store_true", help="print one JSON object (SI units)")
    p.set_defaults(func=run)


def _positive(value, option: str) -> None:
    if value is None or value < 1:
        raise CliError(f"--{option}: must be a positive whole number, got {value}")


def setup_from_args(args) -> tuple[TrainingSetup, float]:
    for option in ("global_batch", "seq_len", "micro_batch", "virtual_stages"):
        _positive(getattr(args, option), option.replace("_", "-"))
    for option in DEGREES:
        if getattr(args, option) is not None:
            _positive(getattr(args, option), option)
    if args.zero not in (0, 1, 2, 3):
        raise CliError(f"--zero: expected a ZeRO stage 0, 1, 2 or 3, got {args.zero}")
    if args.recompute not in RECOMPUTE:
        raise CliError(f"--recompute: expected one of {', '.join(RECOMPUTE)}, got {args.recompute!r}")
    if args.schedule not in SCHEDULES:
        raise CliError(f"--schedule: expected one of {', '.join(SCHEDULES)}, got {args.schedule!r}")
    if args.lora < 0:
        raise CliError(f"--lora: must be a whole number >= 0, got {args.lora}")
    try:
        tokens = float(args.tokens)
    except ValueError:
        raise CliError(f"--tokens: expected a number of tokens such as 2e12, got {args.tokens!r}") from None
    if not (math.isfinite(tokens) and tokens > 0):
        raise CliError(f"--tokens: must be a positive number, got {args.tokens}")
    return TrainingSetup(global_batch=args.global_batch, seq_len=args.seq_len, micro_batch=args.micro_batch,
                         zero=args.zero, recompute=args.recompute, lora_rank=args.lora,
                         lora_targets=args.lora_targets, overlap=args.overlap, attention=args.attention,
                         algorithm=args.collective, time_model=args.time_model), tokens


def layout_from_args(args, shape, system, setup: TrainingSetup) -> TrainingLayout | None:
    """The layout the degrees give (checked), or None for --best (the default when no degree but --cp is given)."""
    given = {d: getattr(args, d) for d in DEGREES if getattr(args, d) is not None}
    if args.best and set(given) - {"cp"}:
        raise CliError(f"--best: give either --best or the degrees ({', '.join('--' + d for d in given)}), not both")
    if args.best or not set(given) - {"cp"}:
        return None
    tp, pp, cp = given.get("tp", 1), given.get("pp", 1), given.get("cp", 1)
    if "dp" not in given and system.devices % (tp * pp * cp):
        name = next((d for d in ("cp", "pp") if given.get(d, 1) > 1), "tp")
        raise CliError(f"--{name}: tp {tp} x pp {pp} x cp {cp} does not divide the system's {system.devices} "
                       "devices")
    dp = given.get("dp", system.devices // (tp * pp * cp))
    layout = TrainingLayout(tp, pp, dp, cp, given.get("ep", 1), args.schedule, args.virtual_stages, not args.no_sp)
    try:
        check(layout, shape, system.devices, setup.zero, setup.recompute)
    except LayoutError as exc:
        raise CliError(f"--{exc}") from None
    return layout


def run(args) -> int:
    setup, tokens = setup_from_args(args)
    model, _ = load_model_arg(args.model)
    trained = with_lora(model, setup)
    errors = build_table(trained, Context(batch=1, seq_len=setup.seq_len)).errors
    if errors:
        i, msg = errors[0]
        option = ("--lora-targets" if "lora_targets" in msg else "--lora") if setup.lora_rank and "lora" in msg \
            else "MODEL"
        raise CliError(f"{option}: layer {i} ({model.layers[i].name or model.layers[i].kind}): {msg}")
    if not any(s.kind == "transformer_block" for s in model.layers):
        raise CliError("MODEL: training is modelled for transformer models; this one has no transformer_block")
    system = project_system(args.model, args.system, args.nodes, getattr(args, "db", None))  # a project's link fits
    device = project_devices(args.model, [system.device_id], getattr(args, "db", None))[0]
    layout = layout_from_args(args, training_shape(model, setup), system, setup)
    res = train_on_system(model, system, device, setup, tokens, layout, args.schedule, args.virtual_stages,
                          args.cp or 1, not args.no_sp)
    if res.error:
        raise CliError(f"--system {system.id}: {res.error}")
    if args.json:
        print_json({**training_json(res.analysis, res.cost, res.order, layout is None),
                    "time_model": res.analysis.setup.time_model, "time_source": training_time_source(res.analysis)})
    else:
        print_training(res.analysis, res.cost, res.order, layout is None)
        print(f"-- times: {heading(training_time_source(res.analysis))}")
    return 0


def _n(x) -> float | None:
    x = float(x)
    return x if math.isfinite(x) else None


def layout_json(r: TrainingAnalysis, c: TrainingCost, k: int) -> dict:
    return dict(
        r.layouts[k].to_dict(), label=r.layouts[k].label(), microbatches=int(r.microbatches[k]),
        fits=bool(r.fits[k]), step_time_s=_n(r.step_time[k]),
        step_parts_s={name: _n(x) for name, x in zip(STEP_PARTS, r.step_parts[k])},
        microbatch_time_s=_n(r.microbatch_time[k]), tp_comm_time_s=_n(r.tp_comm_time[k]),
        cp_comm_time_s=_n(r.cp_comm_time[k]), dp_comm_time_s=_n(r.dp_time[k]),
        tokens_per_s=_n(r.tokens_per_s[k]), tokens_per_s_per_device=_n(r.tokens_per_s[k] / r.devices),
        mfu=_n(r.mfu[k]), hfu=_n(r.hfu[k]), model_flops_per_s_per_device=_n(r.model_flops_per_device[k]),
        memory_bytes=_n(r.memory_bytes[k]), weight_bytes=_n(r.weight_bytes[k]),
        gradient_bytes=_n(r.gradient_bytes[k]), optimizer_bytes=_n(r.optimizer_bytes[k]),
        activation_bytes=_n(r.activation_bytes[k]),
        train={"steps": _n(c.steps), "time_s": _n(c.time_s[k]), "device_hours": _n(c.device_hours[k]),
               "energy_j": _n(c.energy_j[k]), "electricity_usd": _n(c.electricity_usd[k]),
               "rent_usd": _n(c.rent_usd[k]), "tco_usd": _n(c.tco_usd[k])})


def training_json(r: TrainingAnalysis, c: TrainingCost, order, ranked: bool) -> dict:
    s, st, w = r.system, r.setup, r.work
    return {
        "model": r.model.name,
        "system": {"id": s.id, "name": s.name, "device": s.device_id, "devices": s.devices, "nodes": s.nodes},
        "setup": {"global_batch": st.global_batch, "seq_len": st.seq_len, "micro_batch": st.micro_batch,
                  "tokens_per_step": st.global_batch * st.seq_len, "zero": st.zero, "recompute": st.recompute,
                  "lora_rank": st.lora_rank, "lora_targets": st.lora_targets if st.lora_rank else None,
                  "overlap": st.overlap, "attention": st.attention, "collective": st.algorithm,
                  "time_model": st.time_model, "calibrated": time_model_used(r) == "calibrated",
                  "precision": "bf16 weights and gradients, fp32 master weights and Adam moments",
                  "tokens": c.tokens},
        "work": {"forward_flops": w.forward, "backward_flops": w.backward, "recompute_flops": w.recompute,
                 "model_flops": w.model_flops, "hardware_flops": w.hardware_flops,
                 "trainable_params": w.trainable_params, "frozen_params": w.frozen_params},
        "peak_flops": _n(r.peak),
        "capacity_bytes": _n(r.capacity),
        "cost_assumptions": {"pue": c.assumptions.pue, "electricity_usd_per_kwh": c.assumptions.electricity_usd_per_kwh,
                             "years": c.assumptions.years},
        "ranked": ranked,
        "chosen": layout_json(r, c, int(order[0])),
        "layouts": [layout_json(r, c, int(k)) for k in order],
    }


def time_model_used(r: TrainingAnalysis) -> str:
    """The time model the numbers are in: 'calibrated' only when asked for and the device has curves."""
    return "calibrated" if r.setup.time_model == "calibrated" and r.device.calibration is not None else "ideal"


def time_model_caption(r: TrainingAnalysis) -> str:
    if r.setup.time_model == "calibrated" and r.device.calibration is None:
        return f"calibrated model asked, but {r.device.id} has no calibration: ideal times"
    return f"{time_model_used(r)} model"


def _days(seconds: float) -> str:
    return "\u2014" if not np.isfinite(seconds) else f"{seconds / 86400:.3g}"


def _mwh(joules: float) -> str:
    return "\u2014" if not np.isfinite(joules) else f"{joules / 3.6e9:.4g}"


def training_time_source(r: TrainingAnalysis) -> str:
    """The label of a training step's times: spec under the ideal model (or a device without curves); under the
    calibrated model, partly calibrated (the compute rows take the device's curves; the optimizer's memory traffic
    and the links stay on their stated figures or stored fits)."""
    return PARTLY if time_model_used(r) == "calibrated" else SPEC


def print_training(r: TrainingAnalysis, c: TrainingCost, order, ranked: bool) -> None:
    s, st, w = r.system, r.setup, r.work
    mode = f"LoRA rank {st.lora_rank} ({st.lora_targets})" if st.lora_rank else "full training"
    print(f"{r.model.name} on {s.name}: {s.devices} x {r.device.name}, {mode}, global batch {st.global_batch} x "
          f"{st.seq_len} tokens, micro-batch {st.micro_batch}, ZeRO {st.zero}, recompute {st.recompute}, "
          f"{st.attention} attention, communication {'overlapped' if st.overlap else 'exposed'}, "
          f"{time_model_caption(r)}")
    print(f"  per step: {format_si(w.model_flops, 'FLOP')} model (6 N D + attention), "
          f"{format_si(w.hardware_flops, 'FLOP')} with recomputation; {format_si(w.trainable_params, 'params')} "
          f"trainable; bf16 weights and gradients, fp32 master weights and Adam moments (16 B per trained parameter)")
    headers = ["", "layout", "m", "fits", "mem/dev [GB]", "act [GB]", "step [s]", "bubble [s]", "tokens/s", "MFU %",
               "HFU %", "days", "MWh"]
    rows = [["*" if i == 0 else "", r.layouts[k].label(), str(int(r.microbatches[k])), "yes" if r.fits[k] else "NO",
             f"{r.memory_bytes[k] / 1e9:.3g}", f"{r.activation_bytes[k] / 1e9:.3g}", f"{r.step_time[k]:.4g}",
             f"{r.bubble_time[k]:.3g}", f"{r.tokens_per_s[k]:.4g}", f"{100 * r.mfu[k]:.3g}", f"{100 * r.hfu[k]:.3g}",
             _days(c.time_s[k]), _mwh(c.energy_j[k])] for i, k in enumerate(order[:12])]
    print(text_table(headers, rows))
    if len(order) > 12:
        print(f"  ... {len(order) - 12} more layouts (--json lists them all)")
    k = int(order[0])
    parts = ", ".join(f"{name} {x:.3g} s" for name, x in zip(STEP_PARTS, r.step_parts[k]))
    print(f"-- {'best' if ranked else 'layout'}: {r.layouts[k].label()}: step {r.step_time[k]:.4g} s = {parts}")
    print(f"-- memory per device: weights {format_bytes(r.weight_bytes[k])}, gradients "
          f"{format_bytes(r.gradient_bytes[k])}, optimizer states {format_bytes(r.optimizer_bytes[k])}, activations "
          f"{format_bytes(r.activation_bytes[k])} of {format_bytes(r.capacity)}: "
          f"{'fits' if r.fits[k] else 'does NOT fit'}")
    if not r.fits.any():
        print("-- no layout fits in device memory: try --recompute full, --zero 3, more --nodes, --cp or --lora")
    money = []
    for label, x, missing in (("electricity", c.electricity_usd[k], "no TDP"),
                              ("rent", c.rent_usd[k], "no cloud price"),
                              ("TCO share", c.tco_usd[k], "no list price")):
        money.append(f"{label} {f'unknown ({missing} in the catalog)' if not np.isfinite(x) else f'${x:,.0f}'}")
    print(f"-- to train on {c.tokens:.3g} tokens: {c.steps:.4g} steps, {_days(c.time_s[k])} days, "
          f"{c.device_hours[k]:.4g} device-hours, {_mwh(c.energy_j[k])} MWh at TDP x PUE "
          f"{c.assumptions.pue}; " + ", ".join(money))
