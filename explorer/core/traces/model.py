"""What an imported profiler trace is: events on lanes, in seconds, with optional FLOP and byte counts.

Every importer (Chrome/PyTorch JSON, Nsight Compute CSV, Synaptics Torq CSVs) produces a :class:`Trace`;
the roofline points, the kernel table and the timeline read nothing else.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from explorer.core.files import names

#: Categories the importers use. Others may appear (a Chrome trace's own ``cat`` values, lower-cased).
COMPUTE = "compute"
DMA_IN = "dma_in"
DMA_OUT = "dma_out"
MEMCPY = "memcpy"
MEMSET = "memset"
CPU_OP = "cpu_op"
ANNOTATION = "annotation"
PROGRAM = "program"

#: Categories that move data rather than compute (used by the overlap summary).
TRANSFER_CATEGORIES = frozenset({DMA_IN, DMA_OUT, MEMCPY, MEMSET})

FORMATS = ("chrome", "nsight", "torq_trace", "torq_runtime", "torq_annotated")


class TraceError(ValueError):
    """A trace file could not be read. The message names the file, the line and the field where known."""

    def __init__(self, message: str, *, file: str | None = None, line: int | None = None,
                 field: str | None = None):
        where = []
        if file:
            where.append(str(file))
        if line is not None:
            where.append(f"line {line}")
        if field:
            where.append(f"field '{field}'")
        super().__init__(f"{', '.join(where)}: {message}" if where else message)
        self.file = file
        self.line = line
        self.field = field
        self.reason = message


@dataclass(frozen=True)
class TraceEvent:
    """One interval on one lane. Times are seconds from the start of the trace.

    ``flops``/``bytes`` are what the trace itself measured or counted (None when it says nothing);
    ``location`` is where the event came from in the model (a record_function range, an MLIR location),
    used to match it to a layer of the analytical model.
    """

    name: str
    lane: str
    start_s: float
    duration_s: float
    category: str
    flops: float | None = None
    bytes: float | None = None
    location: str | None = None

    def __post_init__(self):
        if not math.isfinite(self.start_s):
            raise ValueError(f"event '{self.name}': start_s must be finite, got {self.start_s}")
        if not math.isfinite(self.duration_s) or self.duration_s < 0:
            raise ValueError(f"event '{self.name}': duration_s must be finite and >= 0, "
                             f"got {self.duration_s}")

    @property
    def end_s(self) -> float:
        return self.start_s + self.duration_s


@dataclass(frozen=True)
class Trace:
    """An imported trace.

    ``source_format`` is one of :data:`FORMATS`; ``lanes`` lists lane names in display order;
    ``clock_hz`` is the clock used to turn cycles into seconds (None when the file had times);
    ``warnings`` says what the importer assumed or could not read, in words a user can act on.
    """

    source_format: str
    events: tuple[TraceEvent, ...]
    lanes: tuple[str, ...]
    clock_hz: float | None = None
    warnings: tuple[str, ...] = ()
    source: str | None = None

    def __post_init__(self):
        if self.source_format not in FORMATS:
            raise ValueError(f"source_format must be one of {FORMATS}, got {self.source_format!r}")
        missing = {e.lane for e in self.events} - set(self.lanes)
        if missing:
            raise ValueError(f"events on lanes not listed in lanes: {sorted(missing)}")

    @property
    def span_s(self) -> float:
        """From the first start to the last end (0 for an empty trace)."""
        if not self.events:
            return 0.0
        return max(e.end_s for e in self.events) - min(e.start_s for e in self.events)

    def events_on(self, lane: str) -> tuple[TraceEvent, ...]:
        return tuple(e for e in self.events if e.lane == lane)

    def categories(self) -> tuple[str, ...]:
        """Categories present, in order of first appearance."""
        return tuple(dict.fromkeys(e.category for e in self.events))


def ordered_lanes(events: list[TraceEvent] | tuple[TraceEvent, ...],
                  preferred: tuple[str, ...] = ()) -> tuple[str, ...]:
    """Lane names: the ``preferred`` ones that occur first (in that order), then the rest by first use."""
    used = dict.fromkeys(e.lane for e in events)
    head = [lane for lane in preferred if lane in used]
    return tuple(head + [lane for lane in used if lane not in head])


_EVENT_FIELDS = ("name", "lane", "start_s", "duration_s", "category", "flops", "bytes", "location")


def trace_to_dict(trace: Trace) -> dict:
    """The trace as plain JSON data: its events by column (the project file keeps the trace itself, so it reopens
    on a machine that does not have the original file)."""
    return {"source_format": trace.source_format, "source": trace.source, "clock_hz": trace.clock_hz,
            "lanes": list(trace.lanes), "warnings": list(trace.warnings),
            "events": {f: [getattr(e, f) for e in trace.events] for f in _EVENT_FIELDS}}


def trace_from_dict(data, where: str = "trace") -> Trace:
    """Read :func:`trace_to_dict`'s output; ``ValueError`` names the field that is wrong."""
    if not isinstance(data, dict):
        raise ValueError(f"{where}: expected an object")
    unknown = sorted(set(data) - {"source_format", "source", "clock_hz", "lanes", "warnings", "events"})
    if unknown:
        raise ValueError(f"{where}: unknown keys {names(unknown)}")
    events = data.get("events")
    if not isinstance(events, dict) or set(events) != set(_EVENT_FIELDS):
        raise ValueError(f"{where}.events: expected the columns {', '.join(_EVENT_FIELDS)}")
    columns = [events[f] for f in _EVENT_FIELDS]
    if not all(isinstance(c, list) for c in columns) or len({len(c) for c in columns}) > 1:
        raise ValueError(f"{where}.events: expected lists of one length")
    for name in ("lanes", "warnings"):
        if not isinstance(data.get(name, []), list) or not all(isinstance(x, str) for x in data.get(name, [])):
            raise ValueError(f"{where}.{name}: expected a list of strings")
    try:
        rows = tuple(TraceEvent(*row) for row in zip(*columns))
        for i, e in enumerate(rows):
            if not (isinstance(e.name, str) and isinstance(e.lane, str) and isinstance(e.category, str)):
                raise ValueError(f"event {i}: name, lane and category must be strings")
        return Trace(data.get("source_format"), rows, tuple(data.get("lanes", [])), data.get("clock_hz"),
                     tuple(data.get("warnings", [])), data.get("source"))
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{where}: {exc}") from None
