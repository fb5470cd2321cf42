"""Import measured profiler traces and place their kernels on the roofline (Qt-free).

``load_trace(path)`` tells the format from the file's content (``formats.TRACE_FORMATS``, the one place that
decides it; ``explorer.core.importers`` registers one importer per format from it) and returns a :class:`Trace`;
``roofline_points`` / ``top_kernels`` / ``overlap_summary`` analyse it. See docs/traces.md.

The file readers (``formats`` and the modules of each format) and ``overlap`` are imported when one of their names
is first asked for (issue 22: the desktop app's first window needs the Trace and the roofline points, not the
readers).
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING

from explorer.core.traces.model import FORMATS, Trace, TraceError, TraceEvent
from explorer.core.traces.roofline_points import (
    RooflinePoints,
    TopKernels,
    kernel_events,
    layer_work,
    roofline_points,
    top_kernels,
)

if TYPE_CHECKING:
    from explorer.core.traces.formats import TRACE_FORMATS, TraceFormat, detect_format, load_trace
    from explorer.core.traces.overlap import OverlapSummary, overlap_summary

_LATER = {"TRACE_FORMATS": "formats", "TraceFormat": "formats", "detect_format": "formats", "load_trace": "formats",
          "OverlapSummary": "overlap", "overlap_summary": "overlap"}

__all__ = [
    "FORMATS", "TRACE_FORMATS", "OverlapSummary", "RooflinePoints", "TopKernels", "Trace", "TraceError",
    "TraceEvent", "TraceFormat", "detect_format", "kernel_events", "layer_work", "load_trace", "overlap_summary",
    "roofline_points", "top_kernels",
]


def __getattr__(name: str):
    module = _LATER.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
