"""The report's Systems section: each system's chosen layout with its step-time and communication breakdown, the
fleet sized on it, and the system figures' sources. Plain rows of text that the PDF, HTML and CSV writers format.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

from ..core.analysis.procurement import format_usd
from ..core.hardware.capacity import format_capacity
from ..core.parallel.compare import SystemResult
from ..core.parallel.link_energy import link_energy
from ..core.parallel.sizing import NOT_PRICED, SystemPlan
from ..core.units import format_bytes, format_si


@dataclass(frozen=True)
class SystemsSection:
    results: tuple[SystemResult, ...] = ()
    plans: tuple[SystemPlan, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.results)


LAYOUT_HEADERS = ("System", "Devices", "Layout", "Fits", "Memory / device", "Step", "Compute", "Communication",
                  "Bubble", "Sends", "Comm share", "Rate / device")
PLAN_HEADERS = ("System", "Layout", "Replica", "Rate / replica", "Latency", "Replicas", "Devices", "Nodes",
                "Capital", "Verdict")
NOTE = ("Per device and step: compute is one pipeline stage's rows (roofline, tiling, efficiency) for one "
        "micro-batch; communication is the collectives of its tensor and expert parallelism (alpha-beta, per-direction "
        "bandwidth, on the link each crosses), exposed in full unless overlap is on; bubble the pipeline's idle stage "
        "passes; sends the activations between stages. docs/systems.md states the formulas.")


def _ms(x: float) -> str:
    return "\u2014" if not math.isfinite(x) else f"{x * 1e3:.3g} ms"


def layout_rows(section: SystemsSection) -> list[list[str]]:
    rows = []
    for res in section.results:
        s = res.system
        who = f"{s.devices} x {res.device.name}"
        if res.analysis is None:
            rows.append([s.name, who, "\u2014", "\u2014", *["\u2014"] * 7, res.error or ""])
            continue
        r, k = res.analysis, res.chosen
        rows.append([s.name, who, r.layouts[k].label() + ("" if res.objective is None else f" (best {res.objective})"),
                     "yes" if r.fits[k] else "NO", f"{format_bytes(r.memory_bytes[k])} of {format_capacity(r.capacity)}",
                     _ms(r.step_time[k]), _ms(r.compute_time[k]), _ms(r.comm_time[k]), _ms(r.bubble_time[k]),
                     _ms(r.send_time[k]), f"{100 * r.comm_share[k]:.3g} %",
                     f"{r.throughput_per_device[k]:.4g} {r.throughput_unit}"])
    return rows


def plan_rows(section: SystemsSection, unit: str) -> list[list[str]]:
    rows = []
    for p in section.plans:
        verdict = "feasible" if p.feasible else f"infeasible: {p.reason}"
        rows.append([p.name, p.layout.label() if p.layout else "\u2014", f"{p.replica_devices} devices",
                     f"{p.replica_throughput:.4g} {unit}" if math.isfinite(p.replica_throughput) else "\u2014",
                     _ms(p.latency), str(p.replicas), str(p.devices), str(p.nodes), format_usd(p.capital), verdict])
    return rows


LADDER_HEADERS = ("System", "Level", "Bytes per step", "Bandwidth", "Energy per step")


def _joules(x: float) -> str:
    return "unknown" if not math.isfinite(x) else format_si(x, "J", 3)


def _link_energy(joules: float, nbytes: float, per_byte: float) -> str:
    """A link's joules per step and device and its energy per bit, or why it is unknown."""
    if not nbytes > 0:
        return "0 J (no traffic)"
    if not math.isfinite(per_byte):
        return "unknown (energy not stated)"
    return f"{_joules(joules)} at {per_byte / 8 * 1e12:.3g} pJ/bit"


def ladder_rows(section: SystemsSection) -> list[list[str]]:
    """The bandwidth ladder beyond HBM for each chosen layout: bytes one device moves per step on each level, and
    the energy of each link's bytes (:mod:`explorer.core.parallel.link_energy`); then the step's energy: on the
    device, over the links, in total (unknown when a link carrying bytes states no energy)."""
    rows = []
    for res in section.results:
        r = res.analysis
        if r is None:
            continue
        k, s = res.chosen, res.system
        e = link_energy(r)
        names = list(r.memory_names)
        traffic = list(r.memory_traffic[k]) if r.memory_traffic is not None else []
        for name, nbytes in zip(names, traffic):
            rows.append([s.name, f"device: {name}", format_bytes(nbytes), "", ""])
        for j, d in enumerate(s.domains):
            rows.append([s.name, f"{d.scope.replace('_', '-')}: {d.name}", format_bytes(e.nbytes[k, j]),
                         f"{format_si(s.bandwidth(d), 'B/s', 3)} per direction",
                         _link_energy(e.joules[k, j], e.nbytes[k, j], e.energy_per_byte[j])])
        if s.host_link is not None and e.nbytes[k, -1] > 0:
            rows.append([s.name, e.names[-1], format_bytes(e.nbytes[k, -1]),
                         f"{format_si(s.host_bandwidth(), 'B/s', 3)} per direction",
                         _link_energy(e.joules[k, -1], e.nbytes[k, -1], e.energy_per_byte[-1])])
        total = _joules(e.total[k])
        if e.unknown[k]:
            total += f"; at least {_joules(e.device[k] + e.known_links[k])}"
        rows.append([s.name, "energy: device + links = total", "", "",
                     f"{_joules(e.device[k])} + {_joules(e.links[k])} = {total}"])
    return rows


def system_sources(section: SystemsSection) -> list[tuple[str, str, str, str, str, str]]:
    """(system, figure, value as written, source title, url, date) for every cited link figure."""
    out = []
    for res in section.results:
        s = res.system
        cited = [(f"{d.name} bandwidth", d.link.bandwidth) for d in s.domains]
        cited += [(f"{d.name} latency", d.latency) for d in s.domains]
        cited += [(f"{d.name} energy", d.link.energy) for d in s.domains]
        if s.host_link is not None:
            cited.append((f"host link {s.host_link.name}", s.host_link.bandwidth))
            cited.append((f"host link {s.host_link.name} energy", s.host_link.energy))
        for figure, c in cited:
            if c is None:
                continue
            src = s.sources.get(c.source) if c.source else None
            out.append((s.name, figure, c.text, src.title if src else "not cited", src.url if src else "",
                        src.date if src else ""))
    return out


def csv_rows(section: SystemsSection) -> list[list]:
    """Plain SI numbers (units in the headers), one row per system's chosen layout, then the fleet rows."""
    unit = next((r.analysis.throughput_unit for r in section.results if r.analysis is not None), "")
    rows: list[list] = [["section", "system_id", "system", "device_id", "devices", "layout", "tp", "pp", "ep", "dp",
                         "microbatches", "fits", "memory per device [B]", "device memory [B]", "step [s]",
                         "compute [s]", "communication [s]", "bubble [s]", "sends [s]", "communication share [fraction]",
                         f"rate per device [{unit}]", "device energy per step [J]",
                         "link energy per step [J]", "error"]]
    for res in section.results:
        s, r, k = res.system, res.analysis, res.chosen
        base = ["layout", s.id, s.name, res.device.id, s.devices]
        if r is None:
            rows.append(base + [""] * 18 + [res.error or ""])
            continue
        lay = r.layouts[k]
        e = link_energy(r)
        rows.append(base + [lay.label(), lay.tp, lay.pp, lay.ep, lay.dp, lay.microbatches,
                            "yes" if r.fits[k] else "no"]
                    + [float(x) for x in (r.memory_bytes[k], r.capacity, r.step_time[k], r.compute_time[k],
                                          r.comm_time[k], r.bubble_time[k], r.send_time[k], r.comm_share[k],
                                          r.throughput_per_device[k], e.device[k], e.links[k])] + [""])
    if section.plans:
        rows.append(["section", "system_id", "system", "device_id", "layout", "replica devices",
                     f"rate per replica [{unit}]", "latency [s]", "replicas", "devices", "nodes",
                     "price per device [USD]", "capital [USD]", "feasible", "reason"])
        for p in section.plans:
            rows.append(["plan", p.system_id, p.name, p.device_id, p.layout.label() if p.layout else "",
                         p.replica_devices, p.replica_throughput, p.latency, p.replicas, p.devices, p.nodes,
                         p.price_per_device, p.capital, "yes" if p.feasible else "no", p.reason])
    return rows


def build_section(results: Sequence[SystemResult], plans: Sequence[SystemPlan] = ()) -> SystemsSection:
    return SystemsSection(tuple(results), tuple(plans))


__all__ = ["NOTE", "NOT_PRICED", "LADDER_HEADERS", "LAYOUT_HEADERS", "PLAN_HEADERS", "SystemsSection", "build_section", "csv_rows",
           "ladder_rows", "layout_rows", "plan_rows", "system_sources"]
