"""Import and export systems as YAML or JSON, by the devices' rules (``io.py``).

* An export holds ``{format: 1, systems: [<system file mapping>...], count: N}``, the count written last so a
  truncated file is detected. Imports also accept one system file (``docs/system-file.md``) or a plain list of
  system mappings. CSV is not offered: a system is a hierarchy of domains, not a row.
* An import checks every system first (the system file's checks, that its ``device`` is a device of the catalog,
  ids unique and not taken unless ``replace``) and writes nothing unless all are valid, in one transaction.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from explorer.core.hardware.system import System
from explorer.core.hardware.system_file import FORMAT, check_system_dict, system_to_dict

from .io import (
    ImportFileError,
    ImportReport,
    Rejection,
    _row_number,
    _split_document,
    _split_problem,
    detect_format,
    new_id,
    parse_document,
    read_text,
    write_export,
)

if TYPE_CHECKING:  # the repository imports SQLAlchemy, which the main window does not need to start
    from .repository import CatalogRepository

KEY = "systems"


def _format(path: str | Path, fmt: str | None) -> str:
    fmt = detect_format(path, fmt)
    if fmt == "csv":
        raise ImportFileError(
            f"{Path(path).name}: systems are read and written as YAML or JSON, not CSV (a system is a hierarchy "
            "of domains)"
        )
    return fmt


def is_systems_document(data: Any) -> bool:
    """A systems export, a system file or a list of system mappings: a mapping with ``systems``, or one that
    names a ``device`` (a system's required key, which no device file has)."""
    if isinstance(data, dict):
        return KEY in data or "device" in data
    return bool(data) and isinstance(data, list) and all(isinstance(d, dict) and "device" in d for d in data)


def holds_systems(path: str | Path, fmt: str | None = None) -> bool:
    """Whether the YAML/JSON file at ``path`` holds systems (False for CSV and for files that do not parse: the
    device importer then reports the problem)."""
    try:
        fmt = detect_format(path, fmt)
        if fmt == "csv":
            return False
        return is_systems_document(parse_document(read_text(Path(path)), fmt, Path(path).name))
    except ImportFileError:
        return False


# ------------------------------------------------------------------------------------------------ export
def export_systems_text(systems: Sequence[System], fmt: str) -> str:
    body = [{k: v for k, v in system_to_dict(s).items() if k != "format"} for s in systems]
    document = {"format": FORMAT, KEY: body, "count": len(body)}
    if fmt == "json":
        return json.dumps(document, indent=2, ensure_ascii=False, allow_nan=False) + "\n"
    if fmt != "yaml":
        raise ImportFileError(f"format: systems are written as yaml or json, not {fmt}")
    import yaml  # on use: the app paints its first window without it (issue 22)

    return yaml.safe_dump(document, sort_keys=False, allow_unicode=True, width=110)


def export_systems_file(systems: Sequence[System], path: str | Path, fmt: str | None = None) -> int:
    """Write the systems to ``path`` (replaced atomically); returns the number written."""
    path = Path(path)
    write_export(path, export_systems_text(systems, _format(path, fmt)))
    return len(systems)


# ------------------------------------------------------------------------------------------------ import
def read_systems_import(
    path: str | Path, fmt: str | None = None
) -> tuple[str, int, list[tuple[str, System]], list[Rejection]]:
    """Parse and check every system of a file; returns (format, rows, [(where, valid system)], rejections)."""
    path = Path(path)
    fmt = _format(path, fmt)
    entries = _split_document(parse_document(read_text(path), fmt, path.name), path.name, KEY, "system")
    systems: list[tuple[str, System]] = []
    rejected: list[Rejection] = []
    first_row: dict[str, str] = {}
    for where, data, _ in entries:
        system_id = str(data.get("id", "?")) if isinstance(data, dict) else "?"
        system, found = check_system_dict(data, where)
        rejected.extend(_split_problem(p, where, system_id) for p in found)
        if system is None or found:
            continue
        if new_id(system.id, where, first_row, rejected):
            systems.append((where, system))
    return fmt, len(entries), systems, rejected


def import_systems_file(
    repo: CatalogRepository,
    path: str | Path,
    fmt: str | None = None,
    replace: bool = False,
    dry_run: bool = False,
) -> ImportReport:
    """Check the whole file, then add every system in one transaction, or nothing if any is rejected."""
    fmt, rows, checked, rejected = read_systems_import(path, fmt)
    existing, devices = set(repo.system_ids()), set(repo.ids())
    for where, s in checked:
        if s.device_id not in devices:
            rejected.append(Rejection(where, s.id, "device", f"'{s.device_id}' is not a device of the catalog "
                                                             "(import the device first)"))
        if s.id in existing and not replace:
            rejected.append(Rejection(where, s.id, "id", "already in the catalog (import with --replace to "
                                                         "overwrite it)"))
    name = Path(path).name
    if rejected:
        order = {r: i for i, r in enumerate(rejected)}
        rejected.sort(key=lambda r: (_row_number(r.where), order[r]))
        return ImportReport(name, fmt, rows, rejected=tuple(rejected), noun="system")
    systems = [s for _, s in checked]
    if dry_run:
        return ImportReport(name, fmt, rows, tuple(s.id for s in systems if s.id not in existing),
                            tuple(s.id for s in systems if s.id in existing), noun="system")
    added, replaced = repo.import_systems(systems, replace_existing=replace, validate=False)
    return ImportReport(name, fmt, rows, added, replaced, committed=True, noun="system")
