"""The generate task and one prefill + decode analysis against LLM-Viewer (issue 22's targets), in one process:

* Llama-2-7B prefill + decode at 1,024 tokens, batch 1, on the A100 80GB: LLM-Viewer's ``analyze(1024, 1)`` (both
  phases in one call) against ours, :func:`explorer.core.analysis.phases.prefill_decode` (both contexts in one
  stacked pass; before: ``evaluate`` of the prefill and of the decode context, timed against the peer in
  ``bench_pass_cost.py``). Target: no slower.
* the 1,024 + 128-token generate task: LLM-Viewer's ``analyze_generate_task(1024, 128, 1)`` (a prefill and 128
  ``analyze`` calls) against ours, :func:`explorer.core.analysis.generate.generate` (one pass). Target: >= 5x faster.

Interleaved (each run times every case in turn). Ours is timed "cold" (the work tables, the layer memo and the checked
parameters, the stacked table, the plans and the kept device arrays emptied before every run: what a first analysis of a
model pays) and
"warm" (tables cached: an unchanged model analyzed again, as the app and a loop over devices do). The peer has no
cache: every call is cold. Both sides: FP16, no FlashAttention, the A100 (ours: the catalog's, 2.039 TB/s;
LLM-Viewer's table: 2.039 TB/s).

    .venv/bin/python bench/bench_generate.py [--peer ../shared/peers/llm-viewer] [--runs 30] [--parts]

``--parts``: the cold generate task's CPU time per part instead (each part's function wrapped by a timer: the work
tables' builds, the context axis's interpolation, the plans, the kernel) and the minor page faults per call.

Without the peer's folder the comparison is skipped (our times are still printed, exit 0).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from _common import median_p95, report, samples

from explorer.core.analysis import phases, plan
from explorer.core.analysis.generate import _stacked, generate
from explorer.core.hardware.catalog_files import load_shipped_devices
from explorer.core.workload.model import build_table
from explorer.core.workload.templates import get_template

DEFAULT_PEER = ROOT.parent / "shared" / "peers" / "llm-viewer"
SEQ, GEN, BATCH = 1024, 128, 1


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--peer", type=Path, default=DEFAULT_PEER)
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--parts", action="store_true", help="the cold task's CPU time per part and its page faults")
    args = ap.parse_args()
    model = get_template("llama2-7b").build()
    device = [d for d in load_shipped_devices() if d.id == "nvidia-a100-sxm4-80gb"]
    if args.parts:
        return parts(model, device, args.runs * 10)

    def analyze():
        return phases.prefill_decode(model, device, "fp16", batch=BATCH, seq_len=SEQ)

    def analyze_cold():
        build_table.cache_clear()  # the work tables, the layer memo and the parameters checked
        phases._stacked.cache_clear()
        plan.clear()  # the table, row and device plans and the kept device arrays
        return analyze()

    def gen():
        return generate(model, device, "fp16", batch=BATCH, input_tokens=SEQ, output_tokens=GEN)

    def gen_cold():
        build_table.cache_clear()
        _stacked.cache_clear()
        plan.clear()
        return gen()

    runs = {"ours analyze cold": analyze_cold, "ours analyze warm": analyze,
            "ours generate cold": gen_cold, "ours generate warm": gen}
    peer_ok = (args.peer / "run_peer.py").exists()
    if peer_ok:
        sys.path.insert(0, str(args.peer))
        from run_peer import load  # the peer's own loader (stubs `transformers`, no network)

        cwd = os.getcwd()
        lv = load("llama2-7b", "nvidia_A100_80G")
        os.chdir(cwd)
        runs["LLM-Viewer analyze"] = lambda: lv.analyze(SEQ, BATCH)
        runs["LLM-Viewer generate"] = lambda: lv.analyze_generate_task(SEQ, GEN, BATCH)
    # interleaved: every run times each in turn, so that both sides see the same load of a shared machine
    times: dict[str, list[float]] = {name: [] for name in runs}
    cpu: dict[str, list[float]] = {name: [] for name in runs}  # the process's CPU time (less disturbed by load)
    for fn in runs.values():
        fn()
    for _ in range(args.runs):
        for name, fn in runs.items():
            c = time.process_time()
            times[name] += samples(fn, 1, warmup=0)
            cpu[name].append(time.process_time() - c)
    g = gen()
    ours_total = float(g.total_s[0])
    print(f"ours: generate {SEQ} + {GEN} tokens: TTFT {g.ttft_s[0] * 1e3:.2f} ms, {len(g.step_s)} decode steps, "
          f"total {ours_total * 1e3:.1f} ms, built {g.tables_built} work tables")
    if peer_ok:
        peer_total = lv.analyze_generate_task(SEQ, GEN, BATCH)["inference_time"]
        print(f"LLM-Viewer: generate total {peer_total * 1e3:.1f} ms (prefill + {GEN} decode steps at KV "
              f"{SEQ}..{SEQ + GEN - 1}; ours: prefill + {GEN - 1} steps at {SEQ + 1}..{SEQ + GEN - 1}): "
              f"ours / theirs - 1 = {(ours_total / peer_total - 1) * 100:+.2f} %")
    else:
        print(f"LLM-Viewer not found at {args.peer}: comparison skipped")
    print(f"{'what':<22} {'median ms':>10} {'p95 ms':>10} {'CPU ms':>10}")
    for name, v in times.items():
        med, p95 = median_p95(v)
        print(f"{name:<22} {med * 1e3:10.3f} {p95 * 1e3:10.3f} {median_p95(cpu[name])[0] * 1e3:10.3f}")
    med = {k: median_p95(v)[0] for k, v in times.items()}
    report("generate_llama2_7b_1024+128_cold", times["ours generate cold"], 0.020)
    report("generate_llama2_7b_1024+128_warm", times["ours generate warm"], 0.005)
    if peer_ok:
        for kind in ("cold", "warm"):
            print(f"analyze ({kind}): LLM-Viewer / ours = {med['LLM-Viewer analyze'] / med[f'ours analyze {kind}']:.2f}x"
                  f"  (target >= 1)")
            print(f"generate ({kind}): LLM-Viewer / ours = "
                  f"{med['LLM-Viewer generate'] / med[f'ours generate {kind}']:.1f}x  (target >= 5); CPU time: "
                  f"{median_p95(cpu['LLM-Viewer generate'])[0] / median_p95(cpu[f'ours generate {kind}'])[0]:.2f}x")
        report("generate_vs_llm_viewer_cold", [med["ours generate cold"] / med["LLM-Viewer generate"]], 0.2,
               unit="ratio")
        report("generate_vs_llm_viewer_warm", [med["ours generate warm"] / med["LLM-Viewer generate"]], 0.2,
               unit="ratio")
        report("analyze_vs_llm_viewer_cold", [med["ours analyze cold"] / med["LLM-Viewer analyze"]], 1.0,
               unit="ratio")
    return 0


def parts(model, device, runs: int) -> int:
    """The cold task's CPU time per part (wrapped functions; a part's time includes the parts inside it)."""
    import resource

    from explorer.core.analysis import generate as gen_module
    from explorer.core.analysis import kernel
    from explorer.core.workload import context_axis, context_plane

    spent: dict[str, float] = {}

    def timed(owner, name: str, label: str) -> None:
        fn = getattr(owner, name)
        spent[label] = 0.0

        def wrapper(*a, **k):
            t = time.process_time()
            try:
                return fn(*a, **k)
            finally:
                spent[label] += time.process_time() - t

        setattr(owner, name, wrapper)

    timed(gen_module, "stack_steps", "stack_steps (the work tables of every context)")
    timed(gen_module, "build_table", "  its build_table calls")
    timed(context_plane._Run, "solve", "  the decode run (its builds included)")
    timed(context_plane, "_newton", "  the interpolation's _newton")
    timed(context_plane, "_rounded", "  the rounding to whole numbers")
    timed(context_plane, "_matrix", "  the tables' numbers (_matrix)")
    timed(context_axis, "_from_numbers", "  the stacked table's blocks (_from_numbers)")
    timed(context_axis, "_prefill_and_block", "  prefill + one block stacked (_prefill_and_block)")
    timed(gen_module, "_footprint", "the memory footprint (_footprint)")
    timed(gen_module, "_step_classes", "the decode steps' distinct rows (_step_classes)")
    timed(gen_module, "time_energy_classes", "time_energy_classes (the pass on the distinct rows)")
    timed(gen_module, "time_energy", "time_energy (the pass on every row: fused attention)")
    timed(gen_module, "device_plan", "  device plan")
    timed(kernel, "table_plan", "  table plan")
    timed(plan, "_row_plan", "  row plan")
    timed(kernel, "_time_energy_rows", "  the kernel")

    def cold():
        build_table.cache_clear()
        _stacked.cache_clear()
        plan.clear()
        return generate(model, device, "fp16", batch=BATCH, input_tokens=SEQ, output_tokens=GEN)

    for _ in range(20):
        cold()
    for k in spent:
        spent[k] = 0.0
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    t0 = time.process_time()
    for _ in range(runs):
        cold()
    total = (time.process_time() - t0) / runs
    faults = (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults) / runs
    print(f"cold generate {SEQ} + {GEN}: {total * 1e3:.3f} ms CPU per call (mean of {runs}), {faults:.0f} minor page "
          f"faults per call")
    for label, v in spent.items():
        print(f"{label:<52} {v / runs * 1e3:8.3f} ms {v / runs / total:6.1%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
