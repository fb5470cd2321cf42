"""Run every benchmark of the project and print one table: name, median, p95, budget, pass/fail.

    .venv/bin/python bench/run_all.py            (all)
    .venv/bin/python bench/run_all.py startup    (only benchmarks whose script name contains 'startup')

Each bench/bench_*.py runs in its own process (cold caches, no interference) and prints ``BENCH {json}`` lines
(bench/_common.py). Run by hand on a quiet machine; numbers are never asserted in the test suite.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def fmt(value: float, unit: str) -> str:
    if unit == "s":
        return f"{value * 1e3:.1f} ms" if value < 1 else f"{value:.2f} s"
    if unit in ("x", "ratio"):
        return f"{value:.2f}x"
    return f"{value:.0f} {unit}"


def main(argv: list[str]) -> int:
    scripts = sorted(HERE.glob("bench_*.py"))
    if argv:
        scripts = [s for s in scripts if any(a in s.stem for a in argv)]
    env = dict(os.environ, QT_QPA_PLATFORM=os.environ.get("QT_QPA_PLATFORM", "offscreen"), PYTHONPATH=str(HERE.parent))
    results, failures, unbudgeted = [], [], []
    for script in scripts:
        print(f"running {script.name} ...", file=sys.stderr, flush=True)
        proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, cwd=HERE.parent,
                              check=False)
        found = [json.loads(line[6:]) for line in proc.stdout.splitlines() if line.startswith("BENCH ")]
        if proc.returncode != 0:
            failures.append(f"{script.name}: exit {proc.returncode}\n{proc.stderr[-2000:]}")
        elif not found:  # a before/after or peer comparison: its ratios are read from its own output
            unbudgeted.append(script.name)
        results.extend(found)
    width = max([len(r["name"]) for r in results] + [9])
    print(f"{'benchmark':<{width}}  {'median':>10}  {'p95':>10}  {'budget':>10}  result")
    for r in results:
        print(f"{r['name']:<{width}}  {fmt(r['median'], r['unit']):>10}  {fmt(r['p95'], r['unit']):>10}  "
              f"{fmt(r['budget'], r['unit']):>10}  {'pass' if r['pass'] else 'FAIL'}")
    if unbudgeted:
        print(f"\nran without a budget line (comparisons: run each alone and read its output): {', '.join(unbudgeted)}")
    for f in failures:
        print(f"\nERROR {f}", file=sys.stderr)
    return 1 if failures or not all(r["pass"] for r in results) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
