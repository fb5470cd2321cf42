"""The work of a training step, per row of the model's work table: forward, backward and optimizer.

Conventions (FLOPs, not MACs: a multiply-accumulate is 2 FLOPs; the work table's ``flops`` = 2 macs + other):

* **forward** = the table's FLOPs for the micro-batch, every position's logits computed (``lm_head="all"``);
* **backward** = 2 x forward for a row whose weights train (a GEMM X W needs dX = dY W^T and dW = X^T dY, each as
  many FLOPs as the forward) and for the attention products (Q K^T and P V: the gradients of both operands);
  1 x forward for a GEMM whose weights are **frozen** (the base of a LoRA fine-tune: dX only); elementwise rows
  (norms, activations, softmax, residual adds) are counted at 2 x their forward too (they read the output's
  gradient and the saved input and write the input's gradient); the embedding lookup has no FLOPs;
* so training FLOPs = 3 x forward = 6 x (parameters used in GEMMs) x tokens + 3 x the attention FLOPs: the
  "6 N D" rule (Kaplan et al. 2020, "Scaling Laws for Neural Language Models", https://arxiv.org/abs/2001.08361,
  Sec. 2.1, C = 6 N per token) plus attention, which Kaplan's N leaves out;
* **recomputation** adds FLOPs the hardware runs but the model does not count (HFU vs MFU: Korthikanti et al.
  2022, Sec. 6.3): full recomputation one more forward; selective only the attention core (scores, softmax,
  context). Fused attention (FlashAttention) recomputes the attention core in its backward whatever the setting
  (it keeps no s x s matrix: T. Dao et al. 2022, "FlashAttention", https://arxiv.org/abs/2205.14135, Sec. 3.1), so
  with it selective recomputation costs nothing more;
* **optimizer** (Adam): about 12 FLOPs per trainable parameter (moments, bias corrections, the update), negligible
  beside the GEMMs, and memory bound: it reads fp32 master weights, both moments and the bf16 gradient and writes
  the first three and the bf16 weights, 4 x 3 + 2 + 4 x 3 + 2 = 28 bytes per trainable parameter per step.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from explorer.core.workload.model import LayerTable
from explorer.core.workload.train_step import (  # noqa: F401  (the training core's names for them)
    ATTENTION_CORE,
    OPTIMIZER_FLOPS,
    attention_core,
    backward_factor,
    frozen_gemms,
)

OPTIMIZER_BYTES_MOVED = 28.0  # bytes per trainable parameter per Adam step (see above)


@dataclass(frozen=True)
class StepWork:
    """FLOPs of one training step for ``tokens`` tokens (the whole global batch), SI."""

    forward: float
    backward: float
    recompute: float
    optimizer: float
    trainable_params: float
    frozen_params: float
    tokens: float

    @property
    def model_flops(self) -> float:
        """What MFU counts: forward + backward, no recomputation."""
        return self.forward + self.backward

    @property
    def hardware_flops(self) -> float:
        """What HFU counts: recomputation included (the optimizer's FLOPs are negligible and left out of both)."""
        return self.forward + self.backward + self.recompute


def step_work(table: LayerTable, sequences: float, recompute: str = "none", lora: bool = False,
              fused: bool = False) -> StepWork:
    """A step's work from the work table of ONE sequence (batch 1, lm_head 'all'), for ``sequences`` sequences;
    ``fused``: FlashAttention, which recomputes the attention core in the backward."""
    fwd_rows = table.flops * table.columns["count"] * sequences
    forward = float(fwd_rows.sum())
    backward = float(fwd_rows @ backward_factor(table, lora))
    if recompute == "full":
        extra = forward
    elif recompute == "selective" or fused:
        extra = float(fwd_rows[attention_core(table)].sum())
    else:
        extra = 0.0
    params = table.columns["params"] * table.columns["count"]
    frozen = frozen_gemms(table, lora)
    trainable = float(params[~frozen].sum())
    tokens = sequences * float(table.status[0].in_shape[0]) if table.status else 0.0
    return StepWork(forward, backward, extra, OPTIMIZER_FLOPS * trainable, trainable, float(params[frozen].sum()),
                    tokens)


def time_shares(table: LayerTable, time: np.ndarray, lora: bool) -> tuple[float, float]:
    """(the attention core's share, the frozen weighted rows' share) of a forward pass's time; ``time`` per row
    instance (the single-device pass's), weighted by the rows' counts."""
    t = np.nan_to_num(np.asarray(time, dtype=float)) * table.columns["count"]
    total = t.sum()
    if total <= 0:
        return 0.0, 0.0
    return float(t[attention_core(table)].sum() / total), float(t[frozen_gemms(table, lora)].sum() / total)
