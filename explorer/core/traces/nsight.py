"""Import an Nsight Compute raw-page CSV (``ncu --csv --page raw``, or ``ncu --import x.ncu-rep --csv
--page raw``).

Layout: ncu's own ``==PROF==`` lines (skipped), a header row (``ID``, ``Kernel Name``, ``Stream``, ... then
one column per metric), a units row (``nsecond``, ``Mbyte``, ``inst``...), then one row per profiled kernel.
Values may carry thousands separators (``"1,234.5"``).

Metrics read:

* ``gpu__time_duration.sum`` (required): kernel duration.
* ``dram__bytes.sum``, else ``dram__bytes_read.sum`` + ``dram__bytes_write.sum``: DRAM traffic.
* SASS thread-instruction counts ``smsp__sass_thread_inst_executed_op_{d,f,h}{add,mul,fma}_pred_on.sum``:
  FLOPs = add + mul + 2 x fma, summed over double, single and half precision (NVIDIA's roofline rule).
  Tensor-core work is not in these counters.

ncu serialises kernels and records no start times, so the timeline lays kernels end to end in ID order.
"""

from __future__ import annotations

import math
from pathlib import Path

from explorer.core.traces.csv_table import Row, Table, parse_table, read_text
from explorer.core.traces.model import COMPUTE, Trace, TraceError, TraceEvent, ordered_lanes

KERNEL_NAME = "Kernel Name"
DURATION = "gpu__time_duration.sum"
DRAM_BYTES = "dram__bytes.sum"
DRAM_READ = "dram__bytes_read.sum"
DRAM_WRITE = "dram__bytes_write.sum"
#: SASS instruction-count metric -> FLOPs per instruction (an FMA is two operations).
FLOP_METRICS = {
    f"smsp__sass_thread_inst_executed_op_{p}{op}_pred_on.sum": (2.0 if op == "fma" else 1.0)
    for p in ("d", "f", "h") for op in ("add", "mul", "fma")
}
_FMT = "Nsight Compute raw CSV"


def _unit_scale(unit: str, wanted: str, column: str, table: Table, line: int) -> float:
    """Factor taking values in ncu's ``unit`` to the SI ``wanted`` unit ('s', 'byte' or 'count'), via pint."""
    # imported here: the unit registry is made on first use (issue 22: the app's first window needs none)
    from explorer.core.units import Q_, PintError

    text = unit.strip()
    if wanted == "count":
        if text in ("", "inst"):
            return 1.0
        text = text.replace("inst", "count")
    elif not text:
        example = "nsecond" if wanted == "s" else "byte"
        raise TraceError(f"has no unit in the units row; expected one like {example}", file=table.file,
                         line=line, field=column)
    # ncu writes decimal multiples with a capital K ("Kbyte" = 1000 byte); pint spells kilo 'k'.
    if text[:1] == "K":
        text = "k" + text[1:]
    try:
        return float(Q_(1.0, text).to(wanted).magnitude)
    except (PintError, ValueError, AttributeError, TypeError):
        raise TraceError(f"unit '{unit}' cannot be read as {'a time' if wanted == 's' else wanted}",
                         file=table.file, line=line, field=column) from None


def load_nsight(path: str | Path) -> Trace:
    """Read an ncu raw-page CSV; raise TraceError naming the line and column on bad input."""
    file = str(path)
    table = parse_table(read_text(path), file, skip_prefixes=("==",), header_hint=KERNEL_NAME,
                        fmt=_FMT)
    name_col = table.require(KERNEL_NAME, fmt=_FMT)
    time_col = table.require(DURATION, fmt=_FMT)
    if not table.rows:
        raise TraceError("has a header but no units row and no kernel rows", file=file,
                         line=table.header_line)
    units_row = table.rows[0]
    if table.cell(units_row, name_col) or not table.cell(units_row, time_col) or \
            _looks_numeric(table.cell(units_row, time_col)):
        raise TraceError(f"expected the units row (e.g. 'nsecond' under {DURATION}) right after the header; "
                         "export with 'ncu --csv --page raw'", file=file, line=units_row.line, field=DURATION)
    rows = table.rows[1:]
    if not rows:
        raise TraceError("has no kernel rows after the units row", file=file, line=units_row.line)
    units = units_row.cells

    def scale(col: int, wanted: str) -> float:
        unit = units[col] if col < len(units) else ""
        return _unit_scale(unit, wanted, table.header[col].strip(), table, units_row.line)

    time_scale = scale(time_col, "s")
    bytes_cols = _bytes_columns(table)
    bytes_scales = [scale(c, "byte") for c in bytes_cols]
    flop_cols = [(table.find(m), w) for m, w in FLOP_METRICS.items()]
    flop_cols = [(c, w, scale(c, "count")) for c, w in flop_cols if c is not None]
    stream_col = table.find("Stream")
    id_col = table.find("ID")
    device_col = table.find("Device")

    warnings = ["Nsight Compute records no start times; kernels are laid end to end in the order profiled"]
    if not bytes_cols:
        warnings.append(f"no DRAM byte metric ({DRAM_BYTES}); intensity only where a kernel matches a "
                        "model layer")
    if not flop_cols:
        warnings.append("no SASS FLOP metrics (smsp__sass_thread_inst_executed_op_*_pred_on.sum); "
                        "FLOP/s only where a kernel matches a model layer")

    ordered = sorted(rows, key=lambda r: _row_id(table, r, id_col))
    events, clock = [], 0.0
    for row in ordered:
        name = table.cell(row, name_col)
        if not name:
            raise TraceError("is empty", file=file, line=row.line, field=KERNEL_NAME)
        duration = table.number(row, time_col) * time_scale
        if duration < 0:
            raise TraceError(f"duration {duration} s is negative", file=file, line=row.line, field=DURATION)
        nbytes = _sum(table, row, bytes_cols, bytes_scales)
        flops = None
        if flop_cols:
            counts = [table.number(row, c, required=False) for c, _, _ in flop_cols]
            if any(v is not None for v in counts):
                flops = sum((v or 0.0) * w * s for v, (_, w, s) in zip(counts, flop_cols))
        lane = "GPU"
        if stream_col is not None and table.cell(row, stream_col):
            device = table.cell(row, device_col) if device_col is not None else ""
            lane = f"GPU {device} stream {table.cell(row, stream_col)}".replace("  ", " ")
        events.append(TraceEvent(name=name, lane=lane, start_s=clock, duration_s=duration, category=COMPUTE,
                                 flops=flops, bytes=nbytes))
        clock += duration
    return Trace(source_format="nsight", events=tuple(events), lanes=ordered_lanes(events),
                 warnings=tuple(warnings), source=file)


def _bytes_columns(table: Table) -> list[int]:
    total = table.find(DRAM_BYTES)
    if total is not None:
        return [total]
    parts = [table.find(DRAM_READ), table.find(DRAM_WRITE)]
    return [c for c in parts if c is not None] if all(c is not None for c in parts) else []


def _sum(table: Table, row: Row, cols: list[int], scales: list[float]) -> float | None:
    values = [table.number(row, c, required=False) for c in cols]
    if not cols or any(v is None for v in values):
        return None
    return sum(v * s for v, s in zip(values, scales))


def _row_id(table: Table, row: Row, id_col: int | None) -> float:
    if id_col is None:
        return row.line
    value = table.number(row, id_col)
    return value if math.isfinite(value) else row.line


def _looks_numeric(text: str) -> bool:
    try:
        float(text.replace(",", ""))
    except ValueError:
        return False
    return True
