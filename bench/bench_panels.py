"""Live-update benchmark of the analysis panels (issue 5: then four; the Systems panel is the fifth).

A 200-layer model on 8 devices, every panel shown offscreen. Each run times one edit from
``workspace.execute(command)`` until the event loop is idle again: the shared analysis pass, each panel's
coalesced redraw, the layout passes and every paint that the edit causes (Qt's own repaints, as a user gets
them: events are processed until a pass delivers no event at all). The benchmark checks that each edit repainted
the plot canvases it changes (MUST_REPAINT; a small layer edit at least one).

    .venv/bin/python bench/bench_panels.py [--runs 50]

Then the same edits in the whole main window (builder, catalog, properties and status bar, the roofline tab on
screen and the other analysis tabs behind it, as a user has them), on an in-memory catalog.

The Serving panel (and the planner's serving box) compute their estimates on a worker thread when an edit needs
new step-time surfaces (explorer/ui/panels/serving_worker.py): the timed span ends when every panel on screen has
repainted (the Serving panel with its numbers when they were kept, else saying it is estimating); the time until
the worker's numbers are drawn is printed beside it ("serving estimates in"). The fourth kind of edit, "new
model", renames a layer to a name never used before, so nothing is kept and the surfaces are built each time.

Prints the median and 95th percentile per kind of edit (a layer parameter, a device checked, a precision), in
wall-clock time and in this process's CPU time (the second is less disturbed by other work on a shared
machine), plus one ``BENCH`` line per kind for ``bench/run_all.py`` (budget: a 16 ms median, wall clock).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from PySide6.QtCore import QEvent, QObject
from PySide6.QtWidgets import QApplication

from explorer.core.hardware.catalog_files import load_shipped_devices
from explorer.core.session.commands import ReplaceLayer, SelectDevices, SetAssumptions
from explorer.core.session.workspace import Assumptions, Workspace
from explorer.core.workload.model import LayerSpec, Model
from explorer.ui.app import configure_qt_environment
from explorer.ui.panels import PANELS, serving_worker
from explorer.ui.panels.base import AnalysisPanel

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import report

BUDGET = 0.016  # s, median from the command to the end of the repaint

DEVICE_IDS = (
    "nvidia-a100-sxm4-80gb",
    "nvidia-h100-sxm5",
    "nvidia-v100-sxm2",
    "nvidia-l4",
    "nvidia-t4",
    "amd-mi300x",
    "aws-trainium",
    "google-tpu-v5e",
)


def model_200() -> Model:
    """200 top-level layers: 50 x (dense up, GELU, dense down, layernorm) on 512 tokens of width 768."""
    layers = []
    for i in range(50):
        layers += [
            LayerSpec.make("dense", f"up{i}", in_features=768, out_features=3072),
            LayerSpec.make("gelu", f"act{i}"),
            LayerSpec.make("dense", f"down{i}", in_features=3072, out_features=768),
            LayerSpec.make("layernorm", f"ln{i}"),
        ]
    return Model.make("bench-200", {"tokens": 512, "hidden": 768}, layers)


class EventCounter(QObject):
    """Counts every event the application delivers, and which panels' plot canvases were painted."""

    def __init__(self, panels):
        super().__init__()
        self.events = 0
        for p in panels:
            p.graphics.viewport().setObjectName(f"bench-canvas-{type(p).__name__}")
        self.canvas_paints: set[str] = set()

    def eventFilter(self, obj, event):
        self.events += 1
        if event.type() == QEvent.Type.Paint and obj.objectName().startswith("bench-canvas-"):
            self.canvas_paints.add(obj.objectName())
        return False


def percentile(values, q):
    ordered = sorted(values)
    k = (len(ordered) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo)


# the plot canvases an edit must repaint (a device checked changes nothing the tiling panel shows: it studies the
# device in focus); a layer parameter edit repaints at least one
MUST_REPAINT = {
    "device checked": {"RooflinePanel", "EnergyPanel", "CostPanel"},
    "precision": {"RooflinePanel", "EnergyPanel", "CostPanel"},
}


def measure(app, ws, panels, runs: int, label: str) -> None:
    """Time each kind of edit from ``ws.execute`` until the event loop is idle, checking that the canvases of
    ``panels`` in MUST_REPAINT were repainted. Prints a line and a BENCH line per kind."""
    counter = EventCounter(panels)
    app.installEventFilter(counter)

    def drawing(p) -> bool:  # a redraw is due (not counting estimates in flight on a worker thread)
        return AnalysisPanel.pending.fget(p)

    def busy() -> bool:  # serving estimates on a worker thread (explorer/ui/panels/serving_worker.py): the Serving
        # panel's, and in the main window the planner's serving box's too
        return bool(serving_worker._RUNNING) or any(
            getattr(p, "estimator", None) is not None and p.estimator.busy for p in panels)

    def settle(background: bool = True):
        """Process events until a pass delivers none (no redraw, layout or paint left to do); with
        ``background``, until the worker's estimates are in and drawn too."""
        for _ in range(100_000):
            before = counter.events
            app.processEvents()
            if counter.events == before and not any(drawing(p) for p in panels):
                if not (background and busy()):
                    return
                time.sleep(0.002)
        raise RuntimeError("the event loop never went idle")

    def edit_param(i):
        spec = ws.model.layers[2]
        return ReplaceLayer(2, spec.with_params(bias=not spec.params.get("bias", True)))

    def check_device(i):
        return SelectDevices(DEVICE_IDS if i % 2 else DEVICE_IDS[:7])

    def change_precision(i):  # FP16 <-> INT8: other peaks, bytes per element and energies on every panel
        return SetAssumptions({"precision": "int8" if ws.assumptions.precision == "fp16" else "fp16"})

    renames = iter(range(10**9))

    def rename_layer(i):  # a model never seen before (a new name, the bias toggled): the serving surfaces are built
        spec = ws.model.layers[2]
        return ReplaceLayer(2, spec.with_params(name=f"down-{label[:4]}-{next(renames)}",
                                                bias=not spec.params.get("bias", True)))

    print(f"{label}: {len(ws.model.layers)} layers ({len(ws.analysis.table)} operator rows), "
          f"{len(ws.analysis.devices)} devices, {runs} runs each; ms from execute() until idle")
    for name, make in (
        ("layer parameter", edit_param),
        ("device checked", check_device),
        ("precision", change_precision),
        ("new model", rename_layer),
    ):
        settle()
        times, cpu, done = [], [], []
        for i in range(runs + 3):
            command = make(i)
            settle()  # untimed: nothing left over from the previous run
            before = [p.redraws for p in panels]
            runs_before = [p.estimator.runs if hasattr(p, "estimator") else 0 for p in panels]
            counter.canvas_paints.clear()
            t0, c0 = time.perf_counter(), time.process_time()
            ws.execute(command)
            settle(background=False)  # every panel repainted (the Serving panel: its numbers, or "estimating")
            elapsed, used = time.perf_counter() - t0, time.process_time() - c0
            settle()  # the worker's estimates in and drawn
            total = time.perf_counter() - t0
            extra = [p.estimator.runs - r if hasattr(p, "estimator") else 0 for p, r in zip(panels, runs_before)]
            assert all(p.redraws == b + 1 + e for p, b, e in zip(panels, before, extra)), (
                "one edit must give one redraw per panel on screen (and one when the worker's estimates come)"
            )
            expected = {f"bench-canvas-{type(p).__name__}" for p in panels} & {
                f"bench-canvas-{n}" for n in MUST_REPAINT.get(name, ())
            }
            assert counter.canvas_paints >= expected and counter.canvas_paints, (
                f"{name}: canvases painted {sorted(counter.canvas_paints)}, expected {sorted(expected)}"
            )
            if i >= 3:  # warm-up
                times.append(elapsed)
                cpu.append(used)
                done.append(total)
        ms = [t * 1e3 for t in times]
        cpu_ms = [t * 1e3 for t in cpu]
        print(
            f"  {name:16s} wall median {statistics.median(ms):6.2f} ms  p95 {percentile(ms, 0.95):6.2f} ms  "
            f"min {min(ms):6.2f} ms | CPU median {statistics.median(cpu_ms):6.2f} ms  "
            f"p95 {percentile(cpu_ms, 0.95):6.2f} ms | serving estimates in: median "
            f"{statistics.median(done) * 1e3:7.1f} ms"
        )
        report(f"{label} ({name})", times, BUDGET)
    app.removeEventFilter(counter)


def four_panels(app, runs: int) -> None:
    """The budget of issue 5: every analysis panel side by side, each in its own 1200 x 800 window."""
    catalog = {d.id: d for d in load_shipped_devices()}
    ws = Workspace(
        model_200(), lookup=lambda ids: [catalog[i] for i in ids], assumptions=Assumptions(precision="fp16")
    )
    ws.select_devices(DEVICE_IDS)
    ws.focus_layer(2)
    panels = [P(ws) for P in PANELS]
    for p in panels:
        p.resize(1200, 800)
        p.show()
    for _ in range(3):
        app.processEvents()
    assert len(ws.analysis.devices) == 8 and len(ws.model.layers) == 200
    measure(app, ws, panels, runs, f"panels: edit -> {len(PANELS)} panels repainted")
    for p in panels:
        p.close()


def main_window(app, runs: int) -> None:
    """The whole app as used: the main window at 1600 x 1000 (builder, catalog, properties, status bar) with
    the roofline tab on screen and the other panels behind it (they draw when their tab is chosen)."""
    from explorer.ui.app import build_window

    window = build_window("sqlite://")  # an in-memory catalog, seeded from the shipped files
    window.resize(1600, 1000)
    window.show()
    ws = window.workspace
    ws.reset(model_200(), DEVICE_IDS, Assumptions(precision="fp16"))
    ws.focus_layer(2)
    window.panel_docks[0].raise_()
    for _ in range(10):
        app.processEvents()
    assert len(ws.analysis.devices) == 8 and len(ws.model.layers) == 200
    measure(app, ws, [window.panel_docks[0].widget()], runs, "main window, roofline tab: edit -> repainted")
    window.workspace.mark_clean()
    window.close()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=50)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="hwexplorer-bench-") as home:
        for var in ("XDG_DATA_HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME"):  # the window's settings: not yours
            os.environ[var] = os.path.join(home, var)
        configure_qt_environment()  # as the app does before its QApplication
        app = QApplication.instance() or QApplication([])
        four_panels(app, args.runs)
        main_window(app, args.runs)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
