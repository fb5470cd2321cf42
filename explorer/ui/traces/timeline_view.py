"""A zoomable timeline of an imported trace: one horizontal lane per stream or engine.

Events are rectangles coloured by category (one ``pg.BarGraphItem`` per category, so ten thousand events
draw at once). Within a lane, overlapping events (nested CPU ops, concurrent DMA) are stacked in sub-rows.
The mouse zooms and pans the time axis only; hovering an event shows its name, lane, start and duration.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QCursor, QFontMetrics
from PySide6.QtWidgets import QLabel, QToolTip, QVBoxLayout, QWidget

from explorer.core.traces import Trace, TraceEvent
from explorer.core.units import format_bytes, format_si

CATEGORY_COLOURS = {
    "compute": "#1f77b4",
    "dma_in": "#ff7f0e",
    "dma_out": "#2ca02c",
    "memcpy": "#9467bd",
    "memset": "#8c564b",
    "cpu_op": "#4c78a8",
    "annotation": "#9e9e9e",
    "program": "#c7c7c7",
    "runtime": "#e377c2",
    "python": "#bcbd22",
}
_FALLBACK = ("#17becf", "#d62728", "#7f7f7f", "#aec7e8", "#ffbb78")
_LANE_PAD = 0.08  # fraction of a lane left empty above and below its rows


def colour_for(category: str) -> str:
    if category in CATEGORY_COLOURS:
        return CATEGORY_COLOURS[category]
    return _FALLBACK[sum(map(ord, category)) % len(_FALLBACK)]


@dataclass(frozen=True)
class _Row:
    """The events of one sub-row of one lane, sorted by start (they do not overlap)."""

    starts: np.ndarray
    ends: np.ndarray
    indices: np.ndarray


def assign_rows(events: tuple[TraceEvent, ...] | list[TraceEvent]) -> list[int]:
    """Sub-row of each event within its lane: the lowest row free at its start (nested events go deeper)."""
    order = sorted(range(len(events)), key=lambda i: (events[i].start_s, -events[i].duration_s))
    row_ends: dict[str, list[float]] = {}
    rows = [0] * len(events)
    for i in order:
        event = events[i]
        ends = row_ends.setdefault(event.lane, [])
        slack = 1e-9 * abs(event.start_s)  # back-to-back events whose float end/start differ by rounding
        for r, end in enumerate(ends):
            if end <= event.start_s + slack:
                ends[r] = event.end_s
                rows[i] = r
                break
        else:
            ends.append(event.end_s)
            rows[i] = len(ends) - 1
    return rows


def describe(event: TraceEvent) -> str:
    """The hover text for an event, with units."""
    lines = [event.name, f"lane: {event.lane}   category: {event.category}",
             f"start: {format_si(event.start_s, 's')}   duration: {format_si(event.duration_s, 's')}"]
    if event.location:
        lines.append(f"location: {event.location}")
    if event.flops is not None:
        rate = format_si(event.flops / event.duration_s, "FLOP/s") if event.duration_s > 0 else "\u2014"
        lines.append(f"FLOPs: {format_si(event.flops, 'FLOP')}   achieved: {rate}")
    if event.bytes is not None:
        lines.append(f"bytes: {format_bytes(event.bytes)}")
    return "\n".join(lines)


class TimelineView(QWidget):
    """``set_trace(trace)`` draws it; ``eventHovered`` emits the event under the mouse (or None)."""

    eventHovered = Signal(object)

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.plot = pg.PlotWidget()
        self.plot.setBackground("w")
        self.plot.setMouseEnabled(x=True, y=False)
        self.plot.invertY(True)
        self.plot.hideButtons()
        self.plot.setMenuEnabled(False)
        self.plot.showGrid(x=True, y=False, alpha=0.25)
        self.plot.setLabel("bottom", "time", units="s")
        self.plot.getAxis("bottom").enableAutoSIPrefix(True)
        self.legend = QLabel()  # below the plot, so it never hides events
        self.legend.setTextFormat(Qt.TextFormat.RichText)
        self.note = QLabel()
        self.note.setWordWrap(True)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.plot, 1)
        layout.addWidget(self.legend)
        layout.addWidget(self.note)
        self.trace: Trace | None = None
        self.bars: dict[str, pg.BarGraphItem] = {}
        self._rows: dict[tuple[int, int], _Row] = {}
        self._rows_per_lane: list[int] = []
        self.plot.scene().sigMouseMoved.connect(self._on_mouse_moved)

    # ------------------------------------------------------------------ drawing
    def set_trace(self, trace: Trace | None) -> None:
        for item in self.bars.values():
            self.plot.removeItem(item)
        self.legend.setText("")
        self.bars, self._rows, self._rows_per_lane = {}, {}, []
        self.trace = trace
        axis = self.plot.getAxis("left")
        if trace is None or not trace.events:
            axis.setTicks([[]])
            self.note.setText("")
            return
        events = trace.events
        lane_index = {lane: i for i, lane in enumerate(trace.lanes)}
        rows = assign_rows(events)
        counts = [0] * len(trace.lanes)
        for event, row in zip(events, rows):
            counts[lane_index[event.lane]] = max(counts[lane_index[event.lane]], row + 1)
        self._rows_per_lane = counts
        lane = np.array([lane_index[e.lane] for e in events])
        row = np.array(rows)
        start = np.array([e.start_s for e in events])
        duration = np.array([e.duration_s for e in events])
        height = (1 - 2 * _LANE_PAD) / np.array(counts, dtype=float)[lane]
        y0 = lane + _LANE_PAD + row * height
        categories = np.array([e.category for e in events])
        for category in trace.categories():
            mask = categories == category
            colour = colour_for(category)
            bar = pg.BarGraphItem(x0=start[mask], width=duration[mask], y0=y0[mask],
                                  height=height[mask] * 0.9, brush=pg.mkBrush(colour),
                                  pen=pg.mkPen(pg.mkColor(colour).darker(130), width=1))
            self.plot.addItem(bar)
            self.bars[category] = bar
        for key in sorted(set(zip(lane.tolist(), rows))):
            idx = np.flatnonzero((lane == key[0]) & (row == key[1]))
            idx = idx[np.argsort(start[idx], kind="stable")]
            self._rows[key] = _Row(starts=start[idx], ends=start[idx] + duration[idx], indices=idx)
        axis.setTicks([[(i + 0.5, name) for i, name in enumerate(trace.lanes)]])
        metrics = QFontMetrics(axis.style.get("tickFont") or self.plot.font())
        axis.setWidth(min(260, max(metrics.horizontalAdvance(name) for name in trace.lanes) + 16))
        self.legend.setText("&nbsp;&nbsp;".join(
            f'<span style="color:{colour_for(c)}">\u25a0</span>&nbsp;{c}' for c in trace.categories()))
        notes = list(trace.warnings)
        self.note.setText("\n".join(notes))
        self.note.setVisible(bool(notes))
        self.reset_view()

    def reset_view(self) -> None:
        """Show the whole trace; keep zoom within it."""
        if self.trace is None or not self.trace.events:
            return
        first = min(e.start_s for e in self.trace.events)
        last = max(e.end_s for e in self.trace.events)
        span = max(last - first, 1e-12)
        pad = 0.02 * span
        box = self.plot.getViewBox()
        box.setLimits(xMin=first - pad, xMax=last + pad, minXRange=span * 1e-7,
                      yMin=0, yMax=len(self.trace.lanes))
        box.setYRange(0, len(self.trace.lanes), padding=0)
        box.setXRange(first - pad, last + pad, padding=0)

    # ------------------------------------------------------------------ hit testing
    def event_at(self, x_s: float, y: float, tolerance_s: float = 0.0) -> TraceEvent | None:
        """The event drawn at time ``x_s`` and lane coordinate ``y`` (lane i spans y in [i, i+1))."""
        if self.trace is None or not self._rows_per_lane or not math.isfinite(y) or y < 0:
            return None
        lane = math.floor(y)
        if lane >= len(self._rows_per_lane):
            return None
        height = (1 - 2 * _LANE_PAD) / self._rows_per_lane[lane]
        row = math.floor((y - lane - _LANE_PAD) / height)
        found = self._rows.get((lane, row))
        if found is None:
            return None
        k = int(np.searchsorted(found.starts, x_s + tolerance_s, side="right")) - 1
        if k >= 0 and x_s <= found.ends[k] + tolerance_s:
            return self.trace.events[int(found.indices[k])]
        return None

    def _on_mouse_moved(self, scene_pos) -> None:
        box = self.plot.getViewBox()
        if not box.sceneBoundingRect().contains(scene_pos):
            return
        point = box.mapSceneToView(scene_pos)
        pixel_s = box.viewPixelSize()[0]
        event = self.event_at(point.x(), point.y(), tolerance_s=2 * pixel_s)
        if event is None:
            QToolTip.hideText()
        else:
            QToolTip.showText(QCursor.pos(), describe(event), self.plot)
        self.eventHovered.emit(event)
