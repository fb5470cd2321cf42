"""The named calibrations of the catalog's devices (issue 21): read, save, remove, and carry them in bulk.

A device may hold any number of named kernel calibrations (``named_calibrations``, revision 0005), each the curves
fitted to one measurement file with its provenance (:class:`~explorer.core.session.named_calibrations.
NamedCalibration`). They are stored beside the device, not in it: editing, reverting or re-seeding a device leaves
them as they are, and deleting a user device deletes them. Which one a project uses stays in the project (by name).
Every statement uses bound parameters; a save replaces a calibration of the same key (``fit-<name>``) in one
transaction.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from sqlalchemy import delete, insert, select
from sqlalchemy.engine import Connection

from explorer.core.session.named_calibrations import NamedCalibration, source_key

from .errors import UnknownDeviceError
from .schema import TABLES
from .tx import now as _now

NAMED = TABLES["named_calibrations"]
DEVICES = TABLES["devices"]


def calibration_row(device_id: str, cal: NamedCalibration, created=None) -> dict:
    """The row of ``cal`` (checked first: a malformed calibration never reaches the database)."""
    data = cal.checked().to_dict()
    return {"device_id": device_id, "key": cal.key, "name": data["name"], "file": data["file"],
            "format": data["format"], "precision": data["precision"], "fitted": data["date"],
            "measurements": data["measurements"], "mape": data["mape"], "curves": data["curves"],
            "created_at": created or _now()}


def calibration_from_row(row) -> NamedCalibration:
    data = {"name": row.name, "file": row.file, "format": row.format, "precision": row.precision,
            "date": row.fitted, "measurements": row.measurements, "mape": dict(row.mape or {}),
            "curves": dict(row.curves or {})}
    return NamedCalibration.from_dict(data, f"named_calibrations[{row.device_id}/{row.key}]")


def read_calibrations(conn: Connection, ids: Sequence[str] | None = None) -> dict[str, tuple[NamedCalibration, ...]]:
    """The named calibrations by device id (of ``ids``, or of every device), each device's in order of creation."""
    query = select(NAMED).order_by(NAMED.c.device_id, NAMED.c.created_at, NAMED.c.key)
    if ids is not None:
        if not ids:
            return {}
        query = query.where(NAMED.c.device_id.in_(list(ids)))
    out: dict[str, list[NamedCalibration]] = {}
    for row in conn.execute(query):
        out.setdefault(row.device_id, []).append(calibration_from_row(row))
    return {dev: tuple(cals) for dev, cals in out.items()}


def write_calibrations(conn: Connection, named: Mapping[str, Sequence[NamedCalibration]]) -> None:
    """Upsert every calibration of ``named`` (by device and key), keeping a replaced one's place in the order."""
    for device_id, cals in named.items():
        for cal in cals:
            created = conn.scalar(select(NAMED.c.created_at).where(NAMED.c.device_id == device_id,
                                                                    NAMED.c.key == cal.key))
            conn.execute(delete(NAMED).where(NAMED.c.device_id == device_id, NAMED.c.key == cal.key))
            conn.execute(insert(NAMED).values(**calibration_row(device_id, cal, created)))


class CalibrationMethods:
    """Mixed into :class:`~explorer.store.repository.CatalogRepository`: the devices' named calibrations."""

    engine: object

    def calibrations(self, device_id: str) -> tuple[NamedCalibration, ...]:
        """The named calibrations of ``device_id`` (empty for a device without any)."""
        with self.engine.connect() as conn:
            return read_calibrations(conn, [device_id]).get(device_id, ())

    def all_calibrations(self, ids: Sequence[str] | None = None) -> dict[str, tuple[NamedCalibration, ...]]:
        with self.engine.connect() as conn:
            return read_calibrations(conn, ids)

    def save_calibration(self, device_id: str, cal: NamedCalibration) -> NamedCalibration | None:
        """Store ``cal`` as a named calibration of ``device_id``; returns the one of the same name it replaced."""
        with self.engine.begin() as conn:
            if conn.scalar(select(DEVICES.c.id).where(DEVICES.c.id == device_id)) is None:
                raise UnknownDeviceError(device_id, ())
            before = read_calibrations(conn, [device_id]).get(device_id, ())
            write_calibrations(conn, {device_id: [cal]})
        return next((c for c in before if c.key == cal.key), None)

    def delete_calibration(self, device_id: str, name: str) -> NamedCalibration | None:
        """Remove the calibration named ``name`` of ``device_id``; returns it (None: there was none)."""
        with self.engine.begin() as conn:
            found = next((c for c in read_calibrations(conn, [device_id]).get(device_id, ())
                          if c.key == source_key(name)), None)
            conn.execute(delete(NAMED).where(NAMED.c.device_id == device_id, NAMED.c.key == source_key(name)))
        return found
