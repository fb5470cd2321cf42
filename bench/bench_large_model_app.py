"""Large models in the app (issue 22): one edit that really changes a layer, in the main window, at 2,000 and 10,000
layers on 20 devices.

The main window at 1600 x 1000 on an in-memory catalog, the roofline tab on screen and the other analysis tabs
behind it (as bench_panels.py's second part). The model is N top-level layers: N/4 x (dense up, GELU, dense down,
layernorm) on 512 tokens of width 768. Each edit renames one dense layer to a name never used before and toggles
its bias, so every edit is a model the app has not seen (no cache can answer it) and the numbers change. An edit
is timed from ``workspace.execute`` until the event loop is idle (every redraw, layout and paint it causes). The
serving estimates (the planner's serving box) run on their worker thread and are not waited for: at these sizes
a run takes seconds (~155 grid points, each a work table of the whole model), so they run beside the edits, as they
do in the app (one run at a time per estimator; ``--no-serving`` never starts them, to time the UI thread's own
work). The garbage collector's passes inside the timed span are counted and timed (``gc.callbacks``: every
thread's, since a collection stops them all).

    .venv/bin/python bench/bench_large_model_app.py [--layers 2000 10000] [--devices 20] [--runs 30]
    .venv/bin/python bench/bench_large_model_app.py --profile 2000 [--sort tottime] [--top 45]  # cProfile of the edits
    .venv/bin/python bench/bench_large_model_app.py --no-serving     # the serving worker never starts
    .venv/bin/python bench/bench_large_model_app.py --parts          # each edit's time split into its main parts

Targets (issue 22): 2,000 layers x 20 devices under 16 ms median; 10,000 layers under 50 ms median and 80 ms p95,
with no garbage-collection pause in the edit path.
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import report

BUDGETS = {2000: (0.016, None), 10000: (0.050, 0.080)}  # s: median, p95


def big_model(n: int):
    from explorer.core.workload.model import LayerSpec, Model

    layers = []
    for i in range(n // 4):
        layers += [
            LayerSpec.make("dense", f"up{i}", in_features=768, out_features=3072),
            LayerSpec.make("gelu", f"act{i}"),
            LayerSpec.make("dense", f"down{i}", in_features=3072, out_features=768),
            LayerSpec.make("layernorm", f"ln{i}"),
        ]
    return Model.make(f"bench-{n}", {"tokens": 512, "hidden": 768}, layers)


#: --parts: what an edit's time goes to, each timed around its call (owner module or class, attribute, label);
#: nested parts are included in the outer ones (the builder's reaction includes the table it reads)
PARTS = (
    ("explorer.core.session.workspace:Workspace", "execute", "workspace.execute (the signals' handlers included)"),
    ("explorer.core.workload.model:Model", "__hash__", "  Model hash"),
    ("explorer.core.session.workspace", "build_table", "  build_table (patched from the last table)"),
    ("explorer.ui.builder.layer_model:LayerStackModel", "_on_changed", "  layer list: its reaction (table included)"),
    ("explorer.ui.status_bar:ModelTotalsLabel", "refresh", "  status bar totals"),
    ("explorer.core.session.results", "evaluate", "  evaluate (the analysis pass)"),
    ("explorer.ui.builder.layer_view:LayerStackView", "paintEvent", "layer list: paint"),
    ("explorer.ui.panels.roofline:RooflinePanel", "redraw", "roofline panel: redraw (its result included)"),
    ("explorer.core.session.results", "compute_roofline", "  compute_roofline (the panel's result)"),
)


def time_parts(totals: dict) -> None:
    """Wrap each of PARTS in a timer adding to ``totals[label]`` (before the window is built: Qt's virtual methods
    are looked up when a class is first wrapped)."""
    import functools
    import importlib

    for owner, attr, label in PARTS:
        module, _, cls = owner.partition(":")
        target = importlib.import_module(module)
        target = getattr(target, cls) if cls else target
        fn = getattr(target, attr)

        def timed(*a, _fn=fn, _label=label, **k):
            t = time.perf_counter()
            try:
                return _fn(*a, **k)
            finally:
                totals[_label] = totals.get(_label, 0.0) + time.perf_counter() - t

        setattr(target, attr, functools.wraps(fn)(timed))


class GcWatch:
    """Counts the collector's passes and their time while ``active``."""

    def __init__(self):
        self.active = False
        self.passes: list[tuple[int, float]] = []
        self._t = 0.0
        gc.callbacks.append(self)

    def __call__(self, phase, info):
        if not self.active:
            return
        if phase == "start":
            self._t = time.perf_counter()
        else:
            self.passes.append((info["generation"], time.perf_counter() - self._t))


def run(app, n_layers: int, n_devices: int, runs: int, watch: GcWatch, profile=None, freeze=True,
        serving=True, serving_panel=False, wait_serving=False, parts: dict | None = None, idle_gc=True,
        pause: float = 0.0) -> None:
    from explorer.core.session.commands import ReplaceLayer
    from explorer.core.session.workspace import Assumptions
    from explorer.ui.app import build_window
    from explorer.ui.panels import serving_worker
    from explorer.ui.panels.base import AnalysisPanel

    if not serving:  # the serving estimates never start: the UI thread's own work, without waits for the GIL
        serving_worker.Estimator._start = lambda self, job: serving_worker._RUNNING.discard(job)
    window = build_window("sqlite://")  # an in-memory catalog, seeded from the shipped files
    window.resize(1600, 1000)
    window.show()
    ws = window.workspace
    ids = [d.id for d in window.repository.devices()][:n_devices]
    ws.reset(big_model(n_layers), ids, Assumptions(precision="fp16"))
    ws.focus_layer(2)
    dock = window.panel_docks[0]
    if serving_panel:  # the Serving panel on screen instead of the roofline: its worker runs after every edit
        dock = next(d for d in window.panel_docks if d.objectName() == "panel_ServingPanel")
    dock.raise_()
    panels = [dock.widget()]
    for _ in range(10):
        app.processEvents()
    if freeze:  # as run_app does after the first paint
        from explorer.ui.app import freeze_startup_objects

        freeze_startup_objects()
    else:
        gc.unfreeze()
    if idle_gc:  # as run_app does after the first paint (explorer/ui/idle_gc.py)
        from explorer.ui.idle_gc import collect_when_idle

        collect_when_idle(window)

    def busy() -> bool:
        return bool(serving_worker._RUNNING) or any(
            getattr(p, "estimator", None) is not None and p.estimator.busy for p in panels)

    events = [0]

    from PySide6.QtCore import QObject

    class EventCounter(QObject):
        def eventFilter(self, obj, event):
            events[0] += 1
            return False

    counter = EventCounter()
    app.installEventFilter(counter)

    def settle(background=False):
        for _ in range(100_000):
            before = events[0]
            app.processEvents()
            if events[0] == before and not any(AnalysisPanel.pending.fget(p) for p in panels):
                if not (background and busy()):
                    return
                time.sleep(0.002)
        raise RuntimeError("the event loop never went idle")

    for _ in range(10):
        app.processEvents()
    settle(background=wait_serving)
    assert len(ws.model.layers) == n_layers and len(ws.analysis.devices) == n_devices, (
        len(ws.model.layers), len(ws.analysis.devices))
    times, cpu, gc_passes, shares = [], [], [], []
    for i in range(runs + 3):
        spec = ws.model.layers[2]
        command = ReplaceLayer(2, spec.with_params(name=f"down-edit-{i}", bias=not spec.params.get("bias", True)))
        settle(background=wait_serving)
        until = time.perf_counter() + pause  # a user's pause between edits: the idle collector may run in it
        while time.perf_counter() < until:
            app.processEvents()
            time.sleep(0.002)
        watch.passes.clear()
        if parts is not None:
            parts.clear()
        watch.active = True
        if profile is not None and i >= 3:
            profile.enable()
        t0, c0 = time.perf_counter(), time.thread_time()
        ws.execute(command)
        settle(background=wait_serving)
        elapsed, used = time.perf_counter() - t0, time.thread_time() - c0
        if profile is not None:
            profile.disable()
        watch.active = False
        if i >= 3:
            times.append(elapsed)
            cpu.append(used)
            gc_passes.append(list(watch.passes))
            if parts is not None:
                shares.append(dict(parts))
    ms = [t * 1e3 for t in times]
    cpu_ms = [t * 1e3 for t in cpu]
    passes = [p for run_ in gc_passes for p in run_]
    print(f"{'gc.freeze' if freeze else 'no freeze'}{'' if idle_gc else ', no idle collector'}"
          f"{'' if serving else ', no serving worker'}"
          f"{', Serving panel on screen' if serving_panel else ''}"
          f"{', timed until its serving estimate is shown' if wait_serving else ''}: {n_layers} layers ({len(ws.analysis.table)} operator rows) x {n_devices} devices, {runs} edits: "
          f"wall median {statistics.median(ms):.1f} ms p95 {percentile(ms, 0.95):.1f} ms max {max(ms):.1f} ms | "
          f"UI-thread CPU median {statistics.median(cpu_ms):.1f} ms p95 {percentile(cpu_ms, 0.95):.1f} ms | "
          f"GC passes in edits: {len(passes)} (gen2: {sum(1 for g, _ in passes if g == 2)}), "
          f"longest {max((t for _, t in passes), default=0) * 1e3:.1f} ms"
          + (f" | idle collections between edits: {len(window.idle_collector.passes)}" if idle_gc else "")
          + (f" | {pause * 1e3:.0f} ms pause between edits" if pause else ""), flush=True)
    if shares:
        print("  per edit, median (min) of each part, ms:", flush=True)
        for _owner, _attr, label in PARTS:
            v = sorted(share.get(label, 0.0) * 1e3 for share in shares)
            print(f"    {label:55s} {statistics.median(v):7.2f} ({v[0]:.2f})", flush=True)
    median_budget, p95_budget = BUDGETS.get(n_layers, (0.016, None))
    print(f"  target: median under {median_budget * 1e3:.0f} ms"
          + (f", p95 under {p95_budget * 1e3:.0f} ms" if p95_budget else ""), flush=True)
    report(f"large model in the app: {n_layers} layers x {n_devices} devices, layer edit", times, median_budget)
    app.removeEventFilter(counter)
    ws.mark_clean()
    window.close()
    window.deleteLater()
    settle()


def percentile(values, q):
    ordered = sorted(values)
    k = (len(ordered) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", type=int, nargs="+", default=[2000, 10000])
    parser.add_argument("--devices", type=int, default=20)
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--compare-freeze", action="store_true",
                        help="each size twice, without and with gc.freeze() after start-up, alternating")
    parser.add_argument("--freeze-first", action="store_true", help="with --compare-freeze: with freeze first")
    parser.add_argument("--switch-interval", type=float, nargs="+", metavar="S",
                        help="sys.setswitchinterval values to run in turn (Python's default 0.005 s): how long the "
                             "serving worker may hold the GIL before the UI thread gets it back")
    parser.add_argument("--no-serving", action="store_true",
                        help="never start the serving estimates' worker (the UI thread's own work per edit)")
    parser.add_argument("--serving-panel", action="store_true",
                        help="the Serving panel on screen instead of the roofline (its step-time surfaces are built "
                             "on the worker after every edit; hidden tabs are built on first show, so without this "
                             "no serving estimate runs)")
    parser.add_argument("--wait-serving", action="store_true",
                        help="with --serving-panel: time each edit until the serving estimates are done and shown "
                             "(the edit-to-answer latency), each edit after the last one's")
    parser.add_argument("--profile", type=int, metavar="LAYERS", help="profile the edits at this size instead")
    parser.add_argument("--no-idle-gc", action="store_true",
                        help="without the app's idle collector (Python's own young-generation schedule in the edits)")
    parser.add_argument("--pause", type=float, default=0.0, metavar="S",
                        help="seconds of an idle event loop between edits, as a user's (the idle collector's time)")
    parser.add_argument("--parts", action="store_true",
                        help="time the main parts of each edit (PARTS; a few microseconds of timers each)")
    parser.add_argument("--sort", default="cumulative", help="with --profile: pstats order (tottime: own time)")
    parser.add_argument("--top", type=int, default=45, help="with --profile: how many functions to print")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="hwexplorer-bench-") as home:
        for var in ("XDG_DATA_HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME"):
            os.environ[var] = os.path.join(home, var)
        from PySide6.QtWidgets import QApplication

        from explorer.ui.app import configure_qt_environment

        configure_qt_environment()
        app = QApplication.instance() or QApplication([])
        watch = GcWatch()
        parts = {} if args.parts else None
        if parts is not None:
            time_parts(parts)
        if args.profile:
            import cProfile
            import pstats

            prof = cProfile.Profile()
            run(app, args.profile, args.devices, args.runs, watch, prof, serving=not args.no_serving,
                serving_panel=args.serving_panel, wait_serving=args.wait_serving, idle_gc=not args.no_idle_gc)
            pstats.Stats(prof).sort_stats(args.sort).print_stats(args.top)
            return 0
        for n in args.layers:
            for interval in args.switch_interval or [sys.getswitchinterval()]:
                sys.setswitchinterval(interval)
                print(f"switch interval {interval * 1e3:g} ms", flush=True)
                for freeze in (((True, False) if args.freeze_first else (False, True)) if args.compare_freeze else (True,)):
                    run(app, n, args.devices, args.runs, watch, freeze=freeze, serving=not args.no_serving,
                        serving_panel=args.serving_panel, wait_serving=args.wait_serving, parts=parts,
                        idle_gc=not args.no_idle_gc, pause=args.pause)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
