"""The Serving panel's analytic answers per model edit, alone (issue 22): what its worker computes after the step
surfaces (bench_serving_surface_edit.py) -- per device, the estimate at the workload's rate and the load curve with
its capacity search -- on the app's default serving choice, bench_large_model_app.py's model and the first N shipped
devices whose memory is known. An edit gives every device a new setup (new surfaces), so no answer or capacity is
kept from the last one: each repeat empties those caches, then times the answers of all devices (the app's call:
``cached_answers``, or one ``cached_answer`` per device in a checkout without it). The answers' digest (a hash of
every float's repr) is printed, so two checkouts' answers can be compared to the bit.

    .venv/bin/python bench/bench_serving_answers.py [--devices 20] [--repeats 5] [--layers 2000]
    .venv/bin/python bench/bench_serving_answers.py --compare /work/main --rounds 2   # before/after, alternated

``--compare PATH``: run in subprocesses, alternately with PYTHONPATH=PATH (another checkout: the code before) and
this checkout, ``--rounds`` times. ``--fleet``: time the planner's fleet sizing (``size_fleet``: each device's
service-level rate) instead of the answers.
"""

from __future__ import annotations

import argparse
import hashlib
import math
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def measure(n_layers: int, n_devices: int, repeats: int, fleet: bool) -> None:
    import explorer
    from explorer.core.hardware.catalog_files import load_shipped_devices
    from explorer.core.serving import analytic, serve
    from explorer.core.serving import fleet as fleet_mod
    from explorer.core.serving.serve import cached_answer, device_setups
    from explorer.core.session.results import DEFAULT_SERVING as D

    sys.path.insert(0, str(ROOT / "bench"))
    from bench_large_model_app import big_model

    many = getattr(serve, "cached_answers", None)
    devices = [d for d in load_shipped_devices() if d.memory_capacity and math.isfinite(d.memory_capacity)]
    devices = devices[:n_devices]
    setups = device_setups(big_model(n_layers), devices, D.workload, D.policy, block_size=D.block_size)

    def run():
        serve.ANSWERS.clear()
        fleet_mod.SLO_RATES.clear()
        if hasattr(analytic, "CAPACITIES"):
            analytic.CAPACITIES.clear()
        if fleet:
            return fleet_mod.size_fleet(D.workload, setups, devices, D.slo)
        if many is not None:
            return many(D.workload, setups, D.slo)
        return tuple(cached_answer(D.workload, s, D.slo) for s in setups)

    times, got = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        got = run()
        times.append(time.perf_counter() - t0)
    if fleet:
        text = repr([(r.device_id, r.slo_rate, r.replicas, r.busy_share) for r in got])
    else:
        text = repr([(a.estimate, a.curve.capacity, a.curve.knee, a.curve.rates.tolist(), a.curve.ttft.tolist(),
                      a.curve.tpot.tolist(), a.curve.throughput_per_device.tolist()) for a in got])
    ms = sorted(t * 1e3 for t in times)
    what = "fleet sizing" if fleet else "answers"
    print(f"[{Path(explorer.__file__).parents[1]}] {n_layers} layers, {len(devices)} devices, {what}: median "
          f"{statistics.median(ms):,.1f} ms, min {ms[0]:,.1f} ms, max {ms[-1]:,.1f} ms ({repeats}); "
          f"digest {hashlib.sha256(text.encode()).hexdigest()[:16]}", flush=True)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", type=int, default=2000)
    parser.add_argument("--devices", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--fleet", action="store_true")
    parser.add_argument("--compare", metavar="PATH", help="another checkout to run alternately (the code before)")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--before-repeats", type=int, help="repeats in the --compare checkout (default --repeats)")
    args = parser.parse_args(argv)
    if not args.compare:
        measure(args.layers, args.devices, args.repeats, args.fleet)
        return 0
    for r in range(args.rounds):
        for label, path, repeats in (("before", args.compare, args.before_repeats or args.repeats),
                                     ("after", str(ROOT), args.repeats)):
            print(f"round {r + 1}, {label}: ", end="", flush=True)
            cmd = [sys.executable, __file__, "--layers", str(args.layers), "--devices", str(args.devices),
                   "--repeats", str(repeats)] + (["--fleet"] if args.fleet else [])
            subprocess.run(cmd, env=dict(os.environ, PYTHONPATH=path), check=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
