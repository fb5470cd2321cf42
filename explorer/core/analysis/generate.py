"""The generate task in one pass: a prefill of the prompt and every decode step at its own KV length, on every
device, through one run of the analysis pass (:func:`explorer.core.analysis.evaluate.evaluate`).

Convention (the serving engines' one): ``output_tokens`` T new tokens per sequence. The prefill of the
``input_tokens`` P positions computes the first of them (its time is the time to first token, TTFT); then T - 1
decode steps, step k = 1 .. T - 1 attending ``P + k`` positions (the ``P + k - 1`` cached ones plus its own, the
decode context's ``seq_len``), each making ``batch`` tokens. So

* ``ttft_s`` = prefill time; ``decode_s`` = the sum of the step times; ``total_s`` = ttft + decode;
* ``tpot_s`` (time per output token after the first) = decode / (T - 1), NaN for T = 1;
* ``throughput_tok_s`` = batch x T / total (output tokens per second on one device);
* ``energy_j`` = prefill + every step's energy (memory levels + compute); ``memory_bytes``: the larger footprint
  of the prefill and the last step (weights + the KV cache of ``P + T - 1`` positions + the largest row's
  activations), ``fits`` against each device's memory.

LLM-Viewer's ``analyze_generate_task(prompt_len, gen_len)`` counts the prefill plus ``gen_len`` decode steps at KV
lengths ``prompt_len .. prompt_len + gen_len - 1``: one step more than this (bench/bench_generate.py compares).

The decode steps share their rows and differ only in the attention's KV length, so their work tables are the
context axis's (:func:`explorer.core.workload.context_axis.stack_contexts`): 4 single tables, not T - 1.
"""

from __future__ import annotations

import functools
import weakref
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from explorer.core.formats import TensorFormats
from explorer.core.hardware.device import Device
from explorer.core.workload.context_axis import (
    ContextError,
    ContextRun,
    StackedContexts,
    stack_contexts,
    stack_steps,
)
from explorer.core.workload.layer_memo import NUMERIC
from explorer.core.workload.layers import ATTENTION, LM_HEAD, Context
from explorer.core.workload.model import Model, build_table

from .device_arrays import DeviceArrays
from .evaluate import time_energy
from .kernel import time_energy_classes
from .plan import _formats_of, cached_device_arrays, device_plan
from .row_classes import PASS_COLUMNS, RowClasses, _key_columns, given_classes
from .tensor_bytes import resident_bytes


@dataclass(frozen=True, eq=False)
class GenerateAnalysis:
    """Per device (D,) unless said, SI units (s, J, B, tokens/s)."""

    model: Model
    devices: DeviceArrays
    batch: int
    input_tokens: int
    output_tokens: int
    attention: str
    step_kv: np.ndarray  # (T-1,) positions each decode step attends
    ttft_s: np.ndarray
    step_s: np.ndarray  # (T-1, D) time of each decode step
    prefill_energy_j: np.ndarray
    step_energy_j: np.ndarray  # (T-1, D)
    memory_bytes: float
    fits: np.ndarray
    tables_built: int  # single work tables the pass was made from

    @property
    def precision(self) -> str:
        return self.devices.precision

    @property
    def decode_s(self) -> np.ndarray:
        return self.step_s.sum(axis=0)

    @property
    def total_s(self) -> np.ndarray:
        return self.ttft_s + self.decode_s

    @property
    def tpot_s(self) -> np.ndarray:
        if not len(self.step_s):
            return np.full(len(self.ttft_s), np.nan)
        return self.decode_s / len(self.step_s)

    @property
    def throughput_tok_s(self) -> np.ndarray:
        with np.errstate(divide="ignore", invalid="ignore"):
            return self.batch * self.output_tokens / self.total_s

    @property
    def energy_j(self) -> np.ndarray:
        return self.prefill_energy_j + self.step_energy_j.sum(axis=0)


def _whole(value, field: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"{field}: expected a whole number >= 1, got {value!r}")
    return int(value)


def _with_lengths(first: Context, seq_lens: range) -> list[Context]:
    """``first`` at each of ``seq_lens``: ``replace(first, seq_len=s)``, made as copies of its fields (the
    constructor of a frozen dataclass sets each field through ``object.__setattr__``: 127 contexts were ~5 % of a
    cold generate task). Equal and hashing equal to constructed ones (``tests/core/test_build_cold.py``); the
    constructor is used if ``Context`` ever validates its fields or has slots."""
    if hasattr(Context, "__post_init__") or not hasattr(first, "__dict__"):
        return [replace(first, seq_len=s) for s in seq_lens]
    fields, new = first.__dict__, object.__new__
    out = []
    for s in seq_lens:
        c = new(Context)
        state = c.__dict__
        state.update(fields)
        state["seq_len"] = s
        out.append(c)
    return out


@functools.lru_cache(maxsize=16)
def _stacked(model: Model, batch: int, p: int, t: int, attention: str, lm_head: str) -> StackedContexts:
    """The task's work rows (the prefill, then each decode step), cached per model and task like ``build_table``."""
    first = Context(batch=batch, seq_len=p, phase="prefill", attention=attention, lm_head=lm_head)
    steps = None
    if t > 1:
        step = Context(batch=batch, seq_len=p + 1, phase="decode", attention=attention, lm_head=lm_head)
        steps = ContextRun(None, step, t - 1)  # the steps at p + 1 .. p + t - 1, made only where read
    try:
        if steps:
            return stack_steps(model, first, steps, build_table, made_consecutive=True)
        return stack_contexts(model, [first], build_table)
    except ContextError as exc:
        raise ValueError(str(exc)) from None


_CLASSES: weakref.WeakKeyDictionary[StackedContexts, tuple[RowClasses | None]] = weakref.WeakKeyDictionary()
#: the entries of ``StackedContexts.fixed`` (``context_plane._matrix``'s layout) that are ``_key_columns``' numbers
_KEY_ENTRIES = np.array([NUMERIC.index(c) for c in PASS_COLUMNS] + [len(NUMERIC) + k for k in range(4)])


def _steady(st: StackedContexts, start: int, width: int, steps: int) -> np.ndarray:
    """(width,) the rows of a decode step whose numbers the pass reads are bit for bit the same in every step: from
    the interpolation where every step is one interpolated block (its copied entries: ``st.fixed``, no search),
    else by comparing every step's bits with the first's."""
    if st.fixed is not None and st.fixed.shape[1] == width:
        return st.fixed[_KEY_ENTRIES].all(axis=0)
    return _searched_steady(st.table, start, width, steps)


def _searched_steady(t, start: int, width: int, steps: int) -> np.ndarray:
    bits = np.stack([col[start:] for col in _key_columns(t)]).view(np.uint64).reshape(-1, steps, width)
    return (bits == bits[:, :1]).all(axis=(0, 1))


def _step_rows(head: int, width: int, later: int, same: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(first, inv) of the classes of ``head`` rows (the prefill and the first step: each its own) followed by
    ``later`` steps of ``width`` rows, where a later step's row is its first-step row's class if ``same`` (width,),
    else its own: numbered in row order, as a search in row order numbers them."""
    moving = np.flatnonzero(~same)
    m = len(moving)
    pos = np.arange(width)
    # per place in a step: its class in the step after the first (the first step's row, or the m-th own row on)
    # and how far it moves per later step (0 where the same, m where its own)
    base = np.where(same, head - width + pos, head + np.cumsum(~same) - 1)
    inv = base + np.arange(later)[:, None] * np.where(same, 0, m)
    own = head + width * np.arange(later)[:, None] + moving  # (later, m) the later steps' own rows
    head_rows = np.arange(head)
    return np.concatenate([head_rows, own.reshape(-1)]), np.concatenate([head_rows, inv.reshape(-1)])


def _step_classes(st: StackedContexts) -> RowClasses | None:
    """The task's distinct rows for the pass (:func:`.kernel.time_energy_classes`): a decode step's row whose
    numbers the pass reads (:func:`.row_classes._key_columns`) are bit for bit those of the first step's row at its
    place in every step is that row's class (in decode only the attention's score, softmax and context rows grow
    with the KV length: 3 of Llama-2's 17 rows per step); every other row is its own. So the pass computes 17 + 17 +
    126 x 3 rows, not 17 + 127 x 17, and the same floats (a row's cells depend only on those numbers). None where
    fewer than two steps, their row counts differ or no row repeats. Found once per stacked table (kept weakly)."""
    got = _CLASSES.get(st)
    if got is not None:
        return got[0]
    sizes, t = st.sizes[1:], st.table
    width, start = (int(sizes[0]), int(st.starts[1])) if len(sizes) else (0, 0)
    cls = None
    if len(sizes) >= 2 and np.all(sizes == width) and start + width * len(sizes) == len(t):
        same = _steady(st, start, width, len(sizes))
        if same.any():
            first, inv = _step_rows(start + width, width, len(sizes) - 1, same)
            names = kinds = None
            if st.fixed is not None:  # one interpolated block: every step has the first step's names and kinds
                head, moving = start + width, np.flatnonzero(~same).tolist()
                names = t.names[:head] + tuple(t.names[start + j] for j in moving) * (len(sizes) - 1)
                kinds = t.kinds[:head] + tuple(t.kinds[start + j] for j in moving) * (len(sizes) - 1)
            cls = given_classes(t, first, inv, names, kinds)
    _CLASSES[st] = (cls,)
    return cls


_RESIDENT = ("count", "params", "kv_cache_elems", "input_elems", "output_elems")  # the columns resident_bytes reads


def _footprint(st: StackedContexts, dev: DeviceArrays) -> float:
    """The larger :func:`.tensor_bytes.resident_bytes` total of the prefill and the last step (the largest KV
    cache), given only the columns it reads, under the formats kept per precision (``plan._formats_of``)."""
    c = st.table.columns
    fm = _formats_of(dev)
    footprint = 0.0
    for k in {0, len(st.sizes) - 1}:
        a, b = int(st.starts[k]), int(st.starts[k] + st.sizes[k])
        footprint = max(footprint, sum(resident_bytes({n: c[n][a:b] for n in _RESIDENT}, fm)))
    return footprint


def generate(model: Model, devices: Sequence[Device] | DeviceArrays, precision: str = "fp16", *, batch: int = 1,
             input_tokens: int, output_tokens: int, attention: str = "naive", lm_head: str = "last",
             formats: TensorFormats | None = None) -> GenerateAnalysis:
    """Prefill ``input_tokens`` then decode until ``output_tokens`` tokens per sequence, in one analysis pass.
    Raises ValueError naming the field (batch, input_tokens, output_tokens, attention, lm_head) or the context
    the model does not take."""
    batch = _whole(batch, "batch")
    p = _whole(input_tokens, "input_tokens")
    t = _whole(output_tokens, "output_tokens")
    if attention not in ATTENTION:
        raise ValueError(f"attention: expected one of {', '.join(ATTENTION)}, got {attention!r}")
    if lm_head not in LM_HEAD:
        raise ValueError(f"lm_head: expected one of {', '.join(LM_HEAD)}, got {lm_head!r}")
    if model.default_seq_len() is None:
        raise ValueError(f"model: {model.name} takes no tokens (generate needs a token model)")
    kv = np.arange(p + 1, p + t, dtype=int)
    st = _stacked(model, batch, p, t, attention, lm_head)
    dev = devices if isinstance(devices, DeviceArrays) else cached_device_arrays(devices, precision, formats)
    cls = None if attention == "fused" else _step_classes(st)
    if cls is None:
        row_time, row_energy = time_energy(st.table, dev, attention)  # evaluate()'s time and energy, nothing else
    else:  # the same floats, the pass on the distinct rows
        row_time, row_energy = time_energy_classes(cls, dev, device_plan(dev), attention)
    count = st.table.columns["count"][:, None]
    time = np.add.reduceat(count * row_time, st.starts, axis=0)  # (1 + T - 1, D)
    energy = np.add.reduceat(count * row_energy, st.starts, axis=0)
    footprint = _footprint(st, dev)
    return GenerateAnalysis(
        model=model, devices=dev, batch=batch, input_tokens=p, output_tokens=t, attention=attention, step_kv=kv,
        ttft_s=time[0], step_s=time[1:], prefill_energy_j=energy[0], step_energy_j=energy[1:],
        memory_bytes=footprint, fits=footprint <= dev.capacity, tables_built=st.builds)
