"""How much of a trace's data movement overlaps its compute: union and intersection of busy intervals."""

from __future__ import annotations

from dataclasses import dataclass

from explorer.core.traces.model import COMPUTE, TRANSFER_CATEGORIES, Trace

Interval = tuple[float, float]


def merge(intervals: list[Interval]) -> list[Interval]:
    """Union of intervals as sorted, disjoint intervals (touching ones merge)."""
    out: list[list[float]] = []
    for start, end in sorted(intervals):
        if out and start <= out[-1][1]:
            out[-1][1] = max(out[-1][1], end)
        else:
            out.append([start, end])
    return [(s, e) for s, e in out]


def intersect(a: list[Interval], b: list[Interval]) -> list[Interval]:
    """Intersection of two sorted, disjoint interval lists."""
    out, i, j = [], 0, 0
    while i < len(a) and j < len(b):
        start, end = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        if start < end:
            out.append((start, end))
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return out


def measure(intervals: list[Interval]) -> float:
    return float(sum(e - s for s, e in intervals))


@dataclass(frozen=True)
class OverlapSummary:
    """Seconds during which data movement and compute were busy, alone and together.

    ``dma_s`` is the union of all transfer events (DMA in/out, memcpy, memset), ``compute_s`` the union of
    compute events, ``overlap_s`` the time both were busy. ``hidden_dma_fraction`` = overlap / DMA time
    (1 = all transfers hidden behind compute; NaN when there are no transfers).
    """

    dma_s: float
    compute_s: float
    overlap_s: float
    dma_only_s: float
    compute_only_s: float
    busy_s: float
    idle_s: float
    span_s: float
    hidden_dma_fraction: float


def overlap_summary(trace: Trace) -> OverlapSummary:
    dma = merge([(e.start_s, e.end_s) for e in trace.events if e.category in TRANSFER_CATEGORIES])
    compute = merge([(e.start_s, e.end_s) for e in trace.events if e.category == COMPUTE])
    dma_s, compute_s = measure(dma), measure(compute)
    overlap_s = measure(intersect(dma, compute))
    busy_s = dma_s + compute_s - overlap_s
    span = trace.span_s
    return OverlapSummary(
        dma_s=dma_s, compute_s=compute_s, overlap_s=overlap_s, dma_only_s=dma_s - overlap_s,
        compute_only_s=compute_s - overlap_s, busy_s=busy_s, idle_s=max(0.0, span - busy_s), span_s=span,
        hidden_dma_fraction=overlap_s / dma_s if dma_s > 0 else float("nan"))
