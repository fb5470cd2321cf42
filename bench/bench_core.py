"""Core evaluation speed: a 1,000-layer model on 50 devices, vectorized vs a plain per-layer Python loop.

Run by hand: .venv/bin/python bench/bench_core.py. Budget: < 5 ms per evaluation, >= 20x the loop.
The vectorized pass is timed on a prebuilt layer table and device arrays (what the app re-runs per edit); the
shape inference (once per model edit) is timed separately.
"""

from __future__ import annotations

import statistics
import time

import numpy as np
from _common import report

from explorer.core.analysis.device_arrays import device_arrays
from explorer.core.analysis.evaluate import evaluate
from explorer.core.hardware.device_file import device_from_dict
from explorer.core.workload.layers import Context
from explorer.core.workload.model import LayerSpec, Model, build_table


def make_model(n_layers: int, with_attention: bool = False) -> Model:
    """Layers that map to one operator each (so 1,000 layers = 1,000 rows); optionally attention (5 rows)."""
    layers = []
    kinds = [("dense", dict(in_features=1024, out_features=1024)), ("layernorm", {}), ("gelu", {}),
             ("attention", dict(heads=16)) if with_attention else ("add", {})]
    for i in range(n_layers):
        kind, params = kinds[i % 4]
        layers.append(LayerSpec.make(kind, f"l{i}", **params))
    return Model.make("bench", {"tokens": 512, "hidden": 1024}, layers)


def make_devices(n: int):
    rng = np.random.default_rng(0)
    out = []
    for i in range(n):
        engine = ({"type": "systolic", "rows": 128, "cols": 128, "dataflow": "ws", "units": 4} if i % 2 else
                  {"type": "tensor_core", "sm_count": 108})
        out.append(device_from_dict({
            "id": f"d{i}", "name": f"d{i}", "vendor": "v", "kind": "gpu",
            "peak": {"fp16": f"{rng.uniform(50, 2000):.1f} TFLOP/s"},
            "memory": [{"name": "HBM", "role": "offchip", "capacity": "80 GB", "bandwidth": f"{rng.uniform(300, 8000):.0f} GB/s"},
                       {"name": "L2", "role": "onchip", "capacity": "40 MB", "bandwidth": "10 TB/s"}],
            "matrix_engine": engine}))
    return out


def loop_evaluate(table, arrays, bpe=2.0):
    """The same formulas as evaluate(), one layer and one device at a time (the baseline to beat):
    roofline, mapping efficiency (systolic or tensor core), per-level traffic with re-reads, energy, time."""
    from math import ceil, floor, isfinite, sqrt

    out = []
    for i in range(len(table)):
        f = 2 * table.macs[i] + table.other_flops[i]
        wb = table.weight_elems[i] * bpe
        ab = (table.input_elems[i] + table.output_elems[i]) * bpe
        b = wb + ab + table.kv_read_elems[i] * bpe
        m, n, k = table.gemm[i]
        gc = table.gemm_count[i]
        row = []
        for j in range(len(arrays)):
            peak, bw = arrays.peak[j], arrays.bandwidth[j]
            intensity = f / b if b else float("nan")
            attainable = min(peak, intensity * bw)
            ideal = max(f / peak, b / bw)
            eff = 1.0
            if gc and arrays.engine[j] == 1:
                r, c, u = arrays.rows[j], arrays.cols[j], arrays.units[j]
                df = arrays.dataflow[j]
                sr, sc = (m if df == "os" else k), (m if df == "is" else n)
                folds = ceil(sr / r) * ceil(sc / c)
                eff = sr * sc / (r * c) * gc / (ceil(folds * gc / u) * u)
            elif gc and arrays.engine[j] == 2:
                best = 0.0
                for scale in (1.0, 0.5):
                    bm, bn = floor(arrays.block_m[j] * scale), floor(arrays.block_n[j] * scale)
                    tiles = ceil(m / bm) * ceil(n / bn)
                    waves = ceil(tiles * gc / arrays.sm_count[j])
                    best = max(best, m * n / (tiles * bm * bn) * tiles * gc / (waves * arrays.sm_count[j]))
                eff = best * (k / (ceil(k / 8) * 8)) * (n / (ceil(n / 8) * 8))
            energy = (table.macs[i] + 0.5 * table.other_flops[i]) * arrays.mac_energy[j]
            mem_time = 0.0
            for v, name in enumerate(arrays.level_names[j]):
                inner = arrays.level_tile[j, v]
                tile = max(floor(sqrt(inner / (3 * bpe))), 1) if isfinite(inner) else None
                if v == 0:
                    t = b
                    tm = tn = tile or float("inf")
                else:
                    t = b
                    engine = {1: (arrays.rows[j], arrays.cols[j]), 2: (arrays.block_m[j], arrays.block_n[j])}
                    tm, tn = (tile, tile) if tile else engine.get(arrays.engine[j], (float("inf"),) * 2)
                if gc:
                    t += (m * k * max(ceil(n / tn) - 1, 0) + k * n * max(ceil(m / tm) - 1, 0)) * gc * bpe
                energy += t * arrays.level_energy[j, v]
                if isfinite(arrays.level_bw[j, v]):
                    mem_time = max(mem_time, t / arrays.level_bw[j, v])
            row.append((attainable, ideal, max(f / (peak * eff), mem_time), energy))
        out.append(row)
    return out


def timeit(fn, runs):
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    times.sort()
    return statistics.median(times), times[int(0.95 * (len(times) - 1))]


def run(model, devices, label):
    ctx = Context(batch=8)
    t_build, _ = timeit(lambda: build_table.__wrapped__(model, ctx), 5)
    table = build_table(model, ctx)
    arrays = device_arrays(devices, "fp16")
    times = []
    for _ in range(100):
        t = time.perf_counter()
        evaluate(table, arrays, ctx=ctx, model=model)
        times.append(time.perf_counter() - t)
    med, p95 = statistics.median(times), sorted(times)[94]
    med_full, _ = timeit(lambda: evaluate(table, devices, ctx=ctx, model=model), 20)
    loop_med, _ = timeit(lambda: loop_evaluate(table, arrays), 3)
    rows = len(table)
    print(f"== {label}: {rows} operators x {len(devices)} devices ({rows * len(devices):,} pairs)")
    print(f"shape inference + work table (once per model edit): {t_build * 1e3:.1f} ms")
    print(f"vectorized evaluate (roofline + tiling + hierarchical traffic/energy + totals): median {med * 1e3:.2f} ms,"
          f" p95 {p95 * 1e3:.2f} ms")
    print(f"  including building the device arrays: median {med_full * 1e3:.2f} ms")
    print(f"plain Python loop over the same formulas: median {loop_med * 1e3:.0f} ms -> speed-up {loop_med / med:.0f}x")
    return med, loop_med / med, times


def main() -> None:
    devices = make_devices(50)
    med, speedup, times = run(make_model(1000), devices, "1,000 layers (one operator each)")
    report("core: 1,000 layers x 50 devices", times, 5e-3)
    print(f"budget: < 5 ms -> {'PASS' if med < 5e-3 else 'FAIL'}; >= 20x the loop -> {'PASS' if speedup >= 20 else 'FAIL'}")
    run(make_model(1000, with_attention=True), devices, "1,000 layers with attention (expanded to 5 operators)")


if __name__ == "__main__":
    main()
