"""Import measured profiler traces and place their kernels on the roofline (Qt-free).

``load_trace(path)`` tells the format from the file's content (``formats.TRACE_FORMATS``, the one place that
decides it; ``explorer.core.importers`` registers one importer per format from it) and returns a :class:`Trace`;
``roofline_points`` / ``top_kernels`` / ``overlap_summary`` analyse it. See docs/traces.md.
"""

from __future__ import annotations

from explorer.core.traces.formats import TRACE_FORMATS, TraceFormat, detect_format, load_trace
from explorer.core.traces.model import FORMATS, Trace, TraceError, TraceEvent
from explorer.core.traces.overlap import OverlapSummary, overlap_summary
from explorer.core.traces.roofline_points import (
    RooflinePoints,
    TopKernels,
    kernel_events,
    layer_work,
    roofline_points,
    top_kernels,
)

__all__ = [
    "FORMATS", "TRACE_FORMATS", "OverlapSummary", "RooflinePoints", "TopKernels", "Trace", "TraceError",
    "TraceEvent", "TraceFormat", "detect_format", "kernel_events", "layer_work", "load_trace", "overlap_summary",
    "roofline_points", "top_kernels",
]
