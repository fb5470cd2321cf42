"""The chapter's three "can you run it" checks (Checkpoint 1.4) of the procurement planner, one device at a time,
and how a check reads in a plan (:func:`check_verdict`). See :mod:`.procurement` for the formulas.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..hardware.capacity import format_capacity
from ..units import format_bytes, format_si


@dataclass(frozen=True)
class Check:
    """One of the chapter's three checks. ``value`` and ``limit`` in SI (B or s); status pass|fail|n/a|unknown."""

    name: str  # memory | bandwidth | compute
    title: str
    value: float
    limit: float
    unit: str  # "B" | "s"
    status: str
    detail: str  # the formula with its numbers
    missing: str = ""  # the figure that is missing, when status is "unknown"

    @property
    def passed(self) -> bool | None:
        return {"pass": True, "fail": False}.get(self.status)


def _status(ok: bool, known: bool, applicable: bool = True) -> str:
    return "unknown" if not known else "n/a" if not applicable else "pass" if ok else "fail"


def memory_check(weight_bytes: float, kv_bytes: float, activation_bytes: float, capacity: float) -> Check:
    need = weight_bytes + kv_bytes + activation_bytes
    known = math.isfinite(capacity) and capacity > 0
    detail = (f"weights {format_bytes(weight_bytes)} + KV cache {format_bytes(kv_bytes)} + activations "
              f"{format_bytes(activation_bytes)} = {format_bytes(need)}")
    if known:
        gap = capacity - need
        written = format_capacity(capacity)  # as the vendor writes it; a binary figure also in decimal GB
        written += f" ({format_bytes(capacity)})" if "iB" in written else ""
        detail += (f" of {written}: headroom {format_bytes(gap)}" if gap >= 0
                   else f" of {written}: short by {format_bytes(-gap)}")
    return Check("memory", "Memory capacity", need, capacity, "B", _status(need <= capacity, known), detail,
                 "" if known else "memory capacity")


def bandwidth_check(bytes_per_pass: float, bandwidth: float, latency_limit: float | None, shards: int = 1) -> Check:
    known = math.isfinite(bandwidth) and bandwidth > 0
    t = bytes_per_pass / (bandwidth * shards) if known else math.nan
    split = f" \u00d7 {shards} units" if shards > 1 else ""
    detail = (f"{format_bytes(bytes_per_pass)} / {format_si(bandwidth, 'B/s')}{split} = {format_si(t, 's')}"
              if known else "")
    limit = latency_limit if latency_limit is not None else math.nan
    detail += (f" against the {format_si(limit, 's')} limit" if latency_limit is not None
               else " (no latency limit given)") if known else ""
    return Check("bandwidth", "Bandwidth (latency floor)", t, limit, "s",
                 _status(t <= limit, known, latency_limit is not None), detail, "" if known else "memory bandwidth")


def compute_check(flops: float, peak: float, efficiency: float, budget: float | None, shards: int = 1,
                  precision: str = "") -> Check:
    known = math.isfinite(peak) and peak > 0 and math.isfinite(efficiency) and efficiency > 0
    t = flops / (peak * efficiency * shards) if known else math.nan
    split = f" \u00d7 {shards} units" if shards > 1 else ""
    detail = (f"{format_si(flops, 'FLOP')} / ({format_si(peak, 'FLOP/s')} \u00d7 {efficiency:.2f}{split}) = "
              f"{format_si(t, 's')}") if known else ""
    limit = budget if budget is not None else math.nan
    detail += (f" against the {format_si(limit, 's')} budget" if budget is not None
               else " (no frame or token budget given)") if known else ""
    return Check("compute", "Compute time", t, limit, "s", _status(t <= limit, known, budget is not None), detail,
                 "" if known else f"{precision} peak".strip())


#: the statuses a check reads as in a plan: the check's own, or "split" (below)
VERDICT_STATUSES = ("pass", "fail", "n/a", "unknown", "split")


def check_verdict(check: Check, shards: int = 1) -> tuple[str, str]:
    """How ``check`` reads in a plan whose replica spans ``shards`` units: ``(status, label)``, the one reading the
    planner table, the report (PDF, HTML, CSV, XLSX) and the CLI all show. The memory check of a model that does not
    fit one unit fails for that unit, but the plan splits the model over ``shards`` units, so it reads
    ``("split", "SPLIT OVER N UNITS")``, not FAIL; a check whose figure is missing reads MISSING."""
    if check.name == "memory" and check.status == "fail" and shards > 1:
        return "split", f"SPLIT OVER {shards} UNITS"
    return check.status, "MISSING" if check.status == "unknown" else check.status.upper()
