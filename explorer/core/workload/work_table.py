"""The per-operator work table (:class:`LayerTable`) and how it is built from a model's layers: all at once
(:func:`fresh_table`) or, after an edit, by patching the table of the model before it (:func:`patch_table`).

An edit changes a few layers of a long model (a field typed in the builder, a layer inserted or removed). The rows of
a top-level layer depend only on its spec, its index (the name of an unnamed layer), the shape it receives and the
context, so the table of the edited model is the old table with the changed layers' rows rebuilt and spliced in:

* the layers equal at the front and at the back of both models are found (by identity first, as the workspace's
  commands keep the untouched spec objects; tuple slices compared in C, :mod:`.seq_diff`);
* the layers between them are expanded again, and the layers after them too while the shape flowing out differs
  from the one the old table's next layer received (a change of width propagates until a layer maps it back), and
  while an unnamed layer's index moved (its name ``kind<i>`` changed);
* the old rows before and after are kept: the numeric columns are spliced with one :func:`numpy.concatenate` each,
  the row indices of the layers after a change of layer count are shifted, and the per-layer statuses after a change
  of row count are remade with their first row shifted; what the old table had found once over every layer (its
  errors, its layers' first rows) is carried over the same way instead of found again.

The result equals a fresh build exactly (same rows, same float values: each value comes from the same expansion;
``tests/core/test_work_table.py`` checks random edits against fresh builds). A layer's expansion allocates a few
Python objects per row; patching allocates them for the changed layers only, which keeps an edit of a 10,000-layer
model from creating the ~100,000 short-lived objects a fresh build does (garbage-collection passes in the edit path).
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from explorer.core.workload import seq_diff
from explorer.core.workload.layer_memo import NUMERIC, Assembler, expand_layer  # noqa: F401 - read from here too
from explorer.core.workload.layers import AttentionShape, Context, Shape


class LayerStatus(NamedTuple):
    """What the builder shows per top-level layer. A named tuple: a table holds one per layer, and tuples of plain
    values are left out of the garbage collector's passes (10,000 frozen objects per table were not)."""

    in_shape: Shape
    out_shape: Shape
    error: str | None
    first_row: int
    n_rows: int


@dataclass(frozen=True, eq=False)
class LayerTable:
    """Per-operator work as numpy arrays (batch included, element counts), plus per-layer status."""

    names: tuple[str, ...]
    kinds: tuple[str, ...]
    layer_index: np.ndarray
    gemm: np.ndarray  # (rows, 3) M, N, K
    gemm_count: np.ndarray
    columns: Mapping[str, np.ndarray] = field(default_factory=dict)
    status: tuple[LayerStatus, ...] = ()
    out_shapes: tuple[Shape, ...] = ()
    attention: tuple[AttentionShape | None, ...] = ()  # per row: the K/V stream of an attention product, or None

    def __getattr__(self, item):  # table.macs etc.
        columns = self.__dict__.get("columns", {})
        if item in columns:
            return columns[item]
        raise AttributeError(item)

    @property
    def flops(self) -> np.ndarray:
        return 2.0 * self.columns["macs"] + self.columns["other_flops"]

    @property
    def errors(self) -> list[tuple[int, str]]:
        """(layer index, message) of every layer flagged; read on every edit by several views, so found once per
        table (a new list each call: callers may keep or change it)."""
        found = self.__dict__.get("_errors")
        if found is None:
            found = tuple((i, s.error) for i, s in enumerate(self.status) if s.error)
            object.__setattr__(self, "_errors", found)
        return list(found)

    @property
    def layer_rows(self) -> tuple[np.ndarray, np.ndarray]:
        """Per layer, its first row and its number of rows (``status[i].first_row``, ``status[i].n_rows``) as
        arrays, found once per table: from the row indices where the rows follow the layers in order (tables made
        here), else from the statuses."""
        found = self.__dict__.get("_layer_rows")
        if found is None:
            n_layers = len(self.status)
            if self.__dict__.get("_in_layer_order"):
                n = np.bincount(self.layer_index, minlength=n_layers).astype(np.intp)
                found = (np.cumsum(n) - n, n)
            else:
                found = (np.fromiter((s.first_row for s in self.status), dtype=np.intp, count=n_layers),
                         np.fromiter((s.n_rows for s in self.status), dtype=np.intp, count=n_layers))
            for a in found:
                a.setflags(write=False)
            object.__setattr__(self, "_layer_rows", found)
        return found

    def __len__(self) -> int:
        return len(self.names)

    def total(self, column: str) -> float:
        if column == "flops":
            return float(np.sum(self.flops * self.columns["count"]))
        return float(np.sum(self.columns[column] * self.columns["count"]))


@dataclass(frozen=True, eq=False)
class _Block:
    """The rows of consecutive layers as the table's parts."""

    names: tuple
    kinds: tuple
    layer_index: np.ndarray
    gemm: np.ndarray
    gemm_count: np.ndarray
    columns: dict
    out_shapes: tuple
    attention: tuple
    numbers: np.ndarray | None = None  # (WIDTH, rows): NUMERIC, GEMM M, N, K, count, where made as one block


def _table(block: _Block, status: tuple[LayerStatus, ...]) -> LayerTable:
    for a in block.columns.values():
        a.setflags(write=False)
    table = LayerTable(names=block.names, kinds=block.kinds, layer_index=block.layer_index, gemm=block.gemm,
                       gemm_count=block.gemm_count, columns=block.columns, status=status, out_shapes=block.out_shapes,
                       attention=block.attention)
    object.__setattr__(table, "_in_layer_order", True)  # row r belongs to layer layer_index[r], in order
    if block.numbers is not None:  # the columns' block, copied in one step by context_plane._matrix
        block.numbers.setflags(write=False)
        object.__setattr__(table, "_numbers", block.numbers)
    return table


def fresh_table(layers: Sequence, shape: Shape, ctx: Context) -> LayerTable:
    """Every layer expanded in turn from the model's input ``shape`` (a repeated layer's rows made once:
    :mod:`.layer_memo`)."""
    asm = Assembler(ctx)
    status = []
    first = 0
    for i, spec in enumerate(layers):
        seen, out, error, n = asm.add(i, spec, shape)
        status.append(LayerStatus(seen, out, error, first, n))
        first += n
        shape = out
    return _table(_Block(**asm.parts()), tuple(status))


def changed_span(old: Sequence, new: Sequence) -> tuple[int, int]:
    """``(p, q)``: the first ``p`` layers of both are equal, and the last ``q``, with ``p + q <= min(len)``: found with
    tuple slice comparisons in C (:func:`~explorer.core.workload.seq_diff.changed_span`; identity first, as the
    workspace's commands keep the untouched spec objects, equality where the objects differ)."""
    p, stop, _ = seq_diff.changed_span(tuple(old), tuple(new))
    return p, len(new) - stop


def _carried(old: LayerTable, p: int, k: int, delta: int, shift: int, status: list[LayerStatus],
             table: LayerTable) -> None:
    """What ``old`` found once (its errors, its layer rows) carried over to ``table``: old layers before ``p`` as
    they were, the rebuilt ``status``, then old layers from ``k`` moved by ``delta`` layers and ``shift`` rows (their
    messages name them by their names: an unnamed layer that moved is among the rebuilt)."""
    errors = old.__dict__.get("_errors")
    if errors is not None:
        at = [i for i, _ in errors]
        found = (*errors[:bisect_left(at, p)], *((p + i, s.error) for i, s in enumerate(status) if s.error),
                 *((i + delta, e) for i, e in errors[bisect_left(at, k):]))
        object.__setattr__(table, "_errors", found)
    rows = old.__dict__.get("_layer_rows")
    if rows is not None:
        first, n = rows
        made = (np.concatenate([first[:p], np.fromiter((s.first_row for s in status), np.intp, len(status)),
                                first[k:] + shift]),
                np.concatenate([n[:p], np.fromiter((s.n_rows for s in status), np.intp, len(status)), n[k:]]))
        for a in made:
            a.setflags(write=False)
        object.__setattr__(table, "_layer_rows", made)


def patch_table(old_layers: Sequence, old: LayerTable, layers: Sequence, shape0: Shape, ctx: Context,
                max_changed: float = 0.5, span: tuple[int, int] | None = None) -> LayerTable | None:
    """The table of ``layers`` from ``old``, the table of ``old_layers`` built with the same input ``shape0`` and
    context, rebuilding only the layers an edit changed (module docstring); None when more than ``max_changed`` of
    the layers would be rebuilt (a fresh build is then as fast). ``span``: ``changed_span(old_layers, layers)``
    where the caller has it (one model patched in many contexts finds it once)."""
    a, b = len(old_layers), len(layers)
    p, q = changed_span(old_layers, layers) if span is None else span
    delta = b - a
    unnamed = [k for k in range(b - q, b) if not layers[k].name] if delta else []
    must = max(b - q, unnamed[-1] + 1 if unnamed else 0)  # rebuild at least layers p .. must - 1

    def flow_old(j: int) -> Shape:  # the shape flowing into old layer j
        return old.status[j - 1].out_shape if j > 0 else shape0

    shape = flow_old(p)
    r0 = old.status[p].first_row if p < a else len(old)
    asm = Assembler(ctx)
    status: list[LayerStatus] = []
    first = r0
    j = p
    limit = max_changed * b
    while j < b and (j < must or shape != flow_old(j - delta)):
        if j - p > limit:
            return None
        seen, out, error, n = asm.add(j, layers[j], shape)
        status.append(LayerStatus(seen, out, error, first, n))
        first += n
        shape = out
        j += 1
    k = j - delta  # old layer k is new layer j: both kept from here
    r1 = old.status[k].first_row if k < a else len(old)
    mid = _Block(**asm.parts())
    shift = first - r1  # rows after the change move by this much
    tail_status = old.status[k:]
    if shift:
        tail_status = tuple(LayerStatus(s.in_shape, s.out_shape, s.error, s.first_row + shift, s.n_rows)
                            for s in tail_status)
    tail_index = old.layer_index[r1:] + delta if delta else old.layer_index[r1:]
    cat = np.concatenate
    block = _Block(
        names=old.names[:r0] + mid.names + old.names[r1:],
        kinds=old.kinds[:r0] + mid.kinds + old.kinds[r1:],
        layer_index=cat([old.layer_index[:r0], mid.layer_index, tail_index]),
        gemm=cat([old.gemm[:r0], mid.gemm, old.gemm[r1:]]),
        gemm_count=cat([old.gemm_count[:r0], mid.gemm_count, old.gemm_count[r1:]]),
        columns={c: cat([old.columns[c][:r0], mid.columns[c], old.columns[c][r1:]]) for c in NUMERIC},
        out_shapes=old.out_shapes[:r0] + mid.out_shapes + old.out_shapes[r1:],
        attention=old.attention[:r0] + mid.attention + old.attention[r1:],
    )
    table = _table(block, old.status[:p] + tuple(status) + tuple(tail_status))
    _carried(old, p, k, delta, shift, status, table)
    return table
