"""What an imported profiler trace is: events on lanes, in seconds, with optional FLOP and byte counts.

Every importer (Chrome/PyTorch JSON, Nsight Compute CSV, Synaptics Torq CSVs) produces a :class:`Trace`;
the roofline points, the kernel table and the timeline read nothing else.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

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
