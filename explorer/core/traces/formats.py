"""The trace formats, each with the test that recognizes it and its loader: the one place that decides a
trace file's format (``detect_format``). ``explorer.core.importers`` registers one importer per entry of
:data:`TRACE_FORMATS`, whose ``sniff`` asks :func:`detect_format`, so the app and the library agree.

Recognition reads only the head of the file (:data:`HEAD_BYTES`): the first non-blank character for JSON,
else the first line that is not an ``==PROF==`` banner, split on its delimiter, and its column names.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from explorer.core.traces.chrome import load_chrome
from explorer.core.traces.csv_table import normalize, sniff_delimiter
from explorer.core.traces.model import FORMATS, Trace, TraceError
from explorer.core.traces.nsight import load_nsight
from explorer.core.traces.torq import load_torq_annotated, load_torq_runtime, load_torq_trace
from explorer.core.units import UnitError, parse_si

HEAD_BYTES = 64 * 1024  # Nsight's raw header lists hundreds of metrics; its 'Kernel Name' comes early


@dataclass(frozen=True)
class Head:
    """What recognition looks at: the head's text, its first header line, and that line's column names."""

    text: str
    header: str
    cells: frozenset[str]


@dataclass(frozen=True)
class TraceFormat:
    name: str  # one of FORMATS: a stable id (load_trace's fmt=, the importer's name)
    label: str  # for people: file dialogs, error messages
    suffixes: tuple[str, ...]
    matches: Callable[[Head], bool]
    load: Callable[[str | Path, float | None], Trace]


#: In the order they are tried: the first whose test matches decides.
TRACE_FORMATS: tuple[TraceFormat, ...] = (
    TraceFormat("chrome", "Chrome / PyTorch trace JSON", (".json",),
                lambda h: h.text.lstrip()[:1] in ("{", "["), lambda p, _clock: load_chrome(p)),
    TraceFormat("nsight", "Nsight Compute raw CSV", (".csv", ".txt"),
                lambda h: "kernel name" in h.cells, lambda p, _clock: load_nsight(p)),
    TraceFormat("torq_runtime", "Torq runtime.csv", (".csv",),
                lambda h: "time_since_open" in h.cells, lambda p, _clock: load_torq_runtime(p)),
    TraceFormat("torq_annotated", "Torq annotated runtime CSV", (".csv",),
                lambda h: bool(h.cells & {"nss program index", "nss_program_index"}),
                lambda p, _clock: load_torq_annotated(p)),
    TraceFormat("torq_trace", "Torq compile-time trace.csv", (".csv",),
                lambda h: {"id", "start", "end"} <= h.cells, load_torq_trace),
)
BY_NAME = {f.name: f for f in TRACE_FORMATS}
assert set(BY_NAME) == set(FORMATS)


def read_head(path: str | Path) -> Head:
    """The first :data:`HEAD_BYTES` of the file as text (UTF-8, BOM tolerated); a TraceError if the file
    cannot be read, is empty, or is not text."""
    p = Path(path)
    try:
        with p.open("rb") as f:
            data = f.read(HEAD_BYTES)
    except OSError as exc:
        raise TraceError(f"cannot be read ({exc.strerror or exc})", file=str(p)) from None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        if len(data) < HEAD_BYTES or exc.start < len(data) - 3:  # not a character cut at the end of the head
            raise TraceError(f"is not UTF-8 text (byte {exc.start}); is it a binary report?",
                             file=str(p)) from None
        text = data[:exc.start].decode("utf-8-sig")
    if len(data) < HEAD_BYTES and not text.strip():
        raise TraceError("is empty", file=str(p))
    header = next((line for line in text.splitlines()
                   if line.strip() and not line.lstrip().startswith("==")), "")
    cells = frozenset(normalize(c).strip('"') for c in header.split(sniff_delimiter(header)))
    return Head(text, header, cells)


def detect_format(path: str | Path) -> str:
    """Which of :data:`FORMATS` the file is, judged from its content (not its name)."""
    head = read_head(path)
    for fmt in TRACE_FORMATS:
        if fmt.matches(head):
            return fmt.name
    shown = head.header.strip()[:120]
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
    return BY_NAME[fmt or detect_format(path)].load(path, clock_hz)
