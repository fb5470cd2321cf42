"""Tensor-core alignment: padding waste and the penalty for dimensions that miss the tile.

The rendered chapter (footnote 22, R:698; Example 1.2, R:1106-1111) says Tensor Cores are most efficient
when dimensions are multiples of 8 or 16 (FP16/BF16/INT8), and that non-aligned shapes "may trigger less
efficient kernels, require padding, or reduce effective throughput". Only the older source quantifies
it: "scalar fallback to CUDA cores, reducing effective throughput by 8-16x", "pad embedding dimensions
to the nearest multiple of 64", and "512 output features runs 8x faster than 500".

Derived model:

* ``padded = ceil(D / m) * m`` for each dimension; waste = ``(padded - D) / padded``;
* GEMM FLOP (2 per multiply-accumulate) over ``dims`` = ``2 * prod(D)``; padded FLOP = ``2 * prod(padded)``;
* padded run: tensor-core peak spent partly on zeros, useful rate = ``R_TC * useful / padded``;
* unpadded and unaligned: fallback at ``R_TC / penalty`` (penalty 8-16 from the source, or
  ``R_TC / R_CUDA`` = 312 / 19.5 = 16 on the A100, Example 1.2's "1/16th the throughput").
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from ._common import CalculatorInputError, Preset, positive, positive_int


@dataclass(frozen=True)
class AlignmentResult:
    dims: tuple[int, ...]
    multiple: int
    padded_dims: tuple[int, ...]
    waste_per_dim: tuple[float, ...]
    aligned: bool
    useful_flops: float
    padded_flops: float
    flop_waste: float
    padded_throughput: float  # useful FLOP/s when padded to the multiple
    unpadded_throughput: float  # useful FLOP/s without padding (fallback if unaligned)
    padding_speedup: float  # padded / unpadded useful throughput


def tensor_core_alignment(
    dims: Sequence[int], multiple: int, tensor_peak: float, fallback_penalty: float = 16.0
) -> AlignmentResult:
    """Check 1-3 GEMM dimensions against ``multiple`` and compare padding with the fallback path."""
    if isinstance(dims, (int, float)):
        dims = (dims,)
    if not 1 <= len(dims) <= 3:
        raise CalculatorInputError("dims", f"expected 1 to 3 dimensions, got {len(dims)}")
    ds = tuple(positive_int(d, f"dims[{i}]") for i, d in enumerate(dims))
    mult = positive_int(multiple, "multiple")
    peak = float(positive(tensor_peak, "tensor_peak"))
    penalty = float(positive(fallback_penalty, "fallback_penalty"))
    if penalty < 1:
        raise CalculatorInputError("fallback_penalty", f"must be >= 1 (a slowdown), got {penalty:g}")
    padded = tuple(math.ceil(d / mult) * mult for d in ds)
    waste = tuple((p - d) / p for d, p in zip(ds, padded))
    useful = 2.0 * math.prod(ds)
    padded_flops = 2.0 * math.prod(padded)
    aligned = padded == ds
    padded_rate = peak * useful / padded_flops
    unpadded_rate = peak if aligned else peak / penalty
    return AlignmentResult(
        ds,
        mult,
        padded,
        waste,
        aligned,
        useful,
        padded_flops,
        1.0 - useful / padded_flops,
        padded_rate,
        unpadded_rate,
        padded_rate / unpadded_rate,
    )


_A100_TC, _A100_FP32 = 312e12, 19.5e12

PRESETS: list[Preset] = [
    Preset(
        "500 features, FP16 (multiple of 8)",
        tensor_core_alignment,
        {"dims": (500,), "multiple": 8, "tensor_peak": _A100_TC, "fallback_penalty": _A100_TC / _A100_FP32},
        "M14, footnote 22 R:698; Example 1.2 R:1109",
        "pads to 504",
    ),
    Preset(
        "500 features, BF16/INT8 (multiple of 16)",
        tensor_core_alignment,
        {"dims": (500,), "multiple": 16, "tensor_peak": _A100_TC, "fallback_penalty": _A100_TC / _A100_FP32},
        "M14 (source: 16 for BF16/INT8)",
        "pads to 512",
    ),
    Preset(
        "500 features, pad to 64 (source policy)",
        tensor_core_alignment,
        {"dims": (500,), "multiple": 64, "tensor_peak": _A100_TC, "fallback_penalty": 8.0},
        "source footnote S:3613",
        "pads to 512; source: '512 runs 8x faster than 500'",
    ),
    Preset(
        "GEMM 4096 x 500 x 4096, FP16 on A100",
        tensor_core_alignment,
        {
            "dims": (4096, 500, 4096),
            "multiple": 8,
            "tensor_peak": _A100_TC,
            "fallback_penalty": _A100_TC / _A100_FP32,
        },
        "Example 1.2, R:1106-1111 (derived)",
        "FP32 fallback at 1/16th of the tensor-core rate",
    ),
]
