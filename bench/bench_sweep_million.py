"""A 10^6-point sweep (issue 22): Llama-2-7B, every catalog device (44) x batch 1..64 (every whole number) x 60
sequence lengths (128, 192, ..., 3904 tokens) x prefill and decode x fp16, fp8, int8 = 44 x 7,680 x 3 = 1,013,760
points, through the API and the CLI, time and peak memory.

Run by hand: .venv/bin/python bench/bench_sweep_million.py [--runs 3] [--skip-cli]. Target (issue 22): within 5x of a
plain numpy roofline over the same (row, device) cells. Timed, each in a new process so that peak memory (ru_maxrss)
is the step's own:

* api: ``sweep()`` from the model and the devices loaded (work tables built: the first sweep of a model)
* roofline: max(FLOP / peak, bytes / bandwidth) per (row, device) cell summed per context, over the same stacked
  tables (built before timing), no levels, mapping, energy, cost or front: a lower bound on the work
* roofline_distinct (``--distinct``): the same over the stack's distinct rows only (sweep/distinct.py: the sweep
  passes each distinct row once), gathered back and summed per context: the lower bound of the work the sweep does
* cli: ``hwexplorer sweep ... --out F.csv`` and ``--out F.parquet``, a new process to exit
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BATCH = ",".join(str(b) for b in range(1, 65))
SEQ = ",".join(str(s) for s in range(128, 128 + 64 * 60, 64))
PRECISIONS = "fp16,fp8,int8"
PHASES = "prefill,decode"

CHILD = r"""
import json, resource, sys, time
import numpy as np
sys.path.insert(0, {root!r})
from explorer.core.sweep.grid import Grid, parse_values
from explorer.core.sweep.run import sweep, _stack, contexts_of
from explorer.core.workload.model import build_table
from explorer.core.workload.templates import get_template
from explorer.store.engine import open_catalog
with open_catalog({db!r}) as repo:
    devices = repo.devices()
model = get_template("llama2-7b").build()
grid = Grid(batches=parse_values({batch!r}, "b"), seq_lens=parse_values({seq!r}, "s"), phases=("prefill", "decode"),
            precisions=tuple({prec!r}.split(",")))
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
out = {{}}
if {what!r} == "api":
    t = time.perf_counter()
    r = sweep(model, devices, grid)
    out["s"] = time.perf_counter() - t
    out["points"] = len(r)
    out["passes"] = r.passes
    out["front"] = int(r.columns["pareto"].sum())
else:
    from explorer.core.analysis.device_arrays import device_arrays
    tables = [build_table(model, c) for c in contexts_of(model, grid)]
    stacked = _stack(tables)
    sizes = np.array([len(t) for t in tables])
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    arrays = [device_arrays(devices, p) for p in grid.precisions]
    flops, count = stacked.flops, stacked.columns["count"]
    elems = stacked.columns["input_elems"] + stacked.columns["output_elems"] + stacked.columns["weight_elems"]
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t = time.perf_counter()
    for dev in arrays:
        tt = np.maximum(flops[:, None] / dev.peak[None, :], (elems * dev.bytes_per_element)[:, None] / dev.bandwidth[None, :])
        np.add.reduceat(count[:, None] * tt, starts, axis=0)
    out["s"] = time.perf_counter() - t
    out["cells"] = int(len(flops) * len(devices) * len(arrays))
    if {what!r} == "roofline_distinct":  # the same roofline over the distinct rows only, gathered per context
        from explorer.core.sweep.distinct import distinct_rows
        keep, where = distinct_rows(stacked)
        f_u, e_u, c_u = flops[keep], elems[keep], count[keep]
        t = time.perf_counter()
        for dev in arrays:
            tt = np.maximum(f_u[:, None] / dev.peak[None, :], (e_u * dev.bytes_per_element)[:, None] / dev.bandwidth[None, :])
            np.add.reduceat((c_u[:, None] * tt)[where], starts, axis=0)
        out["s"] = time.perf_counter() - t
        out["cells"] = int(len(keep) * len(devices) * len(arrays))
out["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
out["before_mb"] = base / 1024
print(json.dumps(out))
"""


# the CLI as `python -m explorer` runs it, then its peak resident memory on stderr
RUN_CLI = """
import resource, runpy, sys
sys.argv = ["hwexplorer"] + sys.argv[1:]
code = 0
try:
    runpy.run_module("explorer", run_name="__main__")
except SystemExit as e:
    code = e.code
print("MAXRSS", resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr)
sys.exit(code)
"""


def child(what: str, db: str) -> dict:
    code = CHILD.format(root=str(ROOT), db=db, batch=BATCH, seq=SEQ, prec=PRECISIONS, what=what)
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return json.loads(res.stdout.strip().splitlines()[-1])


def cli(db: str, out: Path) -> dict:
    cmd = [sys.executable, "-c", RUN_CLI, "--db", db, "sweep", "llama2-7b", "--device", "all", "--batch", BATCH,
           "--seq-len", SEQ, "--precision", PRECISIONS, "--phase", PHASES, "--out", str(out)]
    t = time.perf_counter()
    res = subprocess.run(cmd, env=dict(os.environ, PYTHONPATH=str(ROOT)), capture_output=True, text=True,
                         check=False)
    wall = time.perf_counter() - t
    if res.returncode:
        raise SystemExit(res.stderr[-2000:])
    rss = [line for line in res.stderr.splitlines() if line.startswith("MAXRSS")][-1].split()[1]
    return {"s": wall, "peak_rss_mb": int(rss) / 1024, "bytes": out.stat().st_size}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--skip-cli", action="store_true")
    ap.add_argument("--distinct", action="store_true",
                    help="also the roofline over the distinct rows only (as the sweep passes them), gathered per "
                         "context: the lower bound of the work the sweep does")
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT))
    from explorer.store.engine import open_catalog

    with tempfile.TemporaryDirectory() as tmp:
        db = f"sqlite:///{Path(tmp) / 'catalog.db'}"
        with open_catalog(db) as repo:
            repo.devices()
        for what in ("api", "roofline") + (("roofline_distinct",) if args.distinct else ()):
            runs = [child(what, db) for _ in range(args.runs)]
            best = min(runs, key=lambda r: r["s"])
            print(f"{what}: " + ", ".join(f"{r['s']:.2f} s" for r in runs) + f"; peak RSS {best['peak_rss_mb']:.0f} MB "
                  f"(before the step {best['before_mb']:.0f} MB); " + json.dumps({k: v for k, v in best.items()
                                                                                  if k not in ("s",)}))
        if not args.skip_cli:
            for suffix in (".csv", ".parquet"):
                r = cli(db, Path(tmp) / f"points{suffix}")
                print(f"cli {suffix}: {r['s']:.2f} s, peak RSS {r['peak_rss_mb']:.0f} MB, file {r['bytes'] / 1e6:.1f} MB")


if __name__ == "__main__":
    main()
