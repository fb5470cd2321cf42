"""``hwexplorer catalog list --systems``: the systems of many accelerators (``catalog/systems/``, docs/system-file.md).

Bandwidths are per device and per direction (a bidirectional figure halved), the unit in the column header.
"""

from __future__ import annotations

import math

from explorer.core.hardware.catalog_files import load_shipped_systems
from explorer.core.hardware.system import Domain, System

from .common import CliError, print_json

#: ``catalog list`` options that filter devices only; given with ``--systems`` they are an error, not ignored
DEVICE_ONLY = ("kind", "tier", "precision", "min_peak", "min_bandwidth", "min_capacity", "min_price", "max_price",
               "max_cloud_price", "origin")
GB = 1e9


def _matches(system: System, text: str, vendors: list[str]) -> bool:
    words = f"{system.id} {system.name} {system.vendor} {system.device_id}".lower()
    return (not text or text.lower() in words) and (not vendors or system.vendor.lower() in
                                                     {v.lower() for v in vendors})


def _si(x: float) -> float | None:
    return x if math.isfinite(x) else None


def _domain_json(system: System, d: Domain | None) -> dict | None:
    if d is None:
        return None
    return {"name": d.name, "size": d.size, "topology": d.topology, "per": d.per,
            "oversubscription": d.oversubscription,
            "bandwidth_byte_per_s_per_direction_per_device": _si(system.bandwidth(d)),
            "latency_s": _si(d.alpha)}


def system_json(system: System) -> dict:
    return {
        "id": system.id, "name": system.name, "vendor": system.vendor, "kind": system.kind,
        "device": system.device_id, "devices": system.devices, "node_devices": system.node_devices,
        "scale_up": _domain_json(system, system.scale_up), "scale_out": _domain_json(system, system.scale_out),
        "host_link_byte_per_s_per_direction": _si(system.host_bandwidth()), "origin": system.origin,
    }


def _gb(system: System, d: Domain | None) -> str:
    if d is None:
        return "\u2014 (none stated)"
    bw = system.bandwidth(d)
    return f"{bw / GB:,.4g}" if math.isfinite(bw) else "\u2014 (unknown)"


def cmd_list_systems(args) -> int:
    given = [f"--{name.replace('_', '-')}" for name in DEVICE_ONLY if getattr(args, name, None)]
    if given:
        raise CliError(f"{', '.join(given)}: filters devices, not systems (with --systems use TEXT and --vendor)")
    systems = [s for s in load_shipped_systems() if _matches(s, args.text, args.vendor)]
    if args.json:
        print_json([system_json(s) for s in systems])
        return 0
    table = [("ID", "NAME", "DEVICE x COUNT", "SCALE-UP (GB/s/dir)", "SCALE-OUT (GB/s/dir)")]
    for s in systems:
        table.append((s.id, s.name, f"{s.device_id} x {s.devices}", _gb(s, s.scale_up), _gb(s, s.scale_out)))
    widths = [max(len(row[i]) for row in table) for i in range(len(table[0]))]
    for row in table:
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip())
    print(f"{len(systems)} system(s); GB/s = 10^9 B/s per device and per direction (a bidirectional figure halved)")
    return 0
