"""Design space: the sweep of the current model over the chosen devices x batch x sequence length x precision
(:func:`explorer.core.sweep.run.sweep`, on a worker thread: :mod:`.design_worker`), as one scatter.

* every point that fits device memory, coloured by device, one symbol per precision, on two axes picked among the
  sweep's objectives (latency, throughput per device, cost per million tokens, energy per token; log scales);
* the Pareto front over all four objectives ringed in black, and the front of the two axes shown drawn as a line;
* the app's own configuration (precision, batch, sequence length, phase, the device in focus) ringed in red;
* hover: every field of the point with its unit; click: the point's precision, batch, sequence length and phase
  become the app's (one undoable command) and its device the one in focus;
* export: every point to CSV or Parquet (the CLI's ``sweep --out`` format, docs/sweep.md), PNG/SVG of the chart.

The grid (the batch, sequence-length and precision lists, the phases) is this view's own setting, like a
chart's axes: it is not part of the project and not an undo step.
"""

from __future__ import annotations

import math

import numpy as np
import pyqtgraph as pg
from PySide6.QtWidgets import (
    QComboBox,
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from explorer.core.precision import PRECISIONS
from explorer.core.session.training import cost_assumptions
from explorer.core.sweep.grid import Grid, parse_names, parse_values
from explorer.core.sweep.pareto import OBJECTIVES, pareto_mask
from explorer.core.sweep.run import COLUMNS, NAMES, SweepResult, sweep
from explorer.core.sweep.table_io import OutputError, write

from ..plot_items.dots import Dots
from ..widgets.assumption_editors import set_assumptions
from .base import AnalysisPanel
from .design_worker import SweepInputs, SweepWorker
from .plotting import DASH, BarPicker, device_color, empty_state, new_plot, set_range, set_title, si

EMPTY = ("Select one or more devices in the catalog to sweep the model over them: every batch, sequence length and "
         "precision of the grid as one point, the Pareto front drawn.")
PICK_PIXELS = 8.0
#: the axes one can choose: column -> (label, unit shown, scale from SI to that unit)
AXES = {
    "latency_s": ("latency", "ms", 1e3),
    "throughput_per_device_tok_s": ("throughput per device", "tokens/s", 1.0),
    "cost_per_million_tokens_usd": ("cost", "USD per 10^6 tokens", 1.0),
    "energy_per_token_j": ("energy", "mJ/token", 1e3),
}
MINIMIZE = dict(OBJECTIVES)
SYMBOLS = ("o", "t", "s", "d", "star", "h", "p", "+")  # one per precision, in the grid's order
GLYPHS = dict(zip(SYMBOLS, ("\u25cf", "\u25bc", "\u25a0", "\u25c6", "\u2605", "\u2b22", "\u2b1f", "+")))  # for the title
PHASE_CHOICES = (("decode", ("decode",)), ("prefill", ("prefill",)), ("prefill + decode", ("prefill", "decode")))
# 4 batches x 5 lengths = 20 work tables per sweep (each a pass over the model's layers, on every edit on screen)
DEFAULTS = {"batch": "1,4,16,64", "seq_len": "512..8192", "precision": "fp16,fp8"}
UNITS = {n: u for n, u, _ in COLUMNS}


class DesignSpacePanel(AnalysisPanel):
    title = "Design space"
    time_model = "follows"
    chart_min_height = 380

    def build_header(self, header) -> None:
        self.row = QWidget()  # two lines: the grid, then the axes and the export (the window stays <= 1600 px)
        lines = QVBoxLayout(self.row)
        lines.setContentsMargins(0, 0, 0, 0)
        lines.setSpacing(2)
        row, axes_row = QHBoxLayout(), QHBoxLayout()
        for line in (row, axes_row):
            line.setSpacing(4)
            lines.addLayout(line)
        self.fields: dict[str, QLineEdit] = {}
        for key, label, tip in (
            ("batch", "Batch", "Batch sizes [sequences]: a comma list, a..b doubles from a to b (1,2,4..256)"),
            ("seq_len", "Seq", ("Sequence lengths [tokens] (prefill: prompt tokens; decode: KV-cache positions); "
                                "a comma list, a..b doubles from a to b (512..32768)")),
            ("precision", "Precision", f"Precisions, comma-separated (known: {', '.join(PRECISIONS)})"),
        ):
            edit = QLineEdit(DEFAULTS[key])
            edit.setToolTip(tip)
            edit.setMaximumWidth(110)
            edit.editingFinished.connect(self._grid_edited)
            row.addWidget(QLabel(f"{label}:"))
            row.addWidget(edit)
            self.fields[key] = edit
        self.phase = QComboBox()
        for text, _ in PHASE_CHOICES:
            self.phase.addItem(text)
        self.phase.setToolTip("Phase of every point: a decode step (one token per sequence) or a prefill of the "
                              "batch")
        self.phase.currentIndexChanged.connect(self._grid_edited)
        row.addWidget(QLabel("Phase:"))
        row.addWidget(self.phase)
        row.addStretch(1)
        row = axes_row
        self.axis_combos = []
        for label, default in (("X", "latency_s"), ("Y", "throughput_per_device_tok_s")):
            combo = QComboBox()
            for name, (text, unit, _) in AXES.items():
                combo.addItem(f"{text} ({unit})", name)
            combo.setCurrentIndex(list(AXES).index(default))
            combo.setToolTip(f"The {label} axis (log scale)")
            combo.currentIndexChanged.connect(lambda _i: self.schedule(full=True))
            row.addWidget(QLabel(f"{label}:"))
            row.addWidget(combo)
            self.axis_combos.append(combo)
        row.addStretch(1)
        self.export = QPushButton("Export points\u2026")
        self.export.setToolTip("Write every point of the sweep to a CSV or Parquet file (the columns of "
                               "'hwexplorer sweep --out', SI units named in each header)")
        self.export.clicked.connect(self._ask_export)
        row.addWidget(self.export)
        self.worker = SweepWorker(self)
        self.worker.done.connect(self._done)
        self.worker.failed.connect(self._failed)

    def build(self, layout) -> None:
        self.layout().insertWidget(1, self.row)
        self.result: SweepResult | None = None
        self.shown: SweepInputs | None = None
        self.grid = self._read_grid()[0]
        self.grid_error = ""
        self.sweep_error = ""
        self._fresh = False  # a worker's result not drawn yet
        self.ids: list[str] = []
        self.drawn = np.zeros(0, dtype=int)  # indices into the result of the points drawn
        self.xy = np.zeros((0, 2))  # their log10 view coordinates
        self.plot = new_plot(log_x=True, log_y=True)
        self.graphics.addItem(self.plot, row=0, col=0)
        self.plot.hideButtons()
        self.dots: list[Dots] = []  # one per precision (symbol)
        # a curve item takes the log10 view coordinates as they are (a PlotDataItem would take log10 again)
        self.front_line = pg.PlotCurveItem(pen=pg.mkPen(40, 40, 40, 200, width=1.5))
        self.front_line.setZValue(5)
        self.plot.addItem(self.front_line)
        self.front_rings = Dots(symbol="o", size=15, pen=pg.mkPen("k", width=1.6))
        self.front_rings.setZValue(8)
        self.current = Dots(symbol="o", size=22, pen=pg.mkPen("#d00000", width=2.5))
        self.current.setZValue(9)
        for item in (self.front_rings, self.current):
            self.plot.addItem(item)
        BarPicker(self.plot, self.locate, self.describe, self.apply)

    # -- inputs
    def _read_grid(self) -> tuple[Grid | None, str]:
        model = self.workspace.model
        try:
            no_tokens = model.default_seq_len() is None
            grid = Grid(batches=parse_values(self.fields["batch"].text(), "batch"),
                        seq_lens=None if no_tokens else parse_values(self.fields["seq_len"].text(), "sequence length"),
                        phases=PHASE_CHOICES[max(self.phase.currentIndex(), 0)][1],
                        precisions=parse_names(self.fields["precision"].text(), "precision", PRECISIONS),
                        attention=self.workspace.assumptions.attention, lm_head=self.workspace.assumptions.lm_head)
        except ValueError as exc:
            return None, str(exc)
        return grid, ""

    def _grid_edited(self, *_args) -> None:
        grid, self.grid_error = self._read_grid()
        if grid is not None:
            self.grid = grid
        self.schedule(full=True)

    def inputs(self) -> SweepInputs | None:
        ws = self.workspace
        devices = tuple(ws.devices)
        if not devices:
            return None
        grid, error = self._read_grid()  # the model (tokens or not) and the attention setting enter the grid
        if grid is None:
            self.grid_error = error
            grid = self.grid
        return SweepInputs(ws.model, devices, grid, cost_assumptions(ws.assumptions), ws.assumptions.time_model)

    # -- the worker
    # a result from the worker is drawn as a light update (``redraw_focus``), not a full redraw: an edit stays one
    # full redraw per panel (the panels' contract, bench/bench_panels.py), its sweep's points a second paint
    def _done(self, inputs: SweepInputs, result: SweepResult) -> None:
        self.result, self.shown, self.sweep_error = result, inputs, ""
        self._fresh = True
        self.schedule(full=False)

    def _failed(self, inputs: SweepInputs, reason: str) -> None:
        self.result, self.shown, self.sweep_error = None, inputs, f"Not swept: {reason}."
        self._fresh = True
        self.schedule(full=False)

    def redraw_focus(self, _analysis) -> None:
        if self._fresh:
            self._fresh = False
            self._draw(self.inputs())

    # -- drawing
    def redraw(self, _analysis) -> None:
        wanted = self.inputs()
        if wanted is None:
            self.result, self.shown, self.sweep_error = None, None, ""
        elif not wanted.same(self.shown):
            self.worker.request(wanted)
        self._fresh = False
        self._draw(wanted)

    def axes(self) -> tuple[str, str]:
        return tuple(c.currentData() for c in self.axis_combos)

    def _draw(self, wanted) -> None:
        r = self.result
        xname, yname = self.axes()
        (xl, xu, xs), (yl, yu, ys) = AXES[xname], AXES[yname]
        self.plot.setLabel("bottom", f"{xl} ({xu})")
        self.plot.setLabel("left", f"{yl} ({yu})")
        if r is None or self.shown is None:
            self._clear()
            busy = wanted is not None and (self.worker.busy or self.worker.waiting)
            self.set_message(" ".join(x for x in (self.grid_error, self.sweep_error if wanted else "",
                                                  "Sweeping\u2026" if busy else "" if wanted else EMPTY) if x))
            empty_state(self.plot, True, "nothing to plot: no device selected" if wanted is None else
                        "nothing to plot yet", None, ("bottom", "left"))
            set_title(self.plot, "Design space")
            return
        c = r.columns
        self.ids = [d.id for d in self.shown.devices]
        with np.errstate(divide="ignore", invalid="ignore"):
            x = np.log10(np.asarray(c[xname], float) * xs)
            y = np.log10(np.asarray(c[yname], float) * ys)
        ok = np.asarray(c["fits"], bool) & np.isfinite(x) & np.isfinite(y)
        self.drawn = np.flatnonzero(ok)
        self.xy = np.column_stack([x[ok], y[ok]])
        dev_index = {d: i for i, d in enumerate(self.ids)}
        colors = np.array([_rgba(device_color(dev_index[d])) for d in c["device"][ok]]).reshape(-1, 4)
        precisions = list(self.shown.grid.precisions)
        while len(self.dots) < len(precisions):
            item = Dots(symbol=SYMBOLS[len(self.dots) % len(SYMBOLS)], size=9, pen=pg.mkPen(255, 255, 255, 200,
                                                                                           width=0.6))
            item.setZValue(6)
            self.plot.addItem(item)
            self.dots.append(item)
        prec = c["precision"][ok]
        for k, item in enumerate(self.dots):
            sel = prec == precisions[k] if k < len(precisions) else np.zeros(len(prec), bool)
            item.setData(self.xy[sel, 0], self.xy[sel, 1], colors=colors[sel])
        front = np.asarray(c["pareto"], bool)[ok]
        self.front_rings.setData(self.xy[front, 0], self.xy[front, 1])
        self._draw_front_2d(xname, yname)
        self._draw_current()
        key = [(device_color(i), _short(d)) for i, d in enumerate(self.shown.devices)]
        symbols = ", ".join(f"{GLYPHS[SYMBOLS[k % len(SYMBOLS)]]} {p}" for k, p in enumerate(precisions))
        set_title(self.plot, f"{r.model_name}: {len(r):,} points ({symbols})", key)
        empty_state(self.plot, not len(self.drawn), "nothing to plot: no point fits memory or has both figures",
                    f"{xl} ({xu})", ("bottom", "left"))
        if len(self.drawn):
            lo, hi = self.xy.min(axis=0), self.xy.max(axis=0)
            pad = np.maximum((hi - lo) * 0.06, 0.05)
            set_range(self.plot, (lo[0] - pad[0], hi[0] + pad[0]), (lo[1] - pad[1], hi[1] + pad[1]))
        self.set_message(self._note(ok))

    def _draw_front_2d(self, xname: str, yname: str) -> None:
        """The front of the two axes shown (over the points drawn), as a line from one end to the other."""
        if not len(self.drawn):
            self.front_line.setData([], [])
            return
        mask = pareto_mask(self.xy, (MINIMIZE[xname], MINIMIZE[yname]))
        pts = self.xy[mask]
        pts = pts[np.lexsort((pts[:, 1], pts[:, 0]))]
        self.front_line.setData(pts[:, 0], pts[:, 1])

    def _draw_current(self) -> None:
        """Ring the point of the app's configuration (precision, batch, sequence length, phase, device in focus)."""
        j = self.current_index()
        k = np.flatnonzero(self.drawn == j) if j is not None else []
        if len(k):
            self.current.setData(self.xy[k, 0], self.xy[k, 1])
        else:
            self.current.setData([], [])

    def current_index(self) -> int | None:
        """The point of the sweep that is the app's configuration now, or None (not in the grid)."""
        if self.result is None:
            return None
        a, c = self.workspace.assumptions, self.result.columns
        seq = a.seq_len or self.workspace.model.default_seq_len() or 1
        hit = np.flatnonzero((c["device"] == self.workspace.focused_device) & (c["precision"] == a.precision)
                             & (c["phase"] == a.phase) & (c["batch"] == a.batch) & (c["seq_len"] == seq))
        return int(hit[0]) if len(hit) else None

    def _note(self, ok) -> str:
        r, c = self.result, self.result.columns
        parts = [self.grid_error]
        if self.worker.busy or self.worker.waiting or not self.shown.same(self.inputs()):
            parts.append("Updating\u2026")
        front = int(np.count_nonzero(c["pareto"]))
        parts.append(f"{len(self.drawn):,} of {len(r):,} points drawn; black rings: the {front} on the Pareto front "
                     "(latency, throughput per device, cost per 10^6 tokens, energy per token); line: the front of "
                     "the two axes shown; red ring: the app's configuration. Click a point to make it the app's.")
        unfit = int(np.count_nonzero(~np.asarray(c["fits"], bool)))
        if unfit:
            parts.append(f"{unfit:,} do not fit device memory (not drawn).")
        missing = int(np.count_nonzero(np.asarray(c["fits"], bool) & ~ok))
        if missing:
            parts.append(f"{missing:,} lack a figure on these axes (not drawn).")
        parts.extend(f"Note: {n}." for n in r.notes)
        return " ".join(p for p in parts if p)

    def _clear(self) -> None:
        self.drawn, self.xy = np.zeros(0, dtype=int), np.zeros((0, 2))
        for item in (*self.dots, self.front_rings, self.current):
            item.setData([], [])
        self.front_line.setData([], [])

    # -- hover and click
    def locate(self, x: float, y: float):
        if not len(self.xy):
            return None
        px, py = self.plot.vb.viewPixelSize()
        d = np.hypot((self.xy[:, 0] - x) / px, (self.xy[:, 1] - y) / py)
        k = int(np.argmin(d))
        return int(self.drawn[k]) if d[k] <= PICK_PIXELS else None

    def describe(self, j: int) -> str:
        """Every field of point ``j`` with its unit."""
        c = self.result.columns
        lines = [(f"{c['device'][j]}: {c['precision'][j]}, {c['phase'][j]}, batch {c['batch'][j]} sequences, "
                  f"seq_len {c['seq_len'][j]:,} tokens")]
        cost = c["cost_per_million_tokens_usd"][j]
        lines += [f"latency {si(c['latency_s'][j], 's')}",
                  f"throughput {_num(c['throughput_per_device_tok_s'][j])} tokens/s per device",
                  f"cost {_num(cost)} USD per 10^6 tokens" + (f" ({c['cost_source'][j]})" if math.isfinite(cost)
                                                              else " (no price in the catalog)"),
                  f"energy {si(c['energy_per_token_j'][j], 'J')}/token",
                  f"memory {si(c['memory_bytes'][j], 'B')} (weights + KV cache + activations), "
                  + ("fits" if c["fits"][j] else "does not fit"),
                  "on the Pareto front" if c["pareto"][j] else "dominated by another point",
                  "click: use this configuration"]
        return "\n".join(lines)

    def apply(self, j: int) -> None:
        """Make point ``j`` the app's: precision, batch, sequence length and phase in one undoable command; its
        device becomes the one in focus (the devices chosen stay as they are)."""
        c = self.result.columns
        ws = self.workspace
        seq = int(c["seq_len"][j])
        own = ws.model.default_seq_len()
        set_assumptions(ws, precision=str(c["precision"][j]), batch=int(c["batch"][j]),
                        seq_len=ws.assumptions.seq_len if own is None else seq, phase=str(c["phase"][j]))
        ws.focus_device(str(c["device"][j]))

    # -- export
    def _up_to_date(self) -> None:
        """Before an export or a copy: the sweep of the current inputs, computed here if the worker has not
        delivered it yet (an export never holds an older model's points)."""
        wanted = self.inputs()
        if wanted is not None and not wanted.same(self.shown):
            try:
                self._done(wanted, sweep(wanted.model, wanted.devices, wanted.grid, wanted.assumptions,
                                         time_model=wanted.time_model))
            except ValueError as exc:
                self._failed(wanted, str(exc))
            self.flush()
        super()._up_to_date()

    def csv_table(self):
        self._up_to_date()
        header = [f"{n} [{u}]" if u else n for n, u, _ in COLUMNS]
        if self.result is None:
            return header, []
        return header, self.result.rows()

    def export_points(self, path: str) -> None:
        """Every point to ``path`` (.csv or .parquet), atomically; raises OutputError or OSError."""
        self._up_to_date()
        if self.result is None:
            raise OutputError("nothing swept yet: select one or more devices")
        write(self.result, path)

    def _ask_export(self) -> None:
        path, _ = QFileDialog.getSaveFileName(self, "Export the design-space points", "design-space.csv",
                                              "CSV (*.csv);;Parquet (*.parquet)")
        if path:
            try:
                self.export_points(path)
            except (OutputError, OSError) as exc:
                self.set_message(f"Not exported: {exc}")


def _num(value: float) -> str:
    return f"{value:,.4g}" if value is not None and math.isfinite(float(value)) else DASH


def _short(device) -> str:
    name, vendor = device.name, getattr(device, "vendor", "") or ""
    return name[len(vendor) + 1:] if vendor and name.lower().startswith(vendor.lower() + " ") else name


def _rgba(color: str) -> tuple[int, int, int, int]:
    c = pg.mkColor(color)
    return c.red(), c.green(), c.blue(), 230


__all__ = ["AXES", "EMPTY", "NAMES", "DesignSpacePanel"]
