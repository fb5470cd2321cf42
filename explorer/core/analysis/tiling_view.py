"""What the tiling (fringe tax) panel draws for one GEMM row on one device, from the shared analysis.

The mapping model is :mod:`explorer.core.analysis.tiling`: on a systolic array the dataflow maps two GEMM
dimensions onto the array's rows and columns; on tensor cores M and N are cut into thread-block tiles. The
panel sweeps the worse-mapped of those two dimensions across four multiples of the array (or tile) around the
layer's current value, showing the cliff just past each multiple; draws the last (fringe) fold with its idle
PEs; lists the per-operator efficiency; and prices the nearby multiples (pad up, or reshape down) by
re-evaluating just that GEMM with the new dimension (operands scaled with it: an estimate, labelled as such).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from explorer.core.workload.model import LayerTable

from .evaluate import ModelAnalysis, evaluate
from .tiling import DATAFLOW_MAPS, padding_options, systolic_arrays, tensor_core_arrays

SWEEP_MULTIPLES = 4


@dataclass(frozen=True)
class PaddingOption:
    value: int
    action: str  # "current" | "pad" (round up, zeros added) | "reshape" (round down: changes the model)
    efficiency: float
    time: float  # s per pass of the model (repeat count applied)
    delta_time: float  # s, against the current value
    work_ratio: float  # MACs relative to the current value


@dataclass(frozen=True, eq=False)
class TilingView:
    device_index: int
    device_id: str
    device_name: str
    engine: str  # "systolic" | "tensor_core" | "" (none described)
    missing: str  # why there is nothing to draw ('' when there is)
    row: int  # -1 when no GEMM row is selected
    row_name: str
    layer_index: int
    gemm: tuple[int, int, int]  # M, N, K
    gemm_count: int
    rows_dim: str  # GEMM dimension mapped onto the array rows (or the tile's M)
    cols_dim: str
    array: tuple[int, int]  # array rows x cols, or thread-block tile M x N
    units: int  # arrays, or SMs
    efficiency: float  # mapping efficiency of the row in the analysis
    sweep_dim: str  # "M" | "N" | "K"
    multiple: int
    sweep_values: np.ndarray
    sweep_efficiency: np.ndarray
    cliffs: np.ndarray  # the multiples inside the sweep: efficiency drops just past each
    current_value: int
    current_efficiency: float
    folds: tuple[int, int]  # folds (or tiles) along rows and cols
    fringe_active: tuple[int, int]  # active rows x cols of the last (corner) fold
    idle_pes: int  # idle PEs (or tile slots) in that fold
    gemm_rows: np.ndarray  # every GEMM row of the model
    gemm_names: tuple[str, ...]
    gemm_layer: np.ndarray
    gemm_efficiency: np.ndarray
    gemm_time: np.ndarray  # s per pass, repeat count applied
    options: tuple[PaddingOption, ...]
    suggestion: str
    note: str


def default_row(analysis: ModelAnalysis, layer_index: int, device_index: int) -> int:
    """The GEMM row to show: in the focused layer (or the whole model when none) the one losing the most time
    to the fringe (time x (1 - efficiency)), else the longest; -1 when there is no GEMM."""
    table = analysis.table
    gemm = table.gemm_count > 0
    if layer_index >= 0:
        gemm = gemm & (table.layer_index == layer_index)
    rows = np.flatnonzero(gemm)
    if not len(rows) or not len(analysis.devices):
        return -1
    t = np.nan_to_num(analysis.count[rows] * analysis.time[rows, device_index], nan=0.0)
    loss = t * (1.0 - analysis.mapping_efficiency[rows, device_index])
    return int(rows[np.argmax(loss)] if loss.max() > 0 else rows[np.argmax(t)])


def _scaled_table(table: LayerTable, row: int, dim: str, values: np.ndarray) -> LayerTable:
    """One copy of ``row`` per value of ``dim``, its work and operands scaled with the new GEMM shape."""
    m, n, k = table.gemm[row]
    gemm = np.tile(table.gemm[row], (len(values), 1))
    gemm[:, "MNK".index(dim)] = values
    m2, n2, k2 = gemm[:, 0], gemm[:, 1], gemm[:, 2]
    c = {name: np.full(len(values), col[row]) for name, col in table.columns.items()}
    has_weights = c["weight_elems"][0] > 0
    c["macs"] = c["macs"] * (m2 * n2 * k2) / (m * n * k)
    c["other_flops"] = c["other_flops"] * (m2 * n2) / (m * n)
    c["output_elems"] = c["output_elems"] * (m2 * n2) / (m * n)
    if has_weights:
        c["weight_elems"] = c["weight_elems"] * (k2 * n2) / (k * n)
        c["input_elems"] = c["input_elems"] * (m2 * k2) / (m * k)
    else:
        c["input_elems"] = c["input_elems"] * (m2 * k2 + k2 * n2) / (m * k + k * n)
    c["kv_read_elems"] = c["kv_read_elems"] * (k2 * n2) / (k * n)
    return LayerTable(
        names=(table.names[row],) * len(values),
        kinds=(table.kinds[row],) * len(values),
        layer_index=np.zeros(len(values), dtype=int),
        gemm=gemm,
        gemm_count=np.full(len(values), table.gemm_count[row]),
        columns=c,
        attention=(table.attention[row],) * len(values) if table.attention else (),  # fused K/V re-reads as they are
    )


def _empty(analysis, d, missing, gemm_rows, eff, t) -> TilingView:
    dev = analysis.devices
    table = analysis.table
    e = np.empty(0)
    return TilingView(
        d,
        dev.ids[d] if len(dev) else "",
        dev.devices[d].name if len(dev) else "",
        "",
        missing,
        -1,
        "",
        -1,
        (0, 0, 0),
        0,
        "",
        "",
        (0, 0),
        0,
        math.nan,
        "",
        0,
        e,
        e,
        e,
        0,
        math.nan,
        (0, 0),
        (0, 0),
        0,
        gemm_rows,
        tuple(table.names[i] for i in gemm_rows),
        table.layer_index[gemm_rows],
        eff,
        t,
        (),
        "",
        "",
    )


def compute_tiling_view(
    analysis: ModelAnalysis, layer_row: int, device_index: int = 0, sweep_dim: str | None = None
) -> TilingView:
    """Fringe-tax view of GEMM row ``layer_row`` (an operator row; see :func:`default_row`) on one device."""
    dev, table = analysis.devices, analysis.table
    if not 0 <= device_index < len(dev):
        raise ValueError(f"device_index: expected 0..{len(dev) - 1}, got {device_index}")
    d = device_index
    gemm_rows = np.flatnonzero(table.gemm_count > 0)
    gemm_eff = analysis.mapping_efficiency[gemm_rows, d]
    gemm_time = analysis.count[gemm_rows] * analysis.time[gemm_rows, d]
    engine = {1: "systolic", 2: "tensor_core"}.get(int(dev.engine[d]), "")
    if not engine:
        return _empty(
            analysis,
            d,
            "no matrix engine described for this device (array size or tensor-core tile)",
            gemm_rows,
            gemm_eff,
            gemm_time,
        )
    if layer_row < 0 or layer_row >= len(table) or table.gemm_count[layer_row] <= 0:
        return _empty(
            analysis, d, "the selected layer has no matrix multiplication", gemm_rows, gemm_eff, gemm_time
        )
    row = layer_row
    m, n, k = (int(x) for x in table.gemm[row])
    gc = int(table.gemm_count[row])
    dims = {"M": m, "N": n, "K": k}
    bpe = dev.bytes_per_element
    if engine == "systolic":
        rows_n, cols_n = int(dev.rows[d]), int(dev.cols[d])
        dataflow, units = str(dev.dataflow[d]), int(dev.units[d])
        r_dim, c_dim, _ = DATAFLOW_MAPS[dataflow]
        array = (rows_n, cols_n)
        note = (
            f"systolic {rows_n}x{cols_n}, dataflow {dataflow.upper()}: {r_dim} on rows, {c_dim} on columns; "
            f"{units} array(s)"
        )

        def eff_of(mm, nn, kk):
            return systolic_arrays(mm, nn, kk, gc, rows_n, cols_n, dataflow, units)[0]
    else:
        align = max(1.0, 16.0 / bpe)
        bm, bn, sms = float(dev.block_m[d]), float(dev.block_n[d]), float(dev.sm_count[d])
        # the tile the model picks for this row (the block tile or its half, whichever maps better)
        full = tensor_core_arrays(m, n, k, gc, bm, bn, sms, align)
        half = tensor_core_arrays(m, n, k, gc, max(bm // 2, 1), max(bn // 2, 1), sms, align)
        scale = 1.0 if full >= half else 0.5
        array = (int(max(bm * scale, 1)), int(max(bn * scale, 1)))
        rows_n, cols_n = array
        r_dim, c_dim, units = "M", "N", int(sms)
        note = (
            f"tensor cores: thread-block tile {array[0]}x{array[1]} over {units} SMs (tile and wave "
            f"quantization), K and N padded to {int(align)} elements"
        )

        def eff_of(mm, nn, kk):
            return tensor_core_arrays(mm, nn, kk, gc, bm, bn, sms, align)

    # which dimension to sweep: the one the array maps worse (unless asked)
    per_dim = {
        r_dim: dims[r_dim] / (math.ceil(dims[r_dim] / rows_n) * rows_n),
        c_dim: dims[c_dim] / (math.ceil(dims[c_dim] / cols_n) * cols_n),
    }
    if sweep_dim is None:
        sweep_dim = min(per_dim, key=lambda x: (per_dim[x], x != r_dim))
    if sweep_dim not in dims:
        raise ValueError(f"sweep_dim: expected M, N or K, got {sweep_dim!r}")
    multiple = (
        rows_n
        if sweep_dim == r_dim
        else cols_n
        if sweep_dim == c_dim
        else (int(align) if engine != "systolic" else rows_n)
    )
    v = dims[sweep_dim]
    lo = max(1, (math.ceil(v / multiple) - 2) * multiple - multiple // 2)
    values = np.arange(lo, lo + SWEEP_MULTIPLES * multiple + 1, dtype=float)
    sweep = {x: np.full(len(values), float(dims[x])) for x in "MNK"}
    sweep[sweep_dim] = values
    sweep_eff = np.asarray(eff_of(sweep["M"], sweep["N"], sweep["K"]), dtype=float)
    current_eff = float(np.asarray(eff_of(m, n, k)).ravel()[0])
    cliffs = np.arange(math.ceil(lo / multiple) * multiple, values[-1] + 1, multiple, dtype=float)
    folds = (math.ceil(dims[r_dim] / rows_n), math.ceil(dims[c_dim] / cols_n))
    active = (dims[r_dim] - (folds[0] - 1) * rows_n, dims[c_dim] - (folds[1] - 1) * cols_n)
    rest = ""
    if engine == "tensor_core":
        tiles = folds[0] * folds[1] * gc
        waves = math.ceil(tiles / units)
        rest = (
            f"{tiles} tiles over {units} SMs run in {waves} wave(s), the last "
            f"{tiles - (waves - 1) * units}/{units} full (wave efficiency {tiles / (waves * units):.0%})"
        )
    elif units > 1:
        total = folds[0] * folds[1] * gc
        rounds = math.ceil(total / units)
        unit_eff = total / (rounds * units)
        rest = f"{total} folds over {units} arrays run in {rounds} round(s) (unit efficiency {unit_eff:.0%})"
    # price the nearby multiples: re-evaluate this one GEMM with the padded (or reshaped) dimension
    choices = sorted({v, *padding_options(v, multiple)})
    mini = _scaled_table(table, row, sweep_dim, np.array(choices, dtype=float))
    redo = evaluate(mini, dev, dev.precision, analysis.ctx)
    times = redo.time[:, d] * table.columns["count"][row]
    base = times[choices.index(v)]
    options = tuple(
        PaddingOption(
            c,
            "current" if c == v else "pad" if c > v else "reshape",
            float(redo.mapping_efficiency[i, d]),
            float(times[i]),
            float(times[i] - base),
            c / v,
        )
        for i, c in enumerate(choices)
    )
    return TilingView(
        device_index=d,
        device_id=dev.ids[d],
        device_name=dev.devices[d].name,
        engine=engine,
        missing="",
        row=row,
        row_name=table.names[row],
        layer_index=int(table.layer_index[row]),
        gemm=(m, n, k),
        gemm_count=gc,
        rows_dim=r_dim,
        cols_dim=c_dim,
        array=array,
        units=units,
        efficiency=float(analysis.mapping_efficiency[row, d]),
        sweep_dim=sweep_dim,
        multiple=int(multiple),
        sweep_values=values,
        sweep_efficiency=sweep_eff,
        cliffs=cliffs,
        current_value=v,
        current_efficiency=current_eff,
        folds=folds,
        fringe_active=active,
        idle_pes=int(rows_n * cols_n - active[0] * active[1]),
        gemm_rows=gemm_rows,
        gemm_names=tuple(table.names[i] for i in gemm_rows),
        gemm_layer=table.layer_index[gemm_rows],
        gemm_efficiency=gemm_eff,
        gemm_time=gemm_time,
        options=options,
        suggestion=_suggest(sweep_dim, v, options, rest),
        note=note,
    )


def _fmt_time(seconds: float) -> str:
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("\u00b5s", 1e-6), ("ns", 1e-9)):
        if abs(seconds) >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds / 1e-12:.3g} ps"


def _suggest(dim: str, v: int, options: tuple[PaddingOption, ...], rest: str) -> str:
    current = next(o for o in options if o.action == "current")
    others = [o for o in options if o.action != "current"]
    tail = f" Beyond the fringe: {rest}." if rest else ""
    if not others:
        return f"{dim} = {v} is already a whole multiple: no fringe along {dim}.{tail}"
    parts = []
    for o in others:
        verb = "pad to" if o.action == "pad" else "reshape to"
        sign = "+" if o.delta_time >= 0 else "\u2212"
        rel = o.delta_time / current.time * 100 if current.time > 0 else math.nan
        parts.append(
            f"{verb} {o.value}: {_fmt_time(o.time)} ({sign}{_fmt_time(abs(o.delta_time))}, "
            f"{rel:+.1f}%), efficiency {o.efficiency:.0%}"
        )
    # time per unit of useful work: padded zeros are not useful, a reshaped layer does less (or more) work
    best = min(options, key=lambda o: o.time / (o.work_ratio if o.action == "reshape" else 1.0))
    verdict = (
        "keeping it is best per unit of work"
        if best.action == "current"
        else f"{'padding' if best.action == 'pad' else 'reshaping'} to {best.value} pays per unit of work"
    )
    return (
        f"{dim} = {v} ({_fmt_time(current.time)}, efficiency {current.efficiency:.0%}): "
        + "; ".join(parts)
        + f". {verdict[0].upper() + verdict[1:]}.{tail}"
    )
