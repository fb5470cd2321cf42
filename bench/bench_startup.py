"""Cold start of the desktop app: from spawning a fresh Python process to the main window's first painted frame.

Each run starts a new interpreter that runs ``hwexplorer`` with no arguments (``explorer.__main__.main([])``,
exactly what the console script does) and reports the wall-clock time at which the first paint pass of the
main window has finished; the window then closes. Settings and the catalog database live in a temporary
folder: the first run is the very first start (it creates the database and seeds the shipped catalog) and
is reported on its own; the next ``--runs`` are normal starts, summarized by median and p95.

    .venv/bin/python bench/bench_startup.py              # offscreen, 10 runs
    .venv/bin/python bench/bench_startup.py --platform xcb --runs 20   # a real X server (DISPLAY)
    .venv/bin/python bench/bench_startup.py --baseline --tree ../main  # + a bare window and another checkout

``--baseline`` also starts, in turn with each run of the app, a bare PySide6 main window that imports numpy and
pyqtgraph and shows one pyqtgraph plot (issue 22's reference: the app's cold start at most 2x it), timed the same
way, and prints the ratio of the medians. ``--tree PATH`` starts another checkout's app in the same rounds (a
before/after in one sitting; ``--tree`` may be given more than once). Each start of an app also reports when the
catalog dock's device table has its rows: the app paints its window before it opens the catalog (issue 22).

Run by hand; the numbers depend on the machine (no test asserts them).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import report

BUDGET = 1.5  # seconds, cold start to a painted window (issue 4)

CHILD = r"""
import sys, time

# explorer.ui.app first, as `hwexplorer` imports it (explorer.__main__ -> explorer.ui.app): the probe's own PySide6
# imports below would otherwise come before the Qt-free core that explorer.ui imports ahead of PySide6
from explorer.ui.app import configure_qt_environment
from PySide6.QtCore import QEvent, QObject, QTimer
from PySide6.QtWidgets import QApplication, QMainWindow

configure_qt_environment()  # as make_application() does before its QApplication
app = QApplication(sys.argv[:1])  # make_application() reuses it; the filter sees the window's first paint


class FirstFrame(QObject):
    done = False

    def eventFilter(self, obj, event):
        if not self.done and event.type() == QEvent.Type.Paint and hasattr(obj, "window"):
            window = obj.window()
            if isinstance(window, QMainWindow):
                self.done = True
                QTimer.singleShot(0, lambda: self.report(window))  # after the whole paint pass
        return False

    def report(self, window):
        print(f"PAINTED {time.time():.6f} {time.process_time():.6f}", flush=True)
        self.window, self.polls = window, 0
        self.poll()

    def poll(self):  # the catalog dock's device table filled (opened after the first paint since issue 22)
        dock = getattr(self.window, "catalog_dock", None)
        if dock is None or dock.model.rowCount() > 0 or self.polls > 3000:
            print(f"FILLED {time.time():.6f}", flush=True)
            self.window.close()
            return
        self.polls += 1
        QTimer.singleShot(5, self.poll)


watcher = FirstFrame()
app.installEventFilter(watcher)
from explorer.__main__ import main

sys.exit(main([]))
"""


BARE = r"""
import sys, time
import numpy
import pyqtgraph
from PySide6.QtCore import QEvent, QObject, QTimer
from PySide6.QtWidgets import QApplication, QMainWindow

app = QApplication(sys.argv[:1])


class FirstFrame(QObject):
    done = False

    def eventFilter(self, obj, event):
        if not self.done and event.type() == QEvent.Type.Paint and hasattr(obj, "window"):
            window = obj.window()
            if isinstance(window, QMainWindow):
                self.done = True
                QTimer.singleShot(0, lambda: self.report(window))
        return False

    def report(self, window):
        print(f"PAINTED {time.time():.6f} {time.process_time():.6f}", flush=True)
        window.close()


watcher = FirstFrame()
app.installEventFilter(watcher)
window = QMainWindow()
window.setWindowTitle("bare")
window.setCentralWidget(pyqtgraph.PlotWidget())
window.resize(1280, 800)
window.show()
sys.exit(app.exec())
"""


def one_start(env: dict, code: str = CHILD, tree: str | None = None, filled: list | None = None,
              cpu: list | None = None) -> float:
    """Seconds from spawning the interpreter to the first painted frame of the main window (of ``tree``'s app
    when given: it is put first on the module path). ``filled``: the seconds until the catalog dock's device table
    has its rows are appended to it (the app opens the catalog after the first paint); ``cpu``: the CPU time the
    process had used by the first painted frame (user + system, every thread), which a loaded machine inflates far
    less than the wall time."""
    if tree is not None:
        env = dict(env, PYTHONPATH=os.path.abspath(tree))
    start = time.time()
    done = subprocess.run([sys.executable, "-c", code], check=False, env=env, capture_output=True, text=True,
                          timeout=300, cwd=tree)
    painted = [line for line in done.stdout.splitlines() if line.startswith("PAINTED ")]
    if done.returncode != 0 or not painted:
        raise RuntimeError(f"the app did not paint (exit {done.returncode}):\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    if filled is not None:
        done_at = [line for line in done.stdout.splitlines() if line.startswith("FILLED ")]
        filled.append(float(done_at[0].split()[1]) - start if done_at else float("nan"))
    if cpu is not None:
        cpu.append(float(painted[0].split()[2]))
    return float(painted[0].split()[1]) - start


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    k = (len(ordered) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--platform", default="offscreen", help="QT_QPA_PLATFORM for the app (offscreen, xcb...)")
    parser.add_argument("--baseline", action="store_true",
                        help="also time a bare PySide6 window importing numpy and pyqtgraph, in the same rounds")
    parser.add_argument("--tree", action="append", default=[], help="another checkout to time in the same rounds")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="hwexplorer-bench-") as home:
        env = dict(os.environ, QT_QPA_PLATFORM=args.platform, XDG_DATA_HOME=os.path.join(home, "data"),
                   XDG_CONFIG_HOME=os.path.join(home, "config"), XDG_CACHE_HOME=os.path.join(home, "cache"))
        env.pop("HWEXPLORER_DB", None)
        # Python's default: compiled bytecode is cached after the first start (the packaged app ships it).
        # Some shells and CI images turn that off, which recompiles the app's ~100 modules on every start.
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        first = one_start(env)
        for tree in args.tree:  # its first start too (its own bytecode cache), not counted
            one_start(env, tree=tree)
        if args.baseline:
            one_start(env, BARE)
        times, bare, others = [], [], {tree: [] for tree in args.tree}
        filled, others_filled = [], {tree: [] for tree in args.tree}
        cpu, others_cpu, bare_cpu = [], {tree: [] for tree in args.tree}, []
        for _ in range(args.runs):  # alternating: every variant sees the same load
            times.append(one_start(env, filled=filled, cpu=cpu))
            for tree in args.tree:
                others[tree].append(one_start(env, tree=tree, filled=others_filled[tree], cpu=others_cpu[tree]))
            if args.baseline:
                bare.append(one_start(env, BARE, cpu=bare_cpu))
    print(f"platform {args.platform}, Python {sys.version.split()[0]}, {os.cpu_count()} CPUs")
    print(f"first start (creates and seeds the catalog database): {first:.3f} s")
    print(f"cold start to a painted window, {args.runs} runs: median {statistics.median(times):.3f} s, "
          f"p95 {percentile(times, 0.95):.3f} s, min {min(times):.3f} s, max {max(times):.3f} s")
    print("runs: " + " ".join(f"{t:.3f}" for t in times))
    print(f"  catalog table filled: median {statistics.median(filled):.3f} s; CPU time to the painted frame: "
          f"median {statistics.median(cpu):.3f} s")
    for tree, values in others.items():
        print(f"{tree}: median {statistics.median(values):.3f} s, p95 {percentile(values, 0.95):.3f} s; "
              f"this tree / it = {statistics.median(times) / statistics.median(values):.2f}")
        print("  runs: " + " ".join(f"{t:.3f}" for t in values))
        print(f"  catalog table filled: median {statistics.median(others_filled[tree]):.3f} s; CPU time to the "
              f"painted frame: median {statistics.median(others_cpu[tree]):.3f} s")
    if args.baseline:
        print(f"bare PySide6 window (numpy + pyqtgraph): median {statistics.median(bare):.3f} s, "
              f"p95 {percentile(bare, 0.95):.3f} s; the app / bare = {statistics.median(times) / statistics.median(bare):.2f}"
              + "".join(f", {tree} / bare = {statistics.median(v) / statistics.median(bare):.2f}"
                        for tree, v in others.items()))
        print("  runs: " + " ".join(f"{t:.3f}" for t in bare))
        print(f"  CPU time to the painted frame: median {statistics.median(bare_cpu):.3f} s; the app / bare = "
              f"{statistics.median(cpu) / statistics.median(bare_cpu):.2f}"
              + "".join(f", {tree} / bare = {statistics.median(v) / statistics.median(bare_cpu):.2f}"
                        for tree, v in others_cpu.items()))
    report(f"startup: cold start to a painted window ({args.platform})", times, BUDGET)
    return 0


if __name__ == "__main__":
    sys.exit(main())
