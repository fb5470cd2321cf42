"""Serving simulation speed (issue 19): 10,000 requests through one replica's continuous batching.

Run by hand: .venv/bin/python bench/bench_serving.py. Budget: under 2 s (median), so the report's simulation and the
check of the analytic estimate stay interactive. Llama-3-8B on the shipped nvidia-h100-sxm5, fp16, Poisson arrivals
at 20 requests/s (about 70 % of its capacity, a mean batch near 60), 1024 -> 256 tokens; prefill as its own steps
(vLLM's default scheduler) and chunked (512 tokens a step), timed apart. The step surface is built once (printed
apart, not in the budget); the requests are drawn once.
"""

from __future__ import annotations

import time

from _common import report, samples

from explorer.core.hardware.catalog_files import load_shipped_devices
from explorer.core.serving.serve import device_setup
from explorer.core.serving.simulate import Policy, simulate
from explorer.core.serving.workload import Lengths, Workload
from explorer.core.workload.templates import get_template


def main() -> None:
    model = get_template("llama3-8b").build()
    h100 = next(d for d in load_shipped_devices() if d.id == "nvidia-h100-sxm5")
    workload = Workload(rate=20.0, lengths=Lengths.fixed(1024, 256))
    requests = workload.requests(10_000, seed=0)
    for chunked in (False, True):
        t = time.perf_counter()
        setup = device_setup(model, h100, workload, Policy(chunked=chunked))
        print(f"step surface and memory: {time.perf_counter() - t:.3f} s")
        values = samples(lambda s=setup: simulate(requests, s.surface, s.memory, s.policy), runs=5, warmup=1)
        name = "chunked prefill" if chunked else "prefill steps"
        report(f"serving simulation, 10,000 requests ({name})", values, 2.0)


if __name__ == "__main__":
    main()
