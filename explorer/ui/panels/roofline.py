"""Roofline placement: every operator on the log-log roofline of the selected devices.

Draws :func:`explorer.core.analysis.roofline_view.compute_roofline`: per device its ceiling at the precision,
faint ceilings for its other precisions, a slope per memory level with a known bandwidth and the labelled
ridge point; per operator a point (size = share of time, colour = bound, regime or kind); the chapter's regime
bands with their recommended optimizations in the tooltip. Clicking a point selects its layer everywhere. With an
imported trace (the session's, ``workspace.trace``) its measured kernels are crosses on the device in focus. When
that device has no peak at the precision, a note in the plot says which precisions it has.
"""

from __future__ import annotations

import html
import math

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QPointF
from PySide6.QtWidgets import QCheckBox, QComboBox, QLabel

from explorer.core.analysis.roofline_measured import cover_measured

from ..plot_items.bars import Bars
from ..plot_items.dots import Dots
from ..plot_items.label_placement import pixel_rect, scatter_rects
from ..plot_items.legend_box import LegendBox
from ..plot_items.log_lines import LogLines
from ..plot_items.pinned_text import PinnedText
from .base import AnalysisPanel
from .plotting import (
    FOCUS_PEN,
    NO_PEN,
    BarPicker,
    changed,
    device_color,
    forget,
    new_plot,
    opaque,
    set_range,
    si,
)
from .roofline_comm import CommLayer
from .roofline_items import DeviceItems, draw_device, roofline_csv
from .roofline_labels import CeilingLabels
from .roofline_trace import MeasuredLayer

BOUND_COLORS = {"memory": (230, 85, 13, 190), "compute": (117, 107, 177, 190)}
REGIME_COLORS = {
    "very low": (203, 24, 29),
    "low": (253, 141, 60),
    "medium": (199, 183, 0),
    "high": (35, 139, 69),
}
KIND_COLORS = (
    (31, 119, 180),
    (255, 127, 14),
    (44, 160, 44),
    (214, 39, 40),
    (148, 103, 189),
    (140, 86, 75),
    (227, 119, 194),
    (127, 127, 127),
    (188, 189, 34),
    (23, 190, 207),
)
MIN_SIZE, MAX_SIZE = 6.0, 30.0
GRID = (220, 220, 220)
LEGEND_TEXT = "#282828"


def _log(a):
    return np.log10(np.asarray(a, dtype=float))


class RooflinePanel(AnalysisPanel):
    title = "Roofline"
    has_device_combo = True

    def build_header(self, header) -> None:
        header.addWidget(QLabel("Colour by:"))
        self.color_by = QComboBox()
        self.color_by.addItems(["bound", "regime", "kind"])
        self.color_by.setToolTip("What the colour of an operator's point shows")
        self.color_by.currentIndexChanged.connect(lambda _i: self.schedule(full=True))
        header.addWidget(self.color_by)
        self.comm_toggle = QCheckBox("communication roof")
        self.comm_toggle.setToolTip("The links of the first chosen system (Systems panel) made of the device in "
                                    "focus as roofs at their per-direction bandwidth, and its layout's collectives "
                                    "at the FLOPs the device computes per byte it sends")
        self.comm_toggle.toggled.connect(lambda _on: self.schedule(full=True))
        header.addWidget(self.comm_toggle)

    def build(self, layout) -> None:
        self.result = None
        plot = self.plot = new_plot("", log_x=True, log_y=True)
        plot.setLabel("bottom", "Arithmetic intensity (FLOP/byte)")
        plot.setLabel("left", "Performance (FLOP/s)")
        plot.vb.disableAutoRange()
        self.graphics.addItem(plot)
        # the regime bands: one rectangle each (log10 view coordinates), all in one item
        self.bands = Bars(x0=[], y0=[], width=[], height=[], pen=NO_PEN)
        self.bands.setZValue(-20)
        plot.addItem(self.bands, ignoreBounds=True)
        self._band_brushes = [pg.mkBrush(*opaque(color, 0.09)) for color in REGIME_COLORS.values()]
        self.band_labels: list[PinnedText] = []
        for color in REGIME_COLORS.values():
            label = PinnedText(color=color, anchor=(0, 0))  # at the band's left edge
            plot.addItem(label, ignoreBounds=True)
            self.band_labels.append(label)
        # the decade lines as segments of one item (cheaper to paint than the axes' grid or a line each)
        self.grid = pg.PlotCurveItem(connect="pairs", pen=pg.mkPen(GRID))
        self.grid.setZValue(-15)
        plot.addItem(self.grid, ignoreBounds=True)
        # the legend: rows of coloured text in one item (a LegendItem costs milliseconds to rebuild when devices
        # change, an HTML label 0.4 ms to typeset when a ridge moves)
        self.legend = LegendBox(anchor=(1, 1))
        self.legend.setZValue(20)
        plot.addItem(self.legend, ignoreBounds=True)
        self.devices: list[DeviceItems] = []
        self.device_lines = LogLines()  # every device's roof, on-chip slopes and other ceilings: under the points
        plot.addItem(self.device_lines, ignoreBounds=True)
        self.ceiling_labels = CeilingLabels(plot, self._label_obstacles)
        # why the device in focus has no points (no peak at the precision): in the plot, where one looks
        self.focus_note = pg.TextItem(anchor=(0.5, 0.5), color=(120, 20, 20), fill=pg.mkBrush(255, 255, 255),
                                      border=pg.mkPen(200, 120, 120))
        self.focus_note.setZValue(25)
        plot.addItem(self.focus_note, ignoreBounds=True)
        self.measured = MeasuredLayer(plot)
        self.comm = CommLayer(plot)
        # scatter items take log10 coordinates (they have no log mode)
        self.ridges = Dots(symbol="d", size=11, pen=pg.mkPen("k", width=0.5))
        plot.addItem(self.ridges)
        self.points = Dots(symbol="o", pen=pg.mkPen(60, 60, 60, 160, width=0.6))
        self.points.sigClicked.connect(self._points_clicked)
        self.points.setZValue(10)
        plot.addItem(self.points)
        self.focus_ring = Dots(symbol="o", pen=FOCUS_PEN)
        self.focus_ring.setZValue(11)
        plot.addItem(self.focus_ring)
        self._band_tips: list[str] = []
        # one hover handler for points, ridges and bands (item tooltips would hide the points' under a band)
        BarPicker(plot, self._hover_key, self.describe_hover)

    def _label_obstacles(self, view_range, size) -> np.ndarray:
        """Pixel boxes the ceiling labels must not cover: the band names, the legend, the focused device's ridge
        label, the operator points, the ridge points and the measured crosses."""
        d = self.result.device_index if self.result is not None else -1
        ridge = [self.devices[d].ridge_label] if 0 <= d < len(self.devices) else []
        texts = [item for item in (*self.band_labels, self.legend, *ridge) if item.isVisible()]
        boxes = np.asarray([pixel_rect(item, view_range, size) for item in texts], float).reshape(-1, 4)
        scatters = [scatter_rects(s, view_range, size) for s in (self.points, self.ridges, self.measured.scatter)]
        return np.concatenate([boxes, *scatters])

    # -- drawing
    def redraw(self, analysis) -> None:
        d = self.device_index(analysis)
        if d < 0:
            self.result = None
            for items in self.devices:
                items.hide()
            for item in (self.points, self.focus_ring, self.ridges):
                item.setData(x=[], y=[])
                forget(item)  # drawn again in full when devices come back
            self.measured.draw(None, None)
            self.comm.draw(None, False)
            self.focus_note.setVisible(False)
            self.set_message("Select one or more devices to place the model on their rooflines.")
            return
        results = self.workspace.results
        measured = results.measured(d)
        r = self.result = cover_measured(results.roofline(d, self.workspace.focused_layer), measured)
        (x_lo, x_hi), (y_lo, y_hi) = r.x_range, r.y_range
        set_range(self.plot, (math.log10(x_lo), math.log10(x_hi)), (math.log10(y_lo), math.log10(y_hi)))
        self._draw_grid(r)
        self._draw_bands(r)
        while len(self.devices) < len(r.devices):
            self.devices.append(DeviceItems(self.plot, self.device_lines))
        for i, items in enumerate(self.devices):
            if i < len(r.devices):
                draw_device(items, r.devices[i], i, focused=i == d)
            else:
                items.hide()
        self.measured.draw(self.workspace.trace, measured)
        comm_on = self.comm_toggle.isChecked()
        self.comm.draw(results.comm_roof(d, r.x_range) if comm_on else None, comm_on)
        rows = []
        for i, x in enumerate(r.devices):
            ridge = f" \u2014 ridge {x.ridge:.3g} FLOP/B" if math.isfinite(x.ridge) else f" \u2014 {x.missing}"
            rows.append([("\u2501" * 3 + " ", device_color(i), False), (x.name, LEGEND_TEXT, i == d),
                         (ridge, LEGEND_TEXT, False)])
        rows.append([("points: ", LEGEND_TEXT, False), *self._color_key(r)])
        rows.append(self.measured.legend_row(LEGEND_TEXT))
        rows.append(self.comm.legend_row(LEGEND_TEXT))
        rows.append([("- - on-chip levels   pale: other precisions", "#888888", False)])
        self.legend.set_rows([row for row in rows if row])
        self.legend.setPos(math.log10(x_hi), math.log10(y_lo))
        ok = [i for i, x in enumerate(r.devices) if math.isfinite(x.ridge)]
        if changed(self.ridges, "data", ([r.devices[i].ridge for i in ok], [r.devices[i].peak for i in ok])):
            self.ridges.setData(
                x=_log([r.devices[i].ridge for i in ok]),
                y=_log([r.devices[i].peak for i in ok]),
                data=ok,
                colors=[pg.mkColor(device_color(i)).getRgb() for i in ok],
            )
        self._draw_points(r)
        self._label_ceilings(r.devices[d], d)  # after the points: the labels keep clear of them
        self._draw_focus_note(r)
        # the focus note already says what the device in focus lacks
        missing = [f"{x.name}: {x.missing}" for i, x in enumerate(r.devices) if x.missing and not (i == d and r.focus_note)]
        dev = r.devices[d]
        text = (
            f"Points: {len(r.points.rows)} operators on {dev.name} at {r.precision}; size = share of time; "
            f"colour = {self.color_by.currentText()} (key in the legend)."
        )
        if r.focus_note:
            text = f"{r.focus_note}."
        if r.precision_note:  # per-tensor formats: the device in focus computes at a fallback precision
            text += f"  {r.precision_note}."
        if missing:
            text += "  Not drawn \u2014 " + "; ".join(missing) + "."
        if self.measured.active:
            text += "  " + self.measured.message()
        if self.comm.visible:
            text += "  " + self.comm.message()
        self.set_message(text)

    def _draw_focus_note(self, r) -> None:
        self.focus_note.setVisible(bool(r.focus_note))
        if r.focus_note and changed(self.focus_note, "note", (r.focus_note, r.x_range, r.y_range)):
            # painted directly: a pixmap cache keeps the empty first bounding box and drops the white box
            self.focus_note.setCacheMode(pg.QtWidgets.QGraphicsItem.CacheMode.NoCache)
            self.focus_note.setHtml(f"<div style='font-size:10pt'>{html.escape(r.focus_note)}</div>")
            (x_lo, x_hi), (y_lo, y_hi) = (math.log10(v) for v in r.x_range), (math.log10(v) for v in r.y_range)
            self.focus_note.setPos((x_lo + x_hi) / 2, (y_lo + y_hi) / 2)

    def _color_key(self, r) -> list:
        """The legend's runs saying what the points' colours mean."""
        mode = self.color_by.currentText()
        if mode == "regime":
            pairs = [(REGIME_COLORS[n], n) for n in REGIME_COLORS]
        elif mode == "kind":
            kinds = sorted(set(r.points.kinds))
            pairs = [(KIND_COLORS[i % len(KIND_COLORS)], k) for i, k in enumerate(kinds)]
        else:
            pairs = [(BOUND_COLORS[b][:3], f"{b}-bound") for b in BOUND_COLORS]
        runs = []
        for i, (color, name) in enumerate(pairs):
            last = i == len(pairs) - 1
            runs += [("\u25cf ", pg.mkColor(*color), False), (name if last else f"{name} ", LEGEND_TEXT, False)]
        return runs

    def _draw_grid(self, r) -> None:
        (x_lo, x_hi), (y_lo, y_hi) = (np.log10(r.x_range)), (np.log10(r.y_range))
        xs = np.arange(round(x_lo), round(x_hi) + 1, dtype=float)
        ys = np.arange(round(y_lo), round(y_hi) + 1, dtype=float)
        if not changed(self.grid, "decades", (xs, ys, x_lo, x_hi, y_lo, y_hi)):
            return
        x = np.concatenate([np.repeat(xs, 2), np.tile([x_lo, x_hi], len(ys))])  # vertical, then horizontal
        y = np.concatenate([np.tile([y_lo, y_hi], len(xs)), np.repeat(ys, 2)])
        self.grid.setData(x=x, y=y)

    def _draw_bands(self, r) -> None:
        """The regime bands as rectangles over the whole height of the view, their names at the top left."""
        y_lo, y_hi = (math.log10(v) for v in r.y_range)
        if not changed(self.bands, "bands", (tuple((b.lo, b.hi) for b in r.bands), y_lo, y_hi)):
            return
        lo, hi = np.log10([b.lo for b in r.bands]), np.log10([b.hi for b in r.bands])
        n = len(lo)
        self.bands.setOpts(x0=lo, width=hi - lo, y0=np.full(n, y_lo - 1), height=np.full(n, y_hi - y_lo + 2),
                           brushes=self._band_brushes[:n], pen=NO_PEN)
        self._band_tips = []
        for label, b in zip(self.band_labels, r.bands):
            edge = (
                f"I < {b.hi:g}"
                if b.name == "very low"
                else f"I > {b.lo:g}"
                if b.name == "high"
                else f"{b.lo:g}\u2013{b.hi:g}"
            )
            self._band_tips.append(
                f"Regime '{b.name}' ({edge} FLOP/byte, the chapter's Table 14)\nRecommended: {b.advice}"
            )
            label.setText(f"{b.name}\n{edge}")
            label.setPos(math.log10(b.lo), y_hi)

    def _label_ceilings(self, dr, index: int) -> None:
        """Name the ceilings of the device in focus (precisions sharing a value share a label)."""
        color = pg.mkColor(device_color(index))
        faint = pg.mkColor(color)
        faint.setAlpha(170)
        entries = []
        if dr.ceiling is not None:
            entries.append((f"{dr.ceiling.precision} {si(dr.peak, 'FLOP/s')}", dr.ceiling.x[0], dr.ceiling.x[-1],
                            dr.peak, color, True))
        names: dict[float, list[str]] = {}
        for c in dr.other_ceilings:
            if c.flops != dr.peak:
                names.setdefault(c.flops, []).append(c.precision)
        for flops, precisions in names.items():
            line = next(c for c in dr.other_ceilings if c.flops == flops)
            entries.append((f"{'/'.join(precisions)} {si(flops, 'FLOP/s')}", line.x[0], line.x[-1], flops, faint,
                            False))
        self.ceiling_labels.set_entries(entries)

    def point_colors(self) -> np.ndarray:
        """RGBA (0-255) of each operator's point, n x 4."""
        p = self.result.points
        mode = self.color_by.currentText()
        if mode == "regime":
            return np.array([(*REGIME_COLORS[x], 190) for x in p.regime], dtype=np.int16).reshape(-1, 4)
        if mode == "kind":
            kinds = sorted(set(p.kinds))
            colors = [(*KIND_COLORS[kinds.index(k) % len(KIND_COLORS)], 190) for k in p.kinds]
            return np.array(colors, dtype=np.int16).reshape(-1, 4)
        return np.array([BOUND_COLORS[b] for b in p.bound], dtype=np.int16).reshape(-1, 4)

    def _draw_points(self, r) -> None:
        p = r.points
        # whole pixels: pyqtgraph renders one symbol image per distinct size, so continuous sizes would render new
        # ones at every edit
        sizes = np.round(MIN_SIZE + (MAX_SIZE - MIN_SIZE) * p.size)
        colors = self.point_colors()
        self._log_xy = _log(p.intensity), _log(p.attainable)
        self._point_sizes = sizes
        if changed(self.points, "data", (p.intensity, p.attainable, p.rows, sizes, colors)):
            self.points.setData(x=self._log_xy[0], y=self._log_xy[1], data=p.rows, size=sizes, colors=colors)
        self.redraw_focus(None)

    def redraw_focus(self, analysis) -> None:
        if self.result is None:
            return
        p = self.result.points
        focused = p.layer == self.workspace.focused_layer
        x, y, size = self._log_xy[0][focused], self._log_xy[1][focused], self._point_sizes[focused] + 6
        if changed(self.focus_ring, "data", (x, y, size)):
            self.focus_ring.setData(x=x, y=y, size=size)

    # -- interaction
    def _points_clicked(self, _item, values, _ev) -> None:
        if len(values):
            self.select_row(int(values[-1]))  # the topmost

    def select_row(self, row: int) -> None:
        analysis = self.workspace.analysis
        if analysis is not None and 0 <= row < len(analysis.table):
            self.workspace.focus_layer(int(analysis.table.layer_index[row]))

    def _hover_key(self, x: float, y: float):
        """What is under the cursor (view coordinates: log10): a point, a ridge, or a regime band."""
        if self.result is None:
            return None
        pos = QPointF(x, y)
        measured = self.measured.hover_key(x, y) or self.comm.hover_key(x, y)
        if measured is not None:
            return measured
        for kind, item in (("point", self.points), ("ridge", self.ridges)):
            found = item.pointsAt(pos)
            if found:
                return kind, int(item.values[found[-1]])  # the topmost
        intensity = 10.0**x
        for i, b in enumerate(self.result.bands):
            if b.lo <= intensity < b.hi:
                return "band", i
        return None

    def describe_hover(self, key) -> str:
        kind, value = key
        if kind == "point":
            return self._point_tip(0, 0, value)
        if kind == "ridge":
            return self._ridge_tip(0, 0, value)
        if kind == "measured":
            return self.measured.tip(value)
        if kind == "comm":
            return self.comm.tip(value)
        return self._band_tips[value] if value < len(self._band_tips) else ""

    def _point_tip(self, x, y, data) -> str:
        r = self.result
        if r is None:
            return ""
        p = r.points
        i = int(np.flatnonzero(p.rows == data)[0])
        dev = r.devices[r.device_index]
        advice = next(b.advice for b in r.bands if b.name == p.regime[i])
        return (
            f"{p.names[i]} ({p.kinds[i]}), layer {int(p.layer[i]) + 1}\n"
            f"intensity {p.intensity[i]:.3g} FLOP/byte \u2014 regime '{p.regime[i]}'\n"
            f"attainable {si(p.attainable[i], 'FLOP/s')} on {dev.name} ({p.bound[i]}-bound)\n"
            f"modelled {si(p.achieved[i], 'FLOP/s')}, time {si(p.time[i], 's')} "
            f"({p.time_share[i]:.1%} of the total)\n"
            f"recommended: {advice}"
        )

    def _ridge_tip(self, x, y, data) -> str:
        r = self.result
        if r is None:
            return ""
        dr = r.devices[int(data)]
        return (
            f"{dr.name}: ridge {dr.ridge:.3g} FLOP/byte = {si(dr.peak, 'FLOP/s')} "
            f"({dr.ceiling.precision if dr.ceiling else r.precision}) / "
            f"{si(dr.bandwidth, 'B/s')}"
        )

    def csv_table(self):
        return roofline_csv(self.result)
