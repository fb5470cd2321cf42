"""Disaggregated pools on two systems (issue 19): the prefill pool's replicas a serving layout on one system, the
decode pool's a serving layout on another, each timed by the system pass
(:func:`~.serve.system_setup`), and the prompt's KV cache crossing the network both systems share.

    KV bytes of a request = 2 (K and V) x layers x KV heads x head dim x prompt tokens x bytes per element
                          = the replica's KV bytes per token x prompt tokens   (:func:`~.disagg.kv_bytes_per_token`)

The link, unless given: the slowest level of the hierarchy both systems share, their scale-out network (two systems
meet on nothing inside either). A replica's KV cache is spread over its tp x pp devices (each holds its heads' and
its stages' share), and each device sends (receives) its share over its own scale-out port at once:

    bandwidth = min(prefill replica devices x prefill system's scale-out B/s per device and direction,
                    decode replica devices x decode system's scale-out B/s per device and direction)
    latency   = the larger of the two networks' stated latencies (an unstated one counts 0: a lower bound)

A system with no scale-out network (a single server or rack, e.g. a PCIe server) shares no level with another:
``auto`` is refused for it, saying so. The decode pool's layout: the one given, else the prefill replica's tp x pp
where it divides the decode system and leaves room for the KV cache, else the smallest serving layout that does
(:func:`~.system_fleet.serving_layouts`). Qt-free.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from explorer.core.hardware.system import System
from explorer.core.parallel.layout import Layout, LayoutError, check
from explorer.core.parallel.system_pass import model_shape
from explorer.core.workload.layers import Context
from explorer.core.workload.model import Model

from .analytic import Setup
from .disagg import KvLink
from .system_fleet import serving_layouts
from .workload import Workload


@dataclass(frozen=True)
class SystemKvLink:
    """The KV link between two systems' replicas and how it was found (``source``: in words)."""

    link: KvLink
    source: str
    latency_stated: bool = True


def auto_kv_link(prefill_system: System, prefill_layout: Layout, decode_system: System,
                 decode_layout: Layout) -> SystemKvLink:
    """The scale-out network both systems share, as the replicas' devices use it in parallel (module docstring);
    ValueError naming ``--kv-link`` when a system has none."""
    sides = []
    for role, sy, lay in (("prefill", prefill_system, prefill_layout), ("decode", decode_system, decode_layout)):
        net = sy.scale_out
        if net is None:
            raise ValueError(f"--kv-link: auto uses the scale-out network the two systems share, and {sy.id} "
                             "(the " + role + " pool's) states none; give the link's bandwidth, e.g. '50 GB/s'")
        per = sy.bandwidth(net)
        if not (math.isfinite(per) and per > 0):
            raise ValueError(f"--kv-link: {sy.id}'s scale-out network ({net.name}) states no bandwidth; give the "
                             "link's bandwidth, e.g. '50 GB/s'")
        n = lay.tp * lay.pp
        sides.append((role, sy, net, per, n))
    bandwidth = min(per * n for _, _, _, per, n in sides)
    alphas = [net.alpha for _, _, net, _, _ in sides]
    stated = all(math.isfinite(a) for a in alphas)
    latency = max((a for a in alphas if math.isfinite(a)), default=0.0)
    parts = [f"{role}: {sy.id} {net.name}, {per / 1e9:.4g} GB/s x {n} device{'s' * (n > 1)}"
             for role, sy, net, per, n in sides]
    source = (f"auto: the scale-out network both systems share ({'; '.join(parts)}); the slower side "
              f"{bandwidth / 1e9:.4g} GB/s per direction, latency {latency * 1e6:.3g} us"
              + ("" if stated else " (a network states no latency: the transfer is a lower bound)"))
    return SystemKvLink(KvLink(bandwidth, latency), source, stated)


def _layout_on(model: Model, system: System, workload: Workload, tp: int, pp: int = 1) -> Layout:
    """A replica of tp x pp on ``system`` (its dp: the rest of the system), checked; LayoutError names the field."""
    if tp < 1 or pp < 1 or system.devices % (tp * pp):
        raise LayoutError(f"tp: tp {tp} x pp {pp} does not divide the decode system's {system.devices} devices")
    i, o = workload.mean_lengths()
    layout = Layout(tp, pp, 1, system.devices // (tp * pp), 1)
    shape = model_shape(model, Context(batch=system.devices, seq_len=max(1, int(i + o)), phase="decode"))
    check(layout, shape, system.devices)
    return layout


def decode_layouts(model: Model, system: System, workload: Workload, tp: int | None,
                   prefer: Layout | None = None) -> list[Layout]:
    """The decode pool's candidate layouts on ``system``, in the order tried: the given tp alone; else the prefill
    replica's tp x pp (``prefer``) where valid, then every serving layout by devices per replica."""
    if tp is not None:
        return [_layout_on(model, system, workload, tp)]
    found = serving_layouts(model, system, workload)
    found += [lay for lay in serving_layouts(model, system, workload, pipeline=True) if lay.pp > 1]
    found.sort(key=lambda lay: (lay.tp * lay.pp, lay.pp))
    if prefer is not None:
        try:
            first = _layout_on(model, system, workload, prefer.tp, prefer.pp)
        except LayoutError:
            first = None
        if first is not None:
            found = [first] + [lay for lay in found if (lay.tp, lay.pp) != (first.tp, first.pp)]
    return found


def decode_setup(model: Model, system: System, layouts: list[Layout], make) -> tuple[Layout, Setup]:
    """The first of ``layouts`` whose replica leaves room for a KV block (``make(layout)`` builds its setup), as one
    replica; ValueError when none does."""
    for lay in layouts:
        setup = make(lay)
        if setup.memory.blocks >= 1:
            return lay, replace(setup, replicas=1)
    tried = ", ".join(f"TP{lay.tp} PP{lay.pp}" for lay in layouts)
    raise ValueError(f"no layout of {model.name} on {system.id} leaves room for the KV cache after the weights "
                     f"(tried {tried})")
