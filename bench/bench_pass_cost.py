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
  Target: within 3x.

"Before" is the pass as it was, ``tests/core/evaluate_reference.py`` (main 5a6f242's ``evaluate``, verbatim), run in the
same process, each iteration timing every case in turn. The 10^6-point sweep, (c), is ``bench_sweep_million.py``.

    .venv/bin/python bench/bench_pass_cost.py [--peer ../shared/peers/llm-viewer] [--runs 30]
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from _common import median_p95, report, samples
from bench_core import make_devices, make_model

from explorer.core.analysis import plan
from explorer.core.analysis.device_arrays import device_arrays
from explorer.core.analysis.evaluate import evaluate
from explorer.core.analysis.generate import _stacked, generate
from explorer.core.analysis.phases import prefill_decode
from explorer.core.hardware.catalog_files import load_shipped_devices
from explorer.core.workload.context_axis import stack_contexts
from explorer.core.workload.layers import Context
from explorer.core.workload.model import build_table
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
    args = ap.parse_args()
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

    cases = {
        "(a) analyze, 2 passes: after": lambda: (evaluate(model, device, "fp16", pre), evaluate(model, device, "fp16", dec)),
        "(a) analyze, 2 passes: before": lambda: (ref(model, device, "fp16", pre), ref(model, device, "fp16", dec)),
        "(a) analyze, 1 stacked pass: after": lambda: evaluate(both, device, "fp16", pre),
        "(a) analyze, 1 stacked pass: before": lambda: ref(both, device, "fp16", pre),
        "(a) prefill_decode: after": lambda: prefill_decode(model, device, "fp16", batch=BATCH, seq_len=SEQ),
        "(b) generate cold: after": lambda: (cold(), generate(model, device, "fp16", batch=BATCH, input_tokens=SEQ,
                                                              output_tokens=GEN)),
        "(b) generate cold: before": lambda: (cold(), old_generate(ref, model, device)),
        "(b) generate warm: after": lambda: generate(model, device, "fp16", batch=BATCH, input_tokens=SEQ,
                                                     output_tokens=GEN),
        "(b) generate warm: before": lambda: old_generate(ref, model, device),
    }
    devices = make_devices(50)
    arrays = device_arrays(devices, "fp16")
    for n in (1000, 10000):
        ctx = Context(batch=8)
        table = build_table(make_model(n), ctx)
        cases[f"(d) {n:,} layers x 50: after"] = (lambda t=table, c=ctx: evaluate(t, arrays, ctx=c))
        cases[f"(d) {n:,} layers x 50: before"] = (lambda t=table, c=ctx: ref(t, arrays, ctx=c))
        cases[f"(d) {n:,} layers x 50: numpy lower bound"] = lower_bound(table, arrays)
    if (args.peer / "run_peer.py").exists():
        sys.path.insert(0, str(args.peer))
        from run_peer import load  # the peer's own loader (stubs `transformers`, no network)

        cwd = os.getcwd()
        lv = load("llama2-7b", "nvidia_A100_80G")
        os.chdir(cwd)
        cases["LLM-Viewer analyze"] = lambda: lv.analyze(SEQ, BATCH)
        cases["LLM-Viewer generate"] = lambda: lv.analyze_generate_task(SEQ, GEN, BATCH)
    else:
        print(f"LLM-Viewer not found at {args.peer}: comparison skipped")
    times: dict[str, list[float]] = {name: [] for name in cases}
    for fn in cases.values():
        fn()
    for i in range(args.runs):
        for name, fn in cases.items():
            if "10,000" in name and i % 3:  # the large pass: every third run
                continue
            # a warm case runs once untimed first: a cold case before it emptied the caches
            times[name] += samples(fn, 1, warmup=0 if "cold" in name else 1)
    med = {k: median_p95(v)[0] for k, v in times.items()}
    least = {k: min(v) for k, v in times.items()}
    print(f"{'case':<44} {'median ms':>10} {'p95 ms':>10} {'min ms':>10}")
    for name, v in times.items():
        m, p = median_p95(v)
        print(f"{name:<44} {m * 1e3:10.3f} {p * 1e3:10.3f} {min(v) * 1e3:10.3f}")
    for label, table in (("medians", med), ("minima (the least disturbed run of each case)", least)):
        print(f"\nratios of the {label}:")
        show_ratios(table)
    # the targets as BENCH lines (ratios of the medians; bench/run_all.py collects them)
    for n in ("1,000", "10,000"):
        k = f"(d) {n} layers x 50"
        report(f"pass_vs_numpy_lower_bound_{n.replace(',', '')}x50", [med[k + ": after"] / med[k + ": numpy lower bound"]],
               3.0, unit="ratio")
    if "LLM-Viewer analyze" in med:
        report("analyze_2_passes_vs_llm_viewer", [med["(a) analyze, 2 passes: after"] / med["LLM-Viewer analyze"]], 1.0,
               unit="ratio")
        report("analyze_stacked_vs_llm_viewer", [med["(a) analyze, 1 stacked pass: after"] / med["LLM-Viewer analyze"]],
               1.0, unit="ratio")
        report("prefill_decode_vs_llm_viewer", [med["(a) prefill_decode: after"] / med["LLM-Viewer analyze"]], 1.0,
               unit="ratio")
        report("generate_cold_vs_llm_viewer", [med["(b) generate cold: after"] / med["LLM-Viewer generate"]], 0.2,
               unit="ratio")
    return 0


def show_ratios(med: dict[str, float]) -> None:
    def ratio(a, b):
        return med[a] / med[b]

    for what in ("(a) analyze, 2 passes", "(a) analyze, 1 stacked pass", "(b) generate cold", "(b) generate warm"):
        line = f"{what}: before / after = {ratio(what + ': before', what + ': after'):.2f}x"
        if "LLM-Viewer analyze" in med:
            peer = "LLM-Viewer analyze" if what.startswith("(a)") else "LLM-Viewer generate"
            line += (f"; LLM-Viewer / ours: before {ratio(peer, what + ': before'):.2f}x, "
                     f"after {ratio(peer, what + ': after'):.2f}x")
        print(line)
    if "LLM-Viewer analyze" in med:
        print(f"(a) prefill_decode: LLM-Viewer / ours {ratio('LLM-Viewer analyze', '(a) prefill_decode: after'):.2f}x; "
              f"two evaluate calls / prefill_decode {ratio('(a) analyze, 2 passes: after', '(a) prefill_decode: after'):.2f}x")
    for n in ("1,000", "10,000"):
        k = f"(d) {n} layers x 50"
        print(f"{k}: before / after = {ratio(k + ': before', k + ': after'):.2f}x; pass / numpy lower bound: before "
              f"{ratio(k + ': before', k + ': numpy lower bound'):.2f}x, after "
              f"{ratio(k + ': after', k + ': numpy lower bound'):.2f}x (target <= 3)")


if __name__ == "__main__":
    sys.exit(main())
