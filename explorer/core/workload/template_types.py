"""What a template is: its id, how it builds its model, its default phase and the published figures it is checked
against. Split from ``templates`` so that the LLM templates (``llm_templates``) can be defined beside it without an
import cycle; ``templates`` re-exports every name."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from explorer.core.workload.layers import Context
from explorer.core.workload.model import Model

QUANTITIES = ("params", "active_params", "macs", "flops")
PHASES = ("prefill", "decode")


class UnknownTemplateError(ValueError):
    """No template has the requested id; the message lists the known ones."""


@dataclass(frozen=True)
class PublishedFigure:
    """A size or cost figure as its source states it (``value`` in plain units: parameters, MACs or FLOPs)."""

    quantity: str  # params | active_params (per token, mixture of experts) | macs | flops
    value: float
    context: str  # the input and batch the figure is for, e.g. "224x224, batch 1"
    citation: str  # title of the paper or model card, and its URL
    note: str = ""  # how the source's counting convention maps onto the app's columns

    def __post_init__(self):
        if self.quantity not in QUANTITIES:
            raise ValueError(f"quantity: expected one of {', '.join(QUANTITIES)}, got {self.quantity!r}")


@dataclass(frozen=True)
class Template:
    id: str
    title: str
    description: str
    build: Callable[[], Model]
    phase_default: str = "prefill"
    published: tuple[PublishedFigure, ...] = ()

    def __post_init__(self):
        if self.phase_default not in PHASES:
            raise ValueError(f"phase_default: expected prefill or decode, got {self.phase_default!r}")

    def context(self, batch: int = 1, phase: str | None = None, seq_len: int | None = None) -> Context:
        """The analysis context with the template's defaults: its phase and, for token models, its own sequence
        length (in decode that is the KV-cache length each new token attends to)."""
        return Context(batch=batch, seq_len=seq_len or self.build().default_seq_len(),
                       phase=phase or self.phase_default)
