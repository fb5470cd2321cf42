"""Systems: the model sized on systems of many devices, side by side (``workspace.results.systems``).

Three charts and a table over the controls of :mod:`.systems_controls`:

* the step time of each system's chosen layout, stacked: compute, exposed communication, pipeline bubble,
  pipeline sends and host offload (:attr:`~explorer.core.parallel.system_pass.SystemAnalysis.step_parts`);
* the bandwidth ladder extended outward: per system, the bytes one device moves per step at each level from
  on-chip memory out to the scale-out network, with the level's bandwidth and the time those bytes take at it
  (:func:`~explorer.core.parallel.compare.bandwidth_ladder`);
* every valid layout of every system (``results.system_layouts``) as throughput per device against latency, one
  colour per system, hollow where it does not fit, a star on the chosen one; a click chooses a layout.

The table ranks the layouts of the system in focus. A system with no valid layout says why.
"""

from __future__ import annotations

import math

import numpy as np
import pyqtgraph as pg
from PySide6.QtGui import QColor
from PySide6.QtWidgets import QToolButton

from explorer.core.analysis.time_source import system_time_sources
from explorer.core.parallel.link_energy import link_energy
from explorer.core.parallel.system_pass import STEP_PARTS

from ..plot_items.dots import Dots
from ..plot_items.pinned_text import PinnedText
from ..plot_items.stacked_bars import StackedBars
from .base import AnalysisPanel
from .plotting import DASH, BarPicker, changed, device_color, elide, name_axis, new_plot, nice_ceil, set_range, \
    set_ticks, set_title, si
from .ranked import pick_system, ranked_below
from .systems_controls import SystemControls, short_name
from .systems_ladder import Ladder, fit_right
from .systems_table import LayoutTable, csv_rows

PART_COLORS = ("#1f77b4", "#ff7f0e", "#9e9e9e", "#8c564b", "#9467bd")
PART_KEYS = ("compute", "communication", "bubble", "sends", "host offload")  # the key under the title
PICK_PIXELS = 8.0  # how near the mouse must be to a layout's point
EMPTY = ("Choose one or more systems above (Systems: Add a system\u2026) to size the model on them: the step "
         "time of each one's best layout, its bandwidth ladder, and every parallel layout.")


def _rgba(color: str, alpha: int = 255) -> tuple[int, int, int, int]:
    c = QColor(color)
    return c.red(), c.green(), c.blue(), alpha


class SystemsPanel(AnalysisPanel):
    title = "Systems"
    time_model = "follows"  # the system pass times with the chosen model (kernels and stored link fits)
    chart_min_height = 400  # two rows of charts

    @classmethod
    def caption(cls, workspace, analysis=None) -> str:
        """'ideal model', or 'calibrated model' and where the chosen layouts' times come from (spec, partly
        calibrated, calibrated: docs/calibration.md)."""
        if workspace.assumptions.time_model == "ideal":
            return "ideal model"
        try:
            results = workspace.results.systems
        except ValueError:
            results = ()
        labels = sorted({system_time_sources(r.analysis)[r.chosen] for r in results if r.analysis is not None})
        return "calibrated model" + (f" ({', '.join(labels)})" if labels else "")

    def build_header(self, header) -> None:
        self.controls = SystemControls(self.workspace, parent=self)
        header.addWidget(self.controls.systems_row)

    def build(self, layout) -> None:
        self.chosen: tuple = ()  # a SystemResult per system: its chosen layout
        self.every: tuple = ()  # a SystemResult per system: every valid layout, ranked
        self.costs: tuple = ()  # a LayoutCost (or None) per system of ``every``
        self.focus = ""  # the id of the system whose layouts the table lists
        self._drawn = None  # the inputs of the last full redraw (an edit that leaves them the same redraws nothing)
        self.layout().insertWidget(1, self.controls.options_row)  # under the header, outside the scrolling body
        self.links_button = QToolButton()  # the chosen systems' link fits to nccl-tests output (.link_calibration)
        self.links_button.setText("Links\u2026")
        self.links_button.setToolTip("Fit a chosen system's scale-up or scale-out link to an nccl-tests output and "
                                     "choose which fit the calibrated model uses (undoable; saved with the project)")
        self.links_button.clicked.connect(self.open_links)
        self.links_dialog = None
        self.controls.options_row.layout().addWidget(self.links_button)
        g = self.graphics
        self.steps = new_plot()
        self.steps.vb.invertY(True)
        name_axis(self.steps, 175)
        self.steps.setLabel("bottom", "time per step (ms)")
        self.steps.getAxis("bottom").enableAutoSIPrefix(False)
        self.stack = StackedBars(height=0.55)
        self.steps.addItem(self.stack)
        self.step_notes: list[PinnedText] = []
        self._totals = np.zeros(0)
        g.addItem(self.steps, row=0, col=0, colspan=2)  # across the top: its key of five parts needs the width
        self.ladder = Ladder(g, row=1, col=0)
        self.scatter = new_plot(log_x=True, log_y=True)
        self.scatter.setLabel("bottom", "latency (s)")
        self.scatter.setLabel("left", "throughput per device (tokens/s)")
        self.scatter.vb.disableAutoRange()
        self.scatter.hideButtons()  # its range follows the layouts; pyqtgraph's auto-range button would not
        g.addItem(self.scatter, row=1, col=1)
        grid = g.ci.layout
        grid.setRowStretchFactor(0, 2)
        grid.setRowStretchFactor(1, 5)
        grid.setColumnStretchFactor(0, 1)
        grid.setColumnStretchFactor(1, 1)
        self.steps.vb.sigResized.connect(lambda _vb: self._fit_steps())
        self.dots: list[tuple[Dots, Dots]] = []  # per system: (fits, does not fit)
        self.stars = Dots(symbol="star", size=20, pen=pg.mkPen("k", width=1.0))
        self.stars.setZValue(12)
        self.scatter.addItem(self.stars)
        self.star_labels: list[PinnedText] = []
        self._points: list[tuple[int, int, bool]] = []  # per point: (system, layout index, is the chosen star)
        self._xy = np.zeros((0, 2))
        BarPicker(self.steps, self._locate_step, self._describe_step, self._focus_row)
        BarPicker(self.scatter, self._locate_point, self.describe_point, self.pick_point)

        self.table = LayoutTable()
        self.table.layout_chosen.connect(self.controls.choose_layout)
        self.focus_combo = ranked_below(self, layout, "Ranked layouts of:", "The system whose layouts the table lists",
                                        self.table, 64, 3)

    def open_links(self):
        """The link-calibration window for the chosen systems (one, kept while the panel lives)."""
        from .link_calibration import LinkCalibrationDialog

        if self.links_dialog is None:
            self.links_dialog = LinkCalibrationDialog(self.workspace, self)
        self.links_dialog.refresh()
        self.links_dialog.show()
        self.links_dialog.raise_()
        return self.links_dialog

    # -- drawing
    def redraw(self, _analysis) -> None:
        ws = self.workspace
        self.controls.sync()  # always: the widgets may show an edit that an undo took back before this redraw
        drawn = (ws.results.systems, ws.results.system_layouts, ws.state.system, self.controls.error,
                 ws.results.system_costs)
        if self._drawn is not None and all(a is b for a, b in zip(drawn, self._drawn)):
            return  # an edit the systems do not depend on (a layer of another model part, a device checked)
        self._drawn = drawn
        self.chosen, self.every, self.costs = drawn[0], drawn[1], drawn[4]
        names = [short_name(r.system) for r in self.chosen]
        ids = [r.system.id for r in self.chosen]
        if self.focus not in ids:
            self.focus = ids[0] if ids else ""
        self._draw_steps(names)
        self.ladder.draw(self.chosen, names)
        self._draw_scatter(names)
        self._fill_table(names, ids)
        self.set_message(self._note(names))

    def _note(self, names) -> str:
        if not self.chosen:
            return (self.controls.error + " " if self.controls.error else "") + EMPTY
        errors = [f"{name}: no valid layout \u2014 {r.error}" for name, r in zip(names, self.chosen) if r.error]
        how = ("chosen by hand" if self.workspace.state.system.layout is not None
               else f"best by {self.workspace.state.system.objective}")
        note = (f"Layouts {how} (star). Hollow points do not fit in device memory. Click a point, or double-click "
                f"a row, to choose its layout for every system.")
        unpriced = [f"{name}: cost unknown ({c.reason}), ranked by throughput after priced layouts"
                    for name, c in zip(names, self.costs) if c is not None and not c.priced]
        if self.workspace.state.system.objective != "cost" or self.workspace.state.system.layout is not None:
            unpriced = []
        return " ".join(x for x in (self.controls.error, "; ".join(errors), note, "; ".join(unpriced)) if x)

    def _draw_steps(self, names) -> None:
        n = len(self.chosen)
        parts = np.zeros((n, len(STEP_PARTS)))
        for i, r in enumerate(self.chosen):
            if r.analysis is not None:
                parts[i] = r.analysis.step_parts[r.chosen] * 1e3
        self.stack.set(parts, PART_COLORS)
        set_title(self.steps, "Step time of the chosen layouts (ms)" if n else "Step time",
                  list(zip(PART_COLORS, PART_KEYS)) if n else ())
        set_ticks(self.steps.getAxis("left"), [[(i, elide(name, 28)) for i, name in enumerate(names)]])
        self._totals = totals = np.nansum(parts, axis=1)
        while len(self.step_notes) < n:
            text = PinnedText(color=(40, 40, 40), anchor=(0, 0.5))
            self.steps.addItem(text, ignoreBounds=True)
            self.step_notes.append(text)
        for i, text in enumerate(self.step_notes):
            text.setVisible(i < n)
            if i < n:
                r = self.chosen[i]
                if r.analysis is None:
                    text.setText(f"{DASH} no valid layout", color="#b00020")
                    text.setPos(0.0, i)
                else:
                    text.setText(f"{si(r.analysis.step_time[r.chosen], 's')}  {r.layout.label()}", color="#282828")
                    text.setPos(float(totals[i]), i)
        self._fit_steps()
        axis = self.steps.getAxis("bottom")
        if changed(self.steps, "empty", n == 0):
            axis.setStyle(showValues=n > 0)
            axis.setLabel("time per step (ms)" if n else "nothing to plot: no system chosen")

    def _fit_steps(self) -> None:
        """A range wide enough for each bar's label beside it (they are drawn at screen size)."""
        n = len(self._totals)
        width = self.steps.vb.width()
        top = fit_right(self._totals, [t.box_size()[0] for t in self.step_notes[:n]], width)
        set_range(self.steps, (0, nice_ceil(top) if n else 1.0), (-0.6, max(n, 1) - 0.4))

    def _draw_scatter(self, names) -> None:
        points, xy = [], []
        for i, r in enumerate(self.every):
            while len(self.dots) <= i:
                color = device_color(len(self.dots))
                filled = Dots(symbol="o", size=9, pen=pg.mkPen(60, 60, 60, 160, width=0.6), color=_rgba(color))
                hollow = Dots(symbol="o", size=9, pen=pg.mkPen(color, width=1.6))
                for item in (filled, hollow):
                    item.setZValue(10)
                    self.scatter.addItem(item)
                self.dots.append((filled, hollow))
            a = r.analysis
            if a is None:
                continue
            x, y = np.log10(a.latency), np.log10(a.throughput_per_device)
            for item, mask in zip(self.dots[i], (a.fits, ~a.fits)):
                item.setData(x[mask], y[mask])
            for k in range(len(a)):
                points.append((i, k, False))
                xy.append((x[k], y[k]))
        for filled, hollow in self.dots[len(self.every):]:
            filled.setData([], [])
            hollow.setData([], [])
        stars, colors = [], []
        for i, r in enumerate(self.chosen):
            if r.analysis is not None:
                a, k = r.analysis, r.chosen
                stars.append((math.log10(a.latency[k]), math.log10(a.throughput_per_device[k])))
                colors.append(_rgba(device_color(i)))
                points.append((i, k, True))
                xy.append(stars[-1])
        self.stars.setData([s[0] for s in stars], [s[1] for s in stars], colors=np.array(colors).reshape(-1, 4))
        self._points, self._xy = points, np.array(xy, float).reshape(-1, 2)
        self._label_stars(stars)
        unit = next((r.analysis.throughput_unit for r in self.every if r.analysis is not None), "tokens/s")
        set_title(self.scatter, "Every layout: throughput per device against latency" if self.every else
                  "Layouts", [(device_color(i), name) for i, name in enumerate(names)])
        self.scatter.setLabel("left", f"throughput per device ({unit})")
        decode = self.workspace.state.assumptions.phase == "decode"
        train = self.workspace.state.assumptions.phase == "train"
        bottom = self.scatter.getAxis("bottom")
        if changed(self.scatter, "empty", (not points, decode, train)):
            for axis in (bottom, self.scatter.getAxis("left")):
                axis.setStyle(showValues=bool(points))
            self.scatter.setLabel("bottom", "the train phase on systems: see the Training panel" if train and not points
                                  else "nothing to plot: no system chosen" if not points
                                  else "latency per output token (s)" if decode else "latency of a prefill pass (s)")
        finite = self._xy[np.isfinite(self._xy).all(axis=1)]
        if len(finite):
            lo, hi = finite.min(axis=0), finite.max(axis=0)
            pad = np.maximum((hi - lo) * 0.12, 0.6 - (hi - lo) / 2)  # at least 1.2 decades: two labelled ticks
            set_range(self.scatter, (lo[0] - pad[0], hi[0] + 2.2 * pad[0]), (lo[1] - pad[1], hi[1] + pad[1]))
        else:
            set_range(self.scatter, (-3, 0), (0, 3))

    def _label_stars(self, stars) -> None:
        chosen = [r for r in self.chosen if r.analysis is not None]
        while len(self.star_labels) < len(stars):
            text = PinnedText(anchor=(0, 0.5), margin=9)
            text.setZValue(13)
            self.scatter.addItem(text, ignoreBounds=True)
            self.star_labels.append(text)
        for j, text in enumerate(self.star_labels):
            text.setVisible(j < len(stars))
            if j < len(stars):
                i = self.chosen.index(chosen[j])
                text.setText(chosen[j].layout.label(), color=device_color(i))
                text.setPos(*stars[j])

    def _fill_table(self, names, ids) -> None:
        i = pick_system(self.focus_combo, names, ids, self.focus)
        self.table.fill(self.every[i] if i >= 0 else None, self.chosen[i].layout if i >= 0 else None,
                        self.costs[i] if 0 <= i < len(self.costs) else None)

    # -- interaction
    def _set_focus(self, system_id: str) -> None:
        if system_id and system_id != self.focus:
            self.focus = system_id
            ids = [r.system.id for r in self.chosen]
            self._fill_table([short_name(r.system) for r in self.chosen], ids)

    def _locate_step(self, x: float, y: float):
        i = round(y)
        return i if 0 <= i < len(self.chosen) and abs(y - i) <= 0.3 else None

    def _describe_step(self, i: int) -> str:
        r, name = self.chosen[i], short_name(self.chosen[i].system)
        if r.analysis is None:
            return f"{name}: no valid layout \u2014 {r.error}"
        a, k = r.analysis, r.chosen
        parts = " + ".join(f"{label} {si(v, 's')}" for label, v in zip(STEP_PARTS, a.step_parts[k]))
        return (f"{name}, {r.layout.label()} on {r.system.devices} x {r.device.name}:\nstep {si(a.step_time[k], 's')}"
                f" = {parts}\ncommunication {a.comm_share[k]:.1%} of the step; "
                f"{a.throughput[k]:,.4g} {a.throughput_unit} in all, "
                f"{a.throughput_per_device[k]:,.4g} {a.throughput_unit} per device")

    def _focus_row(self, i: int) -> None:
        self._set_focus(self.chosen[i].system.id)

    def _locate_point(self, x: float, y: float):
        if not len(self._xy):
            return None
        px, py = self.scatter.vb.viewPixelSize()
        d = np.hypot((self._xy[:, 0] - x) / px, (self._xy[:, 1] - y) / py)
        d = np.where(np.isfinite(d), d, np.inf)
        j = int(np.argmin(d))
        return j if d[j] <= PICK_PIXELS else None

    def describe_point(self, j: int) -> str:
        i, k, star = self._points[j]
        r = (self.chosen if star else self.every)[i]
        a, lay = r.analysis, r.analysis.layouts[k]
        fits = ("fits" if a.fits[k] else "does not fit")
        price = self._cost_line(i, lay) + energy_line(a, k)
        return (f"{short_name(r.system)}: {lay.label()}{' (chosen)' if star else ''}\n"
                f"latency {si(a.latency[k], 's')}, step {si(a.step_time[k], 's')}\n"
                f"{a.throughput_per_device[k]:,.4g} {a.throughput_unit} per device "
                f"({a.throughput[k]:,.4g} {a.throughput_unit} on {r.system.devices} devices)\n"
                f"memory {si(a.memory_bytes[k], 'B')} of {si(a.capacity, 'B')} per device: {fits}; "
                f"communication {a.comm_share[k]:.1%} of the step" + price
                + ("" if star else "\nclick to choose this layout"))

    def _cost_line(self, i: int, lay) -> str:
        """The layout's cost per million tokens on system ``i`` (from :attr:`costs`), or why it is unknown."""
        if i >= len(self.costs) or self.costs[i] is None or self.every[i].analysis is None:
            return ""
        cost, layouts = self.costs[i], self.every[i].analysis.layouts
        if lay not in layouts:
            return ""
        k = layouts.index(lay)
        return "\ncost " + (f"{cost.cost_per_million[k]:,.3g} USD per million {cost.unit}s" if cost.priced
                            else f"unknown: {cost.reason}")

    def pick_point(self, j: int) -> None:
        i, k, star = self._points[j]
        r = (self.chosen if star else self.every)[i]
        self.focus = r.system.id
        self.controls.choose_layout(r.analysis.layouts[k])

    def csv_table(self):
        self._up_to_date()
        return csv_rows(self.every, [r.layout for r in self.chosen])


def energy_line(analysis, k: int) -> str:
    """A layout's energy per step and device (on the device + over the links), or which link's is unknown."""
    e = link_energy(analysis)
    if e.unknown[k]:
        return (f"\nenergy per step and device: {si(e.device[k], 'J')} on the device + links of unknown energy "
                f"({', '.join(e.unknown[k])})")
    return (f"\nenergy per step and device: {si(e.total[k], 'J')} ({si(e.device[k], 'J')} on the device, "
            f"{si(e.links[k], 'J')} over the links)")
