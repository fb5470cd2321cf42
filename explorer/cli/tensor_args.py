"""``--weights``, ``--activations``, ``--kv-cache`` and ``--quantization``: each tensor's storage format
(docs/formats.md), shared by analyze, plan and report; ``--precision`` stays the shorthand for the unset
ones."""

from __future__ import annotations

from ..core.formats import FORMATS, PRESETS, TENSORS, TensorFormats, get_format
from .common import CliError

_SHOWN = ", ".join(FORMATS)


def add_format_args(p) -> None:
    g = p.add_argument_group("tensor formats", "each tensor's storage format (default: --precision); "
                             f"formats: {_SHOWN}, or int4-gN / int8-gN (a 16-bit scale per N weights)")
    g.add_argument("--weights", metavar="FORMAT", default=None,
                   help="the weights' format (e.g. int4-g128, mxfp4, nvfp4)")
    g.add_argument("--activations", metavar="FORMAT", default=None, help="the activations' format (e.g. fp8)")
    g.add_argument("--kv-cache", metavar="FORMAT", default=None,
                   help="the KV cache's format (e.g. fp8, int8, int4)")
    g.add_argument("--quantization", choices=tuple(PRESETS), default=None,
                   help="a preset for the three: " + "; ".join(
                       f"{k} = {'/'.join(v or '-' for v in fs)}" for k, fs in PRESETS.items())
                   + " (weights/activations/KV; '-' = --precision); --weights etc. override it")


def formats_from_args(args) -> TensorFormats | None:
    """The tensors' formats the options ask for; None when none is given (the precision alone)."""
    preset = PRESETS[args.quantization] if getattr(args, "quantization", None) else (None, None, None)
    values = {t: getattr(args, t, None) or p for t, p in zip(TENSORS, preset)}
    if all(v is None for v in values.values()):
        return None
    for t, v in values.items():
        if v is not None:
            try:
                values[t] = get_format(v, "--" + t.replace("_", "-")).name
            except ValueError as exc:
                raise CliError(str(exc)) from None
    return TensorFormats.of(args.precision, **values)
