"""Serving: each checked device serving the state's workload under continuous batching (``workspace.results.serving``,
the analytic estimate of ``explorer.core.serving``; docs/serving.md), and each system chosen in the Systems panel with
one replica of its cheapest serving layout (``workspace.results.serving_systems``, :mod:`.serving_systems`).

* the load curve: output tokens/s per device against the tokens/s each user sees (1 / TPOT) as the arrival rate
  rises, the service-level knee (star: the highest rate meeting every target) and the workload's operating point
  (circle);
* TTFT and TPOT against the arrival rate, the service levels as dashed lines, the operating point marked;
* after "Simulate" (the discrete-event simulation on a worker thread, :mod:`.serving_sim`): the distributions of
  TTFT and TPOT at the workload's rate;
* a table per device: capacity, latency percentiles, goodput, throughput, cost per million tokens and energy per
  token at the operating point.
"""

from __future__ import annotations

import math

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QProgressBar, QPushButton, QSplitter

from ..plot_items.dots import Dots
from .base import AnalysisPanel
from .plotting import DASH, BarPicker, device_color, empty_state, new_plot, set_range, set_title
from .serving_controls import ServingControls
from .serving_sim import Simulator
from .serving_systems import busy_text, named_rows, notes, times_note
from .serving_table import ServingTable, table_rows
from .serving_worker import Estimator

EMPTY = ("Select one or more devices in the catalog (or systems in the Systems panel) to see them serve the workload: "
         "the load curve with its service-level knee, TTFT and TPOT against the arrival rate, and the capacity and "
         "cost of each.")
PICK_PIXELS = 8.0


class ServingPanel(AnalysisPanel):
    title = "Serving"
    time_model = "follows"  # the Times switch: the step-time surfaces take the calibrated rows where a device has curves
    chart_min_height = 420

    @classmethod
    def caption(cls, workspace, analysis=None, answers=()) -> str:
        """'ideal model', or 'calibrated model' and where the drawn ``answers``' step times come from (spec, partly
        calibrated, calibrated: docs/calibration.md); a class method: a tab not built yet has drawn none."""
        if workspace.assumptions.time_model == "ideal":
            return "ideal model"
        labels = sorted({a.setup.time_source for a in answers})
        return "calibrated model" + (f" ({', '.join(labels)})" if labels else "")

    def model_caption(self, analysis=None) -> str:
        return self.caption(self.workspace, analysis, getattr(self, "answers", ()))

    def build_header(self, header) -> None:
        self.controls = ServingControls(self.workspace, parent=self)
        self.simulate = QPushButton("Simulate")
        self.simulate.setToolTip("Run the discrete-event simulation of 2,000 requests at the workload's rate on "
                                 "each device (a worker thread), then show the TTFT and TPOT distributions")
        self.simulate.clicked.connect(self.start_simulation)
        self.progress = QProgressBar()
        self.progress.setMaximumWidth(140)
        self.progress.setFormat("simulating %v/%m")
        self.progress.hide()
        self.simulator = Simulator(self)
        self.simulator.progress.connect(self._sim_progress)
        self.simulator.done.connect(self._sim_done)
        self.simulator.failed.connect(self._sim_failed)
        # the estimates: on a worker thread when they would build surfaces (a model edit), at once when kept
        self.estimator = Estimator(self.workspace, "serving", self)
        self.estimator.ready.connect(lambda: self.schedule(full=True))
        # the systems chosen in the Systems panel: every serving layout through the system pass, on a worker too
        self.system_estimator = Estimator(self.workspace, "serving_systems", self)
        self.system_estimator.ready.connect(lambda: self.schedule(full=True))

    def build(self, layout) -> None:
        self.answers: tuple = ()
        self.systems: tuple = ()  # per chosen system: its SystemServing (the answers end with theirs)
        self.names: list[str] = []
        self.short: list[str] = []
        self.simulated: tuple = ()  # per device: Simulated, after "Simulate" (dropped when the inputs change)
        self.sim_error = ""
        self.core_error = ""
        self._drawn = None
        self.layout().insertWidget(1, self.controls.row)
        self.controls.engine_row.addStretch(1)
        self.controls.slo_row.addStretch(1)
        self.controls.slo_row.addWidget(self.simulate)
        self.controls.slo_row.addWidget(self.progress)
        g = self.graphics
        self.curve = new_plot()
        self.curve.setLabel("bottom", "per-user speed (tokens/s)")
        self.curve.setLabel("left", "throughput per device (tokens/s)")
        self.ttft_plot, self.tpot_plot = new_plot(), new_plot()
        for plot, what in ((self.ttft_plot, "TTFT"), (self.tpot_plot, "TPOT")):
            plot.setLabel("bottom", "arrival rate (requests/s)")
            plot.setLabel("left", f"{what} (ms)")
        self.ttft_hist, self.tpot_hist = new_plot(log_x=True), new_plot(log_x=True)
        for plot, what in ((self.ttft_hist, "TTFT"), (self.tpot_hist, "TPOT")):
            plot.setLabel("bottom", f"{what} (ms)")
            plot.setLabel("left", "requests (%)")
        g.addItem(self.curve, row=0, col=0)
        g.addItem(self.ttft_plot, row=0, col=1)
        g.addItem(self.tpot_plot, row=0, col=2)
        g.addItem(self.ttft_hist, row=1, col=0, colspan=2)
        g.addItem(self.tpot_hist, row=1, col=2)
        grid = g.ci.layout
        grid.setRowStretchFactor(0, 3)
        grid.setRowStretchFactor(1, 2)
        for plot in (self.curve, self.ttft_plot, self.tpot_plot, self.ttft_hist, self.tpot_hist):
            for axis in ("bottom", "left"):
                plot.getAxis(axis).enableAutoSIPrefix(False)
            plot.hideButtons()
        self.slo_lines = {}
        for plot, name in ((self.ttft_plot, "ttft"), (self.tpot_plot, "tpot")):
            line = pg.InfiniteLine(angle=0, pen=pg.mkPen("#b00020", width=1.5, style=Qt.PenStyle.DashLine))
            plot.addItem(line, ignoreBounds=True)
            self.slo_lines[name] = line
        self.rate_lines = []
        for plot in (self.ttft_plot, self.tpot_plot):
            line = pg.InfiniteLine(angle=90, pen=pg.mkPen(90, 90, 90, 150, width=1, style=Qt.PenStyle.DotLine))
            plot.addItem(line, ignoreBounds=True)
            self.rate_lines.append(line)
        self.lines: dict[str, list] = {"curve": [], "ttft": [], "tpot": [], "hist_ttft": [], "hist_tpot": []}
        self.marks = {}
        for key, plot in (("curve", self.curve), ("ttft", self.ttft_plot), ("tpot", self.tpot_plot)):
            op = Dots(symbol="o", size=11, pen=pg.mkPen("k", width=1.2))
            knee = Dots(symbol="star", size=17, pen=pg.mkPen("k", width=1.0))
            for item in (op, knee):
                item.setZValue(12)
                plot.addItem(item)
            self.marks[key] = (op, knee)
        # hover: per plot the (device, kind, index) of each point drawn and its (x, y)
        self._points = {"curve": ([], np.zeros((0, 2))), "ttft": ([], np.zeros((0, 2))),
                        "tpot": ([], np.zeros((0, 2)))}
        for key, plot in (("curve", self.curve), ("ttft", self.ttft_plot), ("tpot", self.tpot_plot)):
            BarPicker(plot, lambda x, y, key=key: self.locate(key, x, y), lambda k, key=key: self.describe(key, k))

        self.table = ServingTable()
        self.table.setMinimumHeight(150)
        self.splitter = QSplitter(Qt.Orientation.Vertical)
        index = layout.indexOf(self.graphics)
        layout.removeWidget(self.graphics)
        self.splitter.addWidget(self.graphics)
        self.splitter.addWidget(self.table)
        self.splitter.setStretchFactor(0, 3)
        self.splitter.setStretchFactor(1, 1)
        self.splitter.setChildrenCollapsible(False)
        layout.insertWidget(index, self.splitter, 1)

    @property
    def pending(self) -> bool:
        """A redraw is due, or the estimates are being computed on the worker (its result brings one)."""
        return super().pending or self.estimator.busy or self.system_estimator.busy

    # -- drawing
    def inputs(self, answers=None):
        """What the panel's numbers come from: (the step-time setups of the answers drawn, or of ``answers``: the
        devices' then the systems' chosen replicas; the serving part)."""
        answers = self.answers if answers is None else answers
        return (tuple(a.setup for a in answers), self.workspace.results.serving_choice)

    def redraw(self, _analysis) -> None:
        ws = self.workspace
        self.controls.sync()
        answers, error, busy = self.estimator.get()
        systems, sys_error, sys_busy = self.system_estimator.get()
        errors = [f"Serving not estimated: {e}." for e in dict.fromkeys((error, sys_error)) if e]
        if busy or sys_busy:
            errors.append(busy_text(len(ws.devices) if busy else 0, len(ws.results.hardware) if sys_busy else 0))
        self.core_error = " ".join(errors)
        names, short, answers = named_rows(ws.devices, answers, systems)
        if self._drawn is not None and _same_objects(answers, self._drawn[0]):
            answers = self._drawn[0]  # the kept answers again in a new tuple: nothing to redraw for them
        drawn = (answers, self.simulated, self.controls.error, self.sim_error, self.core_error, systems)
        if self._drawn is not None and all(a is b for a, b in zip(drawn, self._drawn)):
            return
        if self.simulator.token is not None and (busy or sys_busy or not answers
                                                 or not _same_inputs(self.simulator.token, self.inputs(answers))):
            self.simulator.forget()  # an edit since the run started: its result will be dropped
            self._sim_hide()
            self.simulated = ()
        self.answers, self.systems, self.names, self.short = answers, systems, names, short
        self._draw_curves()
        self._draw_latency()
        self._draw_histograms()
        self.table.fill(self.names, self.answers, self.simulated)
        self.simulate.setEnabled(bool(answers) and not self.simulator.running)
        self.set_message(self._note())
        self._show_model(_analysis)  # the title's time sources are those of the answers just drawn
        self._drawn = drawn

    def _note(self) -> str:
        if not self.answers:
            return " ".join(x for x in (self.controls.error, self.core_error or ("" if self.systems else EMPTY),
                                        notes(self.systems).strip()) if x)
        c = self.workspace.results.serving_choice
        note = (f"Workload: {c.describe()}. Analytic estimate (circle: the workload's rate; star: the highest rate "
                f"meeting every service level). One replica per device.") + notes(self.systems) + times_note(
            self.workspace.assumptions.time_model, self.short, self.answers)
        none = [f"{n}: no stable load (" + ("the weights leave no room for a KV cache" if a.setup.memory.blocks < 1
                                          else "not even one request at a time keeps up") + ")"
                for n, a in zip(self.short, self.answers) if not a.curve.capacity > 0]
        if none:
            note += " " + "; ".join(none) + "."
        if self.simulator.running:
            note += " Simulating\u2026"
        elif self.simulated:
            note += f" Histograms: the simulation of {self.simulator.n:,} requests."
        else:
            note += " Simulate to see the TTFT and TPOT distributions."
        return " ".join(x for x in (self.controls.error, self.sim_error, self.core_error, note) if x)

    def _line(self, key: str, plot, i: int):
        lines = self.lines[key]
        while len(lines) <= i:
            color = device_color(len(lines))
            item = pg.PlotDataItem(pen=pg.mkPen(color, width=2))
            plot.addItem(item)
            lines.append(item)
        return lines[i]

    def _draw_curves(self) -> None:
        pts, xy, ops, knees = [], [], [], []
        for i, a in enumerate(self.answers):
            c = a.curve
            ok = c.stable & np.isfinite(c.per_user)
            self._line("curve", self.curve, i).setData(c.per_user[ok], c.throughput_per_device[ok])
            for k in np.flatnonzero(ok):
                pts.append((i, "curve", int(k)))
                xy.append((c.per_user[k], c.throughput_per_device[k]))
            e = a.estimate
            if e.stable and e.tpot.mean > 0:
                ops.append((i, 1.0 / e.tpot.mean, e.throughput_per_device))
            if c.knee >= 0:
                knees.append((i, c.per_user[c.knee], c.throughput_per_device[c.knee]))
        self._clear_extra("curve", len(self.answers))
        self._marks("curve", ops, knees, pts, xy)
        set_title(self.curve, "Throughput against per-user speed",
                  [(device_color(i), n) for i, n in enumerate(self.short)])
        empty_state(self.curve, not pts, "nothing to plot: no device selected" if not self.answers else
                    "no stable load", "per-user speed (tokens/s)", ("bottom", "left"))
        self._fit(self.curve, np.array(xy).reshape(-1, 2))

    def _draw_latency(self) -> None:
        c = self.workspace.results.serving_choice
        for key, plot, scale in (("ttft", self.ttft_plot, 1e3), ("tpot", self.tpot_plot, 1e3)):
            pts, xy, ops, knees = [], [], [], []
            pct = getattr(c, f"{key}_pct") if key == "ttft" else "mean"
            for i, a in enumerate(self.answers):
                y = getattr(a.curve, key) * scale
                ok = a.curve.stable & np.isfinite(y)
                self._line(key, plot, i).setData(a.curve.rates[ok], y[ok])
                for k in np.flatnonzero(ok):
                    pts.append((i, key, int(k)))
                    xy.append((a.curve.rates[k], y[k]))
                e = a.estimate
                value = e.ttft.at(pct) if key == "ttft" else e.tpot.mean
                if e.stable and math.isfinite(value):
                    ops.append((i, e.rate, value * scale))
                if a.curve.knee >= 0:
                    knees.append((i, a.curve.rates[a.curve.knee], y[a.curve.knee]))
            self._clear_extra(key, len(self.answers))
            self._marks(key, ops, knees, pts, xy)
            target = getattr(c, key)
            line = self.slo_lines[key]
            line.setVisible(target is not None and bool(self.answers))
            if target is not None:
                line.setValue(target * scale)
                xy.append((xy[0][0] if xy else 0.0, target * scale))
            self.rate_lines[0 if key == "ttft" else 1].setValue(c.rate)
            self.rate_lines[0 if key == "ttft" else 1].setVisible(bool(self.answers))
            label = (f"{key.upper()} {pct.upper()}" if key == "ttft" else "TPOT (mean)")
            set_title(plot, f"{label} against the rate" + (" (dashed: target)" if target is not None else ""))
            plot.setLabel("left", f"{key.upper()} (ms)")
            empty_state(plot, not pts, "nothing to plot: no device selected" if not self.answers else
                        "no stable load", "arrival rate (requests/s)", ("bottom", "left"))
            self._fit(plot, np.array(xy).reshape(-1, 2))

    def _marks(self, key, ops, knees, pts, xy) -> None:
        op, knee = self.marks[key]
        for item, rows, kind in ((op, ops, "op"), (knee, knees, "knee")):
            item.setData([r[1] for r in rows], [r[2] for r in rows],
                         colors=np.array([_rgba(device_color(r[0])) for r in rows]).reshape(-1, 4))
            for r in rows:
                pts.append((r[0], kind, 0))
                xy.append((r[1], r[2]))
        self._points[key] = (pts, np.array(xy, float).reshape(-1, 2))

    def _clear_extra(self, key: str, n: int) -> None:
        for item in self.lines[key][n:]:
            item.setData([], [])

    @staticmethod
    def _fit(plot, xy) -> None:
        xy = xy[np.isfinite(xy).all(axis=1)] if len(xy) else xy
        if not len(xy):
            set_range(plot, (0, 1), (0, 1))
            return
        hi = xy.max(axis=0)
        set_range(plot, (0, max(hi[0], 1e-9) * 1.08), (0, max(hi[1], 1e-9) * 1.12))

    def _draw_histograms(self) -> None:
        sims = self.simulated
        for key, plot in (("ttft", self.ttft_hist), ("tpot", self.tpot_hist)):
            samples = [getattr(s, key) * 1e3 for s in sims]
            finite = [x[np.isfinite(x)] for x in samples]
            both = np.concatenate(finite) if finite else np.zeros(0)
            both = both[both > 0]
            # log-spaced bins (the x axis is logarithmic): devices a thousand times apart share one chart
            lo, hi = (float(both.min()), float(both.max())) if len(both) else (1.0, 10.0)
            edges = np.geomspace(lo / 1.05, max(hi, lo * 1.01) * 1.05, 49)
            top = 0.0
            for i, x in enumerate(finite):
                counts, _ = np.histogram(np.clip(x, edges[0], edges[-1]), edges)
                share = 100.0 * counts / max(len(x), 1)
                top = max(top, float(share.max()) if len(share) else 0.0)
                line = self._line("hist_" + key, plot, i)
                line.setData(edges, share, stepMode="center")  # the log-x plot takes log10 itself
            self._clear_extra("hist_" + key, len(finite))
            set_title(plot, f"{key.upper()} distribution (simulated)" if sims else
                      f"{key.upper()} distribution: press Simulate")
            empty_state(plot, not sims, "nothing to plot: not simulated yet" if self.answers else
                        "nothing to plot: no device selected", f"{key.upper()} (ms)", ("bottom", "left"))
            set_range(plot, (np.log10(edges[0]), np.log10(edges[-1])) if sims else (0, 1),
                      (0, top * 1.1 if top else 1))

    # -- hover
    def locate(self, key: str, x: float, y: float):
        pts, xy = self._points[key]
        if not len(xy):
            return None
        plot = {"curve": self.curve, "ttft": self.ttft_plot, "tpot": self.tpot_plot}[key]
        px, py = plot.vb.viewPixelSize()
        d = np.hypot((xy[:, 0] - x) / px, (xy[:, 1] - y) / py)
        d = np.where(np.isfinite(d), d, np.inf)
        # the marks drawn on top win over the curve's points under them
        d = d - np.array([PICK_PIXELS * {"op": 2, "knee": 1}.get(p[1], 0) for p in pts]) * (d <= PICK_PIXELS)
        j = int(np.argmin(d))
        return j if d[j] <= PICK_PIXELS else None

    def describe(self, key: str, j: int) -> str:
        i, kind, k = self._points[key][0][j]
        a, name = self.answers[i], self.names[i]
        c = a.curve
        if kind == "op":
            e = a.estimate
            return (f"{name}: the workload's rate, {e.rate:,.4g} requests/s\n"
                    f"TTFT P50 {_ms(e.ttft.p50)}, P90 {_ms(e.ttft.p90)}, P99 {_ms(e.ttft.p99)}; TPOT {_ms(e.tpot.mean)}"
                    f"\n{e.throughput_per_device:,.4g} tokens/s per device, {1 / e.tpot.mean:,.4g} tokens/s per user;"
                    f" mean batch {e.mean_batch:,.3g} sequences\nservice levels "
                    + ("met" if e.slo_met else "missed"))
        k = c.knee if kind == "knee" else k
        head = f"{name}: " + ("the service-level knee, " if kind == "knee" else "") + f"{c.rates[k]:,.4g} requests/s"
        return (f"{head}\n{c.throughput_per_device[k]:,.4g} tokens/s per device, {c.per_user[k]:,.4g} tokens/s "
                f"per user\nTTFT {_ms(c.ttft[k])}, TPOT {_ms(c.tpot[k])}; service levels "
                + ("met" if c.meets[k] else "missed"))

    # -- the simulation
    def start_simulation(self) -> None:
        if not self.answers:
            return
        token = self.inputs()
        c = token[1]
        self.sim_error = ""
        self.simulated = ()
        self.simulate.setEnabled(False)
        self.progress.setRange(0, len(token[0]))
        self.progress.setValue(0)
        self.progress.show()
        self.simulator.start(token, c.workload, token[0], c.slo)
        self.schedule(full=True)

    def _sim_progress(self, i: int, n: int) -> None:
        self.progress.setRange(0, n)
        self.progress.setValue(i)

    def _sim_done(self, results) -> None:
        self._sim_hide()
        self.simulated = results
        self.schedule(full=True)

    def _sim_failed(self, text: str) -> None:
        self._sim_hide()
        self.sim_error = f"Simulation failed: {text}."
        self.schedule(full=True)

    def _sim_hide(self) -> None:
        self.progress.hide()
        self.simulate.setEnabled(bool(self.answers))

    def csv_table(self):
        self._up_to_date()
        return table_rows(self.names, self.answers, self.simulated)


def _same_objects(a: tuple, b: tuple) -> bool:
    return len(a) == len(b) and all(x is y for x, y in zip(a, b))


def _same_inputs(a, b) -> bool:  # the same setups (kept per device: a new tuple of the same ones is the same)
    return len(a[0]) == len(b[0]) and all(x is y for x, y in zip(a[0], b[0])) and a[1] == b[1]


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:,.4g} ms" if seconds is not None and math.isfinite(seconds) else DASH


def _rgba(color: str) -> tuple[int, int, int, int]:
    c = pg.mkColor(color)
    return c.red(), c.green(), c.blue(), 255
