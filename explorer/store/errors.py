"""Errors raised by the catalog store (all ValueError subclasses with one clear message)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .overrides import describe_value

if TYPE_CHECKING:
    from explorer.core.hardware.device import Device
    from explorer.core.hardware.system import System


class CatalogError(ValueError):
    """Base class of the catalog store's errors."""


class CatalogDatabaseError(CatalogError):
    """The database cannot be opened or used; the message names it with the password masked."""


class UnknownDeviceError(CatalogError, KeyError):
    def __init__(self, device_id: str, close: tuple[str, ...] = (), hint: str = ""):
        self.device_id = device_id
        self.close_matches = close
        guess = f"; did you mean {', '.join(close)}?" if close else ""
        super().__init__(f"no device '{device_id}' in the catalog{guess}{hint}")

    def __str__(self) -> str:  # KeyError would quote the message
        return self.args[0]


class DuplicateDeviceError(CatalogError):
    def __init__(self, device_id: str):
        self.device_id = device_id
        super().__init__(f"id: a device '{device_id}' is already in the catalog; choose another id")


class ReadOnlyDeviceError(CatalogError):
    """Shipped devices and systems cannot be deleted (edit, duplicate or revert them instead)."""


class UnknownSystemError(CatalogError, KeyError):
    def __init__(self, system_id: str, close: tuple[str, ...] = (), hint: str = ""):
        self.system_id = system_id
        self.close_matches = close
        guess = f"; did you mean {', '.join(close)}?" if close else ""
        super().__init__(f"no system '{system_id}' in the catalog{guess}{hint}")

    def __str__(self) -> str:
        return self.args[0]


class DuplicateSystemError(CatalogError):
    def __init__(self, system_id: str):
        self.system_id = system_id
        super().__init__(f"id: a system '{system_id}' is already in the catalog; choose another id")


class MissingDeviceError(CatalogError):
    """A system names a device that is not in the catalog (one line naming the field ``device``)."""

    def __init__(self, system_id: str, device_id: str):
        self.system_id = system_id
        self.device_id = device_id
        super().__init__(
            f"{system_id}: device: '{device_id}' is not a device of the catalog (add or import the device first)"
        )


class DeviceInUseError(CatalogError):
    """A device that systems of the catalog are made of cannot be deleted."""

    def __init__(self, device_id: str, systems: tuple[str, ...]):
        self.device_id = device_id
        self.systems = systems
        super().__init__(
            f"'{device_id}' cannot be deleted: system(s) {', '.join(systems)} are made of it; delete them first"
        )


@dataclass(frozen=True)
class FieldConflict:
    field: str
    mine: Any  # the value in the edit being saved (device-file form), None when absent
    theirs: Any  # the value now stored in the database


class ConflictError(CatalogError):
    """The device (or system) changed since it was read. ``mine`` is the unsaved edit, kept so it can be retried:
    ``repository.update(exc.mine, exc.theirs_version)`` (after merging, if the fields overlap)."""

    def __init__(
        self,
        mine: Device | System,
        theirs: Device | System,
        expected_version: int,
        theirs_version: int,
        fields: tuple[FieldConflict, ...],
        what: str = "device",
    ):
        self.mine = mine
        self.theirs = theirs
        self.expected_version = expected_version
        self.theirs_version = theirs_version
        self.fields = fields
        lines = [
            f"{what} '{mine.id}' was changed by someone else since you opened it (you edited version "
            f"{expected_version}, the catalog now has version {theirs_version}); your edit was not saved and "
            f"is kept for a retry."
        ]
        if fields:
            lines.append("Fields that differ:")
            lines.extend(
                f"  {c.field}: yours {describe_value(c.mine)}; theirs {describe_value(c.theirs)}"
                for c in fields
            )
        else:
            lines.append(
                f"Your edit and the stored {what} are identical; saving again with the new version is safe."
            )
        super().__init__("\n".join(lines))
