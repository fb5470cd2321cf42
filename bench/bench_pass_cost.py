"""The fixed and per-cell cost of the analysis pass (issue 22), before and after the plans, in one process:

* (a) Llama-2-7B prefill + decode at 1,024 tokens, batch 1, on the A100 80GB: two ``evaluate`` calls, one ``evaluate``
  over both contexts' rows stacked, and ``prefill_decode`` (analysis/phases.py: the stacked pass making only each
  row's time, energy and bound, and each phase's totals), against LLM-Viewer's ``analyze(1024, 1)``. Target: no
  slower.
* (b) the 1,024 + 128-token generate task, cold (work tables, the generate task's stack and the pass's plans all
  emptied before each run) and warm, against LLM-Viewer's ``analyze_generate_task``. Target: >= 5x faster cold.
* (d) the pass at 1,000 and 10,000 rows x 50 devices (bench_core.py's model and devices) against a numpy lower bound of
  the same element-wise work: one broadcasting numpy operation writing each (rows x devices) and (rows x devices x
  levels) array the pass returns (compute and memory time, attainable, bound, ideal time, mapping efficiency, time,
  calibrated time and flag, compute energy, energy; traffic and energy per level), from operands already in memory.
  Target: within 3x. bench_core.py's model repeats 4 layers, so the pass computes 4 distinct rows and copies them
  (analysis/row_classes.py); "distinct rows" is the same size with every row different (dense layers of growing
  width): the pass's worst case, every row computed. bench_core's 50 devices are two kinds of engine and one memory
  layout (peaks and bandwidths differ), so the GEMM rows' efficiency and re-reads are computed for two engines and one
  tile column (analysis/engine_columns.py); "distinct rows x catalog" (1,000 rows, not a target) is the same
  pass on the catalog's devices, most of them distinct there.
* (e) ``evaluate`` alone at 2,000 and 10,000 rows x 20 devices (the app's large models), on a table whose plans are
  made ("warm", a pass repeated) and on a new table object each time ("new table": its plans, GEMM shapes and distinct
  rows found again, as after an edit).

"Before" is the pass as it was, ``tests/core/evaluate_reference.py`` (main 5a6f242's ``evaluate``, verbatim), run in the
same process, each iteration timing every case in turn. ``--tree DIR`` imports ``explorer`` from another checkout (the
main one, say) with these cases, to compare two versions by alternating runs. The medians are of wall time and, less
disturbed by other processes on a loaded machine, of the thread's CPU time. The 10^6-point sweep, (c), is
``bench_sweep_million.py``.

    .venv/bin/python bench/bench_pass_cost.py [--peer ../shared/peers/llm-viewer] [--runs 30] [--only d,e] [--tree DIR]
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
_TREE = next((sys.argv[i + 1] for i, a in enumerate(sys.argv[:-1]) if a == "--tree"), None)
sys.path.insert(0, str(Path(_TREE).resolve()) if _TREE else str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from _common import median_p95, report
from bench_core import make_devices, make_model

import explorer
from explorer.core.analysis import plan
from explorer.core.analysis.device_arrays import device_arrays
from explorer.core.analysis.evaluate import evaluate
from explorer.core.analysis.generate import _stacked, generate
from explorer.core.analysis.phases import prefill_decode
from explorer.core.hardware.catalog_files import load_shipped_devices
from explorer.core.workload.context_axis import stack_contexts
from explorer.core.workload.layers import Context
from explorer.core.workload.model import LayerSpec, Model, build_table
from explorer.core.workload.templates import get_template

DEFAULT_PEER = ROOT.parent / "shared" / "peers" / "llm-viewer"
SEQ, GEN, BATCH = 1024, 128, 1


def reference():
    spec = importlib.util.spec_from_file_location("evaluate_reference", ROOT / "tests/core/evaluate_reference.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.reference_evaluate


def old_generate(ref, model, device):
    """generate() as it was (main 5a6f242): the pass's every field, the per-step sums of time and energy, and the
    footprint of the prefill and of the last step."""
    from explorer.core.analysis.tensor_bytes import formats_of, resident_bytes

    st = _stacked(model, BATCH, SEQ, GEN, "naive", "last")
    dev = device_arrays(device, "fp16")
    r = ref(st.table, dev, "fp16", Context(batch=BATCH))
    time = np.add.reduceat(r["count"][:, None] * r["time"], st.starts, axis=0)
    energy = np.add.reduceat(r["count"][:, None] * r["energy"], st.starts, axis=0)
    fm, c, footprint = formats_of(dev), st.table.columns, 0.0
    for k in {0, len(st.sizes) - 1}:
        a, b = st.starts[k], st.starts[k] + st.sizes[k]
        footprint = max(footprint, sum(resident_bytes({n: v[a:b] for n, v in c.items()}, fm)))
    return time, energy, footprint


def distinct_model(n_layers: int) -> Model:
    """bench_core.make_model's layers (dense, layernorm, GELU, add) with each dense layer wider than the last: no two
    rows alike."""
    layers, width = [], 1024
    for i in range(n_layers):
        if i % 4 == 0:
            layers.append(LayerSpec.make("dense", f"l{i}", in_features=width, out_features=width + 8))
            width += 8
        else:
            layers.append(LayerSpec.make(("layernorm", "gelu", "add")[i % 4 - 1], f"l{i}"))
    return Model.make("distinct", {"tokens": 512, "hidden": 1024}, layers)


def lower_bound(table, arrays):
    """One numpy operation per (L, D) and (L, D, V) array the pass returns, operands precomputed (not timed)."""
    c = table.columns
    f = (2.0 * c["macs"] + c["other_flops"])[:, None]
    b = ((c["weight_elems"] + c["input_elems"] + c["output_elems"]) * arrays.bytes_per_element)[:, None]
    peak, bw = arrays.peak[None, :], arrays.bandwidth[None, :]
    v = arrays.level_bw.shape[1]
    lb = arrays.level_bw[None, :, :]

    def run():
        ct = f / peak  # compute time
        mt = b / bw  # memory time
        np.minimum(ct, mt)  # attainable
        np.less(ct, mt)  # memory bound
        np.maximum(ct, mt)  # ideal time
        np.multiply(ct, 1.0)  # mapping efficiency
        np.maximum(ct, mt)  # time
        np.multiply(ct, 1.0)  # calibrated time
        np.less(mt, 0.0)  # calibrated flag
        np.multiply(f, peak)  # compute energy
        np.add(ct, mt)  # energy
        tr = np.multiply(b[:, :, None], lb)  # traffic per level
        np.multiply(tr, 1.0)  # energy per level
        return v

    return run


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--peer", type=Path, default=DEFAULT_PEER)
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--only", default="a,b,d,e", help="the cases to run: a, b, d, e (comma-separated)")
    ap.add_argument("--tree", type=Path, help="import explorer from this checkout (default: this one)")
    args = ap.parse_args()
    only = set(args.only.split(","))
    ref = reference()
    model = get_template("llama2-7b").build()
    device = [d for d in load_shipped_devices() if d.id == "nvidia-a100-sxm4-80gb"]
    pre = Context(batch=BATCH, seq_len=SEQ, phase="prefill")
    dec = Context(batch=BATCH, seq_len=SEQ, phase="decode")
    both = stack_contexts(model, [pre, dec], build_table).table

    def cold():
        build_table.cache_clear()
        _stacked.cache_clear()
        plan.clear()

    cases = {}
    if "a" in only:
        cases.update({
            "(a) analyze, 2 passes: after": lambda: (evaluate(model, device, "fp16", pre),
                                                     evaluate(model, device, "fp16", dec)),
            "(a) analyze, 2 passes: before": lambda: (ref(model, device, "fp16", pre), ref(model, device, "fp16", dec)),
            "(a) analyze, 1 stacked pass: after": lambda: evaluate(both, device, "fp16", pre),
            "(a) analyze, 1 stacked pass: before": lambda: ref(both, device, "fp16", pre),
            "(a) prefill_decode: after": lambda: prefill_decode(model, device, "fp16", batch=BATCH, seq_len=SEQ)})
    if "b" in only:
        cases.update({
            "(b) generate cold: after": lambda: (cold(), generate(model, device, "fp16", batch=BATCH, input_tokens=SEQ,
                                                                  output_tokens=GEN)),
            "(b) generate cold: before": lambda: (cold(), old_generate(ref, model, device)),
            "(b) generate warm: after": lambda: generate(model, device, "fp16", batch=BATCH, input_tokens=SEQ,
                                                         output_tokens=GEN),
            "(b) generate warm: before": lambda: old_generate(ref, model, device)})
    devices = make_devices(50)
    arrays = device_arrays(devices, "fp16")
    ctx = Context(batch=8)
    for n in (1000, 10000) if "d" in only else ():
        table = build_table(make_model(n), ctx)
        cases[f"(d) {n:,} layers x 50: after"] = (lambda t=table: evaluate(t, arrays, ctx=ctx))
        cases[f"(d) {n:,} layers x 50: before"] = (lambda t=table: ref(t, arrays, ctx=ctx))
        cases[f"(d) {n:,} layers x 50: numpy lower bound"] = lower_bound(table, arrays)
        table = build_table(distinct_model(n), ctx)
        cases[f"(d) {n:,} distinct rows x 50: after"] = (lambda t=table: evaluate(t, arrays, ctx=ctx))
        cases[f"(d) {n:,} distinct rows x 50: numpy lower bound"] = lower_bound(table, arrays)
        if n == 1000:  # the catalog's devices, mostly of distinct engines and memories (not a target: for comparison)
            shipped = device_arrays(load_shipped_devices(), "fp16")
            cases["(d) 1,000 distinct rows x catalog: after"] = (lambda t=table, s=shipped: evaluate(t, s, ctx=ctx))
            cases["(d) 1,000 distinct rows x catalog: numpy lower bound"] = lower_bound(table, shipped)
    twenty = device_arrays(devices[:20], "fp16")
    for n in (2000, 10000) if "e" in only else ():
        table = build_table(make_model(n), ctx)
        cases[f"(e) evaluate {n:,} x 20: warm"] = (lambda t=table: evaluate(t, twenty, ctx=ctx))
        cases[f"(e) evaluate {n:,} x 20: new table"] = (
            lambda t=table: evaluate(dataclasses.replace(t), twenty, ctx=ctx))
        cases[f"(e) evaluate {n:,} x 20: before"] = (lambda t=table: ref(t, twenty, ctx=ctx))
    if "a" in only or "b" in only:
        add_peer(cases, args.peer, only)
    times: dict[str, list[float]] = {name: [] for name in cases}
    cpu: dict[str, list[float]] = {name: [] for name in cases}
    for fn in cases.values():
        fn()
    for i in range(args.runs):
        for name, fn in cases.items():
            if "10,000" in name and i % 3:  # the large pass: every third run
                continue
            if "cold" not in name:  # a warm case runs once untimed first: a cold case before it emptied the caches
                fn()
            c, t = time.thread_time(), time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - t)
            cpu[name].append(time.thread_time() - c)
    med = {k: median_p95(v)[0] for k, v in times.items()}
    least = {k: min(v) for k, v in times.items()}
    med_cpu = {k: median_p95(v)[0] for k, v in cpu.items()}
    print(f"explorer from {Path(explorer.__file__).parent.parent}")
    print(f"{'case':<48} {'median ms':>10} {'p95 ms':>10} {'min ms':>10} {'CPU ms':>10}")
    for name, v in times.items():
        m, p = median_p95(v)
        print(f"{name:<48} {m * 1e3:10.3f} {p * 1e3:10.3f} {min(v) * 1e3:10.3f} {med_cpu[name] * 1e3:10.3f}")
    for label, table in (("medians", med), ("minima (the least disturbed run of each case)", least),
                         ("CPU time medians", med_cpu)):
        print(f"\nratios of the {label}:")
        show_ratios(table)
    # the targets as BENCH lines (ratios of the medians; bench/run_all.py collects them)
    # (and of the CPU-time medians, "_cpu": on a shared machine the wall time is mostly the waits for a CPU)
    for n in ("1,000", "10,000") if "d" in only else ():
        k = f"(d) {n} layers x 50"
        kd = f"(d) {n} distinct rows x 50"
        for suffix, m in (("", med), ("_cpu", med_cpu)):
            report(f"pass_vs_numpy_lower_bound_{n.replace(',', '')}x50{suffix}",
                   [m[k + ": after"] / m[k + ": numpy lower bound"]], 3.0, unit="ratio")
            report(f"pass_vs_numpy_lower_bound_distinct_rows_{n.replace(',', '')}x50{suffix}",
                   [m[kd + ": after"] / m[kd + ": numpy lower bound"]], 3.0, unit="ratio")
    if "LLM-Viewer analyze" in med:  # with (a)
        report("analyze_2_passes_vs_llm_viewer", [med["(a) analyze, 2 passes: after"] / med["LLM-Viewer analyze"]], 1.0,
               unit="ratio")
        report("analyze_stacked_vs_llm_viewer", [med["(a) analyze, 1 stacked pass: after"] / med["LLM-Viewer analyze"]],
               1.0, unit="ratio")
        report("prefill_decode_vs_llm_viewer", [med["(a) prefill_decode: after"] / med["LLM-Viewer analyze"]], 1.0,
               unit="ratio")
    if "LLM-Viewer generate" in med:  # with (b)
        report("generate_cold_vs_llm_viewer", [med["(b) generate cold: after"] / med["LLM-Viewer generate"]], 0.2,
               unit="ratio")
    return 0


def add_peer(cases: dict, peer: Path, only: str = "ab") -> None:
    """LLM-Viewer's ``analyze`` beside (a) and its generate task beside (b), for the cases run only (``--only b``
    alone has no (a) results to compare its ``analyze`` with)."""
    if not (peer / "run_peer.py").exists():
        print(f"LLM-Viewer not found at {peer}: comparison skipped")
        return
    sys.path.insert(0, str(peer))
    from run_peer import load  # the peer's own loader (stubs `transformers`, no network)

    cwd = os.getcwd()
    lv = load("llama2-7b", "nvidia_A100_80G")
    os.chdir(cwd)
    if "a" in only:
        cases["LLM-Viewer analyze"] = lambda: lv.analyze(SEQ, BATCH)
    if "b" in only:
        cases["LLM-Viewer generate"] = lambda: lv.analyze_generate_task(SEQ, GEN, BATCH)


def show_ratios(med: dict[str, float]) -> None:
    def ratio(a, b):
        return med[a] / med[b]

    for what in ("(a) analyze, 2 passes", "(a) analyze, 1 stacked pass", "(b) generate cold", "(b) generate warm"):
        if what + ": after" not in med:
            continue
        line = f"{what}: before / after = {ratio(what + ': before', what + ': after'):.2f}x"
        peer = "LLM-Viewer analyze" if what.startswith("(a)") else "LLM-Viewer generate"
        if peer in med:
            line += (f"; LLM-Viewer / ours: before {ratio(peer, what + ': before'):.2f}x, "
                     f"after {ratio(peer, what + ': after'):.2f}x")
        print(line)
    if "LLM-Viewer analyze" in med:
        print(f"(a) prefill_decode: LLM-Viewer / ours {ratio('LLM-Viewer analyze', '(a) prefill_decode: after'):.2f}x; "
              f"two evaluate calls / prefill_decode {ratio('(a) analyze, 2 passes: after', '(a) prefill_decode: after'):.2f}x")
    for n in ("1,000", "10,000"):
        k, kd = f"(d) {n} layers x 50", f"(d) {n} distinct rows x 50"
        if k + ": after" not in med:
            continue
        print(f"{k}: before / after = {ratio(k + ': before', k + ': after'):.2f}x; pass / numpy lower bound: before "
              f"{ratio(k + ': before', k + ': numpy lower bound'):.2f}x, after "
              f"{ratio(k + ': after', k + ': numpy lower bound'):.2f}x (target <= 3); distinct rows "
              f"{ratio(kd + ': after', kd + ': numpy lower bound'):.2f}x")
    kc = "(d) 1,000 distinct rows x catalog"
    if kc + ": after" in med:
        print(f"{kc} ({len(load_shipped_devices())} devices): pass / numpy lower bound "
              f"{ratio(kc + ': after', kc + ': numpy lower bound'):.2f}x")
    for n in ("2,000", "10,000"):
        k = f"(e) evaluate {n} x 20"
        if k + ": warm" in med:
            print(f"{k}: warm {med[k + ': warm'] * 1e3:.3f} ms, new table {med[k + ': new table'] * 1e3:.3f} ms, "
                  f"before (warm) {med[k + ': before'] * 1e3:.3f} ms")


if __name__ == "__main__":
    sys.exit(main())
