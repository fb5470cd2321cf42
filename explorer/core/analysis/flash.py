"""Fused attention (FlashAttention): the keys and values a kernel re-reads, which depend on the device's on-chip memory.

A fused kernel keeps the S x S scores on chip (the layers already count no score traffic for ``Context.attention``
``fused``); what it pays instead is reading K and V once per block of queries. The model:

* **Block rows** ``Br = min(floor(M / (4 d b)), d)`` (at least 1), for ``M`` bytes of on-chip memory per core (an
  SM's shared memory: the device's innermost memory level), head dimension ``d`` and ``b`` bytes per element. This is
  FlashAttention's block size (Dao et al. 2022, "FlashAttention: Fast and Memory-Efficient Exact Attention with
  IO-Awareness", Algorithm 1, line 1: ``Bc = ceil(M / 4d)``, ``Br = min(Bc, d)``, M counted in elements), with floor
  for ceil so that the four blocks Q_i, K_j, V_j, O_i fit in M (and the Br x Bc scores block, which is why Br <= d).
  The four blocks are counted in their own formats: Q and O are activations (``b_a``), K and V are read at ``b_kv``
  (below), so ``b = (b_a + b_kv) / 2`` and ``Br = floor(M / (2 d (b_a + b_kv)))``; one format for all: ``M / 4 d b``.
* **Bytes of K and V** (``b_kv``, per element): what their first read costs in the work table
  (:mod:`.tensor_bytes`), so a re-read costs the same. In decode the cached keys (``S_kv - S_q`` positions) are read
  from the KV cache in its format (``--kv-cache``: an FP8 cache re-reads half the bytes of an FP16 one) and the new
  token's K and V come from the QKV projection as activations; in prefill every key is new, in the activations'
  format. So ``b_kv = ((S_kv - S_q) b_cache + S_q b_a) / S_kv``: exact for decode (every query block reads all
  S_kv keys) and for prefill (no cache), the two cases the layers produce.
* **Loop order** of FlashAttention-2 (Dao 2023, Algorithm 1): the outer loop runs over query blocks, so Q is read and
  O written once, and K and V are streamed once per query block: ``Tr = ceil(rows / Br)`` passes. For non-causal
  attention that is ``ceil(S_q / Br) x S_kv x d x 2 x b_kv`` bytes of K and V per (batch, head).
* **Grouped heads share a stream**: the G = heads / kv_heads query heads of a KV head are packed into one stream of
  G x S_q query rows (FlashAttention-3's PackGQA; decode kernels do the same), so decode reads a KV head's cache once
  for all G heads (``ceil(G / Br)`` times when G > Br).
* **Causal**: a query block reads only the keys its queries attend to. Rows i Br .. (i+1) Br - 1 are positions
  p = row // G, which attend keys max(0, p + off - W + 1) .. p + off (off = S_kv - S_q, the cache before the new
  tokens; W the sliding window, none when 0). So the re-reads follow the lower triangle, as the FLOPs do (the FLOPs per
  pair, the reads per block: a block reads the keys of its last query). One block (``Br`` >= the rows) reads each key
  once. Non-causal attention with a window reads ``min(S_kv, n + W - 1)`` keys per block of n positions (their
  windows of W keys overlapping but for W - 1), an estimate of where the windows fall.
* **Per memory level**, as ``evaluate``'s hierarchical traffic: the bytes crossing level j depend on the capacity of
  the level inside it (j + 1), which holds the blocks: the innermost level's capacity gives FlashAttention's Br (capped
  at d), and an outer one (an L2 between HBM and the cores) blocks the queries the same way, ``floor(M / (4 d b))``
  rows, without the cap (the scores block lives in the innermost level). So a device described with HBM and shared
  memory only re-reads K and V from HBM once per FlashAttention block; with a 50 MB L2 in between, the re-reads fall on
  the L2 and HBM streams K and V about once. The innermost level's own traffic uses its own capacity. Capacities are
  taken per instance, as the catalog states them ("L1 / shared memory (per SM)": 256 KiB on the H100).
* The roofline's ``bytes`` count every key once (ideal reuse); the re-reads, streams x width x (keys read - S_kv) x b_kv bytes, are
  added to each level's traffic in place of the square-tile GEMM re-reads that ``evaluate`` estimates for the scores
  and context products of a naive kernel.
* **Unknown capacity** (or an off-chip level inside): one block, each key read once (ideal reuse), as ``evaluate``
  assumes for a level of unknown capacity.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from explorer.core.workload.layers import AttentionShape
from explorer.core.workload.model import LayerTable

from .device_arrays import DeviceArrays
from .tensor_bytes import formats_of

#: The rows a fused kernel runs as one: their square-tile GEMM re-reads are replaced by the stream re-reads.
FUSED_KINDS = ("attention_scores", "attention_context")


def block_memory(devices: DeviceArrays, n_levels: int) -> tuple[np.ndarray, np.ndarray]:
    """Per device and memory level (D, V): the on-chip capacity M that blocks the queries for the traffic crossing that
    level (the next inner level's, the innermost level's own), NaN when unknown or off chip; and whether it is the
    innermost level (FlashAttention's Br <= d cap applies there)."""
    m = np.full((len(devices), n_levels), np.nan)
    innermost = np.zeros((len(devices), n_levels), dtype=bool)
    for i, d in enumerate(devices.devices):
        levels = [lv for lv in d.memory if lv.role != "registers"]
        for j in range(min(len(levels), n_levels)):
            k = min(j + 1, len(levels) - 1)
            lv = levels[k]
            if lv.role == "onchip" and lv.capacity is not None:
                m[i, j] = lv.capacity.value
            innermost[i, j] = k == len(levels) - 1
    return m, innermost


def block_rows(onchip: float, dim: int, bytes_per_element: float, cap: bool = True) -> float:
    """FlashAttention's query block: floor(M / (4 d b)), at most d when ``cap`` (the innermost level), at least 1;
    inf when M is unknown (one block)."""
    if not (math.isfinite(onchip) and onchip > 0):
        return math.inf
    rows = math.floor(onchip / (4 * dim * bytes_per_element))
    return float(max(1, min(rows, dim) if cap else rows))


def floor_sum(n: int, m: int, a: int, b: int) -> int:
    """sum_{i=0}^{n-1} floor((a i + b) / m) for n >= 0, m >= 1, a, b >= 0, in O(log) steps (exact integers)."""
    total = 0
    while n > 0:
        if a >= m:
            total += (n - 1) * n // 2 * (a // m)
            a %= m
        if b >= m:
            total += n * (b // m)
            b %= m
        y = a * n + b
        if y < m:
            break
        n, b, m, a = y // m, y % m, a, m
    return total


@functools.lru_cache(maxsize=4096)
def keys_read(shape: AttentionShape, br: float) -> int:
    """Key positions one stream reads, summed over its query blocks of ``br`` rows (see the module docstring)."""
    g, s_q, keys, w = shape.group, shape.queries, shape.keys, shape.window
    rows = g * s_q
    br = int(min(br, rows))
    blocks = -(-rows // br)
    if not shape.causal:
        if not w or w >= keys:
            return blocks * keys
        return _windowed(g, rows, keys, w, br, blocks)
    off = keys - s_q
    # the last position of block i is ((i + 1) br - 1) // g, of the last block s_q - 1; it reads up to that + off
    hi = floor_sum(blocks - 1, g, br, br - 1) + (s_q - 1) + blocks * (off + 1)
    lo = 0
    if w:  # the first key of block i: max(0, first_i - t) with first_i = (i br) // g, t = w - 1 - off
        t = w - 1 - off
        if t <= 0:
            lo = floor_sum(blocks, g, br, 0) - blocks * t
        else:
            i0 = -(-t * g // br)  # the first block with first_i >= t
            n = blocks - i0
            lo = floor_sum(n, g, br, br * i0) - t * n if n > 0 else 0
    return hi - lo


def _windowed(g: int, rows: int, keys: int, w: int, br: int, blocks: int) -> int:
    """Non-causal sliding window: block i, positions first_i .. last_i, reads min(S_kv, last_i - first_i + W) keys
    (its positions' windows of W keys overlap but for W - 1). Summed in chunks of blocks."""
    total = 0
    for start in range(0, blocks, 1 << 20):
        i = np.arange(start, min(blocks, start + (1 << 20)), dtype=np.int64)
        first, last = i * br // g, (np.minimum((i + 1) * br, rows) - 1) // g
        total += int(np.minimum(keys, last - first + w).sum())
    return total


def kv_bytes_per_element(shape: AttentionShape, activation: float, cache: float) -> float:
    """``b_kv``: the bytes per element of the keys (or values) a stream reads, the cached ones (``keys - queries``
    positions) at the KV cache's ``cache`` bytes, the new ones at the activations' (module docstring)."""
    cached = max(shape.keys - shape.queries, 0)
    return (cached * cache + (shape.keys - cached) * activation) / shape.keys if shape.keys else activation


def kv_rereads(table: LayerTable, devices: DeviceArrays, n_levels: int) -> tuple[np.ndarray, np.ndarray]:
    """For a fused kernel: the rows it runs as one (L,), and the bytes of K and V they read beyond once at each
    memory level (L, D, V), each element at ``b_kv`` (:func:`kv_bytes_per_element`)."""
    fused = np.array([k in FUSED_KINDS for k in table.kinds], dtype=bool)
    extra = np.zeros((len(table), len(devices), n_levels))
    memory, innermost = block_memory(devices, n_levels)
    fm = formats_of(devices)
    b_a, b_cache = fm.activations.bytes_per_element, fm.kv_cache.bytes_per_element
    for i, shape in enumerate(table.attention):
        if shape is None:
            continue
        b_kv = kv_bytes_per_element(shape, b_a, b_cache)
        for (d, j), m in np.ndenumerate(memory):
            reads = keys_read(shape, block_rows(m, shape.dim, (b_a + b_kv) / 2, bool(innermost[d, j])))
            extra[i, d, j] = shape.streams * shape.width * max(reads - shape.keys, 0) * b_kv
    return fused, extra
