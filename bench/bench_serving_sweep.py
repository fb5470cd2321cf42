"""The serving sweep of issue 22: 32 simulated configurations (Llama-3-8B on 4 devices x fp16, fp8 x 4 rates, 1024 ->
256 tokens, 2,000 requests each), in process against local worker processes, and what shipping the step surfaces
to the workers costs against building them in each worker.

Run by hand: .venv/bin/python bench/bench_serving_sweep.py [--runs 3] [--workers 2] [--requests 2000]. Timed:

* setups: ``build_setups`` with the serving caches cleared (the 8 step surfaces and memories, built once in the
  parent): what each worker would pay again if it built its own surfaces;
* ship: pickling the shared inputs (every setup) once, the bytes a worker receives;
* in process: ``serving_sweep(..., simulate=True, workers=1)``;
* processes: the same with ``workers=N`` (the pool started and stopped inside the timing); the ratio is the speed-up.
The rows of the two are checked equal.
"""

from __future__ import annotations

import argparse
import math
import pickle
import sys
import time
from pathlib import Path

from _common import median_p95, report

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from explorer.core.pmap import default_workers
from explorer.core.serving import serve, surfaces
from explorer.core.serving.simulate import Policy
from explorer.core.serving.workload import SLO, Lengths, Workload
from explorer.core.sweep.serving import ServingGrid, SimInputs, build_setups, serving_sweep
from explorer.core.workload.templates import get_template
from explorer.store.engine import open_catalog

DEVICES = ("nvidia-h100-sxm5", "nvidia-a100-sxm4-80gb", "amd-mi300x", "nvidia-l40s")
GRID = ServingGrid(("fp16", "fp8"), (256,), (1.0, 2.0, 4.0, 8.0))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--requests", type=int, default=2000)
    a = ap.parse_args()
    model = get_template("llama3-8b").build()
    with open_catalog() as repo:
        devices = repo.devices(list(DEVICES))
    workload = Workload(rate=1.0, lengths=Lengths.fixed(1024, 256))
    slo = SLO(ttft=0.5, tpot=0.05)

    def setups():
        for cache in (surfaces.WORK, surfaces.SURFACES, serve.SETUPS):
            cache.clear()
        return build_setups(model, devices, GRID, workload, Policy())

    build = []
    for _ in range(a.runs):
        t = time.perf_counter()
        built = setups()
        build.append(time.perf_counter() - t)
    shared = SimInputs(workload, slo, a.requests, 0, built)
    t = time.perf_counter()
    blob = pickle.dumps(shared)
    ship = time.perf_counter() - t
    n = len(built) * len(GRID.rates)
    print(f"{n} configurations, {a.requests} requests each; {default_workers()} CPUs; setups built in "
          f"{median_p95(build)[0] * 1e3:.0f} ms (median), shipped as {len(blob) / 1e3:.1f} kB pickled in "
          f"{ship * 1e3:.2f} ms")

    runs = {}
    for label, workers in (("in process", 1), (f"{a.workers} processes", a.workers)):
        times, rows = [], None
        for _ in range(a.runs):
            t = time.perf_counter()
            r = serving_sweep(model, devices, GRID, workload, slo, built, True, a.requests, 0, workers)
            times.append(time.perf_counter() - t)
            rows = {k: [None if isinstance(x, float) and math.isnan(x) else x for x in v.tolist()] for k, v in r.columns.items()}  # NaN -> None
        runs[label] = (times, rows)
        print(f"{label}: median {median_p95(times)[0]:.2f} s over {a.runs} runs ({', '.join(f'{x:.2f}' for x in times)})")
    (t1, r1), (t2, r2) = runs.values()
    assert r1 == r2, "rows differ between executors"
    ratio = median_p95(t1)[0] / median_p95(t2)[0]
    print(f"speed-up with {a.workers} processes: {ratio:.2f}x (rows identical)")
    report("serving_sweep_32_sim_in_process", t1, budget=60.0)
    report(f"serving_sweep_32_sim_{a.workers}_processes", t2, budget=60.0)


if __name__ == "__main__":
    main()
