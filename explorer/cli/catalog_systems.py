"""The systems of the catalog database from the command line: ``catalog list --systems``, ``catalog show --system``,
``catalog export --systems`` and the checks of ``catalog validate --db`` (docs/cli.md, docs/catalog.md).

Bandwidths are per device and per direction (a bidirectional figure halved), the unit in the column header.
"""

from __future__ import annotations

import math
import sys

from explorer.core.hardware.system import Domain, System

from .common import CliError, print_json

#: ``catalog list``/``export`` options that filter devices only; given with ``--systems`` they are an error
DEVICE_ONLY = ("kind", "tier", "precision", "min_peak", "min_bandwidth", "min_capacity", "min_price", "max_price",
               "max_cloud_price")
GB = 1e9


def open_repo(args):
    """The catalog database of ``--db`` (else ``$HWEXPLORER_DB``, else the local file); errors are one line."""
    from explorer.store.engine import open_catalog
    from explorer.store.errors import CatalogDatabaseError

    try:
        return open_catalog(getattr(args, "db", None))
    except CatalogDatabaseError as exc:
        raise CliError(str(exc)) from None


def system_filter(args):
    """The system filter of ``TEXT``, ``--vendor`` and ``--origin``; device filters are refused, not ignored."""
    from explorer.store.system_repository import SystemFilter

    given = [f"--{name.replace('_', '-')}" for name in DEVICE_ONLY if getattr(args, name, None)]
    if given:
        raise CliError(f"{', '.join(given)}: filters devices, not systems (with --systems use TEXT, --vendor and "
                       "--origin)")
    return SystemFilter(text=args.text, vendors=tuple(args.vendor), origin=args.origin)


def _listed(args) -> tuple[list, list[System]]:
    filters = system_filter(args)
    with open_repo(args) as repo:
        rows = list(repo.system_rows(filters))
        return rows, list(repo.systems([r.id for r in rows]))


def _si(x: float) -> float | None:
    return x if math.isfinite(x) else None


def _domain_json(system: System, d: Domain | None) -> dict | None:
    if d is None:
        return None
    return {"name": d.name, "size": d.size, "topology": d.topology, "per": d.per,
            "oversubscription": d.oversubscription,
            "bandwidth_byte_per_s_per_direction_per_device": _si(system.bandwidth(d)),
            "latency_s": _si(d.alpha), "energy_J_per_bit": _si(d.link.energy_per_byte / 8)}


def system_json(system: System, row=None) -> dict:
    return {
        "id": system.id, "name": system.name, "vendor": system.vendor, "kind": system.kind,
        "device": system.device_id, "devices": system.devices, "node_devices": system.node_devices,
        "scale_up": _domain_json(system, system.scale_up), "scale_out": _domain_json(system, system.scale_out),
        "host_link_byte_per_s_per_direction": _si(system.host_bandwidth()),
        "host_link_energy_J_per_bit": _si(system.host_link.energy_per_byte / 8) if system.host_link else None,
        "origin": system.origin,
        "overridden": bool(row.overridden) if row is not None else False,
        "version": row.version if row is not None else None,
    }


def _gb(system: System, d: Domain | None) -> str:
    if d is None:
        return "\u2014 (none stated)"
    bw = system.bandwidth(d)
    return f"{bw / GB:,.4g}" if math.isfinite(bw) else "\u2014 (unknown)"


def cmd_list_systems(args) -> int:
    rows, systems = _listed(args)
    if args.json:
        print_json([system_json(s, r) for s, r in zip(systems, rows)])
        return 0
    table = [("ID", "NAME", "DEVICE x COUNT", "SCALE-UP (GB/s/dir)", "SCALE-OUT (GB/s/dir)", "ORIGIN")]
    for s, r in zip(systems, rows):
        table.append((s.id, s.name, f"{s.device_id} x {s.devices}", _gb(s, s.scale_up), _gb(s, s.scale_out),
                      r.origin + (" (edited)" if r.overridden else "")))
    widths = [max(len(row[i]) for row in table) for i in range(len(table[0]))]
    for row in table:
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip())
    print(f"{len(systems)} system(s); GB/s = 10^9 B/s per device and per direction (a bidirectional figure halved)")
    return 0


def cmd_show_system(args) -> int:
    from explorer.core.hardware.system_file import dump_system_yaml, system_to_dict
    from explorer.store.errors import UnknownSystemError

    with open_repo(args) as repo:
        try:
            stored = repo.system_record(args.id)
        except UnknownSystemError as exc:
            raise CliError(str(exc)) from None
    if args.json:
        print_json({"id": stored.system.id, "origin": stored.origin, "version": stored.version,
                    "overrides": list(stored.overrides), "updated_at": stored.updated_at.isoformat(),
                    "system": system_to_dict(stored.system)})
        return 0
    edited = f"; your edits win over the shipped values of: {', '.join(stored.overrides)}" if stored.overrides else ""
    print(f"# {stored.system.id}: {stored.origin} system, version {stored.version}{edited}")
    sys.stdout.write(dump_system_yaml(stored.system))
    return 0


def cmd_export_systems(args) -> int:
    from explorer.store.io import ImportFileError
    from explorer.store.system_io import export_systems_file, export_systems_text

    _, systems = _listed(args)
    try:
        if args.file == "-":
            if not args.format:
                raise CliError("--format: export to stdout ('-') needs --format yaml or json")
            sys.stdout.write(export_systems_text(systems, args.format))
            return 0
        count = export_systems_file(systems, args.file, args.format)
    except ImportFileError as exc:
        raise CliError(str(exc)) from None
    print(f"wrote {count} system(s) to {args.file}")
    return 0


def check_stored_systems(repo) -> tuple[int, list[str]]:
    """(systems checked, problems) for every system of the database: the system file's checks and its device."""
    from explorer.core.hardware.system_file import check_system_dict, system_to_dict

    devices, problems = set(repo.ids()), []
    systems = repo.systems()
    for system in systems:
        _, found = check_system_dict(system_to_dict(system), "database")
        problems.extend(found)
        if system.device_id not in devices:
            problems.append(f"database: {system.id}: device: '{system.device_id}' is not a device of the catalog")
    return len(systems), problems
