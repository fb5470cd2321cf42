"""``hwexplorer analyze MODEL --phase generate --input P --output T --device DEV ...``: the generate task (a prefill
of P tokens, then decode until T new tokens per sequence) in one analysis pass (docs/generate.md)."""

from __future__ import annotations

import math

from ..core.analysis.generate import GenerateAnalysis, generate
from ..core.units import format_bytes, format_si
from .common import CliError, print_json, text_table
from .resolve import load_model_arg, resolve_devices, with_project_overrides
from .tensor_args import formats_from_args


def add_generate_args(p) -> None:
    p.add_argument("--input", type=int, default=None, metavar="P",
                   help="--phase generate: prompt tokens per sequence (default: --seq-len, else the model's tokens)")
    p.add_argument("--output", type=int, default=None, metavar="T",
                   help="--phase generate: new tokens per sequence, the first from the prefill (required there)")


def _num(x: float) -> float | None:
    return float(x) if math.isfinite(x) else None


def generate_json(g: GenerateAnalysis) -> dict:
    return {
        "model": g.model.name,
        "assumptions": {"precision": g.precision, "batch": g.batch, "input_tokens": g.input_tokens,
                        "output_tokens": g.output_tokens, "attention": g.attention, "phase": "generate"},
        "devices": [
            {"device": d.id, "ttft_s": _num(g.ttft_s[j]), "tpot_s": _num(g.tpot_s[j]), "decode_s": _num(g.decode_s[j]),
             "total_s": _num(g.total_s[j]), "throughput_tok_s": _num(g.throughput_tok_s[j]),
             "energy_j": _num(g.energy_j[j]), "memory_bytes": g.memory_bytes, "fits": bool(g.fits[j]),
             "steps": [{"kv_tokens": int(k), "time_s": _num(t)} for k, t in zip(g.step_kv, g.step_s[:, j])]}
            for j, d in enumerate(g.devices.devices)],
    }


def run_generate(args) -> int:
    if getattr(args, "system", None):
        raise CliError("--phase: generate takes --device (on a system: 'hwexplorer serve')")
    for name in ("batch", "seq_len", "input", "output"):
        value = getattr(args, name, None)
        if value is not None and value < 1:
            raise CliError(f"--{name.replace('_', '-')}: must be a positive whole number, got {value}")
    if args.output is None:
        raise CliError("--output: --phase generate needs the new tokens per sequence (e.g. --output 128)")
    if not args.device:
        raise CliError("--device: give at least one --device DEV")
    model, _ = load_model_arg(args.model)
    prompt = args.input or args.seq_len or model.default_seq_len()
    if prompt is None:
        raise CliError(f"--phase: generate needs a token model; {model.name} takes no tokens")
    devices = with_project_overrides(args.model, resolve_devices(args.device, getattr(args, "db", None)),
                                     getattr(args, "db", None))
    try:
        g = generate(model, devices, args.precision, batch=args.batch, input_tokens=prompt, output_tokens=args.output,
                     attention=args.attention, lm_head=args.lm_head, formats=formats_from_args(args))
    except ValueError as exc:
        raise CliError(str(exc)) from None
    if args.json:
        print_json(generate_json(g))
        return 0
    print(f"{model.name}: generate {g.input_tokens} + {g.output_tokens} tokens (batch {g.batch}, {g.precision}, "
          f"{g.attention} attention): prefill, then {len(g.step_s)} decode steps at KV {g.input_tokens + 1}.."
          f"{g.input_tokens + g.output_tokens - 1}; {g.tables_built} work tables built")
    rows = [[d.id, "yes" if g.fits[j] else "NO", format_si(g.ttft_s[j], "s"), format_si(g.tpot_s[j], "s"),
             format_si(g.total_s[j], "s"), f"{g.throughput_tok_s[j]:,.1f}", format_si(g.energy_j[j], "J"),
             format_bytes(g.memory_bytes)]
            for j, d in enumerate(g.devices.devices)]
    print(text_table(["device", "fits", "TTFT [s]", "TPOT [s]", "total [s]", "throughput [tokens/s]", "energy [J]",
                      "memory [B]"],
                     rows))
    return 0
