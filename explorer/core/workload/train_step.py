"""The training phase's work table: one training step's forward, backward and optimizer rows (docs/training.md).

With ``phase="train"`` the work table of a model is the step of ``batch`` sequences on one device: each top-level
layer's **forward** rows (as prefill computes them, the LM head over every position), then its **backward** rows,
then its **optimizer** row, so every panel that reads the work table (roofline, energy, tiling, the totals) shows
the whole step. Conventions (FLOPs, not MACs: a multiply-accumulate is 2 FLOPs):

* **backward** of a row = ``factor`` x its forward work, factor 2 for a row whose weights train (a GEMM X W needs
  dX = dY W^T and dW = X^T dY, each as many MACs as the forward) and for every row without weights (the attention
  products need the gradients of both operands; elementwise rows read the output's gradient and the saved input and
  write the input's gradient); factor 1 for a GEMM whose weights are **frozen** (dX only). A model with LoRA
  adapters (rows of kind ``lora``) trains only the adapters: every other weighted row is frozen;
* a backward row's traffic: the output's gradient read once (``output_elems``), the saved input and the input's
  gradient (``factor`` x ``input_elems``: a frozen GEMM does not read X), the weights read and, when they train,
  their gradient written in the weights' format (``factor`` x ``weight_elems``); its GEMM is the forward's shape run
  ``factor`` times (dX and dW are the transposed shapes, same MACs: the tiling of the forward shape stands in);
  it stores no parameters (the model's size is counted once);
* **optimizer** (Adam, mixed precision) per layer with trainable parameters P: 12 FLOPs per parameter (the moments,
  bias corrections, the update: ``other_flops``), the bf16 gradient read and the bf16 weights written (2 P elements
  in the weights' format) and the fp32 master weights and both moments read and written (24 P bytes whatever the
  analysis precision: ``state_bytes``): 28 bytes per parameter at 16-bit weights;
* so the step's FLOPs = 3 x forward (+ 12 per trainable parameter): 6 x (parameters in GEMMs) x tokens plus 3 x the
  attention FLOPs (Kaplan et al. 2020, "Scaling Laws for Neural Language Models", https://arxiv.org/abs/2001.08361,
  Sec. 2.1); LoRA: 2 x forward of the frozen GEMMs + 3 x the rest.

Not here: recomputation (the Training panel and ``hwexplorer train`` count it), the KV cache (a training step keeps
none: the forward rows' ``kv_cache_elems`` are dropped) and the memory of training (weights, gradients, optimizer
states and the activations held for the backward: :mod:`explorer.core.training.memory`). Qt-free, numpy only.
"""

from __future__ import annotations

import numpy as np

OPTIMIZER_FLOPS = 12.0  # per trainable parameter and step (Adam)
OPTIMIZER_STATE_BYTES = 24.0  # fp32 master weights, first and second moments, each read and written
OPTIMIZER_WEIGHT_ELEMS = 2.0  # the gradient read and the 16-bit weights written, in the weights' format
ATTENTION_CORE = {"attention_scores", "attention_context"}


def attention_core(table) -> np.ndarray:
    """Rows of the attention core (scores, the attention softmax, context): what selective recomputation redoes."""
    kinds = np.array(table.kinds, dtype=object)
    names = np.array(table.names, dtype=object)
    softmax = np.array([k == "softmax" and ".attn" in n for k, n in zip(kinds, names)], dtype=bool)
    return np.isin(kinds, list(ATTENTION_CORE)) | softmax


def frozen_gemms(table, lora: bool) -> np.ndarray:
    """Rows whose weights do not train: with LoRA, every weighted row but the adapters'; else none."""
    if not lora:
        return np.zeros(len(table), dtype=bool)
    kinds = np.array(table.kinds, dtype=object)
    return (table.columns["params"] > 0) & (kinds != "lora")


def backward_factor(table, lora: bool) -> np.ndarray:
    """Backward work as a multiple of each row's forward (2, or 1 for a frozen weighted row)."""
    return np.where(frozen_gemms(table, lora), 1.0, 2.0)


def has_lora(table) -> bool:
    return "lora" in table.kinds


def train_step_table(forward, table_type, status_type):
    """The step's table from the ``forward`` table (prefill, LM head over all positions): per top-level layer its
    forward rows, its backward rows and, if it has trainable parameters, one optimizer row; ``table_type`` and
    ``status_type`` are :class:`~.model.LayerTable` and :class:`~.model.LayerStatus` (passed in: no cycle)."""
    n = len(forward)
    c = forward.columns
    lora = has_lora(forward)
    frozen = frozen_gemms(forward, lora)
    f = np.where(frozen, 1.0, 2.0)
    layer = forward.layer_index
    n_layers = len(forward.status)

    # trainable parameters and repeat count per top-level layer (a layer's rows share its repeat)
    trainable = np.bincount(layer, weights=c["params"] * ~frozen, minlength=n_layers) if n else np.zeros(n_layers)
    repeat = np.ones(n_layers)
    if n:
        repeat[layer] = c["count"]
    opt_layers = np.flatnonzero(trainable > 0)
    k = len(opt_layers)

    def cat(fwd, bwd, opt):
        return np.concatenate([np.asarray(fwd, dtype=float), np.asarray(bwd, dtype=float),
                               np.asarray(opt, dtype=float)])

    zeros_n, zeros_k = np.zeros(n), np.zeros(k)
    cols = {
        "macs": cat(c["macs"], c["macs"] * f, zeros_k),
        "other_flops": cat(c["other_flops"], c["other_flops"] * f, OPTIMIZER_FLOPS * trainable[opt_layers]),
        "params": cat(c["params"], zeros_n, zeros_k),
        "active_params": cat(c["active_params"], zeros_n, zeros_k),
        "weight_elems": cat(c["weight_elems"], c["weight_elems"] * f,
                            OPTIMIZER_WEIGHT_ELEMS * trainable[opt_layers]),
        "input_elems": cat(c["input_elems"], c["input_elems"] * f, zeros_k),
        "output_elems": cat(c["output_elems"], c["output_elems"], zeros_k),
        "kv_read_elems": cat(c["kv_read_elems"], c["kv_read_elems"] * f, zeros_k),
        "kv_cache_elems": np.zeros(2 * n + k),
        "state_bytes": cat(zeros_n, zeros_n, OPTIMIZER_STATE_BYTES * trainable[opt_layers]),
        "count": cat(c["count"], c["count"], repeat[opt_layers]),
        "part": np.concatenate([np.zeros(n), np.ones(n), np.full(k, 2.0)]),  # 0 forward, 1 backward, 2 optimizer
    }
    layer_all = np.concatenate([layer, layer, opt_layers]).astype(int)
    part = cols["part"]
    order = np.lexsort((np.arange(2 * n + k), part, layer_all))  # by layer, then forward/backward/optimizer
    cols = {name: a[order] for name, a in cols.items()}
    for a in cols.values():
        a.setflags(write=False)

    names = tuple(forward.names) + tuple(f"{x} (backward)" for x in forward.names) + tuple(
        f"{_layer_name(forward, i)} (Adam)" for i in opt_layers)
    kinds = tuple(forward.kinds) + tuple(forward.kinds) + ("optimizer",) * k
    gemm = np.concatenate([forward.gemm, forward.gemm, np.zeros((k, 3))])
    gemm_count = np.concatenate([forward.gemm_count, forward.gemm_count * f, np.zeros(k)])
    attention = tuple(forward.attention) * 2 + (None,) * k if forward.attention else ()
    out_shapes = tuple(forward.out_shapes) + tuple(forward.out_shapes) + ((),) * k if forward.out_shapes else ()

    counts = np.bincount(layer_all, minlength=n_layers) if len(layer_all) else np.zeros(n_layers, int)
    firsts = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(int) if n_layers else np.zeros(0, int)
    status = tuple(status_type(s.in_shape, s.out_shape, s.error, int(firsts[i]), int(counts[i]))
                   for i, s in enumerate(forward.status))
    return table_type(
        names=tuple(names[i] for i in order),
        kinds=tuple(kinds[i] for i in order),
        layer_index=layer_all[order],
        gemm=gemm[order],
        gemm_count=gemm_count[order],
        columns=cols,
        status=status,
        out_shapes=tuple(out_shapes[i] for i in order) if out_shapes else (),
        attention=tuple(attention[i] for i in order) if attention else (),
    )


def _layer_name(forward, layer: int) -> str:
    s = forward.status[layer]
    first = forward.names[s.first_row] if s.n_rows else f"layer{layer}"
    return first.split(".")[0]


def part_of(table) -> np.ndarray:
    """Per row of a work table: 0 forward, 1 backward, 2 optimizer (a table not of the train phase: all 0)."""
    part = table.columns.get("part")
    return np.zeros(len(table), dtype=int) if part is None else part.astype(int)
