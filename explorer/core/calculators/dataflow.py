"""Stationary dataflows: off-chip traffic of a GEMM or convolution under a local buffer (derived model).

The chapter (R:1704-1800, Table 5, Listings 15-18) describes weight-, output- and input-stationary
dataflows qualitatively; it prints no traffic counts except the loop-order example (Example 1.3,
R:1649-1658). The counts below are a *derived* model, labelled as such in the app:

GEMM view ``Y[M x N] = X[M x K] . W[K x N]`` (X: activations, W: weights, Y: outputs), ``p`` bytes per
element, a local buffer of ``S`` bytes holding ``T = floor(S / p)`` elements of the stationary operand
(the streamed operands are assumed to pass through small staging registers, not the buffer).

* **Weight-stationary**: a ``Kb x Nb`` block of W stays (``Kb = min(K, T)``, ``Nb = floor(T / Kb)``).
  W is read once; X is re-streamed once per column block (``ceil(N/Nb) M K``); when ``K`` does not fit
  the partial sums go off-chip: Y is written ``ceil(K/Kb)`` times and read back ``ceil(K/Kb) - 1`` times.
* **Input-stationary**: the mirror image, an ``Mb x Kb`` block of X stays; W is re-streamed per row block.
* **Output-stationary**: an ``Mb x Nb`` block of accumulators stays (``Mb Nb <= T``, the shape with the
  least traffic is searched); Y is written once; X is streamed per column block and W per row block.

A convolution (stride 1) is lowered to its im2col GEMM: ``M = B H_out W_out``, ``K = C_in k^2``,
``N = C_out``. Streamed input traffic then counts the k^2 duplicated patches (an upper bound: real
convolution dataflows reuse the halo). ``compulsory_bytes`` counts each tensor once (the chapter's
"touch once" traffic, M-2) and bounds every strategy from below; ``no_reuse_bytes`` fetches both operands
for every multiply-accumulate (Listing 15 without reuse).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ._common import CalculatorInputError, Preset, positive, positive_int

STRATEGIES = ("weight-stationary", "output-stationary", "input-stationary")
_MAX_SHAPE_SEARCH = 1 << 20


@dataclass(frozen=True)
class StrategyTraffic:
    """Off-chip bytes of one strategy, split per operand (reads of W and X; reads + writes of Y)."""

    strategy: str
    weight_bytes: float
    input_bytes: float
    output_bytes: float
    tile: tuple[int, int]

    @property
    def total_bytes(self) -> float:
        return self.weight_bytes + self.input_bytes + self.output_bytes


@dataclass(frozen=True)
class DataflowResult:
    m: int
    k: int
    n: int
    bytes_per_element: float
    buffer_bytes: float
    strategies: tuple[StrategyTraffic, ...]
    best: str
    compulsory_bytes: float
    no_reuse_bytes: float
    no_reuse_operand_reads: int  # elements of X and W fetched when nothing is reused (2 M N K)
    unique_operand_elements: float  # elements of X and W (each counted once)
    macs: int

    def traffic(self, strategy: str) -> StrategyTraffic:
        for s in self.strategies:
            if s.strategy == strategy:
                return s
        raise KeyError(strategy)


def _one_stationary(rows: int, k: int, t: int) -> tuple[int, int, int, int]:
    """Hold a block of a (rows x k) operand: (rows per block, k per block, row blocks, k passes)."""
    kb = min(k, t)
    rb = max(1, min(rows, t // kb))
    return rb, kb, math.ceil(rows / rb), math.ceil(k / kb)


def _output_stationary(m: int, k: int, n: int, t: int) -> tuple[int, int, float]:
    """Accumulator block Mb x Nb <= t minimising ceil(N/Nb) M K + ceil(M/Mb) K N (elements)."""
    mb = np.arange(1, min(m, t, _MAX_SHAPE_SEARCH) + 1, dtype=np.int64)
    nb = np.minimum(n, t // mb)
    streamed = np.ceil(n / nb) * m * k + np.ceil(m / mb) * k * n
    i = int(np.argmin(streamed))
    return int(mb[i]), int(nb[i]), float(streamed[i])


def gemm_dataflow(
    m: int,
    k: int,
    n: int,
    buffer_bytes: float,
    bytes_per_element: float = 2.0,
    input_unique_elements: float | None = None,
) -> DataflowResult:
    """Off-chip traffic (bytes) of ``Y[m x n] = X[m x k] . W[k x n]`` for the three stationary dataflows.

    ``input_unique_elements`` overrides the size of X in the compulsory traffic (used for convolutions,
    whose im2col matrix repeats input pixels).
    """
    m_, k_, n_ = positive_int(m, "m"), positive_int(k, "k"), positive_int(n, "n")
    p = float(positive(bytes_per_element, "bytes_per_element"))
    s = float(positive(buffer_bytes, "buffer_bytes"))
    t = int(s // p)
    if t < 1:
        raise CalculatorInputError("buffer_bytes", f"holds no element of {p:g} bytes")
    nb, kb, x_streams, k_passes = _one_stationary(n_, k_, t)
    ws = StrategyTraffic(
        "weight-stationary", k_ * n_ * p, x_streams * m_ * k_ * p, m_ * n_ * (2 * k_passes - 1) * p, (kb, nb)
    )
    mb_os, nb_os, streamed = _output_stationary(m_, k_, n_, t)
    x_os = math.ceil(n_ / nb_os) * m_ * k_
    os_ = StrategyTraffic("output-stationary", (streamed - x_os) * p, x_os * p, m_ * n_ * p, (mb_os, nb_os))
    mb, kb_i, w_streams, k_passes_i = _one_stationary(m_, k_, t)
    is_ = StrategyTraffic(
        "input-stationary",
        w_streams * k_ * n_ * p,
        m_ * k_ * p,
        m_ * n_ * (2 * k_passes_i - 1) * p,
        (mb, kb_i),
    )
    strategies = (ws, os_, is_)
    best = min(strategies, key=lambda st: st.total_bytes).strategy
    x_unique = m_ * k_ if input_unique_elements is None else float(input_unique_elements)
    compulsory = (x_unique + k_ * n_ + m_ * n_) * p
    no_reuse = (2.0 * m_ * n_ * k_ + m_ * n_) * p
    return DataflowResult(
        m_,
        k_,
        n_,
        p,
        s,
        strategies,
        best,
        compulsory,
        no_reuse,
        2 * m_ * n_ * k_,
        x_unique + k_ * n_,
        m_ * n_ * k_,
    )


def conv_dataflow(
    batch: int,
    in_channels: int,
    height: int,
    width: int,
    out_channels: int,
    kernel: int,
    buffer_bytes: float,
    bytes_per_element: float = 2.0,
    same_padding: bool = True,
) -> DataflowResult:
    """A stride-1 convolution lowered to im2col GEMM (``same_padding`` keeps H x W, else H-k+1)."""
    b = positive_int(batch, "batch")
    c_in, c_out = positive_int(in_channels, "in_channels"), positive_int(out_channels, "out_channels")
    h, w, kk = positive_int(height, "height"), positive_int(width, "width"), positive_int(kernel, "kernel")
    h_out, w_out = (h, w) if same_padding else (h - kk + 1, w - kk + 1)
    if h_out < 1 or w_out < 1:
        raise CalculatorInputError("kernel", f"a {kk}x{kk} kernel does not fit a {h}x{w} input")
    return gemm_dataflow(
        b * h_out * w_out,
        c_in * kk * kk,
        c_out,
        buffer_bytes,
        bytes_per_element,
        input_unique_elements=float(b * c_in * h * w),
    )


@dataclass(frozen=True)
class LoopOrderResult:
    """Example 1.3: weight loads of two loop orders for a single-channel convolution."""

    output_positions: int
    weights: int
    loop_orderings: int
    weight_stationary_loads: int
    output_stationary_loads: int
    ratio: float


def loop_order_weight_loads(
    filters: int, kernel: int, input_size: int, resident_filters: int = 0
) -> LoopOrderResult:
    """Weight loads for filter-loops-outer (weight-stationary) vs spatial-loops-outer (output-stationary).

    Single input channel, stride 1, no padding: ``(input_size - kernel + 1)^2`` output positions, five
    loops (H_out, W_out, C_out, F_h, F_w), so ``5! = 120`` orderings. Weight-stationary loads each weight
    once. Output-stationary reloads every filter at every position except ``resident_filters`` that stay
    in registers (derived generalisation; 0 is the chapter's worst case).
    """
    f = positive_int(filters, "filters")
    k = positive_int(kernel, "kernel")
    size = positive_int(input_size, "input_size")
    r = positive_int(resident_filters, "resident_filters", minimum=0)
    if r > f:
        raise CalculatorInputError("resident_filters", f"cannot exceed filters ({f}), got {r}")
    if k > size:
        raise CalculatorInputError("kernel", f"a {k}x{k} kernel does not fit a {size}x{size} input")
    positions = (size - k + 1) ** 2
    weights = f * k * k
    ws = weights
    os_ = r * k * k + (f - r) * k * k * positions
    return LoopOrderResult(positions, weights, math.factorial(5), ws, os_, os_ / ws)


PRESETS: list[Preset] = [
    Preset(
        "Loop order: 16 filters 3x3 on 8x8 (Example 1.3)",
        loop_order_weight_loads,
        {"filters": 16, "kernel": 3, "input_size": 8, "resident_filters": 0},
        "E-14, Example 1.3, R:1649-1658",
        "144 vs 5,184 weight loads (36x), 120 orderings",
    ),
    Preset(
        "Listing 15 GEMM: weights 512x256, inputs 256x32, FP16, 64 KiB buffer",
        gemm_dataflow,
        {"m": 32, "k": 256, "n": 512, "buffer_bytes": 64 * 1024.0, "bytes_per_element": 2.0},
        "Listing 15, R:1712-1722",
        "no reuse: 8,388,608 operand reads vs 139,264 unique (derived, ~60x)",
    ),
    Preset(
        "Conv2D 32x128x56x56 -> 256, 3x3, FP16, 1 MiB buffer",
        conv_dataflow,
        {
            "batch": 32,
            "in_channels": 128,
            "height": 56,
            "width": 56,
            "out_channels": 256,
            "kernel": 3,
            "buffer_bytes": 1024 * 1024.0,
            "bytes_per_element": 2.0,
            "same_padding": True,
        },
        "E-5 shape, Napkin Math 1.5, R:1374-1393",
        "compulsory traffic 77.7 MB (touch-once model)",
    ),
]
