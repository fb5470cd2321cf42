"""``hwexplorer catalog list|show|import|export|validate``: the device catalog from the command line, and (with
``--systems``/``--system``, or a file of systems to import) the systems stored beside the devices.

Every subcommand accepts ``--db URL`` (else ``$HWEXPLORER_DB``, else the SQLite file in the user data
directory). Each handler returns the exit code: 0 success, 1 problems found (rejected import, invalid
catalog files); bad input raises CliError (exit 2).
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

from explorer.core.hardware.capacity import CAPACITY_NOTE, format_capacity
from explorer.core.hardware.catalog_files import (
    SYSTEMS_DIR,
    shipped_catalog_dir,
    validate_catalog,
    validate_systems,
)
from explorer.core.hardware.device import KINDS, TIERS
from explorer.core.hardware.device_file import (
    DeviceFileError,
    check_device_dict,
    device_to_dict,
    dump_device_yaml,
)
from explorer.core.precision import PRECISIONS
from explorer.core.units import UnitError, format_si, parse_si

from .common import CliError, print_json

FILTER_QUANTITIES = (  # option, DeviceFilter field, unit kind, example
    ("--min-peak", "min_peak", "throughput", "100 TFLOP/s"),
    ("--min-bandwidth", "min_bandwidth", "bandwidth", "2 TB/s"),
    ("--min-capacity", "min_capacity", "bytes", "40 GB"),
    ("--min-price", "min_price", "money", "1000 USD"),
    ("--max-price", "max_price", "money", "30000 USD"),
    ("--max-cloud-price", "max_cloud_price", "money_rate", "5 USD/h"),
)


def add_parser(subparsers) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        "catalog",
        help="list, show, import, export and validate accelerator devices",
        description="The accelerator catalog database (SQLite by default; PostgreSQL for a team's catalog).",
    )
    sub = parser.add_subparsers(dest="catalog_command", metavar="COMMAND", required=True)

    p = sub.add_parser("list", help="list devices (or, with --systems, systems), with search and filters")
    _add_filters(p)
    p.add_argument("--systems", action="store_true",
                   help="list the systems of many devices instead; TEXT, --vendor and --origin filter them")
    p.add_argument("--json", action="store_true", help="print the rows as JSON (SI units)")
    _add_db(p)
    p.set_defaults(func=cmd_list)

    p = sub.add_parser("show", help="show one device as a device file (or, with --system, a system)")
    p.add_argument("id", help="device id (system id with --system)")
    p.add_argument("--system", action="store_true", help="show the system ID as a system file")
    p.add_argument("--json", action="store_true", help="print JSON with the catalog bookkeeping")
    _add_db(p)
    p.set_defaults(func=cmd_show)

    p = sub.add_parser("import", help="import devices from YAML, JSON or CSV, or systems from YAML or JSON "
                       "(all or nothing)")
    p.add_argument("file", type=Path)
    p.add_argument("--systems", action="store_true", help="the file holds systems (found without it when the file "
                   "is a systems export or a system file)")
    p.add_argument("--format", choices=("yaml", "json", "csv"), help="default: from the file suffix")
    p.add_argument(
        "--replace", action="store_true", help="overwrite devices whose id is already in the catalog"
    )
    p.add_argument("--dry-run", action="store_true", help="check the file and report, write nothing")
    p.add_argument("--json", action="store_true", help="print the import report as JSON")
    _add_db(p)
    p.set_defaults(func=cmd_import)

    p = sub.add_parser("export", help="export devices to YAML, JSON or CSV, or systems to YAML or JSON ('-' writes "
                       "to stdout)")
    p.add_argument("file", help="output file, or '-' for stdout (then --format is required)")
    p.add_argument("--format", choices=("yaml", "json", "csv"), help="default: from the file suffix")
    p.add_argument("--systems", action="store_true", help="export the systems instead; TEXT, --vendor and --origin "
                   "select them")
    _add_filters(p)
    _add_db(p)
    p.set_defaults(func=cmd_export)

    p = sub.add_parser(
        "validate", help="check the curated device and system files (and, with --db, the database)"
    )
    p.add_argument(
        "folder", nargs="?", type=Path,
        help="folder of device files, its systems/ folder of system files (default: the shipped catalog/)",
    )
    p.add_argument("--json", action="store_true", help="print the problems as JSON")
    _add_db(p)
    p.set_defaults(func=cmd_validate)
    return parser


def _add_db(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--db",
        metavar="URL",
        default=argparse.SUPPRESS,  # keep a global `hwexplorer --db URL catalog ...` instead of overwriting it
        help="sqlite:///PATH or postgresql://USER@HOST/DB (default: $HWEXPLORER_DB, else the local file)",
    )


def _add_filters(p: argparse.ArgumentParser) -> None:
    p.add_argument("text", nargs="?", default="", help="search id, name, vendor and family")
    p.add_argument("--vendor", action="append", default=[], help="vendor name (repeatable)")
    p.add_argument("--kind", action="append", default=[], choices=KINDS)
    p.add_argument("--tier", action="append", default=[], choices=TIERS)
    p.add_argument("--precision", choices=PRECISIONS, help="only devices with a dense peak at this precision")
    for option, _, _, example in FILTER_QUANTITIES:
        p.add_argument(option, metavar="QTY", help=f"e.g. '{example}'")
    p.add_argument("--origin", choices=("shipped", "user"))


def _filters(args):
    from explorer.store.query import DeviceFilter

    bounds = {}
    for option, name, kind, _ in FILTER_QUANTITIES:
        raw = getattr(args, name)
        if raw is not None:
            try:
                bounds[name] = parse_si(raw, kind, option)
            except UnitError as exc:
                raise CliError(str(exc)) from None
    try:
        return DeviceFilter(
            text=args.text,
            vendors=tuple(args.vendor),
            kinds=tuple(args.kind),
            tiers=tuple(args.tier),
            precision=args.precision,
            origin=args.origin,
            **bounds,
        )
    except ValueError as exc:
        raise CliError(str(exc)) from None


def _open(args):
    from .catalog_systems import open_repo

    return open_repo(args)


# -------------------------------------------------------------------------------------------------- list
def _si_or_none(x: float) -> float | None:
    return x if math.isfinite(x) else None


def _row_json(r) -> dict:
    return {
        "id": r.id,
        "name": r.name,
        "vendor": r.vendor,
        "kind": r.kind,
        "tier": r.tier,
        "family": r.family,
        "year": r.year,
        "peak_flop_per_s": dict(r.peak),
        "peak_sparse_flop_per_s": dict(r.peak_sparse),
        "bandwidth_byte_per_s": _si_or_none(r.bandwidth),
        "capacity_byte": _si_or_none(r.capacity),
        "tdp_w": _si_or_none(r.tdp),
        "price_usd": _si_or_none(r.price),
        "cloud_price_usd_per_s": _si_or_none(r.cloud_price),
        "origin": r.origin,
        "overridden": r.overridden,
        "version": r.version,
    }


def cmd_list(args) -> int:
    if getattr(args, "systems", False):
        from .catalog_systems import cmd_list_systems

        return cmd_list_systems(args)
    filters = _filters(args)
    with _open(args) as repo:
        rows = repo.rows(filters)
    if args.json:
        print_json([_row_json(r) for r in rows])
        return 0
    peak_label = f"PEAK {args.precision}" if args.precision else "PEAK (best dense)"
    table = [("ID", "VENDOR", "KIND", "TIER", peak_label, "BANDWIDTH", "MEMORY", "TDP", "PRICE", "ORIGIN")]
    for r in rows:
        precision = args.precision or max(r.peak, key=r.peak.get, default=None)
        peak = r.peak_at(precision) if precision else math.nan
        unit = "OP/s" if precision and precision.startswith("int") else "FLOP/s"  # integer peaks are not FLOP/s
        table.append(
            (
                r.id,
                r.vendor,
                r.kind,
                r.tier or "-",
                format_si(peak, unit) + (f" {precision}" if math.isfinite(peak) and not args.precision else ""),
                format_si(r.bandwidth, "B/s"),
                format_capacity(r.capacity),
                format_si(r.tdp, "W"),
                f"{r.price:,.0f} USD" if math.isfinite(r.price) else "\u2014",
                r.origin_label,
            )
        )
    widths = [max(len(row[i]) for row in table) for i in range(len(table[0]))]
    for row in table:
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip())
    print(f"MEMORY: {CAPACITY_NOTE}")
    print(f"{len(rows)} device(s)")
    return 0


# -------------------------------------------------------------------------------------------------- show
def cmd_show(args) -> int:
    from explorer.store.errors import UnknownDeviceError

    if getattr(args, "system", False):
        from .catalog_systems import cmd_show_system

        return cmd_show_system(args)
    with _open(args) as repo:
        try:
            stored = repo.record(args.id)
        except UnknownDeviceError as exc:
            raise CliError(str(exc)) from None
    if args.json:
        print_json(
            {
                "id": stored.device.id,
                "origin": stored.origin,
                "version": stored.version,
                "overrides": list(stored.overrides),
                "updated_at": stored.updated_at.isoformat(),
                "device": device_to_dict(stored.device),
            }
        )
        return 0
    edited = (
        f"; your edits win over the shipped values of: {', '.join(stored.overrides)}"
        if stored.overrides
        else ""
    )
    print(f"# {stored.device.id}: {stored.origin} device, version {stored.version}{edited}")
    sys.stdout.write(dump_device_yaml(stored.device))
    return 0


# ------------------------------------------------------------------------------------------ import/export
def cmd_import(args) -> int:
    from explorer.store.errors import CatalogError
    from explorer.store.io import ImportFileError, import_file
    from explorer.store.system_io import holds_systems, import_systems_file

    systems = args.systems or holds_systems(args.file, args.format)
    importer = import_systems_file if systems else import_file
    with _open(args) as repo:
        try:
            report = importer(repo, args.file, args.format, replace=args.replace, dry_run=args.dry_run)
        except (ImportFileError, CatalogError) as exc:
            raise CliError(str(exc)) from None
    if args.json:
        print_json(
            {
                "file": report.file,
                "format": report.format,
                "systems": systems,
                "rows": report.rows,
                "committed": report.committed,
                "added": list(report.added),
                "replaced": list(report.replaced),
                "rejected": [vars(r) for r in report.rejected],
            }
        )
    else:
        print("\n".join(report.lines()))
    return 0 if report.ok else 1


def cmd_export(args) -> int:
    from explorer.store.io import ImportFileError, detect_format, export_file, export_text

    if args.systems:
        from .catalog_systems import cmd_export_systems

        return cmd_export_systems(args)
    filters = _filters(args)
    with _open(args) as repo:
        ids = [r.id for r in repo.rows(filters)]
        devices = repo.devices(ids)
        calibrations = repo.all_calibrations(ids)  # named calibrations travel with their device (YAML, JSON)
    try:
        if args.file == "-":
            if not args.format:
                raise CliError("export to stdout ('-') needs --format yaml, json or csv")
            sys.stdout.write(export_text(devices, args.format, calibrations))
            return 0
        count = export_file(devices, args.file, detect_format(args.file, args.format), calibrations)
    except ImportFileError as exc:
        raise CliError(str(exc)) from None
    print(f"wrote {count} device(s) to {args.file}")
    return 0


# ---------------------------------------------------------------------------------------------- validate
def cmd_validate(args) -> int:
    folder = args.folder or shipped_catalog_dir()
    if not folder.is_dir():
        raise CliError(f"{folder}: no such folder")
    report = validate_catalog(folder)
    systems = validate_systems(folder / SYSTEMS_DIR, {d.id for d in report.devices})
    problems = list(report.problems) + list(systems.problems)
    checked_db = checked_db_systems = 0
    if getattr(args, "db", None):
        from .catalog_systems import check_stored_systems

        with _open(args) as repo:
            for device in repo.devices():
                _, found = check_device_dict(device_to_dict(device), "database")
                problems.extend(found)
                checked_db += 1
            checked_db_systems, found = check_stored_systems(repo)
            problems.extend(found)
    summary = f"{report.files} file(s), {len(report.devices)} valid device(s)"
    if systems.files:
        summary += f", {systems.files} system file(s), {len(systems.systems)} valid system(s)"
    if getattr(args, "db", None):
        summary += f", {checked_db} database device(s), {checked_db_systems} database system(s)"
    summary += f", {len(problems)} problem(s)"
    if args.json:
        print_json(
            {
                "folder": str(folder),
                "files": report.files,
                "valid_devices": len(report.devices),
                "system_files": systems.files,
                "valid_systems": len(systems.systems),
                "database_devices": checked_db,
                "database_systems": checked_db_systems,
                "problems": problems,
            }
        )
    else:
        for problem in problems:
            print(problem)
        print(summary)
    return 1 if problems else 0


def run(argv: list[str]) -> int:
    """Run ``catalog ...`` on its own (tests; ``explorer.__main__`` is the real entry point)."""
    parser = argparse.ArgumentParser(prog="hwexplorer")
    add_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except (CliError, DeviceFileError) as exc:
        print(f"hwexplorer: error: {exc}", file=sys.stderr)
        return 2
