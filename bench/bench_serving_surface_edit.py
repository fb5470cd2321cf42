"""The serving surfaces' build per model edit, alone (issue 22, the app's edit path): what the Serving panel's and the
planner's serving box's worker computes after each edit, on the app's default serving grid (``grid_for`` of the
default serving choice: 155 points, decode batch x context then prefill prompts x length; the count is printed).

The model is bench_large_model_app.py's (N top-level layers: N/4 x (dense up, GELU, dense down, layernorm) on 512
tokens of width 768) on the first 20 shipped devices; each edit renames layer 2 to a name never used and toggles
its bias (every edit a model not seen before), then ``device_surfaces`` is timed (the worker's call through
``device_setups``), with the garbage collector's passes inside it counted. The first build (no earlier model) is
timed apart. Printed at the end: the peak resident memory and a digest of every float of the last edit's surfaces
(equal digests across checkouts: the same surfaces to the bit).

    .venv/bin/python bench/bench_serving_surface_edit.py [--layers 2000 10000] [--devices 20] [--edits 10]
    .venv/bin/python bench/bench_serving_surface_edit.py --compare /work/main --rounds 2   # before/after, alternated

``--workspace-table``: the workspace's own table per edit instead (``build_table`` patched from the last one in one
context, ``errors`` and ``layer_rows`` read), a rename and an insertion/deletion alternately.

``--compare PATH``: each size is run in subprocesses, alternately with PYTHONPATH=PATH (another checkout: the code
before) and this checkout, ``--rounds`` times, and both printed.
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def measure(n_layers: int, n_devices: int, edits: int) -> None:
    import explorer  # first: bench_large_model_app puts this checkout first on the path (--compare runs another)
    from explorer.core.hardware.catalog_files import load_shipped_devices
    from explorer.core.serving import surfaces
    from explorer.core.serving.serve import grid_for
    from explorer.core.session.results import DEFAULT_SERVING as D

    sys.path.insert(0, str(ROOT / "bench"))
    from bench_large_model_app import big_model

    print(f"[{Path(explorer.__file__).parents[1]}] ", end="")

    devices = load_shipped_devices()[:n_devices]
    g = grid_for(D.workload, D.policy, None, D.block_size)
    model = big_model(n_layers)
    passes: list[float] = []
    started = [0.0]

    def watch(phase, info):
        if phase == "start":
            started[0] = time.perf_counter()
        else:
            passes.append(time.perf_counter() - started[0])

    gc.callbacks.append(watch)
    t0 = time.perf_counter()
    first = surfaces.device_surfaces(model, devices, g)
    first_s = time.perf_counter() - t0
    times, gcs = [], []
    for i in range(edits):
        spec = model.layers[2]
        layers = list(model.layers)
        layers[2] = spec.with_params(name=f"down-edit-{i}", bias=not spec.params.get("bias", True))
        model = type(model).make(model.name, model.input_dict, layers)
        passes.clear()
        t0 = time.perf_counter()
        got = surfaces.device_surfaces(model, devices, g)
        times.append(time.perf_counter() - t0)
        gcs.append(list(passes))
        assert len(got) == len(devices) and got[0].decode_s.shape == first[0].decode_s.shape
    gc.callbacks.remove(watch)
    # every float of the last edit's surfaces: equal digests across checkouts = the same surfaces to the bit
    digest = hashlib.sha256(b"".join(s.decode_s.tobytes() + s.prefill_s.tobytes() for s in got)).hexdigest()[:16]
    ms = sorted(t * 1e3 for t in times)
    p95 = ms[min(len(ms) - 1, round(0.95 * (len(ms) - 1)))]
    all_passes = [p for run in gcs for p in run]
    points = first[0].decode_s.size + first[0].prefill_s.size
    print(f"{n_layers} layers x {len(devices)} devices, {points} grid points: first build {first_s * 1e3:,.0f} ms; "
          f"per edit ({edits}): median {statistics.median(ms):,.1f} ms p95 {p95:,.1f} ms max {ms[-1]:,.1f} ms; "
          f"collector passes in the edits {len(all_passes)}, longest {max(all_passes, default=0) * 1e3:.1f} ms; "
          f"peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20:.2f} GiB; surfaces {digest}",
          flush=True)


def measure_table(n_layers: int, edits: int) -> None:
    """``--workspace-table``: the workspace's own table per edit (``build_table`` patched from the last one, one
    decode context, its ``errors`` and ``layer_rows`` read as the builder reads them): alternately a rename of the
    middle layer and an insertion / deletion of a layer after it."""
    from dataclasses import replace

    import explorer
    from explorer.core.workload.layers import Context
    from explorer.core.workload.model import build_table

    sys.path.insert(0, str(ROOT / "bench"))
    from bench_large_model_app import big_model

    ctx, n = Context(batch=1, seq_len=512, phase="decode"), n_layers
    model = big_model(n)
    t = build_table(model, ctx)
    t.errors, t.layer_rows  # noqa: B018 - found once on the table, as the builder does
    times: dict[str, list[float]] = {"rename": [], "insert/delete": []}
    for i in range(2 * edits):
        layers = list(model.layers)
        if i % 2 == 0:
            layers[n // 2] = replace(layers[n // 2], name=f"mid-{i}")
        elif len(layers) == n:
            layers.insert(n // 2 + 1, replace(layers[n // 2 + 1], name=f"new-{i}"))
        else:
            del layers[n // 2 + 1]
        edited = replace(model, layers=tuple(layers))
        hash(edited)  # the workspace hashes the model before it builds the table
        t0 = time.perf_counter()
        t = build_table(edited, ctx)
        t.errors, t.layer_rows  # noqa: B018
        times["rename" if i % 2 == 0 else "insert/delete"].append((time.perf_counter() - t0) * 1e3)
        model = edited
    print(f"[{Path(explorer.__file__).parents[1]}] {n_layers} layers, build_table per edit: "
          + "; ".join(f"{k} median {statistics.median(v):.2f} ms ({len(v)})" for k, v in times.items()), flush=True)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", type=int, nargs="+", default=[2000, 10000])
    parser.add_argument("--devices", type=int, default=20)
    parser.add_argument("--edits", type=int, default=10)
    parser.add_argument("--compare", metavar="PATH", help="another checkout to run alternately (the code before)")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--workspace-table", action="store_true",
                        help="time the workspace's build_table per edit (patch_table) instead of the surfaces")
    parser.add_argument("--before-edits", type=int, help="edits in the --compare checkout (default --edits)")
    args = parser.parse_args(argv)
    if not args.compare:
        for n in args.layers:
            measure_table(n, args.edits) if args.workspace_table else measure(n, args.devices, args.edits)
        return 0
    for n in args.layers:
        for r in range(args.rounds):
            for label, path, edits in (("before", args.compare, args.before_edits or args.edits),
                                       ("after", str(ROOT), args.edits)):
                print(f"round {r + 1}, {label} ({path}): ", end="", flush=True)
                env = dict(os.environ, PYTHONPATH=path)
                subprocess.run([sys.executable, __file__, "--layers", str(n), "--devices", str(args.devices),
                                "--edits", str(edits)] + ["--workspace-table"] * args.workspace_table,
                               env=env, check=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
