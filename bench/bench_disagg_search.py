"""The disaggregated pool search, every size simulated (before) against the estimate first (after), issue 19.

Run by hand: .venv/bin/python bench/bench_disagg_search.py. The two searches alternate in one process (before, after,
before, after, ...) so a busy machine slows both alike; the medians and the sizes each simulated are printed. Cases:
Llama-3-8B, fp16, 1024 -> 256 tokens, Poisson, KV over 50 GB/s + 5 us, `serve --disaggregate auto`'s defaults
(pools up to 4 each, 2,000 requests a simulation, seed 0):

  a  40 requests/s on H100 + H100, TTFT P90 50 ms, TPOT P90 8 ms
  b  20 requests/s on H100 prefill + A100 80GB decode, TTFT P90 30 ms, TPOT P90 10 ms
"""

from __future__ import annotations

import statistics
import time

from explorer.core.hardware.catalog_files import load_shipped_devices
from explorer.core.serving.disagg import KvLink
from explorer.core.serving.disagg_search import search
from explorer.core.serving.serve import device_setup
from explorer.core.serving.workload import SLO, Lengths, Workload
from explorer.core.workload.templates import get_template


def main(runs: int = 3) -> None:
    model = get_template("llama3-8b").build()
    devs = {d.id: d for d in load_shipped_devices()}
    link = KvLink(50e9, 5e-6)
    cases = []
    for name, rate, pre, dec, slo in (("a", 40.0, "nvidia-h100-sxm5", "nvidia-h100-sxm5", SLO(ttft=0.05, tpot=0.008)),
                                      ("b", 20.0, "nvidia-h100-sxm5", "nvidia-a100-sxm4-80gb",
                                       SLO(ttft=0.03, tpot=0.01))):
        w = Workload(rate=rate, lengths=Lengths.fixed(1024, 256))
        cases.append((name, w, device_setup(model, devs[pre], w), device_setup(model, devs[dec], w), slo))
    for name, w, p, d, slo in cases:
        times = {"simulate": [], "estimate": []}
        found = {}
        for _ in range(runs):
            for method in ("simulate", "estimate"):
                t = time.perf_counter()
                found[method] = search(w, p, d, link, slo, n=2000, max_replicas=4, method=method)
                times[method].append(time.perf_counter() - t)
        b, e = found["simulate"], found["estimate"]
        pick = {k: (v.best.prefill_replicas, v.best.decode_replicas) if v.best else None for k, v in found.items()}
        print(f"case {name}: every size simulated {statistics.median(times['simulate']):.2f} s ({b.simulated} "
              f"sizes), estimate first {statistics.median(times['estimate']):.2f} s ({e.simulated} simulated); "
              f"P:D {pick['simulate']} / {pick['estimate']}; runs {[f'{x:.2f}' for x in times['simulate']]} / "
              f"{[f'{x:.2f}' for x in times['estimate']]}")


if __name__ == "__main__":
    main()
