"""Layout search speed: every valid layout of Llama-3-70B on an 8-GPU node and on a 64-GPU cluster.

Run by hand: .venv/bin/python bench/bench_layouts.py. Budget (issue 18): under 16 ms each, so the search runs live.
Decode at batch 64, context 4,096, fp16, on the shipped nvidia-dgx-h100 (and 8 of them over its scale-out network).
A fresh search each time: the work tables of each micro-batch are cached across calls as in the app (build_table),
the sharding, the single-device pass and the collectives are recomputed.
"""

from __future__ import annotations

from _common import report, samples

from explorer.core.hardware.catalog_files import load_shipped_devices, load_shipped_systems
from explorer.core.parallel.layout import candidates
from explorer.core.parallel.system_pass import analyze_system, model_shape
from explorer.core.workload.layers import Context
from explorer.core.workload.templates import get_template


def main() -> None:
    model = get_template("llama3-70b").build()
    ctx = Context(batch=64, phase="decode", seq_len=4096)
    node = next(s for s in load_shipped_systems() if s.id == "nvidia-dgx-h100")
    h100 = next(d for d in load_shipped_devices() if d.id == node.device_id)
    for nodes in (1, 8):
        system = node.with_nodes(nodes)
        layouts = candidates(model_shape(model, ctx), system.devices)
        values = samples(lambda: analyze_system(model, system, h100, layouts, "fp16", ctx), runs=30, warmup=2)
        report(f"layout search llama3-70b, {system.devices} GPUs ({len(layouts)} layouts)", values, 0.016)


if __name__ == "__main__":
    main()
