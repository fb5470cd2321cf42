"""Import the Synaptics Torq NPU profiles: the compile-time ``trace.csv`` and the runtime CSVs.

* Compile-time ``trace.csv`` (``torq-compile --torq-enable-profiling --torq-dump-profiling=trace.csv``):
  columns ``ID, Start, End, Location, Op Type``; Start/End are estimated clock cycles, so a clock frequency
  is needed to put them in seconds. ID prefixes: ``DI#`` DMA in, ``DO#`` DMA out, ``S#`` compute.
* Runtime ``runtime.csv`` (``iree-run-module --torq_profile=runtime.csv``): ``ID, time_since_open,
  time_since_start, Location`` in microseconds; each block ends at ``time_since_open`` and lasted
  ``time_since_start`` (the time since the previous block).
* Annotated runtime CSV (``annotate_profiling.py``): one row per hardware operation of each NSS program,
  with the program's start/end/total in microseconds and flags saying which slices and DMA engines the
  program used. Both the documented column titles and the script's own snake_case names are read.

Delimiters ``,`` and ``;`` are both accepted (the Torq tools write ``;`` for the runtime files).
"""

from __future__ import annotations

import re
from pathlib import Path

from explorer.core.traces.csv_table import Row, Table, parse_table, read_text
from explorer.core.traces.model import (
    COMPUTE,
    DMA_IN,
    DMA_OUT,
    PROGRAM,
    Trace,
    TraceError,
    TraceEvent,
    ordered_lanes,
)
from explorer.core.units import format_si

LANE_DMA_IN, LANE_DMA_OUT, LANE_COMPUTE = "DMA in", "DMA out", "compute"
_PREFIXES = {"DI": (LANE_DMA_IN, DMA_IN), "DO": (LANE_DMA_OUT, DMA_OUT), "S": (LANE_COMPUTE, COMPUTE)}
_DMA_OP_TYPES = {"DMA_IN": (LANE_DMA_IN, DMA_IN), "DMA_OUT": (LANE_DMA_OUT, DMA_OUT)}
_US = 1e-6
_TRACE_FMT = "Torq compile-time trace.csv"
_RUNTIME_FMT = "Torq runtime.csv"
_ANNOTATED_FMT = "Torq annotated runtime CSV"


def _cells(table: Table, row: Row, stretch_col: int) -> tuple[str, ...]:
    """Row cells; extra fields from an unquoted delimiter inside ``stretch_col`` are joined back into it."""
    cells, width = row.cells, len(table.header)
    if len(cells) > width:
        extra = len(cells) - width
        merged = table.delimiter.join(cells[stretch_col:stretch_col + extra + 1])
        cells = cells[:stretch_col] + (merged,) + cells[stretch_col + extra + 1:]
    elif len(cells) < width:
        raise TraceError(f"has {len(cells)} fields but the header has {width}", file=table.file,
                         line=row.line)
    return cells


def load_torq_trace(path: str | Path, clock_hz: float | None) -> Trace:
    """Read a compile-time ``trace.csv``; cycles become seconds at ``clock_hz`` (required, in Hz)."""
    file = str(path)
    if clock_hz is None:
        raise TraceError("Torq trace.csv times are clock cycles; give the NPU clock frequency "
                         "(e.g. clock_hz=800e6) to convert them to seconds", file=file, field="clock_hz")
    if not clock_hz > 0:
        raise TraceError(f"must be a positive frequency in Hz, got {clock_hz}", file=file, field="clock_hz")
    table = parse_table(read_text(path), file, fmt=_TRACE_FMT)
    cols = {name: table.require(*aliases, fmt=_TRACE_FMT) for name, aliases in (
        ("ID", ("ID",)), ("Start", ("Start",)), ("End", ("End",)), ("Location", ("Location",)),
        ("Op Type", ("Op Type", "OpType", "Op_Type")))}
    events, unknown = [], set()
    for row in table.rows:
        cells = _cells(table, row, cols["Location"])
        full = Row(row.line, cells)
        ident, op_type = cells[cols["ID"]].strip(), cells[cols["Op Type"]].strip()
        if not ident:
            raise TraceError("is empty", file=file, line=row.line, field="ID")
        start, end = table.number(full, cols["Start"]), table.number(full, cols["End"])
        if end < start:
            raise TraceError(f"End {end:g} is before Start {start:g}", file=file, line=row.line, field="End")
        lane, category = _classify(ident, op_type, file, row.line, unknown)
        events.append(TraceEvent(name=op_type or ident, lane=lane, start_s=start / clock_hz,
                                 duration_s=(end - start) / clock_hz, category=category,
                                 location=cells[cols["Location"]].strip() or None))
    if not events:
        raise TraceError("has a header but no rows", file=file, line=table.header_line)
    warnings = [(f"times converted from clock cycles at {format_si(clock_hz, 'Hz')} (the clock frequency "
                "given on import); trace.csv holds the compiler's cycle estimates, not measurements")]
    if unknown:
        warnings.append("ID prefixes other than DI/DO/S put on their own lanes: "
                        f"{', '.join(sorted(unknown))}")
    return Trace(source_format="torq_trace", events=tuple(sorted(events, key=lambda e: e.start_s)),
                 lanes=ordered_lanes(events, (LANE_DMA_IN, LANE_COMPUTE, LANE_DMA_OUT)),
                 clock_hz=float(clock_hz), warnings=tuple(warnings), source=file)


def _classify(ident: str, op_type: str, file: str, line: int, unknown: set) -> tuple[str, str]:
    match = re.match(r"([A-Za-z_]+)", ident)
    prefix = match.group(1).upper() if match else ""
    by_op = _DMA_OP_TYPES.get(op_type.upper())
    by_id = _PREFIXES.get(prefix)
    if by_id is None:
        if by_op is not None:
            return by_op
        unknown.add(prefix or ident)
        return prefix or ident, "other"
    dma_id_without_dma_op = by_op is None and by_id[1] != COMPUTE and bool(op_type)
    if (by_op is not None and by_op != by_id) or dma_id_without_dma_op:
        raise TraceError(f"ID '{ident}' marks a {by_id[1].upper()} operation but Op Type is '{op_type}' "
                         "(DI# = DMA_IN, DO# = DMA_OUT, S# = compute)", file=file, line=line, field="Op Type")
    return by_id


def load_torq_runtime(path: str | Path) -> Trace:
    """Read ``runtime.csv``: each block ends at ``time_since_open`` and lasted ``time_since_start`` (µs)."""
    file = str(path)
    table = parse_table(read_text(path), file, fmt=_RUNTIME_FMT)
    id_col = table.require("ID", "dispatch_id", fmt=_RUNTIME_FMT)
    open_col = table.require("time_since_open", fmt=_RUNTIME_FMT)
    since_col = table.require("time_since_start", fmt=_RUNTIME_FMT)
    loc_col = table.find("Location", "mlir_loc")
    spans, previous = [], None
    for row in table.rows:
        cells = _cells(table, row, loc_col) if loc_col is not None else row.cells
        full = Row(row.line, cells)
        end, duration = table.number(full, open_col), table.number(full, since_col)
        if duration < 0:
            raise TraceError(f"{duration:g} µs is negative", file=file, line=row.line,
                             field="time_since_start")
        if previous is not None and end < previous:
            raise TraceError(f"{end:g} µs goes back in time (previous row: {previous:g} µs)", file=file,
                             line=row.line, field="time_since_open")
        previous = end
        location = cells[loc_col].strip() if loc_col is not None else ""
        name = location or f"block {cells[id_col].strip()}"
        spans.append((name, end - duration, duration, location or None))
    if not spans:
        raise TraceError("has a header but no rows", file=file, line=table.header_line)
    origin = min(s[1] for s in spans)
    events = tuple(TraceEvent(name=n, lane="NPU", start_s=(s - origin) * _US, duration_s=d * _US,
                              category=COMPUTE, location=loc) for n, s, d, loc in spans)
    return Trace(source_format="torq_runtime", events=events, lanes=("NPU",), source=file,
                 warnings=(("times are microseconds measured by the runtime; blocks are not split into DMA "
                           "and compute (use the annotated CSV for that)"),))


_ANNOTATED_COLUMNS = {
    "program": ("NSS Program Index", "nss_program_index"),
    "operation": ("torq-hw Operation in program", "operation"),
    "slice": ("Slice ID (if applicable)", "Slice ID", "slice_id"),
    "invocation": ("Invocation Name", "Invocation Name (if applicable)", "invocation_name"),
    "start": ("NSS Program Start Timestamp [us]", "nss_program_timestamp_start"),
    "end": ("NSS Program End Timestamp [us]", "nss_program_timestamp_end"),
    "total": ("NSS Program Total Time [us]", "nss_program_timestamp_total"),
    "dma_in": ("DMA In Used in NSS Program", "dma_in_used_in_program"),
    "dma_out": ("DMA Out Used in NSS Program", "dma_out_used_in_program"),
}
_SLICE_FLAG = re.compile(r"^(?:slice (\d+) used in nss program|slice_used_(\d+)_in_program)$")


def load_torq_annotated(path: str | Path) -> Trace:
    """Read the annotated runtime CSV: per NSS program, events on the slices and DMA engines it used."""
    file = str(path)
    table = parse_table(read_text(path), file, fmt=_ANNOTATED_FMT)
    cols = {key: table.find(*aliases) for key, aliases in _ANNOTATED_COLUMNS.items()}
    for key in ("program", "start", "end"):
        if cols[key] is None:
            table.require(*_ANNOTATED_COLUMNS[key], fmt=_ANNOTATED_FMT)
    slice_flags = {}
    for index, title in enumerate(table.header):
        match = _SLICE_FLAG.match(" ".join(title.strip().lower().split()))
        if match:
            slice_flags[int(match.group(1) or match.group(2))] = index

    programs: dict[str, dict] = {}
    warnings: list[str] = []
    for row in table.rows:
        key = table.cell(row, cols["program"])
        if not key:
            raise TraceError("is empty", file=file, line=row.line, field=table.header[cols["program"]])
        start, end = table.number(row, cols["start"]), table.number(row, cols["end"])
        if end < start:
            raise TraceError(f"end {end:g} µs is before start {start:g} µs", file=file, line=row.line,
                             field=table.header[cols["end"]])
        prog = programs.setdefault(key, {"start": start, "end": end, "slices": {}, "dma_in": False,
                                         "dma_out": False, "line": row.line})
        prog["start"], prog["end"] = min(prog["start"], start), max(prog["end"], end)
        if cols["total"] is not None:
            total = table.number(row, cols["total"], required=False)
            if total is not None and abs(total - (end - start)) > 1e-6 * max(1.0, abs(total)) + 1e-9:
                warnings.append(f"line {row.line}: total {total:g} µs differs from end - start = "
                                f"{end - start:g} µs")
        for k, col in slice_flags.items():
            if _flag(table, row, col):
                prog["slices"].setdefault(k, [])
        slice_id = table.cell(row, cols["slice"]) if cols["slice"] is not None else ""
        invocation = table.cell(row, cols["invocation"]) if cols["invocation"] is not None else ""
        if slice_id:
            try:
                names = prog["slices"].setdefault(int(float(slice_id)), [])
            except ValueError:
                raise TraceError(f"'{slice_id}' is not a slice number", file=file, line=row.line,
                                 field=table.header[cols["slice"]]) from None
            if invocation and invocation not in names:
                names.append(invocation)
        for flag in ("dma_in", "dma_out"):
            if cols[flag] is not None and _flag(table, row, cols[flag]):
                prog[flag] = True
    if not programs:
        raise TraceError("has a header but no rows", file=file, line=table.header_line)

    events = []
    for key, prog in programs.items():
        start, duration = prog["start"] * _US, (prog["end"] - prog["start"]) * _US
        events.append(TraceEvent(f"NSS program {key}", "NSS program", start, duration, PROGRAM))
        for k in sorted(prog["slices"]):
            label = " + ".join(prog["slices"][k]) or f"slice {k}"
            events.append(TraceEvent(label, f"Slice {k}", start, duration, COMPUTE,
                                     location=" + ".join(prog["slices"][k]) or None))
        if prog["dma_in"]:
            events.append(TraceEvent(f"DMA in (program {key})", LANE_DMA_IN, start, duration, DMA_IN))
        if prog["dma_out"]:
            events.append(TraceEvent(f"DMA out (program {key})", LANE_DMA_OUT, start, duration, DMA_OUT))
    origin = min(e.start_s for e in events)
    events = [TraceEvent(e.name, e.lane, e.start_s - origin, e.duration_s, e.category, location=e.location)
              for e in events]
    slices = tuple(sorted({e.lane for e in events if e.lane.startswith("Slice ")},
                          key=lambda lane: int(lane.split()[1])))
    lanes = ordered_lanes(events, ("NSS program", LANE_DMA_IN) + slices + (LANE_DMA_OUT,))
    warnings.append("the annotated CSV gives times per NSS program: a slice or DMA engine is drawn busy for "
                    "the whole program it was used in")
    return Trace(source_format="torq_annotated", events=tuple(events), lanes=lanes, warnings=tuple(warnings),
                 source=file)


def _flag(table: Table, row: Row, col: int) -> bool:
    raw = table.cell(row, col).lower()
    if raw in ("true", "1", "1.0", "yes", "y"):
        return True
    if raw in ("false", "0", "0.0", "no", "n", "", "none", "nan"):
        return False
    raise TraceError(f"'{table.cell(row, col)}' is not a yes/no flag (True/False or 1/0)", file=table.file,
                     line=row.line, field=table.header[col].strip())
