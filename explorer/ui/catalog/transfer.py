"""Import and export for the catalog dock, on top of :mod:`explorer.store.io` (YAML, JSON or CSV).

An import is checked as a whole first (a dry run); ids already in the catalog are replaced only after the
user agrees, and any rejected row stops the import with every problem listed (nothing is written).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from explorer.store import io as store_io
from explorer.store import system_io

if TYPE_CHECKING:  # imports SQLAlchemy, which the main window does not need to start
    from explorer.store.repository import CatalogRepository

FILE_FILTERS = "YAML (*.yaml *.yml);;JSON (*.json);;CSV (*.csv);;All files (*)"
Confirm = Callable[[str, str], bool]


class ImportRejectedError(ValueError):
    """The file has rows that cannot be imported; ``report`` lists each with its field."""

    def __init__(self, report: store_io.ImportReport):
        self.report = report
        lines = report.lines()
        shown = lines[:-1][:20] + ([f"… {len(lines) - 21} more"] if len(lines) > 21 else []) + lines[-1:]
        super().__init__("\n".join(shown))


def import_devices(repository: CatalogRepository, path: Path, confirm: Confirm) -> tuple[str, ...]:
    """Import every device of ``path``; returns the ids added and replaced (empty if the user declined)."""
    check = store_io.import_file(repository, path, replace=True, dry_run=True)
    if check.rejected:
        raise ImportRejectedError(check)
    replace = bool(check.replaced)
    if replace:
        names = ", ".join(check.replaced[:8]) + (" …" if len(check.replaced) > 8 else "")
        question = (f"{len(check.replaced)} device(s) in {path.name} are already in the catalog "
                    f"({names}). Replace them with the imported versions? Edits of shipped devices are "
                    "kept as overrides.")
        if not confirm("Replace devices?", question):
            return ()
    report = store_io.import_file(repository, path, replace=replace)
    if report.rejected:  # e.g. someone added one of the ids since the check
        raise ImportRejectedError(report)
    return report.added + report.replaced


def export_devices(repository: CatalogRepository, path: Path, ids: Sequence[str]) -> int:
    """Write the devices ``ids`` to ``path`` (format from the suffix), with their named calibrations (YAML, JSON);
    returns how many devices were written."""
    return store_io.export_file(repository.devices(list(ids)), path, calibrations=repository.all_calibrations(ids))


# ------------------------------------------------------------------------------------------------ systems
SYSTEM_FILE_FILTERS = "YAML (*.yaml *.yml);;JSON (*.json);;All files (*)"


def import_systems(repository: CatalogRepository, path: Path, confirm: Confirm) -> tuple[str, ...]:
    """Import every system of ``path`` (a system file or a systems export), by the devices' rules: checked whole
    first, replacing ids already in the catalog only after the user agrees; returns the ids added and replaced."""
    check = system_io.import_systems_file(repository, path, replace=True, dry_run=True)
    if check.rejected:
        raise ImportRejectedError(check)
    replace = bool(check.replaced)
    if replace:
        names = ", ".join(check.replaced[:8]) + (" …" if len(check.replaced) > 8 else "")
        question = (f"{len(check.replaced)} system(s) in {path.name} are already in the catalog ({names}). "
                    "Replace them with the imported versions? Edits of shipped systems are kept as overrides.")
        if not confirm("Replace systems?", question):
            return ()
    report = system_io.import_systems_file(repository, path, replace=replace)
    if report.rejected:
        raise ImportRejectedError(report)
    return report.added + report.replaced


def export_systems(repository: CatalogRepository, path: Path, ids: Sequence[str]) -> int:
    """Write the systems ``ids`` to ``path`` (YAML, or JSON for .json); returns how many were written."""
    return system_io.export_systems_file(repository.systems(list(ids)), path)
