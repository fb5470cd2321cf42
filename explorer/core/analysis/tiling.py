"""Tiling and the fringe tax: how much of a matrix engine a GEMM keeps busy.

Systolic array R x C. The GEMM C[M,N] = A[M,K] B[K,N] maps two of its dimensions onto the array and streams the
third, by dataflow:

* OS (output stationary): M -> rows, N -> cols, K streamed
* WS (weight stationary):  K -> rows, N -> cols, M streamed
* IS (input stationary):   K -> rows, M -> cols, N streamed

``folds = ceil(Sr/R) * ceil(Sc/C)``; ``mapping efficiency = Sr*Sc / (folds*R*C)``; ``fringe tax = 1 - efficiency``.
Cycles (an estimate, labelled as such): each fold streams ``S_stream`` vectors and fills and drains the skewed
pipeline (R + C - 2 cycles); weight- and input-stationary folds first load their stationary tile (R cycles),
while output-stationary folds accumulate in place and load none. Folds are spread over the device's arrays
(``units``), the last round partly idle. The count is that of the cycle-level simulator SCALE-Sim: the index of
the last cycle, numbered from 0 (the total minus one). OS 64x64x64 on 32x32: 4 x (64 + 32 + 32 - 2) - 1 = 503.

Tensor cores (GPUs), after NVIDIA's matrix-multiplication performance guide: *tile quantization* pads M and N up
to the thread-block tile; *wave quantization* spreads the tiles over the SMs in waves, the last wave partly
idle; *alignment* pads K and N to 16 bytes (8 FP16 elements) for the tensor-core path. The best of the
device's block tile and its half is taken, as cuBLAS heuristics would.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

DATAFLOW_MAPS = {"os": ("M", "N", "K"), "ws": ("K", "N", "M"), "is": ("K", "M", "N")}


def _cdiv(a, b):
    return np.ceil(np.asarray(a, dtype=float) / b)


@dataclass(frozen=True)
class SystolicMapping:
    rows_dim: str
    cols_dim: str
    stream_dim: str
    folds: float
    mapping_efficiency: float
    fringe_tax: float
    cycles: float
    idle_pe_last_fold: float  # PEs idle in the last (fringe) fold
    units: int


def systolic_mapping(m: int, n: int, k: int, rows: int, cols: int, dataflow: str = "ws", units: int = 1,
                     count: int = 1) -> SystolicMapping:
    """Scalar mapping of ``count`` GEMMs of shape (m, n, k) on ``units`` arrays of ``rows`` x ``cols``."""
    for name, v in (("m", m), ("n", n), ("k", k), ("rows", rows), ("cols", cols), ("units", units),
                    ("count", count)):
        if not isinstance(v, (int, np.integer)) or isinstance(v, bool) or v < 1:
            raise ValueError(f"{name}: must be a positive whole number, got {v!r}")
    if dataflow not in DATAFLOW_MAPS:
        raise ValueError(f"dataflow: expected one of ws, os, is, got {dataflow!r}")
    dims = {"M": m, "N": n, "K": k}
    r_name, c_name, s_name = DATAFLOW_MAPS[dataflow]
    sr, sc = dims[r_name], dims[c_name]
    eff, folds, cycles = systolic_arrays(np.array([m]), np.array([n]), np.array([k]), np.array([count]),
                                         rows, cols, dataflow, units)
    fr, fc = sr - (int(_cdiv(sr, rows)) - 1) * rows, sc - (int(_cdiv(sc, cols)) - 1) * cols
    return SystolicMapping(r_name, c_name, s_name, float(folds[0]), float(eff[0]), 1.0 - float(eff[0]),
                           float(cycles[0]), float(rows * cols - fr * fc), units)


def systolic_arrays(m, n, k, count, rows, cols, dataflow, units, with_cycles: bool = True):
    """Vectorized: mapping efficiency, folds per GEMM, and estimated cycles for arrays of GEMM shapes.

    ``rows``, ``cols``, ``units`` may be scalars or arrays broadcasting against m/n/k; ``dataflow`` is one string or
    an array of 'ws'/'os'/'is' broadcasting the same way."""
    m, n, k, count = (np.asarray(x, dtype=float) for x in (m, n, k, count))
    df = np.asarray(dataflow)
    is_os, is_is = df == "os", df == "is"  # compared once on the (small) device axis, then broadcast
    sr = np.where(is_os, m, k)
    sc = np.where(is_is, m, n)
    folds = _cdiv(sr, rows) * _cdiv(sc, cols)
    with np.errstate(invalid="ignore", divide="ignore"):
        total_folds = folds * count
        rounds = _cdiv(total_folds, units)
        eff = (sr * sc / (rows * cols)) * count / (rounds * units)
    if not with_cycles:
        return eff, folds, None
    ss = np.where(is_os, k, np.where(df == "ws", m, n))
    r = np.asarray(rows, dtype=float)
    fold_cycles = ss + np.where(is_os, 0.0, r) + r + cols - 2  # OS has no stationary-tile load
    return eff, folds, rounds * fold_cycles - 1


def tensor_core_arrays(m, n, k, count, block_m, block_n, sm_count, align):
    """Vectorized tile x wave x alignment efficiency for GPU GEMMs (``align`` in elements, e.g. 8 for FP16)."""
    m, n, k, count = (np.asarray(x, dtype=float) for x in (m, n, k, count))
    best = None
    for scale in (1.0, 0.5):
        bm, bn = np.maximum(np.floor(np.asarray(block_m) * scale), 1), np.maximum(np.floor(np.asarray(block_n) * scale), 1)
        tiles = _cdiv(m, bm) * _cdiv(n, bn)
        with np.errstate(invalid="ignore", divide="ignore"):
            tile_eff = m * n / (tiles * bm * bn)
            waves = _cdiv(tiles * count, sm_count)
            wave_eff = tiles * count / (waves * sm_count)
        eff = tile_eff * wave_eff
        best = eff if best is None else np.fmax(best, eff)
    padded_k = _cdiv(k, align) * align
    padded_n = _cdiv(n, align) * align
    with np.errstate(invalid="ignore", divide="ignore"):
        align_eff = (k / padded_k) * (n / padded_n)
    return best * align_eff


def efficiency_sweep(values, fixed: dict, sweep_dim: str, rows: int, cols: int, dataflow: str = "ws", units: int = 1):
    """Mapping efficiency as one GEMM dimension is swept (the cliff just past each multiple of the array)."""
    values = np.asarray(values, dtype=float)
    dims = {d: np.full_like(values, float(fixed[d])) for d in "mnk" if d != sweep_dim}
    dims[sweep_dim] = values
    eff, _, _ = systolic_arrays(dims["m"], dims["n"], dims["k"], np.ones_like(values), rows, cols, dataflow, units)
    return eff


def padding_options(value: int, multiple: int) -> tuple[int, ...]:
    """Nearby sizes that are whole multiples of the array or tile: round down (if > 0) and up."""
    down = (value // multiple) * multiple
    up = -(-value // multiple) * multiple
    return tuple(sorted({x for x in (down, up) if x > 0}))
