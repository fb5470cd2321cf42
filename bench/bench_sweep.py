"""The design-space sweep of issue 22: Llama-2-7B decode, every catalog device x 9 batch sizes (1..256) x 7
sequence lengths (512..32768) x 3 precisions (fp16, fp8, int8), through the API and through the CLI.

Run by hand: .venv/bin/python bench/bench_sweep.py [--runs 20] [--cli-runs 5]. Targets (issue 22): 50 ms
through the API, 2 s through the CLI including the interpreter's start-up. The catalog is a SQLite file in a
temporary folder (seeded from the shipped data before timing). Timed:

* api (warm): ``sweep()`` with the model built and the devices loaded, the work tables already cached (what a
  second sweep of the same model costs, e.g. in the app)
* api (cold tables): the same with ``build_table``'s cache cleared first (every context's table rebuilt)
* cli: a new process running ``hwexplorer sweep ... --device all --out results.csv`` until it exits (start-up,
  catalog, the sweep, the CSV written, the front printed)
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from _common import report, samples

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from explorer.core.sweep.grid import Grid, parse_values
from explorer.core.sweep.run import sweep
from explorer.core.workload.model import build_table
from explorer.core.workload.templates import get_template
from explorer.store.engine import open_catalog

BATCH, SEQ, PRECISIONS = "1,2,4..256", "512..32768", "fp16,fp8,int8"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--cli-runs", type=int, default=5)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        db = f"sqlite:///{Path(tmp) / 'catalog.db'}"
        with open_catalog(db) as repo:
            devices = repo.devices()
        model = get_template("llama2-7b").build()
        grid = Grid(batches=parse_values(BATCH, "--batch"), seq_lens=parse_values(SEQ, "--seq-len"),
                    phases=("decode",), precisions=tuple(PRECISIONS.split(",")))
        result = sweep(model, devices, grid)
        print(f"{len(devices)} devices x {grid.size} contexts = {len(result)} points, {result.passes} passes, "
              f"{int(result.columns['pareto'].sum())} on the Pareto front")
        report("sweep: API, Llama-2-7B decode, catalog x 9 x 7 x 3 (tables cached)",
               samples(lambda: sweep(model, devices, grid), args.runs), 0.050)

        def cold():
            build_table.cache_clear()
            sweep(model, devices, grid)

        report("sweep: API, the same, work tables rebuilt", samples(cold, args.runs), 0.050)
        # for scale: a plain numpy roofline over the same (row, device) cells, max(FLOP/peak, bytes/BW) summed
        # per context, no efficiencies, levels, mapping, energy or cost (a lower bound on the work)
        from explorer.core.analysis.device_arrays import device_arrays
        from explorer.core.sweep.run import _stack, contexts_of

        stacked = _stack([build_table(model, c) for c in contexts_of(model, grid)])
        sizes = np.array([len(build_table(model, c)) for c in contexts_of(model, grid)])
        starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
        arrays = [device_arrays(devices, p) for p in grid.precisions]
        flops, count = stacked.flops, stacked.columns["count"]
        elems = stacked.columns["input_elems"] + stacked.columns["output_elems"] + stacked.columns["weight_elems"]

        def roofline():
            for dev in arrays:
                t = np.maximum(flops[:, None] / dev.peak[None, :],
                               (elems * dev.bytes_per_element)[:, None] / dev.bandwidth[None, :])
                np.add.reduceat(count[:, None] * t, starts, axis=0)

        report("sweep: for scale, a plain numpy roofline over the same cells", samples(roofline, args.runs), 0.050)
        out = Path(tmp) / "results.csv"
        cmd = [sys.executable, "-m", "explorer", "--db", db, "sweep", "llama2-7b", "--device", "all",
               "--batch", BATCH, "--seq-len", SEQ, "--precision", PRECISIONS, "--out", str(out)]
        env = dict(os.environ, PYTHONPATH=str(ROOT))

        def cli():
            t = time.perf_counter()
            subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            return time.perf_counter() - t

        cli()  # warm the file cache once
        report("sweep: CLI, the same, new process to exit (CSV written)", [cli() for _ in range(args.cli_runs)], 2.0)
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-c", "import explorer.__main__"], env=env, check=True)
        print(f"for scale: a new interpreter importing explorer.__main__ only: {time.perf_counter() - t0:.3f} s")


if __name__ == "__main__":
    main()
