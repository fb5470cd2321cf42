"""Training: the model trained on the systems chosen in the Systems panel, side by side (``workspace.results.training``).

Two charts and a table under the controls of :mod:`.training_controls`:

* the step time of each system's chosen training layout, stacked: forward, backward, recomputation, pipeline bubble,
  sends, exposed data-parallel reduction and optimizer
  (:attr:`~explorer.core.training.step.TrainingAnalysis.step_parts`), with the layout, MFU and days to train;
* memory per device of that layout, stacked: weights, gradients, optimizer states and activations, against the
  device's capacity (a red tick);
* the ranked training layouts of the system in focus (:mod:`.training_table`): MFU, tokens/s, days and MWh to train.

Without systems the panel says where to choose them; a system with no valid layout, or none that fits, says why.
MFU is the ideal model's (docs/training.md).
"""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg

from explorer.core.training.step import STEP_PARTS

from ..plot_items.pinned_text import PinnedText
from ..plot_items.stacked_bars import StackedBars
from .base import AnalysisPanel
from .plotting import (
    DASH,
    BarPicker,
    changed,
    elide,
    name_axis,
    new_plot,
    nice_ceil,
    set_range,
    set_ticks,
    set_title,
    si,
)
from .ranked import pick_system, ranked_below
from .systems_controls import short_name
from .systems_ladder import fit_right
from .training_controls import TrainingControls
from .training_table import MEMORY_FIELDS, MEMORY_PARTS, TrainingTable, csv_rows

STEP_COLORS = ("#1f77b4", "#ff7f0e", "#bcbd22", "#9e9e9e", "#8c564b", "#d62728", "#9467bd")
MEMORY_COLORS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd")
CAPACITY = pg.mkPen("#b00020", width=2.5)
EMPTY = ("Choose one or more systems in the Systems panel (Systems: Add a system\u2026) to train the model on them: "
         "the step time of each one's best training layout, memory per device against its capacity, and the time and "
         "energy to train.")
IDEAL = ("MFU is ideal-model MFU: model FLOPs (6 N D + attention) over the analytical step time, which has no launch "
         "gaps, stragglers or data loading, so it is optimistic (docs/training.md).")


class TrainingPanel(AnalysisPanel):
    title = "Training"
    time_model = "follows"  # the Times switch: the system pass takes the calibrated rows where a device has curves
    chart_min_height = 400  # two rows of charts

    @classmethod
    def caption(cls, workspace, analysis=None) -> str:
        """The time model of the training numbers: the switch's, said to be ideal where no chosen system's device
        is calibrated (the single-device analysis the base class reads is not what this panel shows)."""
        if workspace.assumptions.time_model == "ideal":
            return "ideal model"
        devices = [d for _, d in workspace.hardware]
        if devices and not any(d.calibration is not None for d in devices):
            return "calibrated model (no system's device calibrated: ideal times)"
        return "calibrated model"

    def build(self, layout) -> None:
        self.controls = TrainingControls(self.workspace, parent=self)
        self.controls.refused = lambda: self.schedule(full=True)
        for i, row in enumerate(self.controls.rows):  # under the header, outside the scrolling body
            self.layout().insertWidget(1 + i, row)
        self.results: tuple = ()  # a TrainingResult per system
        self.focus = ""  # the id of the system whose layouts the table lists
        self._drawn = None
        g = self.graphics
        self.steps = self._bar_plot("time per step (s)")
        self.step_bars = StackedBars(height=0.55)
        self.steps.addItem(self.step_bars)
        g.addItem(self.steps, row=0, col=0)
        self.memory = self._bar_plot("memory per device (GB)")
        self.memory_bars = StackedBars(height=0.55)
        self.memory.addItem(self.memory_bars)
        self.capacity = pg.PlotDataItem([], [], connect="pairs", pen=CAPACITY)
        self.capacity.setZValue(5)
        self.memory.addItem(self.capacity)
        g.addItem(self.memory, row=1, col=0)
        self.step_notes: list[PinnedText] = []
        self.memory_notes: list[PinnedText] = []
        self._step_totals = self._memory_right = np.zeros(0)
        self.steps.vb.sigResized.connect(lambda _vb: self._fit(self.steps, self._step_totals, self.step_notes))
        self.memory.vb.sigResized.connect(lambda _vb: self._fit(self.memory, self._memory_right, self.memory_notes))
        BarPicker(self.steps, self._locate, self.describe_step, self._focus_row)
        BarPicker(self.memory, self._locate, self.describe_memory, self._focus_row)

        self.table = TrainingTable()
        self.table.layout_chosen.connect(self.controls.choose_layout)
        self.focus_combo = ranked_below(self, layout, "Ranked training layouts of:",
                                        "The system whose training layouts the table lists", self.table,
                                        96, 2)  # 96 px: the header and three rows

    @staticmethod
    def _bar_plot(label: str) -> pg.PlotItem:
        plot = new_plot()
        plot.vb.invertY(True)
        name_axis(plot, 240)
        plot.setLabel("bottom", label)
        plot.getAxis("bottom").enableAutoSIPrefix(False)
        return plot

    # -- drawing
    def redraw(self, _analysis) -> None:
        ws = self.workspace
        self.controls.sync()  # always: the widgets may show an edit that an undo took back before this redraw
        drawn = (ws.results.training, self.controls.error)
        if self._drawn is not None and drawn[0] is self._drawn[0] and drawn[1] == self._drawn[1]:
            return  # an edit training does not depend on
        self._drawn = drawn
        self.results = drawn[0]
        names = [short_name(r.system) for r in self.results]
        ids = [r.system.id for r in self.results]
        if self.focus not in ids:
            self.focus = ids[0] if ids else ""
        ticks = [[(i, elide(f"{name} ({r.system.devices})", 36))
                  for i, (name, r) in enumerate(zip(names, self.results))]]
        n = len(self.results)
        steps = np.zeros((n, len(STEP_PARTS)))
        memory = np.zeros((n, len(MEMORY_PARTS)))
        capacity = np.full(n, np.nan)
        for i, r in enumerate(self.results):
            if r.analysis is not None:
                a, k = r.analysis, r.chosen
                steps[i] = a.step_parts[k]
                memory[i] = [getattr(a, f)[k] / 1e9 for f in MEMORY_FIELDS]
                capacity[i] = a.capacity / 1e9
        self.step_bars.set(steps, STEP_COLORS)
        self.memory_bars.set(memory, MEMORY_COLORS)
        x = np.repeat(capacity, 2)
        y = (np.arange(n)[:, None] + np.array([-0.4, 0.4])).ravel()
        ok = np.isfinite(x)
        self.capacity.setData(x[ok], y[ok])
        set_title(self.steps, "Step time of the chosen training layouts (s)" if n else "Step time",
                  list(zip(STEP_COLORS, STEP_PARTS)) if n else ())
        set_title(self.memory, "Memory per device (GB) against the device's capacity (red)" if n else
                  "Memory per device", list(zip(MEMORY_COLORS, MEMORY_PARTS)) if n else ())
        for plot in (self.steps, self.memory):
            set_ticks(plot.getAxis("left"), ticks)
        self._step_totals = steps.sum(axis=1)
        self._memory_right = np.fmax(memory.sum(axis=1), np.nan_to_num(capacity))
        self._notes(self.steps, self.step_notes, self._step_totals, self._step_label)
        self._notes(self.memory, self.memory_notes, self._memory_right, self._memory_label)
        self._fit(self.steps, self._step_totals, self.step_notes)
        self._fit(self.memory, self._memory_right, self.memory_notes)
        for plot, label in ((self.steps, "time per step (s)"), (self.memory, "memory per device (GB)")):
            if changed(plot, "empty", n == 0):
                plot.getAxis("bottom").setStyle(showValues=n > 0)
                plot.setLabel("bottom", label if n else "nothing to plot: no system chosen")
        self._fill_table(names, ids)
        self.set_message(self._note(names))

    def _step_label(self, r) -> tuple[str, str]:
        a, k = r.analysis, r.chosen
        days = r.cost.time_s[k] / 86400
        return ((f"{si(a.step_time[k], 's')}  {r.layout.label()}  MFU {a.mfu[k]:.1%}  "
                f"{days:,.4g} days"), "#282828")

    def _memory_label(self, r) -> tuple[str, str]:
        a, k = r.analysis, r.chosen
        fits = "fits" if a.fits[k] else "does NOT fit"
        return (f"{si(a.memory_bytes[k], 'B')} of {si(a.capacity, 'B')}: {fits}",
                "#282828" if a.fits[k] else "#b00020")

    def _notes(self, plot, notes: list, right, label) -> None:
        n = len(self.results)
        while len(notes) < n:
            text = PinnedText(color=(40, 40, 40), anchor=(0, 0.5))
            plot.addItem(text, ignoreBounds=True)
            notes.append(text)
        for i, text in enumerate(notes):
            text.setVisible(i < n)
            if i < n:
                r = self.results[i]
                if r.analysis is None:
                    text.setText(f"{DASH} no valid layout", color="#b00020")
                    text.setPos(0.0, i)
                else:
                    text.setText(*label(r))
                    text.setPos(float(right[i]), i)

    @staticmethod
    def _fit(plot, right, notes) -> None:
        """A range wide enough for each bar's label beside it (they are drawn at screen size)."""
        n = len(right)
        top = fit_right(right, [t.box_size()[0] for t in notes[:n]], plot.vb.width())
        set_range(plot, (0, nice_ceil(top) if n else 1.0), (-0.6, max(n, 1) - 0.4))

    def _note(self, names) -> str:
        if not self.results:
            return " ".join(x for x in (self.controls.error, EMPTY) if x)
        notes = [self.controls.error]
        for name, r in zip(names, self.results):
            if r.analysis is None:
                notes.append(f"{name}: no valid training layout \u2014 {r.error}.")
            elif not r.analysis.fits.any():
                a, k = r.analysis, r.chosen
                notes.append(f"{name}: no layout fits in device memory; the fastest, {r.layout.label()}, needs "
                             f"{si(a.memory_bytes[k], 'B')} per device of {si(a.capacity, 'B')} (weights "
                             f"{si(a.weight_bytes[k], 'B')}, gradients {si(a.gradient_bytes[k], 'B')}, optimizer states "
                             f"{si(a.optimizer_bytes[k], 'B')}, activations {si(a.activation_bytes[k], 'B')}): try "
                             f"full recomputation, ZeRO 3, more devices, CP or LoRA.")
        how = "chosen by hand" if self.workspace.state.training.layout is not None else "the best of each system"
        notes.append(f"Layouts: {how}; double-click a row to choose one. {IDEAL}")
        return " ".join(x for x in notes if x)

    def _fill_table(self, names, ids) -> None:
        i = pick_system(self.focus_combo, names, ids, self.focus)
        self.table.fill(self.results[i] if i >= 0 else None)

    # -- interaction
    def _set_focus(self, system_id: str) -> None:
        if system_id and system_id != self.focus:
            self.focus = system_id
            self._fill_table([short_name(r.system) for r in self.results], [r.system.id for r in self.results])

    def _locate(self, _x: float, y: float):
        i = round(y)
        return i if 0 <= i < len(self.results) and abs(y - i) <= 0.3 else None

    def _focus_row(self, i: int) -> None:
        self._set_focus(self.results[i].system.id)

    def _head(self, i: int) -> str | None:
        r = self.results[i]
        if r.analysis is None:
            return None
        return f"{short_name(r.system)}, {r.layout.label()} on {r.system.devices} x {r.device.name}"

    def describe_step(self, i: int) -> str:
        r = self.results[i]
        if r.analysis is None:
            return f"{short_name(r.system)}: no valid training layout \u2014 {r.error}"
        a, c, k = r.analysis, r.cost, r.chosen
        energy = (f"{c.energy_j[k] / 3.6e9:,.4g} MWh at TDP x PUE {c.assumptions.pue:g}"
                  if np.isfinite(c.energy_j[k]) else f"{DASH} MWh (no TDP in the catalog)")
        parts = " + ".join(f"{label} {si(v, 's')}" for label, v in zip(STEP_PARTS, a.step_parts[k]))
        return (f"{self._head(i)}:\nstep {si(a.step_time[k], 's')} = {parts}\n{int(a.microbatches[k])} micro-batches; "
                f"{a.tokens_per_s[k]:,.4g} tokens/s; MFU {a.mfu[k]:.1%}, HFU {a.hfu[k]:.1%} (ideal model)\n"
                f"to train on {c.tokens:.3g} tokens: {c.time_s[k] / 86400:,.4g} days, "
                f"{c.device_hours[k]:,.4g} device-hours, {energy}")

    def describe_memory(self, i: int) -> str:
        r = self.results[i]
        if r.analysis is None:
            return f"{short_name(r.system)}: no valid training layout \u2014 {r.error}"
        a, k = r.analysis, r.chosen
        parts = " + ".join(f"{label} {si(getattr(a, f)[k], 'B')}" for label, f in zip(MEMORY_PARTS, MEMORY_FIELDS))
        st = a.setup
        return (f"{self._head(i)}:\nmemory per device {si(a.memory_bytes[k], 'B')} = {parts}\n"
                f"capacity {si(a.capacity, 'B')}: {'fits' if a.fits[k] else 'does NOT fit'}; ZeRO {st.zero}, "
                f"recompute {st.recompute}, micro-batch {st.micro_batch} x {st.seq_len} tokens")

    def csv_table(self):
        self._up_to_date()
        return csv_rows(self.results)
