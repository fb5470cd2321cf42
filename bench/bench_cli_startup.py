"""Start-up cost of the command line: ``python -m explorer --help`` and ``python -m explorer COMMAND --help`` for
each command, each in a fresh interpreter.

Per case: the wall-clock time of the whole process (median of ``--runs``, default 5), and the time Python spent
importing modules in one extra run under ``python -X importtime`` (the sum of every module's own time; the
explorer modules' share beside it). ``--tree PATH`` measures another checkout (e.g. the main branch before the
lazy command loading) with the same interpreter, for a before/after comparison:

    .venv/bin/python bench/bench_cli_startup.py
    .venv/bin/python bench/bench_cli_startup.py --tree /path/to/other/checkout

Budget: 0.3 s median for ``--help`` (it imports no command); the commands' own lines have no budget (they
import what they run). Numbers depend on the machine and its load; no test asserts them.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import report

ROOT = Path(__file__).resolve().parents[1]
HELP_BUDGET = 0.3  # s, median wall time of `python -m explorer --help`
COMMANDS = ("analyze", "tiling", "catalog", "plan", "report", "train", "calibrate", "serve", "sweep")


def run(tree: Path, args: list[str], importtime: bool = False) -> tuple[float, str]:
    env = dict(os.environ, PYTHONPATH=str(tree), QT_QPA_PLATFORM="offscreen")
    cmd = [sys.executable, *(["-X", "importtime"] if importtime else []), "-m", "explorer", *args]
    t = time.perf_counter()
    out = subprocess.run(cmd, check=False, capture_output=True, text=True, env=env, cwd=tree, timeout=300)
    elapsed = time.perf_counter() - t
    if out.returncode != 0:
        raise SystemExit(f"{' '.join(args)}: exit {out.returncode}\n{out.stderr[-2000:]}")
    return elapsed, out.stderr


def import_seconds(log: str) -> tuple[float, float]:
    """(all modules' own import time, the explorer package's) in seconds from ``-X importtime`` output."""
    total = ours = 0.0
    for line in log.splitlines():
        if not line.startswith("import time:") or "self [us]" in line:
            continue
        parts = line[len("import time:"):].split("|")
        own, name = int(parts[0]), parts[2].strip()
        total += own
        if name == "explorer" or name.startswith("explorer."):
            ours += own
    return total / 1e6, ours / 1e6


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--tree", type=Path, default=ROOT, help="the checkout to measure (default: this one)")
    parser.add_argument("--commands", action="store_true", help="also each command's --help (slower)")
    args = parser.parse_args(argv)
    cases = [[]] + ([[c] for c in COMMANDS] if args.commands else [["serve"], ["report"]])
    print(f"{args.tree}: wall time of the process (median of {args.runs}) and import time (one -X importtime run)")
    for case in cases:
        argv_ = [*case, "--help"]
        run(args.tree, argv_)  # warm the file cache
        walls = [run(args.tree, argv_)[0] for _ in range(args.runs)]
        total, ours = import_seconds(run(args.tree, argv_, importtime=True)[1])
        label = "python -m explorer " + " ".join(argv_)
        print(f"  {label:42s} wall median {statistics.median(walls) * 1e3:7.1f} ms  min {min(walls) * 1e3:7.1f} ms"
              f" | imports {total * 1e3:7.1f} ms (explorer's own {ours * 1e3:6.1f} ms)")
        if not case:
            report("CLI start-up: python -m explorer --help", walls, HELP_BUDGET)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
