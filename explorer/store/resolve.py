"""Resolve a device or a system given on the command line: a file path, or an id in the catalog database."""

from __future__ import annotations

from pathlib import Path

from explorer.core.hardware.device import Device
from explorer.core.hardware.device_file import DEVICE_FILE_SUFFIXES, load_device_file
from explorer.core.hardware.system import System
from explorer.core.hardware.system_file import load_system_file

from .engine import open_catalog
from .errors import UnknownDeviceError, UnknownSystemError

__all__ = ["DEVICE_FILE_SUFFIXES", "catalog_calibrations", "looks_like_path", "resolve_device", "resolve_system"]


def looks_like_path(spec: str) -> bool:
    """Ids are lowercase letters, digits and '-': anything with a separator or a file suffix is a path."""
    return any(ch in spec for ch in "/\\") or Path(spec).suffix.lower() in DEVICE_FILE_SUFFIXES


def resolve_device(spec: str, db_url: str | None = None) -> Device:
    """A device file (``path.yaml``/``.json``) or a catalog id (opening and seeding the database if needed).

    An unknown id raises :class:`UnknownDeviceError` (a ValueError) listing close matches.
    """
    spec = spec.strip()
    if looks_like_path(spec):
        return load_device_file(spec)
    with open_catalog(db_url) as repo:
        try:
            return repo.get(spec)
        except UnknownDeviceError as exc:
            raise UnknownDeviceError(
                spec,
                exc.close_matches,
                " (use an id from 'hwexplorer catalog list' or the path of a .yaml/.json device file)",
            ) from None


def resolve_system(spec: str, db_url: str | None = None) -> System:
    """A system file (``path.yaml``/``.json``) or a system id of the catalog (shipped or imported), opening and
    seeding the database if needed. An unknown id raises :class:`UnknownSystemError` (a ValueError) listing close
    matches; a bad file raises :class:`SystemFileError` (one line naming the field)."""
    spec = spec.strip()
    if looks_like_path(spec):
        return load_system_file(spec)
    with open_catalog(db_url) as repo:
        try:
            return repo.get_system(spec)
        except UnknownSystemError as exc:
            raise UnknownSystemError(
                spec,
                exc.close_matches,
                " (use an id from 'hwexplorer catalog list --systems' or the path of a .yaml/.json system file)",
            ) from None


def catalog_calibrations(ids, db_url: str | None = None) -> dict:
    """The named calibrations the catalog database keeps for the devices ``ids`` (by id; a device the catalog
    does not know has none)."""
    with open_catalog(db_url) as repo:
        return repo.all_calibrations(list(ids))
