"""Widgets for imported profiler traces: the lane timeline and the top-kernels table."""

from explorer.ui.traces.kernel_table import KernelTableModel
from explorer.ui.traces.timeline_view import TimelineView

__all__ = ["KernelTableModel", "TimelineView"]
