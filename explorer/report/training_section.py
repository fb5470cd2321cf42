"""The report's Training section: the model trained on each system side by side (time and cost to train), the
chosen layout, its step breakdown, memory per device against capacity, the figures' sources and the assumptions.
Plain rows of text that the PDF, HTML and CSV writers format; the numbers are the ``TrainingResult`` the Training
panel and ``hwexplorer train`` read (explorer/core/training/compare.py).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from ..core.analysis.procurement import format_usd
from ..core.training.compare import TrainingResult
from ..core.training.step import PRECISION, STEP_PARTS
from ..core.units import format_bytes, format_si

DASH = "\u2014"
MEMORY_PARTS = (("weights", "weight_bytes"), ("gradients", "gradient_bytes"),
                ("optimizer states", "optimizer_bytes"), ("activations", "activation_bytes"))
SUMMARY_HEADERS = ("System", "Devices", "Chosen layout", "Fits", "Step", "Tokens/s", "MFU", "Time to train",
                   "Device-hours", "Energy", "Electricity", "Rent", "TCO share")
STEP_HEADERS = ("System", *(p.capitalize() for p in STEP_PARTS), "Step")
MEMORY_HEADERS = ("System", *(p.capitalize() for p, _ in MEMORY_PARTS), "Total", "Capacity")
NOTE = ("MFU is ideal-model MFU: model FLOPs per step (forward and backward, 6 N D plus attention) over the analytical "
        "step time x devices x the device's dense bf16 peak. The step has no kernel launch gaps, stragglers, data "
        "loading or checkpointing, so it is optimistic (docs/training.md compares it with published runs).")


@dataclass(frozen=True)
class TrainingSection:
    results: tuple[TrainingResult, ...] = ()
    by_hand: bool = False  # the layout was given (else each system's best)

    def __bool__(self) -> bool:
        return bool(self.results)


def build_section(results: Sequence[TrainingResult], by_hand: bool = False) -> TrainingSection:
    return TrainingSection(tuple(results), by_hand)


def short_name(name: str) -> str:
    """The system's name without its parenthesized details (the CSV keeps the whole name)."""
    return name.split(" (")[0]


def _s(x: float) -> str:
    return DASH if not math.isfinite(x) else format_si(x, "s", 3)


def _money(x: float, missing: str) -> str:
    return f"unknown ({missing})" if not math.isfinite(x) else format_usd(x)


def summary_rows(section: TrainingSection) -> list[list[str]]:
    """Per system: its chosen layout, step, throughput, MFU, and the time, energy and cost to train."""
    rows = []
    for res in section.results:
        s = res.system
        who = f"{s.devices} x {res.device.name}"
        if res.analysis is None:
            rows.append([short_name(s.name), who, DASH, DASH, *[DASH] * 8, res.error or ""])
            continue
        a, c, k = res.analysis, res.cost, res.chosen
        energy = f"{c.energy_j[k] / 3.6e9:,.4g} MWh" if math.isfinite(c.energy_j[k]) else "unknown (no TDP)"
        rows.append([short_name(s.name), who, res.layout.label(), "yes" if a.fits[k] else "NO",
                     _s(a.step_time[k]), f"{a.tokens_per_s[k]:,.4g}", f"{100 * a.mfu[k]:.3g} %",
                     f"{c.time_s[k] / 86400:,.4g} days", f"{c.device_hours[k]:,.4g}", energy,
                     _money(c.electricity_usd[k], "no TDP"), _money(c.rent_usd[k], "no cloud price"),
                     _money(c.tco_usd[k], "no list price")])
    return rows


def step_rows(section: TrainingSection) -> list[list[str]]:
    """Per system: the chosen layout's step, part by part (seconds per step)."""
    rows = []
    for res in section.results:
        if res.analysis is None:
            continue
        a, k = res.analysis, res.chosen
        rows.append([short_name(res.system.name), *[_s(x) for x in a.step_parts[k]], _s(a.step_time[k])])
    return rows


def memory_rows(section: TrainingSection) -> list[list[str]]:
    """Per system: memory per device of the chosen layout, part by part, against the device's capacity."""
    rows = []
    for res in section.results:
        if res.analysis is None:
            continue
        a, k = res.analysis, res.chosen
        rows.append([short_name(res.system.name), *[format_bytes(getattr(a, f)[k]) for _, f in MEMORY_PARTS],
                     format_bytes(a.memory_bytes[k]),
                     f"{format_bytes(a.capacity)}: {'fits' if a.fits[k] else 'does NOT fit'}"])
    return rows


def assumptions(section: TrainingSection) -> list[tuple[str, str]]:
    """The training run and what the model assumes, as (name, text) rows."""
    first = next((r for r in section.results if r.analysis is not None), None)
    if first is None:
        return []
    st, c = first.analysis.setup, first.cost
    mode = f"LoRA rank {st.lora_rank} on {st.lora_targets}" if st.lora_rank else "full training"
    return [
        ("Run", (f"{first.analysis.model.name}, {mode}: {c.tokens:.4g} tokens, global batch {st.global_batch} "
                f"sequences of {st.seq_len} tokens ({st.global_batch * st.seq_len:,} tokens per step, "
                f"{c.steps:,.4g} steps), micro-batch {st.micro_batch}")),
        ("Memory", (f"ZeRO stage {st.zero}; recomputation {st.recompute}; {st.attention} attention; bf16 weights, "
                   "gradients and activations, fp32 master weights and Adam moments (16 B per trained parameter: "
                   "Rajbhandari et al. 2020, ZeRO, https://arxiv.org/abs/1910.02054, Sec. 3.1); activations per "
                   "layer after Korthikanti et al. 2022, https://arxiv.org/abs/2205.05198, Table 2")),
        ("Communication", "overlapped with compute" if st.overlap else "every byte exposed (no overlap)"),
        ("Layout", "given by hand for every system" if section.by_hand else "each system's best valid layout "
                   "(fitting ones first, then by step time), tensor parallelism inside the scale-up domain"),
        ("MFU", NOTE),
        ("Energy and cost", (f"every device at its TDP for the whole run x PUE {c.assumptions.pue:g}, electricity "
                            f"at ${c.assumptions.electricity_usd_per_kwh:g}/kWh; rent = devices x cloud price x "
                            f"time; TCO share = devices x list price x time / {c.assumptions.years:g} years + "
                            "electricity. Chassis, switches and network are not priced; unknown prices stay "
                            "unknown")),
    ]


def training_sources(section: TrainingSection) -> list[tuple[str, str, str, str, str, str]]:
    """(device, figure, value as written, source title, url, date) for every device figure the section used."""
    out, seen = [], set()
    for res in section.results:
        d = res.device
        if d.id in seen:
            continue
        seen.add(d.id)
        offchip = [lv for lv in d.memory if lv.role == "offchip"]
        cited = [(f"peak {PRECISION} (dense)", d.peak.get(PRECISION))]
        cited += [(f"{lv.name} capacity", lv.capacity) for lv in offchip]
        cited += [(f"{lv.name} bandwidth", lv.bandwidth) for lv in offchip]
        cited += [("TDP", d.tdp), ("price", d.price), ("cloud price", d.cloud_price)]
        for figure, c in cited:
            if c is None:
                out.append((d.name, figure, "not in the catalog", "", "", ""))
                continue
            src = d.source_of(c)
            out.append((d.name, figure, c.text, src.title if src else "not cited", src.url if src else "",
                        src.date if src else ""))
    return out


def csv_rows(section: TrainingSection) -> list[list]:
    """Plain SI numbers and USD (units in the headers), one row per system's chosen layout."""
    rows: list[list] = [["system_id", "system", "device_id", "devices", "layout", "tp", "cp", "pp", "dp", "schedule",
                         "virtual stages", "fits", "microbatches", "step [s]", *[f"{p} [s]" for p in STEP_PARTS],
                         *[f"{p} per device [B]" for p, _ in MEMORY_PARTS], "memory per device [B]",
                         "device memory [B]", "throughput [tokens/s]", "MFU [fraction]", "HFU [fraction]",
                         "tokens [tokens]", "steps", "time to train [s]", "device-hours [h]", "energy to train [J]",
                         "electricity [USD]", "rent [USD]", "TCO share [USD]", "error"]]
    for res in section.results:
        s, a, c, k = res.system, res.analysis, res.cost, res.chosen
        base = [s.id, s.name, res.device.id, s.devices]
        if a is None:
            rows.append(base + [""] * (len(rows[0]) - len(base) - 1) + [res.error or ""])
            continue
        lay = res.layout
        rows.append(base + [lay.label(), lay.tp, lay.cp, lay.pp, lay.dp, lay.schedule, lay.virtual,
                            "yes" if a.fits[k] else "no", int(a.microbatches[k]), float(a.step_time[k]),
                            *[float(x) for x in a.step_parts[k]], *[float(getattr(a, f)[k]) for _, f in MEMORY_PARTS],
                            float(a.memory_bytes[k]), float(a.capacity), float(a.tokens_per_s[k]), float(a.mfu[k]),
                            float(a.hfu[k]), float(c.tokens), float(c.steps), float(c.time_s[k]),
                            float(c.device_hours[k]), float(c.energy_j[k]), float(c.electricity_usd[k]),
                            float(c.rent_usd[k]), float(c.tco_usd[k]), ""])
    return rows


__all__ = ["MEMORY_HEADERS", "NOTE", "STEP_HEADERS", "SUMMARY_HEADERS", "TrainingSection", "assumptions",
           "build_section", "csv_rows", "memory_rows", "step_rows", "summary_rows", "training_sources"]
