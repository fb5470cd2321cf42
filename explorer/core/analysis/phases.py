"""Prefill and decode of one batch and sequence length in one analysis pass (issue 22's "Llama-2-7B prefill + decode"
question, what LLM-Viewer's ``analyze(seq_len, batch)`` answers in one call).

The two contexts' work rows are stacked (the context axis, :func:`explorer.core.workload.context_axis.stack_contexts`,
cached per model and context like ``build_table``) and the pass makes only what this answer reads: each row's time
and energy (:func:`explorer.core.analysis.evaluate.time_energy`, the same floats ``evaluate`` makes) and whether the
row is memory-bound on each device (``evaluate``'s ``memory_bound``: the row's intensity below the device's ridge
point); the rows' FLOPs, bytes and intensity come from the table's plan. The totals are ``evaluate``'s
``totals.time`` and ``totals.energy`` of each context: ``sum over rows of count x per-instance value``.

Units: seconds, joules, FLOPs (a multiply-add counts 2), bytes (B), FLOP/B. ``[0]`` is the prefill of the batch
(``batch x seq_len`` tokens), ``[1]`` one decode step (``batch`` new tokens against ``seq_len`` cached positions).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from explorer.core.formats import TensorFormats
from explorer.core.hardware.device import Device
from explorer.core.workload.context_axis import ContextError, StackedContexts, stack_contexts
from explorer.core.workload.layers import ATTENTION, LM_HEAD, Context
from explorer.core.workload.model import Model, build_table

from .device_arrays import DeviceArrays
from .kernel import time_energy
from .plan import cached_device_arrays, device_plan, table_plan

PHASES = ("prefill", "decode")


@dataclass(frozen=True, eq=False)
class PhasesAnalysis:
    """The prefill and one decode step; per row (L,) of the stacked table (the prefill's rows, then the step's:
    ``rows[k]`` is phase k's slice), per device (D,)."""

    model: Model
    devices: DeviceArrays
    batch: int
    seq_len: int
    attention: str
    names: tuple[str, ...]  # (L,) row names
    rows: tuple[slice, slice]  # the prefill's rows, the decode step's rows
    count: np.ndarray  # (L,) instances of each row
    flops: np.ndarray  # (L,) FLOPs per instance
    bytes: np.ndarray  # (L,) bytes moved per instance (weights + activations + KV cache)
    intensity: np.ndarray  # (L,) FLOP/B
    row_time_s: np.ndarray  # (L, D) s per instance (the ideal model's time)
    row_energy_j: np.ndarray  # (L, D) J per instance
    memory_bound: np.ndarray  # (L, D) intensity below the device's ridge point
    time_s: np.ndarray  # (2, D) s: the prefill, one decode step
    energy_j: np.ndarray  # (2, D) J

    @property
    def prefill_s(self) -> np.ndarray:
        return self.time_s[0]

    @property
    def decode_step_s(self) -> np.ndarray:
        return self.time_s[1]


def _whole(value, field: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"{field}: expected a whole number >= 1, got {value!r}")
    return int(value)


@functools.lru_cache(maxsize=32)
def _stacked(model: Model, batch: int, seq_len: int, attention: str, lm_head: str) -> StackedContexts:
    """The prefill's rows then the decode step's, cached per model and context like ``build_table``."""
    contexts = [Context(batch=batch, seq_len=seq_len, phase=p, attention=attention, lm_head=lm_head) for p in PHASES]
    try:
        return stack_contexts(model, contexts, build_table)
    except ContextError as exc:
        raise ValueError(str(exc)) from None


def prefill_decode(model: Model, devices: Sequence[Device] | DeviceArrays, precision: str = "fp16", *,
                   batch: int = 1, seq_len: int, attention: str = "naive", lm_head: str = "last",
                   formats: TensorFormats | None = None) -> PhasesAnalysis:
    """The prefill of ``batch`` x ``seq_len`` tokens and one decode step at ``seq_len`` positions, in one pass.
    Raises ValueError naming the field (batch, seq_len, attention, lm_head) or the context the model does not take."""
    batch, seq_len = _whole(batch, "batch"), _whole(seq_len, "seq_len")
    if attention not in ATTENTION:
        raise ValueError(f"attention: expected one of {', '.join(ATTENTION)}, got {attention!r}")
    if lm_head not in LM_HEAD:
        raise ValueError(f"lm_head: expected one of {', '.join(LM_HEAD)}, got {lm_head!r}")
    st = _stacked(model, batch, seq_len, attention, lm_head)
    table = st.table
    dev = devices if isinstance(devices, DeviceArrays) else cached_device_arrays(devices, precision, formats)
    tp, dp = table_plan(table), device_plan(dev)
    rp = tp.rows(table, dev, dp)
    intensity = rp.summary(table).intensity
    row_time, row_energy = time_energy(table, dev, tp, dp, rp, attention)  # evaluate.time_energy, plans at hand
    count = table.columns["count"]
    time = np.add.reduceat(count[:, None] * row_time, st.starts, axis=0)  # (2, D), evaluate's row sums per context
    energy = np.add.reduceat(count[:, None] * row_energy, st.starts, axis=0)
    a, b = (int(x) for x in st.starts)
    return PhasesAnalysis(
        model=model, devices=dev, batch=batch, seq_len=seq_len, attention=attention, names=table.names,
        rows=(slice(a, b), slice(b, len(table))), count=count, flops=rp.flops, bytes=rp.nbytes, intensity=intensity,
        row_time_s=row_time, row_energy_j=row_energy, memory_bound=intensity[:, None] < dp.ridge, time_s=time,
        energy_j=energy)
