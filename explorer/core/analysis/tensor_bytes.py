"""Bytes and conversion work of each tensor of the work table in its own storage format.

The work table counts elements: ``weight_elems`` (read per pass), ``input_elems`` and ``output_elems``
(activations), ``kv_read_elems`` (the KV cache read), ``params`` and ``kv_cache_elems`` (resident). Each class
is stored in its format of :class:`~explorer.core.formats.TensorFormats` (weights, activations, KV cache), so its
bytes are elements x that format's real bits / 8, plus its per-tensor scales (NVFP4). Unset formats are the
analysis precision's plain bytes: exactly the numbers of the precision alone.

Conversion work: a tensor stored in a format whose precision is not the one the multiplies compute at is
converted (dequantized) as it is read or written, counted as one FLOP per element per pass (W4A16: one FLOP
per int4 weight element). A device that falls back to a wider precision converts the tensors that are not in that
precision too: the extra conversions of that device are ``device_conversions`` (rows x devices).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from ..formats import TensorFormats
from .device_arrays import DeviceArrays


@dataclass(frozen=True, eq=False)
class TensorBytes:
    weight: np.ndarray  # (L,) bytes of the weights read per pass
    activation: np.ndarray  # (L,) inputs + outputs
    kv: np.ndarray  # (L,) KV cache read
    conversions: np.ndarray  # (L,) FLOPs converting tensors to the analysis's compute precision
    device_conversions: np.ndarray  # (L, D) more FLOPs on devices at a fallback precision; (L, 1) zeros if none
    a_bpe: float  # bytes per element of a GEMM's left operand re-read (the activations)
    b_bpe: np.ndarray  # (L,) of its right operand: the weights, else the KV cache it reads, else activations


def formats_of(dev: DeviceArrays) -> TensorFormats:
    """The tensors' formats of an analysis: the arrays' own, or every tensor at its precision."""
    return dev.formats if dev.formats is not None else TensorFormats.of(dev.precision)


def _elements(c: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    return {"weights": c["weight_elems"], "activations": c["input_elems"] + c["output_elems"],
            "kv_cache": c["kv_read_elems"]}


def tensor_bytes(c: Mapping[str, np.ndarray], dev: DeviceArrays, fm: TensorFormats | None = None) -> TensorBytes:
    """Per row of the work table ``c`` (its columns): bytes and conversions under ``dev``'s formats (``fm``: those
    formats where the caller has them, :func:`formats_of` ``(dev)``, not parsed again)."""
    if fm is None:
        fm = formats_of(dev)
    n_rows = len(c["count"])
    inputs, outputs = c["input_elems"], c["output_elems"]
    act = fm.activations  # inputs and outputs are tensors of their own (each with its per-tensor scale)
    if act.plain:
        activation = (inputs + outputs) * act.bytes_per_element
    else:
        activation = act.nbytes(inputs) + act.nbytes(outputs)
    elems = _elements(c)
    conv = sum((elems[t] for t in fm.converted()), np.zeros(n_rows))
    fallback = [j for j in range(len(dev)) if dev.compute_of(j) != fm.compute]
    # one column that broadcasts while no device falls back: a full rows x devices array would make every later
    # per-row quantity of evaluate() a full matrix too (about a sixth of its time on 1,000 rows x 50 devices)
    extra = np.zeros((n_rows, len(dev) if fallback else 1))
    for j in fallback:
        extra[:, j] = sum((elems[t] for t in fm.converted(dev.compute_of(j))), np.zeros(n_rows)) - conv
    b_bpe = np.where(c["weight_elems"] > 0, fm.weights.bytes_per_element,
                     np.where(c["kv_read_elems"] > 0, fm.kv_cache.bytes_per_element, act.bytes_per_element))
    state = c.get("state_bytes", 0.0)  # fixed-format bytes (the optimizer's fp32 states)
    return TensorBytes(weight=fm.weights.nbytes(c["weight_elems"]) + state, activation=activation,
                       kv=fm.kv_cache.nbytes(c["kv_read_elems"]), conversions=conv, device_conversions=extra,
                       a_bpe=act.bytes_per_element, b_bpe=b_bpe)


def resident_bytes(c: Mapping[str, np.ndarray], fm: TensorFormats) -> tuple[float, float, float]:
    """The memory footprint's parts under formats ``fm``: (weights stored, KV cache resident, the largest
    row's activations)."""
    count = c["count"]
    # the tensors are counted only for a format with a per-tensor scale (``Format.nbytes`` reads them only then)
    weights = fm.weights.nbytes(float(np.sum(c["params"] * count)),
                                tensors=float(np.sum((c["params"] > 0) * count))
                                if fm.weights.tensor_scale_bits else None)
    kv = fm.kv_cache.nbytes(float(np.sum(c["kv_cache_elems"] * count)),
                            tensors=float(np.sum((c["kv_cache_elems"] > 0) * count))
                            if fm.kv_cache.tensor_scale_bits else None)
    peak = float(np.max((c["input_elems"] + c["output_elems"]), initial=0.0))
    act = fm.activations.nbytes(peak, tensors=2.0 if peak > 0 else 0.0)
    return float(weights), float(kv), float(act)
