"""The status bar's model totals: parameters (and, for a mixture of experts, those active per token), work (GFLOP)
and memory footprint, with units; first, how many layers do not fit and are left out of them (the analysis
panels say the same, :func:`left_out_text`).

The figures are the model's own (they do not depend on a device), taken from the workspace's layer table at
the current precision with the same definitions as ``ModelAnalysis.totals``: memory = weights + KV cache +
the largest activation (inputs + outputs of one operator).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from PySide6.QtWidgets import QLabel

from explorer.core.analysis.tensor_bytes import resident_bytes
from explorer.core.formats import TensorFormats
from explorer.core.precision import BYTES_PER_ELEMENT
from explorer.core.session.workspace import Workspace
from explorer.core.units import format_bytes, format_si
from explorer.core.workload.model import LayerTable

from .binding import bind


@dataclass(frozen=True)
class ModelTotals:
    params: float
    active_params: float  # per token: = params except in a mixture of experts
    flops: float
    weight_bytes: float
    kv_cache_bytes: float
    activation_peak_bytes: float
    errors: int

    @property
    def memory_bytes(self) -> float:
        return self.weight_bytes + self.kv_cache_bytes + self.activation_peak_bytes


def model_totals(table: LayerTable, precision: str, formats: TensorFormats | None = None) -> ModelTotals:
    """The model's size and work; its memory at ``precision``, or with each tensor in its ``formats``."""
    bpe = BYTES_PER_ELEMENT[precision]
    c = table.columns
    if formats is not None:
        weights, kv, act = resident_bytes(c, formats)
        return ModelTotals(params=table.total("params"), active_params=table.total("active_params"),
                           flops=table.total("flops"), weight_bytes=weights, kv_cache_bytes=kv,
                           activation_peak_bytes=act, errors=len(table.errors))
    activations = c["input_elems"] + c["output_elems"]
    return ModelTotals(
        params=table.total("params"),
        active_params=table.total("active_params"),
        flops=table.total("flops"),
        weight_bytes=table.total("params") * bpe,
        kv_cache_bytes=table.total("kv_cache_elems") * bpe,
        activation_peak_bytes=float(np.max(activations, initial=0.0)) * bpe,
        errors=len(table.errors),
    )


def left_out_text(workspace: Workspace) -> str:
    """'2 layers do not fit: left out of the totals' (the status bar and every panel say it), '' when all fit."""
    n = len(workspace.table.errors)
    if not n:
        return ""
    return f"{n} layer{'s' if n > 1 else ''} do{'' if n > 1 else 'es'} not fit: left out of the totals"


def left_out_details(workspace: Workspace, limit: int = 8) -> str:
    """One line per layer left out, with the reason (a tooltip's first lines), '' when all fit."""
    errors = workspace.table.errors
    if not errors:
        return ""
    names = [spec.name or f"{spec.kind}{i}" for i, spec in enumerate(workspace.model.layers)]
    lines = [f"{names[i]}: {reason}" for i, reason in errors[:limit]]
    if len(errors) > limit:
        lines.append(f"\u2026 and {len(errors) - limit} more")
    return ("Left out of the analysis (their input passes through to the next layer):\n"
            + "\n".join(lines) + "\n\n")


def format_count(x: float) -> str:
    return format_si(x, "").strip() if x else "0"


class ModelTotalsLabel(QLabel):
    def __init__(self, workspace: Workspace, parent=None):
        super().__init__(parent)
        self.ws = workspace
        self.totals: ModelTotals | None = None
        bind(self, workspace.changed, self._on_changed)
        self.refresh()

    def _on_changed(self, changes) -> None:
        if changes & {"layers", "input", "model", "assumptions"}:
            self.refresh()

    def refresh(self) -> None:
        formats = self.ws.assumptions.tensor_formats
        precision = formats.label() if formats else self.ws.assumptions.precision
        t = self.totals = model_totals(self.ws.table, self.ws.assumptions.precision, formats)
        active = f" ({format_count(t.active_params)} active)" if t.active_params != t.params else ""
        text = (f"Params {format_count(t.params)}{active} \u00b7 {t.flops / 1e9:,.2f} GFLOP \u00b7 "
                f"Memory {format_bytes(t.memory_bytes)} ({precision})")
        left_out = left_out_text(self.ws)
        if left_out:
            text = f"\u26a0 {left_out} \u00b7 " + text
        self.setText(text)
        phase = self.ws.assumptions.phase
        per_token = f"Active per token (a mixture of experts' top-k): {t.active_params:,.0f}\n" if active else ""
        self.setToolTip(
            left_out_details(self.ws) +
            f"Parameters: {t.params:,.0f}\n{per_token}"
            f"Work: {format_si(t.flops, 'FLOP')} per "
            f"{ {'decode': 'decode step', 'train': 'training step'}.get(phase, 'inference')} "
            f"(batch {self.ws.assumptions.batch}; 1 MAC = 2 FLOP)\n"
            + ("Memory (not a training step's: gradients, optimizer states and held activations are the Training "
               "panel's)\n" if phase == "train" else "") +
            f"Memory at {precision}: weights {format_bytes(t.weight_bytes)} + KV cache {format_bytes(t.kv_cache_bytes)}"
            f" + largest activation {format_bytes(t.activation_peak_bytes)} = {format_bytes(t.memory_bytes)}\n"
            "(decimal units: 1 GB = 10^9 bytes)")
