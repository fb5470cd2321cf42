"""The work tables of the 10^6-point sweep's grid (bench/bench_sweep_million.py: Llama-2-7B, batch 1..64 x 60
sequence lengths 128..3904 x prefill and decode = 7,680 contexts): one table per context (``build_table`` each,
then stacked: the sweep before the context axis) against ``stack_contexts`` (a few tables per batch and phase),
alternated in one process so both see the same machine load; checks the two stacked tables are equal.

    .venv/bin/python bench/bench_context_axis.py [--runs 3]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from _common import report

from explorer.core.sweep.grid import Grid, parse_values
from explorer.core.sweep.run import contexts_of
from explorer.core.workload.context_axis import stack_contexts, stack_tables
from explorer.core.workload.model import NUMERIC, build_table
from explorer.core.workload.templates import get_template

BATCH = ",".join(str(b) for b in range(1, 65))
SEQ = ",".join(str(s) for s in range(128, 128 + 64 * 60, 64))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    model = get_template("llama2-7b").build()
    grid = Grid(batches=parse_values(BATCH, "b"), seq_lens=parse_values(SEQ, "s"), phases=("prefill", "decode"),
                precisions=("fp16",))
    contexts = contexts_of(model, grid)
    build = build_table.__wrapped__  # uncached, as the sweep builds a grid this large
    loop, axis = [], []
    for _ in range(args.runs):
        t = time.perf_counter()
        ref = stack_tables([build(model, c) for c in contexts])
        loop.append(time.perf_counter() - t)
        t = time.perf_counter()
        st = stack_contexts(model, contexts, build)
        axis.append(time.perf_counter() - t)
    assert st.table.names == ref.names and np.array_equal(st.table.gemm, ref.gemm)
    worst = max(float(np.max(np.abs(st.table.columns[c] - ref.columns[c]) / np.maximum(np.abs(ref.columns[c]),
                                                                                       1e-300))) for c in NUMERIC)
    print(f"{len(contexts)} contexts, {len(ref)} rows; largest relative difference {worst:.1e}")
    print(f"one table per context: {np.median(loop):.2f} s ({len(contexts)} tables); "
          f"context axis: {np.median(axis):.2f} s ({st.builds} tables); ratio {np.median(loop) / np.median(axis):.1f}x")
    report("context_axis_tables_of_10^6_grid_vs_one_per_context", [float(np.median(axis) / np.median(loop))], 0.5,
           unit="ratio")
    return 0


if __name__ == "__main__":
    sys.exit(main())
