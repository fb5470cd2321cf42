"""`analyze --json` of very large models stays linear (issue 22's targets).

For N = 10,000 and 100,000 layers (a dense + relu pattern, one operator per layer) and one device, it times the
whole command (interpreter start-up included) and compares it with what the standard library alone takes to read
the same model file (``json.load``) and write the same output bytes (``json.dumps(indent=2)``, the encoder the
command uses); the ratio must stay under 2. At 10^6 layers (``--million``, several minutes) it checks that the
command finishes and its peak memory (maximum resident set) stays under 2 GiB.

    .venv/bin/python bench/bench_large_json.py [--million]
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import report

ROOT = Path(__file__).resolve().parents[1]
DEVICE = "nvidia-h100-sxm5"


def write_model(path: Path, n: int) -> None:
    layers = [{"kind": "dense", "name": f"l{i}", "in_features": 256, "out_features": 256} if i % 2 == 0
              else {"kind": "relu", "name": f"r{i}"} for i in range(n)]
    path.write_text(json.dumps({"format": 1, "name": f"big-{n}", "input": {"features": 256}, "layers": layers}))


def run_cli(model: Path, out: Path) -> tuple[float, float]:
    """Wall seconds and the child's peak RSS in MiB of ``analyze MODEL -d DEVICE --json > out``."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    t = time.perf_counter()
    with out.open("w") as f:
        subprocess.run([sys.executable, "-m", "explorer", "analyze", str(model), "-d", DEVICE, "--json"], stdout=f,
                       check=True, env=env, cwd=ROOT)
    wall = time.perf_counter() - t
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss  # the largest child so far, KiB
    return wall, max(peak, before) / 1024


def stdlib_baseline(model: Path, out: Path) -> float:
    """Seconds for the standard library to read ``model`` and write ``out``'s document again (its parse of the
    output, needed to have the data, is not counted)."""
    data = json.loads(out.read_text())
    t = time.perf_counter()
    json.loads(model.read_text())
    text = json.dumps(data, indent=2) + "\n"
    with tempfile.TemporaryFile("w") as f:
        f.write(text)
    return time.perf_counter() - t


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for n in (10_000, 100_000):
            model, out = folder / f"m{n}.json", folder / f"o{n}.json"
            write_model(model, n)
            wall, peak = run_cli(model, out)
            base = stdlib_baseline(model, out)
            print(f"{n:,} layers: analyze --json {wall:.2f} s ({out.stat().st_size / 1e6:.0f} MB written, peak "
                  f"{peak:.0f} MiB); the standard library alone {base:.2f} s; ratio {wall / base:.2f}")
            report(f"analyze --json, {n:,} layers / stdlib read+write (ratio)", [wall / base], 2.0, unit="x")
        if "--million" in sys.argv:
            model, out = folder / "m1000000.json", folder / "o1000000.json"
            write_model(model, 1_000_000)
            wall, peak = run_cli(model, out)
            print(f"1,000,000 layers: {wall:.1f} s, peak {peak:.0f} MiB, {out.stat().st_size / 1e9:.2f} GB written")
            report("analyze --json, 1,000,000 layers: peak memory", [peak], 2048.0, unit="MiB")


if __name__ == "__main__":
    main()
