"""One sweep: every context of a :class:`Grid` on every device, in one analysis pass per precision.

What changes the work table is the context (batch, sequence length, phase); the precision changes only the
bytes and the peak, i.e. the device arrays. So the sweep stacks every context's rows into one table (the context
becomes a block of rows; :func:`explorer.core.workload.context_axis.stack_contexts` builds a few tables and
interpolates the other contexts over batch and length, equal to one table per context), finds the stack's distinct
rows (:mod:`.distinct`: a row's time and energy depend on that row alone, and a grid repeats most of its rows), and
runs the single-device pass once per precision over those rows and every device (its time and energy only, the
floats ``evaluate`` makes, in buffers reused from pass to pass, with each block's plans sliced from the whole
table's: :mod:`.plans`); the per-context totals are segment sums of the per-row results (``count x time``,
``count x energy``) gathered back in the stack's row order, exactly what ``evaluate`` sums for one context.

Per point (device, precision, phase, batch, seq_len), SI units:

* ``latency_s``: the time of one step: a decode step (one new token per sequence) or one prefill of the batch
* ``throughput_per_device_tok_s``: tokens per second on one device = tokens per step / latency, where a decode
  step makes ``batch`` tokens and a prefill processes ``batch x seq_len`` tokens (a model without tokens, e.g. a
  CNN: one inference counts as one token)
* ``cost_per_million_tokens_usd``: from the catalog purchase price when known (the cost panel's TCO: price +
  electricity at TDP x utilization x PUE over the years owned, :mod:`explorer.core.analysis.cost`), else from
  the cloud hourly price; NaN when neither is known (or there is no TDP for the TCO and no cloud price), with
  ``cost_source`` "" and a note saying so
* ``energy_per_token_j``: the pass's energy (memory levels + compute) / tokens per step
* ``memory_bytes`` and ``fits``: the footprint (weights + KV cache + peak activations) against device memory
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from explorer.core.analysis.cost import (
    JOULES_PER_KWH,
    SECONDS_PER_YEAR,
    CostAssumptions,
    CostAssumptionsLike,
    _checked,  # the cost panel's checks of the ownership assumptions
)
from explorer.core.analysis.device_arrays import device_arrays
from explorer.core.analysis.evaluate import MODELS, evaluate
from explorer.core.analysis.kernel import Workspace
from explorer.core.analysis.kernel import time_energy as kernel_time_energy
from explorer.core.analysis.plan import device_plan
from explorer.core.analysis.tensor_bytes import formats_of, resident_bytes  # noqa: F401 (_footprints mirrors it)
from explorer.core.analysis.time_source import CALIBRATED, PARTLY, SPEC
from explorer.core.formats import TensorFormats
from explorer.core.hardware.device import Device
from explorer.core.workload.context_axis import ContextError, stack_contexts, stack_tables
from explorer.core.workload.layers import Context
from explorer.core.workload.model import LayerTable, Model, build_table

from .distinct import distinct_rows, take_rows
from .grid import Grid
from .pareto import OBJECTIVES, dominated_by_offset, pareto_mask
from .plans import sliced

#: The columns of a sweep, in file order: (name, unit, meaning). Public: the CSV/Parquet header and --json.
COLUMNS = (
    ("device", "", "device id, or system id"),
    ("layout", "", "a system's chosen layout (TPn PPn [EPn] DPn); empty for a single device"),
    ("precision", "", "numeric precision of the pass"),
    ("phase", "", "prefill or decode"),
    ("batch", "sequences", "sequences per step"),
    ("seq_len", "tokens", "prefill: tokens per sequence; decode: KV-cache positions attended"),
    ("latency_s", "s", "time of one step (a decode step or one prefill of the batch)"),
    ("throughput_per_device_tok_s", "tokens/s", "tokens per second per device"),
    ("cost_per_million_tokens_usd", "USD per 10^6 tokens", "from the purchase price (TCO) or the cloud price"),
    ("cost_source", "", "'list price', 'cloud price', or '' when unknown"),
    ("time_source", "", ("where latency comes from: 'spec' (the ideal model, or no calibration), 'calibrated' or "
                         "'partly calibrated' (docs/calibration.md)")),
    ("energy_per_token_j", "J/token", "energy of the step per token"),
    ("memory_bytes", "B", "weights + KV cache + peak activations"),
    ("fits", "", "the footprint fits the device memory"),
    ("pareto", "", "on the Pareto front (fitting points only)"),
)
NAMES = tuple(c[0] for c in COLUMNS)
#: the columns of a roofline sweep file written before time_source (read as 'spec': the ideal model it ran)
NAMES_V1 = tuple(n for n in NAMES if n != "time_source")
TIME_SOURCES = np.array([SPEC, PARTLY, CALIBRATED], dtype=object)  # time_source by code
DEFAULT_ASSUMPTIONS = CostAssumptions()
# (row, device) cells per pass: its (level, row, device) buffers (~2 MB each per level) stay in the caches; at 10^6
# points, passes of 65,536 cells took 1.8-2.3 s against 3.0-3.5 s for passes of 10^6 (4M: 1.3 GB peak; 1M: 0.56 GB)
MAX_CELLS = 65_536
#: distinct (row, device) cells whose per-row results a sweep keeps (two float arrays of 8 B per cell); more are
#: passed per block of contexts instead
DISTINCT_CELLS = 4_000_000
SOURCES = np.array(["", "list price", "cloud price"], dtype=object)  # cost_source by code


@dataclass(frozen=True, eq=False)
class SweepResult:
    """Column arrays of N points (order: precision, phase, batch, seq_len, device), SI units; ``notes``: what is
    unknown and why."""

    model_name: str
    columns: Mapping[str, np.ndarray]
    notes: tuple[str, ...]
    passes: int  # analysis passes run (one per precision and block of contexts)

    def __len__(self) -> int:
        return len(self.columns["device"])

    @property
    def front(self) -> np.ndarray:
        """Indices of the Pareto-front points, fastest first."""
        idx = np.flatnonzero(self.columns["pareto"])
        return idx[np.argsort(self.columns["latency_s"][idx], kind="stable")]

    def rows(self, start: int = 0, stop: int | None = None):
        """The points as tuples in :data:`COLUMNS` order (plain Python values; NaN where unknown)."""
        cols = [self.columns[n].tolist() for n in NAMES]
        return list(zip(*(c[start:stop] for c in cols)))


_stack = stack_tables  # one table whose rows are every table's rows in turn (the benches use it)


def _rows(table: LayerTable, a: int, b: int) -> LayerTable:
    """Rows a..b of a stacked table (views of its arrays; only what the analysis pass reads)."""
    if a == 0 and b == len(table):
        return table
    return LayerTable(names=table.names[a:b], kinds=table.kinds[a:b], layer_index=table.layer_index[a:b],
                      gemm=table.gemm[a:b], gemm_count=table.gemm_count[a:b],
                      columns={c: v[a:b] for c, v in table.columns.items()},
                      attention=table.attention[a:b] if table.attention else ())


def _pass(table: LayerTable, piece: LayerTable, a: int, b: int, dev, dp, attention: str, time_model: str,
          work: Workspace, distinct: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Rows a..b (``piece``) of ``table`` on every device: seconds and joules per instance (L, D) of ``time_model``,
    and under the calibrated one whether each row has a curve (else None). The ideal model's arrays are ``work``'s
    buffers (:func:`explorer.core.analysis.evaluate.time_energy`'s floats, with the plans sliced from the whole
    table's: sweep/plans.py): use them before the next pass. ``distinct``: the rows are the stack's distinct ones
    (:mod:`.distinct`), so the kernel does not search them for repeats again (the same floats)."""
    if time_model == "calibrated":  # the whole analysis: its calibrated times and where each row has a curve
        got = evaluate(piece, dev, ctx=Context(attention=attention))
        return got.calibrated_time, got.energy, got.calibrated  # fresh arrays of this analysis, not kept
    tp, rp = sliced(table, piece, a, b, dev, dp, attention)
    t, e = kernel_time_energy(piece, dev, tp, dp, rp, attention, work, distinct=distinct)
    return t, e, None


def _footprints(c: Mapping[str, np.ndarray], starts: np.ndarray, fm: TensorFormats) -> np.ndarray:
    """(C,) bytes resident per context of a stacked table: :func:`resident_bytes` (weights + KV cache + the
    largest row's activations) with the sums taken per block of rows."""
    count = c["count"]

    def per(x):
        return np.add.reduceat(x * count, starts)

    weights = fm.weights.nbytes(per(c["params"]), tensors=per((c["params"] > 0).astype(float)))
    kv = fm.kv_cache.nbytes(per(c["kv_cache_elems"]), tensors=per((c["kv_cache_elems"] > 0).astype(float)))
    peak = np.maximum.reduceat(c["input_elems"] + c["output_elems"], starts)
    act = fm.activations.nbytes(peak, tensors=np.where(peak > 0, 2.0, 0.0))
    return np.asarray(weights + kv + act, dtype=float)


def contexts_of(model: Model, grid: Grid) -> list[Context]:
    seqs = grid.seq_lens or (None,)
    return [Context(batch=b, seq_len=s, phase=ph, attention=grid.attention, lm_head=grid.lm_head)
            for ph in grid.phases for b in grid.batches for s in seqs]


def sweep(model: Model, devices: Sequence[Device], grid: Grid,
          assumptions: CostAssumptionsLike = DEFAULT_ASSUMPTIONS, formats: TensorFormats | None = None,
          time_model: str = "ideal") -> SweepResult:
    """Every point of ``grid`` on every device, its latency under ``time_model`` (``calibrated``: the devices'
    fitted curves where they have them, each point's ``time_source`` saying how much); raises ValueError (naming the
    context) where the model does not take a context (a layer's shape error)."""
    if not devices:
        raise ValueError("devices: give at least one device")
    if time_model not in MODELS:
        raise ValueError(f"time_model: expected one of {', '.join(MODELS)}, got {time_model!r}")
    years, usd_per_kwh, pue, util = _checked(assumptions)
    contexts = contexts_of(model, grid)
    # a grid larger than build_table's cache would cycle through it, missing every time and evicting the tables
    # the app (or the caller) works with: such a grid builds its tables without the cache
    build = build_table if len(contexts) <= (build_table.cache_info().maxsize or 0) // 2 else build_table.__wrapped__
    try:  # a few single tables, the other contexts interpolated (context_axis)
        stacked_all = stack_contexts(model, contexts, build)
    except ContextError as exc:
        raise ValueError(str(exc)) from None
    table, sizes, starts_all = stacked_all.table, stacked_all.sizes, stacked_all.starts
    n_ctx, n_dev = len(contexts), len(devices)
    # contexts in blocks of at most MAX_CELLS (row, device) cells, so a huge grid stays in memory
    blocks, first, cells = [], 0, 0
    for k, size in enumerate(sizes):
        if cells and cells + size * n_dev > MAX_CELLS:
            blocks.append((first, k))
            first, cells = k, 0
        cells += size * n_dev
    blocks.append((first, n_ctx))
    ctx_rows = [(int(starts_all[a]), int(starts_all[a] + sizes[a:b].sum()), starts_all[a:b] - starts_all[a])
                for a, b in blocks]
    # each distinct row passed once (sweep/distinct.py), its results kept per row and gathered for every context,
    # where their (row, device) arrays stay small; else each block of contexts passed and summed in turn
    found = distinct_rows(table)
    if found is not None and len(found[0]) * n_dev > DISTINCT_CELLS:
        found = None
    if found is not None:
        keep, where = found
        passed = take_rows(table, keep)
        step = max(1, MAX_CELLS // n_dev)
        row_blocks = [(a, min(a + step, len(passed))) for a in range(0, len(passed), step)]
        # per distinct row: count x seconds and count x joules per instance (a row's count is part of what makes it
        # distinct: the products are those of every row it stands for), side by side for one gather per block
        per_row = np.empty((len(passed), 2, n_dev))
        row_cal = np.zeros((len(passed), n_dev), dtype=bool)
        row_count = passed.columns["count"][:, None]
    else:
        passed, where, row_blocks = table, None, [(a, b) for a, b, _ in ctx_rows]
    pieces = [(a, b, _rows(passed, a, b)) for a, b in row_blocks]
    default_seq = model.default_seq_len()
    seq = np.array([c.seq_len or default_seq or 1 for c in contexts], dtype=float)
    batch = np.array([c.batch for c in contexts], dtype=float)
    decode = np.array([c.phase == "decode" for c in contexts])
    tokens = np.where(decode | (default_seq is None), batch, batch * seq)[:, None]  # (C, 1) tokens per step
    count_all = table.columns["count"]

    lat, energy, memory, fits, cost, source, timed = [], [], [], [], [], [], []
    notes: dict[str, dict[str, None]] = {}  # reason -> the devices it holds for
    seconds = years * SECONDS_PER_YEAR
    work = Workspace()  # the passes' buffers, reused: each pass's time and energy are summed before the next one
    for precision in grid.precisions:
        dev = device_arrays(devices, precision, formats)
        dp = device_plan(dev)
        t_parts, e_parts, s_parts = [], [], []
        if where is not None:  # every distinct row's time and energy, then each block of contexts gathers its own
            for a, b, piece in pieces:
                t, e, cal = _pass(passed, piece, a, b, dev, dp, grid.attention, time_model, work, distinct=True)
                np.multiply(row_count[a:b], t, out=per_row[a:b, 0])
                np.multiply(row_count[a:b], e, out=per_row[a:b, 1])
                if cal is not None:
                    row_cal[a:b] = cal
            for ra, rb, starts in ctx_rows:
                idx = where[ra:rb]
                got = np.take(per_row, idx, axis=0, out=work.take("gathered", (rb - ra, 2, n_dev)), mode="clip")
                sums = np.add.reduceat(got, starts, axis=0)  # (C, 2, D): s and J per step
                t_parts.append(sums[:, 0])
                e_parts.append(sums[:, 1])
                s_parts.append(_time_sources(row_cal[idx], count_all[ra:rb, None] > 0, starts)
                               if time_model == "calibrated" else np.zeros((len(starts), n_dev), dtype=np.int8))
        else:  # each block of contexts passed and summed
            for (a, b, piece), (_, _, starts) in zip(pieces, ctx_rows):
                count = count_all[a:b, None]
                t, e, cal = _pass(passed, piece, a, b, dev, dp, grid.attention, time_model, work)
                t_parts.append(np.add.reduceat(np.multiply(count, t, out=t), starts, axis=0))  # (C, D) s per step
                e_parts.append(np.add.reduceat(np.multiply(count, e, out=e), starts, axis=0))  # (C, D) J
                s_parts.append(_time_sources(cal, count > 0, starts) if cal is not None
                               else np.zeros((len(starts), n_dev), dtype=np.int8))
        t_c, e_c = np.concatenate(t_parts), np.concatenate(e_parts)
        mem = _footprints(table.columns, starts_all, formats_of(dev))  # (C,)
        timed.append(np.concatenate(s_parts))
        with np.errstate(invalid="ignore", divide="ignore"):
            thr = tokens / t_c
            tco = dev.price + dev.tdp * util * pue * seconds / JOULES_PER_KWH * usd_per_kwh  # (D,)
            by_price = tco[None, :] / (thr * util * seconds) * 1e6
            by_cloud = dev.cloud_price[None, :] / (thr * util) * 1e6
        priced = np.isfinite(tco) & (dev.price > 0)
        clouded = np.isfinite(dev.cloud_price) & (dev.cloud_price > 0)
        cost.append(np.where(priced[None, :], by_price, np.where(clouded[None, :], by_cloud, math.nan)))
        source.append(np.broadcast_to(np.where(priced, 1, np.where(clouded, 2, 0)).astype(np.int8), (n_ctx, n_dev)))
        lat.append(t_c)
        energy.append(e_c / tokens)
        memory.append(np.broadcast_to(mem[:, None], (n_ctx, n_dev)))
        fits.append(mem[:, None] <= dev.capacity[None, :])
        for j, d in enumerate(devices):
            if not (priced[j] or clouded[j]):
                notes.setdefault("cost unknown (no list price with a TDP, no cloud price in the catalog)",
                                 {})[d.id] = None
            if not (np.isfinite(dev.peak[j]) and dev.peak[j] > 0):
                notes.setdefault(f"no {precision} peak (latency unknown at {precision})", {})[d.id] = None

    n_prec = len(grid.precisions)
    shape = (n_prec, n_ctx, n_dev)

    def per_point(values) -> np.ndarray:
        return np.broadcast_to(np.asarray(values), shape).reshape(-1)

    cols = {
        "device": per_point(np.array([d.id for d in devices], dtype=object)[None, None, :]),
        "layout": per_point(np.array("", dtype=object)),
        "precision": per_point(np.array(grid.precisions, dtype=object)[:, None, None]),
        "phase": per_point(np.array([c.phase for c in contexts], dtype=object)[None, :, None]),
        "batch": per_point(batch.astype(int)[None, :, None]),
        "seq_len": per_point(seq.astype(int)[None, :, None]),
        "latency_s": np.stack(lat).reshape(-1),
        "throughput_per_device_tok_s": None,
        "cost_per_million_tokens_usd": (cost := np.stack(cost).reshape(-1)),
        "cost_source": SOURCES[np.where(np.isfinite(cost), np.stack(source).reshape(-1), 0)],
        "time_source": TIME_SOURCES[np.stack(timed).reshape(-1)],
        "energy_per_token_j": np.stack(energy).reshape(-1),
        "memory_bytes": np.stack(memory).reshape(-1).astype(float, copy=False),
        "fits": np.stack(fits).reshape(-1),
    }
    with np.errstate(invalid="ignore", divide="ignore"):
        cols["throughput_per_device_tok_s"] = np.divide(tokens[None, :, :], cols["latency_s"].reshape(shape)).reshape(-1)
    cols["pareto"] = np.zeros(len(cols["device"]), dtype=bool)
    return with_front(SweepResult(model_name=model.name, columns=cols, passes=n_prec * len(pieces),
                                  notes=tuple(f"{why}: {', '.join(ids)}" for why, ids in notes.items())),
                      stride=n_dev)


def _time_sources(calibrated: np.ndarray, used: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """Per context (block of rows from ``starts``) and device: 0 spec, 1 partly calibrated, 2 calibrated, as
    :func:`explorer.core.analysis.time_source.device_time_sources` labels one analysis (the rows that run)."""
    n_used = np.add.reduceat(np.broadcast_to(used, calibrated.shape).astype(np.int64), starts, axis=0)
    n_cal = np.add.reduceat((calibrated & used).astype(np.int64), starts, axis=0)
    return np.where(n_cal == 0, 0, np.where(n_cal == n_used, 2, 1)).astype(np.int8)


def with_front(result: SweepResult, stride: int = 0) -> SweepResult:
    """``result`` with its ``pareto`` column computed over the points that fit (columns made read-only). ``stride``:
    the point that many positions away is a near neighbour (a sweep's: the same device at the next context), checked
    first (:func:`.pareto.dominated_by_offset`: the same front, from fewer candidates)."""
    cols = dict(result.columns)
    pareto = np.zeros(len(cols["device"]), dtype=bool)
    fits = np.asarray(cols["fits"], dtype=bool)
    if stride:
        fits = fits & ~dominated_by_offset([cols[name] for name, _ in OBJECTIVES],
                                           tuple(m for _, m in OBJECTIVES), fits, stride)
    candidates = np.flatnonzero(fits)
    if len(candidates):  # the objectives of the fitting points only, one column at a time
        objectives = np.empty((len(candidates), len(OBJECTIVES)))
        for j, (name, _) in enumerate(OBJECTIVES):
            np.take(np.asarray(cols[name], dtype=float), candidates, out=objectives[:, j])
        pareto[candidates] = pareto_mask(objectives, tuple(m for _, m in OBJECTIVES))
    cols["pareto"] = pareto
    for a in cols.values():
        a.setflags(write=False)
    return SweepResult(model_name=result.model_name, columns=cols, notes=result.notes, passes=result.passes)


def combine(results: Sequence[SweepResult]) -> SweepResult:
    """Several sweeps of one model (devices, systems) as one, the Pareto front taken over all their points."""
    cols = {n: np.concatenate([np.asarray(r.columns[n]) for r in results]) for n in NAMES}
    return with_front(SweepResult(model_name=results[0].model_name, columns=cols,
                                  notes=tuple(n for r in results for n in r.notes),
                                  passes=sum(r.passes for r in results)))
