"""The curated device files shipped in ``catalog/`` and system files in ``catalog/systems/``: where they are,
loading them, validating them."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path

from explorer.core.hardware.device import Device
from explorer.core.hardware.device_file import DEVICE_FILE_SUFFIXES as SUFFIXES
from explorer.core.hardware.device_file import DeviceFileError, check_device_dict, read_device_data
from explorer.core.hardware.system import System
from explorer.core.hardware.system_file import SystemFileError, check_system_dict, read_system_data

#: The folder of system files inside a catalog folder
SYSTEMS_DIR = "systems"


def shipped_catalog_dir() -> Path:
    """``$HWEXPLORER_CATALOG_DIR``, else the bundle's ``catalog/`` (PyInstaller), else the source tree's."""
    env = os.environ.get("HWEXPLORER_CATALOG_DIR")
    if env:
        return Path(env)
    bundle = getattr(sys, "_MEIPASS", None)
    if bundle:
        return Path(bundle) / "catalog"
    return Path(__file__).resolve().parents[3] / "catalog"


def catalog_files(folder: Path | None = None) -> list[Path]:
    folder = folder or shipped_catalog_dir()
    return sorted(p for p in folder.iterdir() if p.suffix.lower() in SUFFIXES and not p.name.startswith("."))


@dataclass(frozen=True)
class ValidationReport:
    devices: tuple[Device, ...]
    problems: tuple[str, ...]
    files: int

    @property
    def ok(self) -> bool:
        return not self.problems


def validate_catalog(folder: Path | None = None, require_sources: bool = True) -> ValidationReport:
    """Check every file: dimensions, ranges, required fields, sources, duplicate ids, file named after its id."""
    files = catalog_files(folder)
    devices, problems, seen = [], [], {}
    for path in files:
        try:
            data = read_device_data(path)
        except DeviceFileError as exc:
            problems.extend(exc.problems)
            continue
        device, found = check_device_dict(data, str(path.name), require_sources)
        problems.extend(found)
        if device is None:
            continue
        if device.id in seen:
            problems.append(f"{path.name}: {device.id}: id: duplicate of the id in {seen[device.id]}")
            continue
        if path.stem != device.id:
            problems.append(f"{path.name}: {device.id}: id: the file should be named {device.id}{path.suffix}")
        seen[device.id] = path.name
        if not found:
            devices.append(device)
    return ValidationReport(tuple(devices), tuple(problems), len(files))


def load_shipped_devices(folder: Path | None = None) -> tuple[Device, ...]:
    """All valid shipped devices, marked ``origin='shipped'`` (invalid files are skipped: validate reports them)."""
    from dataclasses import replace

    return tuple(replace(d, origin="shipped") for d in validate_catalog(folder).devices)


@dataclass(frozen=True)
class SystemReport:
    systems: tuple[System, ...]
    problems: tuple[str, ...]
    files: int

    @property
    def ok(self) -> bool:
        return not self.problems


def validate_systems(folder: Path | None = None, device_ids: set[str] | frozenset[str] | None = None,
                     require_sources: bool = True) -> SystemReport:
    """Check every system file in ``folder`` (default: the shipped ``catalog/systems/``) like a device file, and
    that its ``device`` is one of ``device_ids`` (the valid devices of the catalog beside it) when given."""
    folder = folder or shipped_catalog_dir() / SYSTEMS_DIR
    files = catalog_files(folder) if folder.is_dir() else []
    systems, problems, seen = [], [], {}
    for path in files:
        try:
            data = read_system_data(path)
        except SystemFileError as exc:
            problems.extend(exc.problems)
            continue
        system, found = check_system_dict(data, f"{SYSTEMS_DIR}/{path.name}", require_sources)
        if system is not None and device_ids is not None and system.device_id not in device_ids:
            found.append(f"{SYSTEMS_DIR}/{path.name}: {system.id}: device: '{system.device_id}' is not a valid "
                         "device of the catalog")
        problems.extend(found)
        if system is None:
            continue
        if system.id in seen:
            problems.append(f"{SYSTEMS_DIR}/{path.name}: {system.id}: id: duplicate of the id in {seen[system.id]}")
            continue
        if path.stem != system.id:
            problems.append(f"{SYSTEMS_DIR}/{path.name}: {system.id}: id: the file should be named "
                            f"{system.id}{path.suffix}")
        seen[system.id] = path.name
        if not found:
            systems.append(system)
    return SystemReport(tuple(systems), tuple(problems), len(files))


def load_shipped_systems(folder: Path | None = None, device_ids: set[str] | frozenset[str] | None = None,
                         ) -> tuple[System, ...]:
    """All valid shipped systems (``catalog/systems/``), marked ``origin='shipped'``, whose device is a valid shipped
    device (``device_ids`` when the caller has already validated the devices)."""
    from dataclasses import replace

    root = folder or shipped_catalog_dir()
    ids = device_ids if device_ids is not None else {d.id for d in validate_catalog(root).devices}
    return tuple(replace(s, origin="shipped") for s in validate_systems(root / SYSTEMS_DIR, ids).systems)
