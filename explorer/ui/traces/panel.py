"""The "Trace" dock: an imported profiler trace as a lane timeline above its longest kernels.

The kernel table's roof columns (roof, efficiency, gap, bound) are against the device in focus at the
analysis precision, the same roof the roofline panel draws the measured kernels against; they are "—" when
no device is selected or it has no peak at the precision. The trace is the session's (``workspace.trace``,
loaded by the ``SetTrace`` command, saved in the project).
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QSortFilterProxyModel, Qt
from PySide6.QtWidgets import QHeaderView, QLabel, QSplitter, QTableView, QVBoxLayout, QWidget

from explorer.core.analysis.roofline_measured import measured_roofline, measured_top_kernels
from explorer.core.traces import Trace
from explorer.core.units import format_si

from ..binding import bind_many
from ..widgets.on_screen import OnScreenUpdate
from .kernel_table import KernelTableModel
from .timeline_view import TimelineView

TOP_KERNELS = 25
EMPTY_TEXT = ("No trace loaded. File \u2192 Import Trace\u2026 reads a PyTorch/Chrome trace (JSON), an Nsight "
              "Compute raw CSV or a Synaptics Torq trace.csv / runtime.csv; its kernels then also appear as "
              "crosses on the Roofline.")


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


class TracePanel(QWidget):
    """``set_trace(trace)`` shows a trace (None clears it); the kernel table follows the device in focus."""

    def __init__(self, workspace, parent: QWidget | None = None):
        super().__init__(parent)
        self.workspace = workspace
        self.setObjectName("TracePanel")
        self.trace: Trace | None = None
        self.summary = QLabel(EMPTY_TEXT)
        self.summary.setWordWrap(True)
        self.summary.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.timeline = TimelineView()
        self.kernels = KernelTableModel(parent=self)
        self.proxy = QSortFilterProxyModel(self)
        self.proxy.setSourceModel(self.kernels)
        self.proxy.setSortRole(KernelTableModel.SORT_ROLE)
        self.table = QTableView()
        self.table.setModel(self.proxy)
        self.table.setSortingEnabled(True)
        self.table.sortByColumn(2, Qt.SortOrder.DescendingOrder)  # total time, longest first
        self.table.verticalHeader().hide()
        self.table.verticalHeader().setDefaultSectionSize(22)
        self.table.setAlternatingRowColors(True)
        self.table.setSelectionBehavior(QTableView.SelectionBehavior.SelectRows)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        header.setStretchLastSection(True)
        splitter = QSplitter(Qt.Orientation.Vertical)
        splitter.addWidget(self.timeline)
        splitter.addWidget(self.table)
        splitter.setStretchFactor(0, 3)
        splitter.setStretchFactor(1, 2)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addWidget(self.summary)
        layout.addWidget(splitter, 1)
        # one table refresh per burst of workspace changes, while on screen (not behind another tab)
        self.updates = OnScreenUpdate(self, self.refresh_kernels)
        bind_many(self, [(workspace.analysis_updated, self._schedule), (workspace.device_focused, self._schedule),
                         (workspace.changed, self._on_changed)])
        splitter.setVisible(False)
        self._splitter = splitter
        if workspace.trace is not None:
            self.set_trace(workspace.trace)

    def _on_changed(self, changes) -> None:
        if "trace" in changes and self.workspace.trace is not self.trace:
            self.set_trace(self.workspace.trace)

    def set_trace(self, trace: Trace | None) -> None:
        """Show ``trace`` (the session's, on every change of it; None clears it)."""
        self.trace = trace
        self._splitter.setVisible(trace is not None)
        self.timeline.set_trace(trace)
        self.refresh_kernels()

    def _schedule(self, *_args) -> None:
        if self.trace is not None:
            self.updates.request()

    def _device_index(self, analysis) -> int:
        if analysis is None or not len(analysis.devices):
            return -1
        ids = analysis.devices.ids
        focus = self.workspace.focused_device
        return ids.index(focus) if focus in ids else 0

    def refresh_kernels(self) -> None:
        self.updates.cancel()
        if self.trace is None:
            self.kernels.set_top_kernels(None)
            self.summary.setText(EMPTY_TEXT)
            return
        analysis = self.workspace.analysis
        measured = measured_roofline(self.trace, analysis, max(self._device_index(analysis), 0))
        self.kernels.set_top_kernels(measured_top_kernels(self.trace, measured, TOP_KERNELS))
        self.table.resizeColumnsToContents()
        self.table.horizontalHeader().resizeSection(0, min(self.table.columnWidth(0), 320))
        name = Path(self.trace.source).name if self.trace.source else "trace"
        roof = (f"roof: {measured.device_name} at {measured.precision}" if measured.points is not None else
                f"no roof ({measured.note})")
        self.summary.setText(
            f"<b>{name}</b> ({self.trace.source_format}): {_count(len(self.trace.events), 'event')} on "
            f"{_count(len(self.trace.lanes), 'lane')} over {format_si(self.trace.span_s, 's')}; "
            f"{_count(measured.kernels, 'kernel')}, by name below, longest first ({roof}).")

    def lanes(self) -> tuple[str, ...]:
        """The lane names the timeline shows (for tests and the status bar)."""
        ticks = self.timeline.plot.getAxis("left")._tickLevels
        return tuple(label for _, label in ticks[0]) if ticks else ()
