"""Report speed: a PDF comparison report (summary, plan, four figures, sources) for GPT-2 on 5 catalog devices.

Run by hand: .venv/bin/python bench/bench_report.py. Budget: median of 5 runs < 3 s (build the report data,
lay out and write the PDF; the analysis pass is included).
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from _common import median_p95, report, samples

from explorer.core.analysis.evaluate import evaluate
from explorer.core.analysis.procurement import Requirements
from explorer.core.hardware.device_file import load_device_file
from explorer.core.session.workspace import Assumptions
from explorer.core.workload.templates import get_template
from explorer.report import export_report

CATALOG = Path(__file__).resolve().parents[1] / "catalog"
IDS = ("nvidia-a100-sxm4-80gb", "nvidia-h100-sxm5", "nvidia-l4", "nvidia-t4", "nvidia-l40s")
QUOTES = {"nvidia-a100-sxm4-80gb": 15000.0, "nvidia-h100-sxm5": 30000.0, "nvidia-l4": 2500.0, "nvidia-t4": 1500.0,
          "nvidia-l40s": 9000.0}


def main() -> None:
    template = get_template("gpt2")
    model = template.build()
    devices = [load_device_file(CATALOG / f"{i}.yaml") for i in IDS]
    req = Requirements(20000.0, "tokens/s", latency=0.05, budget=500000.0, price=QUOTES,
                       cloud_price={"nvidia-h100-sxm5": 4.0 / 3600})
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "report.pdf"

        def run():
            analysis = evaluate(model, devices, "fp16", template.context(batch=8, phase="decode"))
            export_report(analysis, Assumptions(), out, req)

        times = samples(run, runs=5, warmup=1)
        size = out.stat().st_size
    med, p95 = median_p95(times)
    print(f"PDF report, GPT-2 on {len(IDS)} devices: median {med:.3f} s, p95 {p95:.3f} s ({size / 1e3:.0f} kB)")
    report("report: PDF, 5 devices", times, 3.0)
    print(f"budget: < 3 s -> {'PASS' if med < 3.0 else 'FAIL'}")


if __name__ == "__main__":
    main()
