"""Parallel layouts: degrees of tensor (TP), pipeline (PP), expert (EP) and data/replica (DP) parallelism.

Placement: ranks are numbered with TP innermost, then PP, then DP, so a TP group is ``tp`` neighbouring devices
(inside one scale-up domain whenever tp fits in it), consecutive pipeline stages are ``tp`` devices apart, and
replicas are outermost. Validity rules (each refusal names its field):

* tp x pp x dp = the system's devices;
* tp divides the attention heads (KV heads fewer than tp are replicated, :mod:`.shard`);
* ep divides the routed experts and tp (expert parallelism inside the TP group; each expert is then split
  tp / ep ways); ep = 1 for a model without experts;
* a pipeline stage holds whole blocks: pp <= the model's repeated blocks;
* dp divides the batch, and microbatches divide each replica's batch.
"""

from __future__ import annotations

from dataclasses import dataclass


class LayoutError(ValueError):
    """A layout that does not divide the model or the system; the message names the field."""


@dataclass(frozen=True)
class Layout:
    tp: int = 1
    pp: int = 1
    ep: int = 1
    dp: int = 1
    microbatches: int = 1

    @property
    def devices(self) -> int:
        return self.tp * self.pp * self.dp

    def label(self) -> str:
        parts = [f"TP{self.tp}", f"PP{self.pp}"]
        if self.ep > 1:
            parts.append(f"EP{self.ep}")
        parts.append(f"DP{self.dp}")
        if self.microbatches > 1:
            parts.append(f"m{self.microbatches}")
        return " ".join(parts)

    def to_dict(self) -> dict:
        return {"tp": self.tp, "pp": self.pp, "ep": self.ep, "dp": self.dp, "microbatches": self.microbatches}


@dataclass(frozen=True)
class ModelShape:
    """What the validity rules need to know of a model."""

    heads: int  # attention heads (0: no attention)
    experts: int  # routed experts (0: no mixture of experts)
    blocks: int  # repeated blocks a pipeline can split
    batch: int


def check(layout: Layout, shape: ModelShape, devices: int) -> None:
    """Raise :class:`LayoutError` naming the first rule the layout breaks."""
    for name in ("tp", "pp", "ep", "dp", "microbatches"):
        value = getattr(layout, name)
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise LayoutError(f"{name}: expected a whole number >= 1, got {value!r}")
    if layout.devices != devices:
        raise LayoutError(f"tp x pp x dp: {layout.tp} x {layout.pp} x {layout.dp} = {layout.devices} devices, "
                          f"but the system has {devices}")
    if shape.heads and shape.heads % layout.tp:
        raise LayoutError(f"tp: {layout.tp} does not divide the model's {shape.heads} attention heads")
    if not shape.heads and layout.tp > 1:
        raise LayoutError("tp: the model has no attention heads to split (tensor parallelism needs transformer blocks)")
    if layout.ep > 1:
        if not shape.experts:
            raise LayoutError(f"ep: {layout.ep} needs a mixture of experts; the model has none")
        if shape.experts % layout.ep:
            raise LayoutError(f"ep: {layout.ep} does not divide the model's {shape.experts} experts")
        if layout.tp % layout.ep:
            raise LayoutError(f"ep: {layout.ep} must divide tp {layout.tp} (experts are placed inside the TP group)")
    if layout.pp > max(shape.blocks, 1):
        raise LayoutError(f"pp: {layout.pp} stages but the model has {shape.blocks} repeated blocks "
                          "(a stage holds whole blocks)")
    if shape.batch % layout.dp:
        raise LayoutError(f"dp: {layout.dp} replicas do not divide the batch of {shape.batch}")
    if (shape.batch // layout.dp) % layout.microbatches:
        raise LayoutError(f"microbatches: {layout.microbatches} do not divide each replica's batch of "
                          f"{shape.batch // layout.dp}")


def divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def why_none(shape: ModelShape, devices: int) -> str:
    """Why no layout is valid: the distinct reasons the simplest layouts (all replicas, all tensor, all pipeline)
    are refused, joined."""
    reasons = []
    for layout in (Layout(dp=devices), Layout(tp=devices), Layout(pp=devices)):
        try:
            check(layout, shape, devices)
        except LayoutError as exc:
            if str(exc) not in reasons:
                reasons.append(str(exc))
    return "; ".join(reasons)


def candidates(shape: ModelShape, devices: int, microbatches: int = 1) -> list[Layout]:
    """Every valid layout of the model on ``devices`` (microbatches as given, or 1 where it does not divide)."""
    out = []
    for tp in divisors(devices):
        for pp in divisors(devices // tp):
            dp = devices // (tp * pp)
            for ep in divisors(tp) if shape.experts else [1]:
                for m in {1, microbatches}:
                    layout = Layout(tp, pp, ep, dp, m)
                    try:
                        check(layout, shape, devices)
                    except LayoutError:
                        continue
                    out.append(layout)
    return out
