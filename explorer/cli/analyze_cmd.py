"""``hwexplorer analyze MODEL --device DEV ...``: the model on each device, as tables or JSON (docs/cli.md)."""

from __future__ import annotations

import math

import numpy as np

from explorer.core.workload.layers import ATTENTION, LM_HEAD, PHASES, Context
from explorer.core.workload.layers.moe import ROUTING_ASSUMPTION

from ..core.analysis.evaluate import MODELS, ModelAnalysis, evaluate
from ..core.analysis.tensor_bytes import formats_of
from ..core.analysis.time_source import SPEC, device_time_sources, heading
from ..core.hardware.capacity import device_capacity
from ..core.precision import PRECISIONS
from ..core.units import format_bytes, format_si
from ..core.workload.model import build_table
from ..core.workload.train_step import part_of
from .common import CliError, Rows, print_json, text_table
from .generate_cmd import add_generate_args, run_generate
from .resolve import load_model_arg, resolve_devices, with_project_overrides
from .system_cmd import add_system_args, run_system
from .tensor_args import add_format_args, formats_from_args


def add_parser(sub) -> None:
    p = sub.add_parser("analyze", help="analyze a model on one or more devices",
                       description="Roofline, tiling, energy and totals for every layer of MODEL on each DEV.")
    p.add_argument("model", metavar="MODEL", help="a template id (e.g. gpt2, resnet50) or a model file (.json)")
    add_workload_args(p, (*PHASES, "generate"))
    add_generate_args(p)
    add_system_args(p)
    p.add_argument("--model", "--time-model", dest="time_model", choices=MODELS, default="ideal",
                   help="the time shown in the tables: ideal (default; the roofline with the device's efficiency "
                        "factors and mapping) or calibrated (fitted to measured kernels, where the device file has a "
                        "calibration; JSON always carries both)")
    p.add_argument("--json", action="store_true", help="print one JSON object (SI units)")
    p.set_defaults(func=run)


def add_workload_args(p, phases: tuple[str, ...] = ("prefill", "decode")) -> None:
    """Arguments shared by analyze, plan and report (analyze also offers the train phase)."""
    p.add_argument("--device", "-d", action="append", metavar="DEV",
                   help="a device id from the catalog or a device file (repeatable; required unless --system)")
    p.add_argument("--precision", default="fp16", choices=PRECISIONS, help="numeric precision (default fp16)")
    p.add_argument("--batch", type=int, default=1, help="batch size (default 1)")
    p.add_argument("--seq-len", type=int, default=None, help="sequence length (token models; decode: context)")
    p.add_argument("--phase", choices=phases, default=None,
                   help="prefill processes the sequence; decode one token per sequence against a KV cache"
                   + ("; train one training step of --batch sequences (forward, backward at 2x for trainable "
                      "GEMMs and 1x for frozen ones, Adam per layer; docs/training.md)" if "train" in phases else "")
                   + ("; generate a prefill of --input tokens and decode until --output new tokens, in one pass "
                      "(docs/generate.md)" if "generate" in phases else ""))
    add_format_args(p)
    p.add_argument("--attention", choices=ATTENTION, default="naive",
                   help="naive: the S x S scores go through memory (default); fused: FlashAttention, K and V re-read "
                        "once per query block sized from the device's on-chip memory")
    p.add_argument("--lm-head", choices=LM_HEAD, default="last",
                   help="the positions whose logits prefill computes: last (default; serving: each sequence's next "
                        "token) or all (training, scoring)")


def workload_from_args(args):
    for name in ("batch", "seq_len"):
        value = getattr(args, name)
        if value is not None and value < 1:
            raise CliError(f"--{name.replace('_', '-')}: must be a positive whole number, got {value}")
    model, phase_default = load_model_arg(args.model)
    phase = args.phase or phase_default
    ctx = Context(batch=args.batch, seq_len=args.seq_len, phase=phase, attention=args.attention,
                  lm_head="all" if phase == "train" else args.lm_head)  # training computes every position's loss
    if not args.device:
        if getattr(args, "system", None):
            return model, ctx, []
        raise CliError("--device: give at least one --device DEV" + (
            " (or --system SYS)" if hasattr(args, "system") else ""))
    devices = with_project_overrides(args.model, resolve_devices(args.device, getattr(args, "db", None)),
                                     getattr(args, "db", None))
    return model, ctx, devices


def run(args) -> int:
    if args.system and args.device:
        raise CliError("--system: give either --system or --device, not both")
    if args.phase == "generate":
        return run_generate(args)
    for name in ("input", "output"):
        if getattr(args, name, None) is not None:
            raise CliError(f"--{name}: only with --phase generate")
    model, ctx, devices = workload_from_args(args)
    if args.system and ctx.phase == "train":
        raise CliError("--phase: train on a system is 'hwexplorer train MODEL --system SYS' (its layouts, memory and "
                       "communication); analyze --phase train takes --device")
    if args.system:
        table_errors = build_table(model, ctx).errors
        if table_errors:
            i, msg = table_errors[0]
            raise CliError(f"layer {i} ({model.layers[i].name or model.layers[i].kind}): {msg}")
        return run_system(args, model, ctx, formats_from_args(args))
    result = evaluate(model, devices, args.precision, ctx, formats=formats_from_args(args))
    if result.table.errors:
        i, msg = result.table.errors[0]
        raise CliError(f"layer {i} ({model.layers[i].name or model.layers[i].kind}): {msg}")
    model = getattr(args, "time_model", "ideal")
    if args.json:
        print_json(analysis_json(result, model, stream=True))
    else:
        print_tables(result, model)
    return 0


PARTS = ("forward", "backward", "optimizer")  # a train-phase row's part of the step (JSON "part")
PER = {"prefill": "inference", "decode": "step", "train": "training step"}


def _num(x) -> float | None:
    x = float(x)
    return x if math.isfinite(x) else None


def routing_assumption(r: ModelAnalysis) -> str | None:
    """How the weights a mixture of experts reads per step are estimated; None for a model without experts."""
    return ROUTING_ASSUMPTION if "moe_experts" in r.table.kinds else None


def formats_json(r: ModelAnalysis) -> dict:
    """The tensors' formats (the precision's own when none was set), the compute precision and the notes."""
    fm = formats_of(r.devices)
    out = fm.to_dict()
    return {"precision": fm.precision, "weights": out["weights"], "activations": out["activations"],
            "kv_cache": out["kv_cache"], "compute_precision": out["compute"], "bits_per_element": out["bits"],
            "format_notes": list(fm.notes())}


def analysis_json(r: ModelAnalysis, model: str = "ideal", stream: bool = False) -> dict:
    """The documented JSON shape (docs/cli.md): plain numbers in SI base units, null where unknown. Both time
    models are always present (``time_s`` ideal, ``calibrated_time_s``); ``model`` records the one chosen.
    ``stream``: each device's layers as a :class:`Rows` that :func:`print_json` writes one at a time."""
    t = r.table
    out = {
        "model": {"name": r.model.name, "params": t.total("params"), "active_params": t.total("active_params"),
                  "macs": t.total("macs"), "flops": t.total("flops")},
        "assumptions": {"precision": r.precision, "batch": r.ctx.batch, "seq_len": r.ctx.seq_len,
                        "phase": r.ctx.phase, "moe_routing": routing_assumption(r),
                        "attention": r.ctx.attention, "lm_head": r.ctx.lm_head, "model": model,
                        **formats_json(r)},
        "results": [],
    }
    dev = r.devices
    sources, calibrated = device_time_sources(r, model), device_time_sources(r, "calibrated")
    for j, device in enumerate(dev.devices):
        tot = r.totals
        out["results"].append({
            "device": {"id": device.id, "name": device.name, "peak_flops": _num(dev.peak[j]),
                       "bandwidth": _num(dev.bandwidth[j]), "ridge": _num(dev.ridge[j])},
            "layers": Rows(lambda j=j: layer_rows(r, j)) if stream else list(layer_rows(r, j)),
            "totals": {
                "ideal_time_s": _num(tot.ideal_time[j]), "time_s": _num(tot.time[j]),
                "calibrated_time_s": _num(tot.calibrated_time[j]),
                "throughput_per_s": _num(tot.throughput[j]), "throughput_unit": tot.throughput_unit,
                "flops": _num(tot.flops[j]), "bytes": _num(tot.bytes[j]), "energy_j": _num(tot.energy[j]),
                "memory_bytes": tot.memory_bytes, "kv_cache_bytes": tot.kv_cache_bytes,
                "fits_memory": bool(tot.fits[j]), "achieved_flops": _num(tot.achieved_flops[j]),
                "utilization": _num(tot.utilization[j]),
            },
            "defaults_used": list(dev.defaults_used[j]),
            "calibration": r.calibration_status[j],
            "time_source": sources[j],  # of the chosen model's times: spec | partly calibrated | calibrated
            "time_sources": {"time_s": SPEC, "calibrated_time_s": calibrated[j]},
        })
        out["results"][-1]["device"].update(compute_precision=dev.compute_of(j),
                                            precision_note=(dev.precision_notes or ("",) * len(dev))[j] or None)
    return out


def layer_rows(r: ModelAnalysis, j: int, chunk: int = 4096):
    """The rows of device ``j`` in ``analysis_json``'s layer shape, one dict at a time. The arrays are read
    ``chunk`` rows at a time (as Python lists), so the work is linear in the layers (it was quadratic: two (L, D)
    masks were rebuilt for every row) and the memory is bounded by the chunk."""
    t = r.table
    known_map, mapping = r.mapping_known[:, j], r.mapping_efficiency[:, j]
    columns = {  # name -> (L,) array; unknown (masked or non-finite) values are NaN, written as null
        "count": np.asarray(r.count).astype(int), "macs": t.macs, "flops": r.flops, "params": t.params,
        "active_params": t.active_params, "weight_bytes": r.weight_bytes, "activation_bytes": r.activation_bytes,
        "bytes": r.bytes, "intensity": r.intensity, "attainable_flops": r.attainable[:, j],
        "ideal_time_s": r.ideal_time[:, j], "time_s": r.time[:, j], "calibrated_time_s": r.calibrated_time[:, j],
        "calibrated": r.calibrated[:, j], "mapping_efficiency": np.where(known_map, mapping, np.nan),
        "fringe_tax": np.where(known_map, 1 - mapping, np.nan), "compute": r.compute_energy[:, j],
        "total": r.energy[:, j]}
    nullable = ("intensity", "attainable_flops", "ideal_time_s", "time_s", "calibrated_time_s", "mapping_efficiency",
                "fringe_tax", "compute", "total")
    names = r.devices.level_names[j]
    known = _known
    train, parts = r.ctx.phase == "train", part_of(t)
    for start in range(0, len(t), chunk):
        part = slice(start, start + chunk)
        c = {k: np.asarray(v[part]).tolist() for k, v in columns.items()}
        for k in nullable:
            c[k] = [known(x) for x in c[k]]
        levels = [[known(x) for x in r.level_energy[part, j, v].tolist()] for v in range(len(names))]
        bound = np.where(r.bound_known[part, j], np.where(r.memory_bound[part, j], "memory", "compute"),
                         None).tolist()
        gemm = np.asarray(t.gemm[part]).astype(int).tolist()
        for n in range(len(c["count"])):
            i = start + n
            energy = {name: levels[v][n] for v, name in enumerate(names)}
            energy["compute"] = c["compute"][n]
            energy["total"] = c["total"][n]
            row = {
                "name": t.names[i], "kind": t.kinds[i], "count": c["count"][n], "macs": float(c["macs"][n]),
                "flops": float(c["flops"][n]), "params": float(c["params"][n]),
                "active_params": float(c["active_params"][n]), "weight_bytes": float(c["weight_bytes"][n]),
                "activation_bytes": float(c["activation_bytes"][n]), "bytes": float(c["bytes"][n]),
                **{k: c[k][n] for k in nullable[:5]}, "calibrated": c["calibrated"][n], "bound": bound[n],
                "mapping_efficiency": c["mapping_efficiency"][n], "fringe_tax": c["fringe_tax"][n],
                "energy_j": energy, "gemm": dict(zip(("m", "n", "k"), gemm[n], strict=True)),
            }
            if train:
                row["part"] = PARTS[parts[i]]
            yield row


def _known(x: float) -> float | None:
    """``x``, or None where it is NaN or infinite (JSON null)."""
    return x if math.isfinite(x) else None


def _f(x, digits=3) -> str:
    return "\u2014" if not np.isfinite(x) else f"{x:.{digits}g}"


def _settings(r: ModelAnalysis) -> str:
    """The attention and LM-head settings when they are not the defaults (', fused attention')."""
    return (", fused attention" if r.ctx.attention == "fused" else "") + (
        ", LM head on every position" if r.ctx.lm_head == "all" else "")


def _mark(r: ModelAnalysis, model: str, i: int, j: int) -> str:
    """'*' after a calibrated-model time that is the ideal model's (no curve for that kind of work)."""
    return "*" if model == "calibrated" and not r.calibrated[i, j] else ""


def print_tables(r: ModelAnalysis, model: str = "ideal") -> None:
    t = r.table
    params, active = t.total("params"), t.total("active_params")
    per_token = f" ({format_si(active, 'params')} active per token)" if active != params else ""
    print(f"{r.model.name}: {format_si(params, 'params')}{per_token}, {format_si(t.total('macs'), 'MAC')}, "
          f"{format_si(t.total('flops'), 'FLOP')} per "
          f"{PER[r.ctx.phase]} "
          f"(batch {r.ctx.batch}, {formats_of(r.devices).label()}, {r.ctx.phase}{_settings(r)}"
          f"{', calibrated model' if model == 'calibrated' else ''})")
    if routing_assumption(r):
        print(f"experts' weights read per step: {routing_assumption(r)}, T the tokens of the step")
    for note in formats_of(r.devices).notes():
        print(f"formats: {note}")
    headers = ["layer", "kind", "x", "GFLOP", "MB", "FLOP/B", "attain TFLOP/s", "time [us]", "bound", "map eff",
               "energy [mJ]"]
    bounds = r.bound_names()
    times = r.model_time(model)
    sources = device_time_sources(r, model)
    for j, device in enumerate(r.devices.devices):
        dev, tot = r.devices, r.totals
        print()
        print(f"== {device.name} [{device.id}]: peak {format_si(dev.peak[j], 'FLOP/s')}, "
              f"bandwidth {format_si(dev.bandwidth[j], 'B/s')}, ridge {_f(dev.ridge[j], 4)} FLOP/B")
        rows = [[t.names[i], t.kinds[i], str(int(r.count[i])), _f(r.flops[i] / 1e9), _f(r.bytes[i] / 1e6),
                 _f(r.intensity[i]), _f(r.attainable[i, j] / 1e12), _f(times[i, j] * 1e6) + _mark(r, model, i, j),
                 bounds[i, j], _f(r.mapping_efficiency[i, j]) if r.mapping_known[i, j] else "unknown",
                 _f(r.energy[i, j] * 1e3)] for i in range(len(t))]
        print(text_table(headers, rows))
        print(f"-- times: {heading(sources[j])}")
        fits = "fits" if tot.fits[j] else "does NOT fit"
        if model == "calibrated":
            total = tot.calibrated_time[j]
            with np.errstate(invalid="ignore", divide="ignore"):
                achieved = tot.achieved_flops[j] * tot.time[j] / total
            print(f"-- total: time {format_si(total, 's')} calibrated (ideal model {format_si(tot.time[j], 's')}, "
                  f"ideal roofline {format_si(tot.ideal_time[j], 's')}), "
                  f"throughput {_f(r.ctx.batch / total, 4)} {tot.throughput_unit}, "
                  f"achieved {format_si(achieved, 'FLOP/s')} ({_f(100 * achieved / dev.peak[j])}% of peak), "
                  f"energy {format_si(tot.energy[j], 'J')}")
            marked = " (* = no curve for that kind of work: the ideal model's time)" if not r.calibrated[:, j].all() else ""
            print(f"-- calibration: {r.calibration_status[j]}{marked}")
        else:
            print(f"-- total: time {format_si(tot.time[j], 's')} (ideal roofline "
                  f"{format_si(tot.ideal_time[j], 's')}), throughput {_f(tot.throughput[j], 4)} {tot.throughput_unit}, "
                  f"achieved {format_si(tot.achieved_flops[j], 'FLOP/s')} ({_f(100 * tot.utilization[j])}% of peak), "
                  f"energy {format_si(tot.energy[j], 'J')}")
        if r.ctx.phase == "train":
            print("-- memory: the weights and the largest row's tensors only; a training step's memory (gradients, "
                  "optimizer states, the activations held for the backward) is hwexplorer train's")
        print(f"-- memory: {format_bytes(tot.memory_bytes)} needed (weights {format_bytes(tot.weight_bytes)}, "
              f"KV cache {format_bytes(tot.kv_cache_bytes)}, activations {format_bytes(tot.activation_peak_bytes)})"
              f" of {device_capacity(dev.devices[j])}: {fits}")
        if dev.precision_notes and dev.precision_notes[j]:
            print(f"-- precision: {dev.precision_notes[j]}")
        if dev.defaults_used[j]:
            print(f"-- defaults used (Horowitz 45 nm / 128x128 tile): {', '.join(dev.defaults_used[j])}")
