"""Shared helpers for the benchmarks: timing and the one result line ``bench/run_all.py`` collects."""

from __future__ import annotations

import json
import statistics
import time
from typing import Callable


def samples(fn: Callable[[], object], runs: int, warmup: int = 1) -> list[float]:
    for _ in range(warmup):
        fn()
    out = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return out


def median_p95(values: list[float]) -> tuple[float, float]:
    ordered = sorted(values)
    return statistics.median(ordered), ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def report(name: str, values: list[float], budget: float, unit: str = "s") -> None:
    """Print one machine-readable line: ``BENCH {"name": ..., "median": ..., "p95": ..., "budget": ..., "unit": ...}``.

    ``values`` are the measured samples in ``unit`` (seconds, or MB for memory); pass/fail compares the median."""
    med, p95 = median_p95(values)
    print("BENCH " + json.dumps({"name": name, "median": med, "p95": p95, "budget": budget, "unit": unit,
                                 "runs": len(values), "pass": med <= budget}), flush=True)
