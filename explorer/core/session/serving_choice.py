"""The serving part of the session's state: the workload, the service levels and the engine's settings that the
Serving panel, the report and the planner's serving rows read (``docs/serving.md``). Frozen; Qt-free.

Units: ``rate`` requests/s; ``input_tokens`` and ``output_tokens`` tokens per request; ``ttft``, ``tpot``, ``e2e``
seconds at their percentile (``p50``, ``p90``, ``p99``; None: no target); ``memory_utilization`` the share of a
device's memory the engine uses (vLLM's gpu_memory_utilization); ``block_size`` tokens per KV-cache block.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING

from explorer.core.files import names

if TYPE_CHECKING:  # the serving core is imported on use (issue 22: the app's first window needs none of it)
    from explorer.core.serving.policy import Policy
    from explorer.core.serving.workload import SLO, Workload

#: the fields of the step-time surface and memory (a change rebuilds them); the others re-run only the estimate
SURFACE_FIELDS = ("input_tokens", "output_tokens", "max_batch", "max_batched_tokens", "chunked", "chunk",
                  "memory_utilization", "block_size")


@dataclass(frozen=True)
class ServingChoice:
    """A serving workload at a rate, its service levels and the batching engine's settings."""

    rate: float = 1.0
    arrival: str = "poisson"
    input_tokens: int = 1024
    output_tokens: int = 256
    ttft: float | None = 0.5
    ttft_pct: str = "p90"
    tpot: float | None = 0.05
    tpot_pct: str = "p90"
    e2e: float | None = None
    e2e_pct: str = "p90"
    max_batch: int = 256
    max_batched_tokens: int = 8192
    chunked: bool = False
    chunk: int = 512
    memory_utilization: float = 0.9
    block_size: int = 16

    def checked(self) -> ServingChoice:
        from explorer.core.serving.workload import ARRIVALS, PERCENTILES

        if isinstance(self.rate, bool) or not isinstance(self.rate, (int, float)) or not (
                math.isfinite(self.rate) and self.rate > 0):
            raise ValueError(f"rate: must be > 0 requests/s, got {self.rate!r}")
        if self.arrival not in ARRIVALS:
            raise ValueError(f"arrival: expected {' or '.join(ARRIVALS)}, got {self.arrival!r}")
        for name in ("input_tokens", "output_tokens", "max_batch", "max_batched_tokens", "chunk", "block_size"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"{name}: must be a whole number >= 1, got {v!r}")
        for name in ("ttft", "tpot", "e2e"):
            v, pct = getattr(self, name), getattr(self, name + "_pct")
            if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float))
                                  or not (math.isfinite(v) and v > 0)):
                raise ValueError(f"{name}: must be a time > 0 s or null, got {v!r}")
            if pct not in PERCENTILES:
                raise ValueError(f"{name}_pct: expected one of {', '.join(PERCENTILES)}, got {pct!r}")
        if not isinstance(self.chunked, bool):
            raise ValueError(f"chunked: expected true or false, got {self.chunked!r}")  # noqa: TRY004 - the project reader reports ValueErrors
        u = self.memory_utilization
        if isinstance(u, bool) or not isinstance(u, (int, float)) or not 0 < u <= 1:
            raise ValueError(f"memory_utilization: must be in (0, 1], got {u!r}")
        return self

    # -- the core's inputs
    @property
    def workload(self) -> Workload:
        from explorer.core.serving.workload import Lengths, Workload

        return Workload(rate=float(self.rate), arrival=self.arrival,
                        lengths=Lengths.fixed(self.input_tokens, self.output_tokens))

    @property
    def slo(self) -> SLO:
        from explorer.core.serving.workload import SLO

        return SLO(ttft=self.ttft, tpot=self.tpot, e2e=self.e2e, ttft_pct=self.ttft_pct, tpot_pct=self.tpot_pct,
                   e2e_pct=self.e2e_pct)

    @property
    def policy(self) -> Policy:
        from explorer.core.serving.policy import Policy

        return Policy(max_batch=self.max_batch, max_batched_tokens=self.max_batched_tokens, chunked=self.chunked,
                      chunk=self.chunk)

    def describe(self) -> str:
        """One line: the workload and its service levels (captions, report)."""
        slo = ", ".join(f"{n.upper()} {p.upper()} \u2264 {v * 1e3:g} ms" for n, v, p in self.slo.targets())
        return (f"{self.rate:g} requests/s ({self.arrival}), {self.input_tokens} input and {self.output_tokens} "
                f"output tokens; {slo or 'no service levels'}")

    # -- the project file
    def to_dict(self) -> dict:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @classmethod
    def from_dict(cls, data, where: str = "serving") -> ServingChoice:
        if not isinstance(data, dict):
            raise ValueError(f"{where}: expected an object, got {data!r:.40}")  # noqa: TRY004
        unknown = sorted(set(data) - {f.name for f in fields(cls)})
        if unknown:
            raise ValueError(f"{where}: unknown keys {names(unknown)}")
        values = dict(data)
        if isinstance(values.get("rate"), int) and not isinstance(values.get("rate"), bool):
            values["rate"] = float(values["rate"])
        try:
            return cls(**values).checked()
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{where}.{exc}") from None
