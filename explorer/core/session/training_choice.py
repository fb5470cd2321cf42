"""What a training run is, as a part of the session's state: :class:`TrainingChoice` (docs/project-file.md
"training"). The command that changes it and the results it gives are in :mod:`.training`. Qt-free."""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING

from explorer.core.files import names
from explorer.core.training.memory import RECOMPUTE, SCHEDULES, ZERO_STAGES

if TYPE_CHECKING:  # the training core is imported on use (issue 22: the app's first window needs none of it)
    from explorer.core.training.layout import TrainingLayout
    from explorer.core.training.step import TrainingSetup

DEGREES = ("tp", "pp", "dp")  # a layout given by hand; cp, schedule and virtual stages are fields of their own
_WHOLE = ("global_batch", "micro_batch", "seq_len", "virtual", "cp")


@dataclass(frozen=True)
class TrainingChoice:
    """A training run: ``tokens`` to train on, ``global_batch`` sequences of ``seq_len`` tokens per optimizer step
    in micro-batches of ``micro_batch`` sequences, ZeRO stage, activation recomputation, pipeline schedule and
    virtual stages, context-parallel degree, LoRA rank (0: full training), the layout (None: each system's best;
    else (tp, pp, dp)), whether communication overlaps compute, and the devices of each system (whole nodes; 0: the Systems
    panel's node count). Defaults as ``hwexplorer train``'s."""

    tokens: float = 1e12
    global_batch: int = 1024
    micro_batch: int = 1
    seq_len: int = 4096
    zero: int = 1
    recompute: str = "selective"
    schedule: str = "1f1b"
    virtual: int = 1
    cp: int = 1
    lora_rank: int = 0
    layout: tuple[int, int, int] | None = None
    overlap: bool = False
    devices: int = 0  # each system as a cluster of this many devices (whole nodes); 0: the Systems panel's nodes

    def checked(self) -> TrainingChoice:
        if isinstance(self.tokens, bool) or not isinstance(self.tokens, (int, float)) or not (
                math.isfinite(self.tokens) and self.tokens > 0):
            raise ValueError(f"tokens: must be a positive number of tokens, got {self.tokens!r}")
        for name in _WHOLE:
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"{name}: must be a whole number >= 1, got {v!r}")
        if isinstance(self.devices, bool) or not isinstance(self.devices, int) or self.devices < 0:
            raise ValueError(f"devices: must be a whole number >= 0 (0: the Systems panel's nodes), got "
                             f"{self.devices!r}")
        if isinstance(self.lora_rank, bool) or not isinstance(self.lora_rank, int) or self.lora_rank < 0:
            raise ValueError(f"lora_rank: must be a whole number >= 0, got {self.lora_rank!r}")
        if self.zero not in ZERO_STAGES or isinstance(self.zero, bool):
            raise ValueError(f"zero: expected a ZeRO stage 0, 1, 2 or 3, got {self.zero!r}")
        if self.recompute not in RECOMPUTE:
            raise ValueError(f"recompute: expected one of {', '.join(RECOMPUTE)}, got {self.recompute!r}")
        if self.schedule not in SCHEDULES:
            raise ValueError(f"schedule: expected one of {', '.join(SCHEDULES)}, got {self.schedule!r}")
        if self.virtual > 1 and self.schedule != "interleaved":
            raise ValueError(f"virtual: {self.virtual} virtual stages need the interleaved schedule")
        if self.global_batch % self.micro_batch:
            raise ValueError(f"global_batch: {self.global_batch} sequences do not divide into micro-batches of "
                             f"{self.micro_batch}")
        if not isinstance(self.overlap, bool):
            raise ValueError(f"overlap: expected true or false, got {self.overlap!r}")  # noqa: TRY004 - names the field
        if self.layout is not None:
            if not isinstance(self.layout, tuple) or len(self.layout) != 3:
                raise ValueError(f"layout: expected tp, pp and dp, got {self.layout!r}")
            for name, v in zip(DEGREES, self.layout):
                if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                    raise ValueError(f"layout.{name}: must be a whole number >= 1, got {v!r}")
        return self

    @property
    def setup(self) -> TrainingSetup:
        """The core's setup (bf16 mixed precision, fused attention, sequence parallelism with TP)."""
        from explorer.core.training.step import TrainingSetup

        return TrainingSetup(global_batch=self.global_batch, seq_len=self.seq_len, micro_batch=self.micro_batch,
                             zero=self.zero, recompute=self.recompute, lora_rank=self.lora_rank,
                             overlap=self.overlap)

    def training_layout(self) -> TrainingLayout | None:
        """The layout given by hand with this choice's cp, schedule and virtual stages (None: the best)."""
        if self.layout is None:
            return None
        from explorer.core.training.layout import TrainingLayout

        tp, pp, dp = self.layout
        schedule = self.schedule if pp > 1 else "1f1b"
        return TrainingLayout(tp, pp, dp, self.cp, 1, schedule, self.virtual if pp > 1 else 1, True)

    def to_dict(self) -> dict:
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        out["layout"] = None if self.layout is None else dict(zip(DEGREES, self.layout))
        return out

    @classmethod
    def from_dict(cls, data, where: str = "training") -> TrainingChoice:
        if not isinstance(data, dict):
            raise ValueError(f"{where}: expected an object, got {data!r:.40}")  # noqa: TRY004 - names the field
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"{where}: unknown keys {names(unknown)}")
        values = dict(data)
        layout = values.get("layout")
        if layout is not None:
            if not isinstance(layout, dict) or set(layout) != set(DEGREES):
                raise ValueError(f"{where}.layout: expected an object with tp, pp and dp, or null")
            values["layout"] = tuple(layout[d] for d in DEGREES)
        try:
            return cls(**values).checked()
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{where}.{exc}") from None
