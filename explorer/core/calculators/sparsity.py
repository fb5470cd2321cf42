"""N:M structured sparsity: density, metadata, effective bytes and the theoretical speed-up (R:742-757).

Exactly ``N`` non-zeros are kept in every group of ``M`` consecutive weights. Per group:

* values: ``N * bits`` (dense: ``M * bits``);
* metadata: the position of each kept value, ``N * ceil(log2 M)`` bits (derived general form). The
  chapter is inconsistent here: the older source says "2 bits per 4-element block", an intermediate
  revision "4 bits (two 2-bit indices)", the rendered text only "compact". 2:4 needs 2 x 2 = 4 bits,
  which is the default; ``metadata_bits_per_group`` overrides it to reproduce the other readings.
* effective bytes = (values + metadata) / dense; FP16 2:4: (32 + 4) / 64 = 56.25 %.

The theoretical tensor-math speed-up is ``M / N`` (2:4 -> "up to 2x", only for models fine-tuned to the
pattern). Dense-equivalent FLOP per weight byte rises by ``1 / effective fraction``. Unstructured sparsity
has no such speed-up: irregular access can make it slower than dense even above 90 % zeros (R:1060).
Byte counts are decimal; bits are converted with 8 bits per byte.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ._common import CalculatorInputError, Preset, non_negative, positive, positive_int


@dataclass(frozen=True)
class SparsityResult:
    n: int
    m: int
    density: float
    metadata_bits_per_group: float
    value_bits_per_group: float
    dense_bits_per_group: float
    effective_fraction: float  # sparse storage / dense storage
    metadata_share: float  # metadata / sparse storage
    compression: float  # dense / sparse storage
    theoretical_speedup: float
    intensity_gain: float  # dense-equivalent FLOP per byte, sparse over dense
    dense_bytes: float
    sparse_bytes: float


def nm_sparsity(
    n: int, m: int, bits_per_value: float, weights: float = 0.0, metadata_bits_per_group: float | None = None
) -> SparsityResult:
    """Storage and speed-up of N:M sparsity for values of ``bits_per_value`` (FP16 = 16).

    ``weights`` (a count of dense weights, a multiple of ``m`` is assumed) gives total byte counts.
    """
    n_ = positive_int(n, "n")
    m_ = positive_int(m, "m")
    if n_ > m_:
        raise CalculatorInputError("n", f"cannot exceed m ({m_}), got {n_}")
    bits = float(positive(bits_per_value, "bits_per_value"))
    w = float(non_negative(weights, "weights"))
    if metadata_bits_per_group is None:
        meta = float(n_ * math.ceil(math.log2(m_))) if n_ < m_ else 0.0
    else:
        meta = float(non_negative(metadata_bits_per_group, "metadata_bits_per_group"))
    values = n_ * bits
    dense = m_ * bits
    sparse = values + meta
    frac = sparse / dense
    groups = w / m_
    return SparsityResult(
        n_,
        m_,
        n_ / m_,
        meta,
        values,
        dense,
        frac,
        meta / sparse,
        1.0 / frac,
        m_ / n_,
        1.0 / frac,
        groups * dense / 8.0,
        groups * sparse / 8.0,
    )


PRESETS: list[Preset] = [
    Preset(
        "NVIDIA 2:4, FP16",
        nm_sparsity,
        {"n": 2, "m": 4, "bits_per_value": 16.0, "weights": 1e9},
        "M15, R:742-757 (storage derived)",
        "50% density, up to 2x; 56.25% of dense bytes (derived)",
    ),
    Preset(
        "2:4, FP16, older source's '2 bits per block' metadata",
        nm_sparsity,
        {"n": 2, "m": 4, "bits_per_value": 16.0, "weights": 1e9, "metadata_bits_per_group": 2.0},
        "source S:3712-4374 (inconsistent with 2 x 2-bit indices)",
        "53.1% of dense bytes",
    ),
    Preset(
        "2:4, INT8",
        nm_sparsity,
        {"n": 2, "m": 4, "bits_per_value": 8.0, "weights": 1e9},
        "M15 (derived)",
        "62.5% of dense bytes",
    ),
    Preset(
        "1:4, FP16 (aggressive; accuracy loss without retraining)",
        nm_sparsity,
        {"n": 1, "m": 4, "bits_per_value": 16.0, "weights": 1e9},
        "source footnote S:3725",
        "25% density, 4x theoretical",
    ),
]
