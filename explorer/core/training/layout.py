"""Training layouts: tensor (TP, with sequence parallelism), context (CP), pipeline (PP, with its schedule), expert
(EP) and data (DP) parallelism, and the rules a layout must meet (each refusal names its option).

Placement, innermost first: TP, then CP, then PP, then DP (Megatron-LM's default order puts tensor and context
ranks inside a node). So a TP group spans ``tp`` neighbouring devices, a CP group ``cp`` ranks ``tp`` apart, a DP
group ``dp`` ranks ``tp x cp x pp`` apart; each collective runs on the innermost domain its span fits in.

Rules: tp x cp x pp x dp = the system's devices; tp divides the attention heads; cp divides the sequence; pp is at
most the model's repeated blocks, and with the interleaved schedule pp x v divides them and pp divides the
micro-batches (Megatron-LM's requirements); micro-batch x dp divides the global batch (in sequences); ZeRO stage
0-3.
"""

from __future__ import annotations

from dataclasses import dataclass

from explorer.core.parallel.layout import LayoutError, divisors

from .memory import RECOMPUTE, SCHEDULES, ZERO_STAGES


@dataclass(frozen=True)
class TrainingLayout:
    tp: int = 1
    pp: int = 1
    dp: int = 1
    cp: int = 1
    ep: int = 1
    schedule: str = "1f1b"
    virtual: int = 1  # virtual stages per device (interleaved 1F1B)
    sp: bool = True  # sequence parallelism with TP (Korthikanti et al.); no effect at tp 1

    @property
    def devices(self) -> int:
        return self.tp * self.cp * self.pp * self.dp

    def label(self) -> str:
        parts = [f"TP{self.tp}" + ("+SP" if self.sp and self.tp > 1 else "")]
        if self.cp > 1:
            parts.append(f"CP{self.cp}")
        parts.append(f"PP{self.pp}")
        if self.ep > 1:
            parts.append(f"EP{self.ep}")
        parts.append(f"DP{self.dp}")
        if self.pp > 1:
            parts.append(self.schedule + (f" v{self.virtual}" if self.schedule == "interleaved" else ""))
        return " ".join(parts)

    def to_dict(self) -> dict:
        return {"tp": self.tp, "pp": self.pp, "dp": self.dp, "cp": self.cp, "ep": self.ep,
                "schedule": self.schedule, "virtual_stages": self.virtual, "sequence_parallel": self.sp}


@dataclass(frozen=True)
class TrainingShape:
    heads: int
    blocks: int
    experts: int
    seq_len: int
    global_batch: int
    micro_batch: int


def microbatches(layout: TrainingLayout, shape: TrainingShape) -> int:
    return shape.global_batch // (shape.micro_batch * layout.dp)


def check(layout: TrainingLayout, shape: TrainingShape, devices: int, zero: int = 0,
          recompute: str = "none") -> None:
    """Raise :class:`LayoutError` whose message starts with the option at fault."""
    for name in ("tp", "pp", "dp", "cp", "ep", "virtual"):
        value = getattr(layout, name)
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise LayoutError(f"{'virtual-stages' if name == 'virtual' else name}: expected a whole number >= 1, "
                              f"got {value!r}")
    if zero not in ZERO_STAGES:
        raise LayoutError(f"zero: expected a ZeRO stage 0, 1, 2 or 3, got {zero!r}")
    if recompute not in RECOMPUTE:
        raise LayoutError(f"recompute: expected one of {', '.join(RECOMPUTE)}, got {recompute!r}")
    if layout.schedule not in SCHEDULES:
        raise LayoutError(f"schedule: expected one of {', '.join(SCHEDULES)}, got {layout.schedule!r}")
    if layout.virtual > 1 and layout.schedule != "interleaved":
        raise LayoutError(f"virtual-stages: {layout.virtual} needs --schedule interleaved")
    if layout.devices != devices:
        raise LayoutError(f"dp: tp x cp x pp x dp = {layout.tp} x {layout.cp} x {layout.pp} x {layout.dp} = "
                          f"{layout.devices} devices, but the system has {devices}")
    if not shape.heads:
        raise LayoutError("tp: the model has no attention heads (training is modelled for transformer models)")
    if shape.heads % layout.tp:
        raise LayoutError(f"tp: {layout.tp} does not divide the model's {shape.heads} attention heads")
    if shape.seq_len % layout.cp:
        raise LayoutError(f"cp: {layout.cp} does not divide the sequence length {shape.seq_len}")
    if layout.ep > 1 and (not shape.experts or shape.experts % layout.ep or layout.tp % layout.ep):
        raise LayoutError(f"ep: {layout.ep} must divide the model's {shape.experts} experts and tp {layout.tp}")
    if layout.pp > max(shape.blocks, 1):
        raise LayoutError(f"pp: {layout.pp} stages but the model has {shape.blocks} repeated blocks "
                          "(a stage holds whole blocks)")
    if layout.schedule == "interleaved" and shape.blocks % (layout.pp * layout.virtual):
        raise LayoutError(f"virtual-stages: pp {layout.pp} x v {layout.virtual} does not divide the model's "
                          f"{shape.blocks} blocks")
    if shape.global_batch % (shape.micro_batch * layout.dp):
        raise LayoutError(f"global-batch: {shape.global_batch} sequences do not divide into micro-batches of "
                          f"{shape.micro_batch} x dp {layout.dp}")
    m = microbatches(layout, shape)
    if layout.schedule == "interleaved" and m % layout.pp:
        raise LayoutError(f"schedule: interleaved needs the micro-batches ({m}) divisible by pp {layout.pp}")


def candidates(shape: TrainingShape, devices: int, scale_up: int, cp: int = 1, schedule: str = "1f1b",
               virtual: int = 1, zero: int = 0, recompute: str = "none", sp: bool = True) -> list[TrainingLayout]:
    """Every valid layout with TP inside the scale-up domain (tp <= its size), the given cp and schedule; for a
    mixture of experts every expert-parallel degree ep that divides tp and the experts (EP inside the TP group,
    as the system pass places it: each expert then split tp / ep ways, so the weights per device do not change,
    but the experts' communication and GEMM shapes do)."""
    out = []
    if devices % cp:
        return out
    for tp in divisors(devices // cp):
        if tp > max(scale_up, 1):
            continue
        for pp in divisors(devices // (cp * tp)):
            dp = devices // (cp * tp * pp)
            v = virtual if pp > 1 else 1
            sched = schedule if pp > 1 else "1f1b"
            for ep in divisors(tp) if shape.experts else [1]:
                layout = TrainingLayout(tp, pp, dp, cp, ep, sched, v, sp)
                try:
                    check(layout, shape, devices, zero, recompute)
                except LayoutError:
                    continue
                out.append(layout)
    return out
