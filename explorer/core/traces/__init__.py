"""Import measured profiler traces and place their kernels on the roofline (Qt-free).

``load_trace(path)`` tells the format from the file's content and returns a :class:`Trace`;
``roofline_points`` / ``top_kernels`` / ``overlap_summary`` analyse it. See docs/traces.md.
"""

from __future__ import annotations

from pathlib import Path

from explorer.core.traces.chrome import load_chrome
from explorer.core.traces.csv_table import normalize, read_text, sniff_delimiter
from explorer.core.traces.model import FORMATS, Trace, TraceError, TraceEvent
from explorer.core.traces.nsight import load_nsight
from explorer.core.traces.overlap import OverlapSummary, overlap_summary
from explorer.core.traces.roofline_points import (
    RooflinePoints,
    TopKernels,
    kernel_events,
    layer_work,
    roofline_points,
    top_kernels,
)
from explorer.core.traces.torq import load_torq_annotated, load_torq_runtime, load_torq_trace
from explorer.core.units import UnitError, parse_si

__all__ = [
    "FORMATS", "OverlapSummary", "RooflinePoints", "TopKernels", "Trace", "TraceError", "TraceEvent",
    "detect_format", "kernel_events", "layer_work", "load_trace", "overlap_summary", "roofline_points",
    "top_kernels",
]


def detect_format(path: str | Path) -> str:
    """Which of :data:`FORMATS` the file is, judged from its content (not its name)."""
    text = read_text(path)
    if text.lstrip()[:1] in ("{", "["):
        return "chrome"
    header = next((line for line in text.splitlines()
                   if line.strip() and not line.lstrip().startswith("==")), "")
    cells = {normalize(c) for c in header.split(sniff_delimiter(header))}
    cells = {c.strip('"') for c in cells}
    if "kernel name" in cells:
        return "nsight"
    if "time_since_open" in cells:
        return "torq_runtime"
    if cells & {"nss program index", "nss_program_index"}:
        return "torq_annotated"
    if {"id", "start", "end"} <= cells:
        return "torq_trace"
    shown = header.strip()[:120]
    raise TraceError(
        f"cannot tell the trace format from its first line '{shown}'. Expected a Chrome/PyTorch trace JSON, "
        "an Nsight Compute raw CSV ('Kernel Name' column), a Torq trace.csv (ID, Start, End, Location, "
        "Op Type), runtime.csv (ID, time_since_open, time_since_start, Location) or annotated runtime CSV "
        f"('NSS Program Index'); pass fmt= one of {', '.join(FORMATS)}", file=str(path), line=1)


def load_trace(path: str | Path, fmt: str | None = None, clock_hz: float | str | None = None) -> Trace:
    """Read a trace file. ``fmt`` overrides detection; ``clock_hz`` (Hz, or text such as '800 MHz') is
    needed for Torq trace.csv, whose times are clock cycles."""
    if fmt is not None and fmt not in FORMATS:
        raise TraceError(f"unknown format '{fmt}'; expected one of {', '.join(FORMATS)}", file=str(path),
                         field="fmt")
    if isinstance(clock_hz, str):
        try:
            clock_hz = parse_si(clock_hz, "frequency", "clock_hz")
        except UnitError as exc:
            raise TraceError(exc.reason, file=str(path), field="clock_hz") from None
    kind = fmt or detect_format(path)
    if kind == "chrome":
        return load_chrome(path)
    if kind == "nsight":
        return load_nsight(path)
    if kind == "torq_trace":
        return load_torq_trace(path, clock_hz)
    if kind == "torq_runtime":
        return load_torq_runtime(path)
    return load_torq_annotated(path)
