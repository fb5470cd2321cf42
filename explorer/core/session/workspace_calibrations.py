"""The workspace's named calibrations (issue 21): the kernel calibrations of the devices, kept in the catalog
database (a :class:`~.named_calibrations.CalibrationStore`) or, for a format-8 project, in the project, and the
named link fits of the systems (:mod:`.link_calibrations`). Each add, remove and choice is one undoable
``SetCalibrations`` command; a command's writes to the catalog (``store``) run on do and redo, their inverse on undo.
Mixed into :class:`~.workspace.Workspace`; Qt-free.
"""

from __future__ import annotations

from dataclasses import replace

from explorer.core.hardware.device import Device
from explorer.core.hardware.system import System

from .commands import Command, SetCalibrations
from .device_overrides import apply_overrides
from .named_calibrations import Calibrations, CalibrationStore, NamedCalibration, StoreEdit
from .named_calibrations import source_key as cal_key


class CalibrationEdits:
    """The calibration methods of the workspace (which provides ``_state``, ``_store``, ``_catalog_named``,
    ``_devices``, ``_lookup``, ``_system_lookup``, ``_hardware`` and ``execute``)."""

    # -- named calibrations (.named_calibrations): each a one-step undoable edit
    @property
    def calibrations(self) -> Calibrations:
        return self._state.calibrations

    def catalog_device(self, device_id: str) -> Device | None:
        """The catalog's device (project overrides applied, no named calibration): what a calibration is fitted
        against and what the catalog's own choice means."""
        if device_id not in self._devices:
            for d in self._lookup([device_id]):
                self._devices[d.id] = d
        device = self._devices.get(device_id)
        return None if device is None else apply_overrides(device, self._state.device_overrides.get(device_id))

    @property
    def calibration_store(self) -> CalibrationStore | None:
        """Where imported named calibrations go (the catalog database); None: into the project."""
        return self._store

    def catalog_calibrations(self, device_id: str) -> tuple[NamedCalibration, ...]:
        """The named calibrations the catalog database holds for ``device_id`` (none without a store)."""
        if self._store is None or not device_id:
            return ()
        if device_id not in self._catalog_named:
            self._catalog_named[device_id] = tuple(self._store.calibrations(device_id))
        return self._catalog_named[device_id]

    def calibration_choices(self, device_id: str) -> tuple[tuple[NamedCalibration, str], ...]:
        """Every named calibration the chooser offers for ``device_id``, with where it is kept: ``catalog`` (the
        database) or ``project`` (carried by a format-8 project); a project's own shadows a catalog one's name."""
        own = self._state.calibrations.of(device_id)
        keys = {c.key for c in own}
        return (*((c, "catalog") for c in self.catalog_calibrations(device_id) if c.key not in keys),
                *((c, "project") for c in own))

    def used_calibration(self, device_id: str) -> NamedCalibration | None:
        """The named calibration the calibrated model uses on ``device_id`` (None: the device's catalog one)."""
        cals = self._state.calibrations
        if device_id not in cals.in_use:
            return None
        return cals.resolve(device_id, self.catalog_calibrations(device_id))

    def missing_calibration(self, device_id: str) -> str | None:
        """The name the project uses on ``device_id`` that neither it nor the catalog holds."""
        return self._state.calibrations.missing(device_id, self.catalog_calibrations(device_id))

    def add_calibration(self, device_id: str, cal: NamedCalibration) -> None:
        """Keep ``cal`` (imported) as a calibration of ``device_id`` and use it: one undoable step. With a store,
        it goes to the catalog database (undo deletes it, or gives back the one of that name it replaced)."""
        cals = self._state.calibrations
        if self._store is None:
            self.execute(SetCalibrations(cals.add(device_id, cal), text=f"import calibration '{cal.name}'"))
            return
        cal.checked()
        previous = next((c for c in self.catalog_calibrations(device_id) if c.key == cal.key), None)
        after = cals.without(device_id, cal.name).choose(device_id, cal.name, (cal,))
        self.execute(SetCalibrations(after, text=f"import calibration '{cal.name}'",
                                     store=(StoreEdit("save", device_id, cal, previous),)))

    def remove_calibration(self, device_id: str, name: str) -> None:
        """Drop the calibration named ``name`` of ``device_id`` (the project's own, else the catalog's; the
        catalog's calibration is used if it was in use): one undoable step."""
        cals = self._state.calibrations
        if cals.find(device_id, name) is not None:
            self.execute(SetCalibrations(cals.remove(device_id, name), text=f"remove calibration '{name}'"))
            return
        found = next((c for c in self.catalog_calibrations(device_id) if c.key == cal_key(name)), None)
        if found is not None:
            self.execute(SetCalibrations(cals.remove(device_id, name), text=f"remove calibration '{name}'",
                                         store=(StoreEdit("delete", device_id, found),)))

    def choose_calibration(self, device_id: str, name: str | None) -> None:
        """Use the calibration named ``name`` on ``device_id`` (None: the catalog's): one undoable step."""
        cals = self._state.calibrations
        used = self.used_calibration(device_id)
        if (used.name if used else None) == name and (name is not None or device_id not in cals.in_use):
            return
        self.execute(SetCalibrations(cals.choose(device_id, name, self.catalog_calibrations(device_id)),
                                     text=f"use calibration '{name}'" if name else "use the catalog's calibration"))

    def system(self, system_id: str) -> System | None:
        """The catalog's system ``system_id`` as the catalog states it (no named link fit applied), or None."""
        return next(iter(self._system_lookup((system_id,))), None)

    def add_link_calibration(self, system_id: str, link) -> None:
        """Keep ``link`` (a :class:`~.link_calibrations.NamedLink` imported from nccl-tests output) as a fit of
        ``system_id``'s level and use it there: one undoable step."""
        cals = self._state.calibrations
        self.execute(SetCalibrations(replace(cals, links=cals.links.add(system_id, link)),
                                     text=f"import link calibration '{link.name}'", changes=frozenset({"system"})))

    def choose_link_calibration(self, system_id: str, level: str, name: str | None) -> None:
        """Use the fit named ``name`` on ``system_id``'s ``level`` (None: the system's stated figures and any fit
        stored in the system): one undoable step."""
        cals = self._state.calibrations
        used = cals.links.used(system_id, level)
        if (used.name if used else None) == name:
            return
        self.execute(SetCalibrations(replace(cals, links=cals.links.choose(system_id, level, name)),
                                     text=f"use link calibration '{name}'" if name else "use the system's link figures",
                                     changes=frozenset({"system"})))

    def remove_link_calibration(self, system_id: str, name: str) -> None:
        cals = self._state.calibrations
        if cals.links.find(system_id, name) is not None:
            self.execute(SetCalibrations(replace(cals, links=cals.links.remove(system_id, name)),
                                         text=f"remove link calibration '{name}'", changes=frozenset({"system"})))

    def save_link_to_catalog(self, system_id: str, name: str) -> None:
        """Store the fit named ``name`` of ``system_id`` in the catalog database's system, on its level's domain
        (the ``calibrated:`` entry), exactly as ``hwexplorer calibrate link FILE --system S --save --name NAME``
        stores it (:func:`~.link_calibrations.saved_system`): the catalog's system then carries it for every
        project and the CLI. One undoable step: undo writes the system back as it was stored. A ValueError (one
        line) when there is no such fit, no catalog database, or the catalog lacks the system."""
        from .link_calibrations import SystemEdit, saved_system

        link = self._state.calibrations.links.find(system_id, name)
        if link is None:
            raise ValueError(f"link calibration: no fit named {name!r} of {system_id}")
        store = self._store
        if store is None or not hasattr(store, "update_system"):
            raise ValueError("link calibration: no catalog database to save the fit in")
        try:
            before = store.system_record(system_id).system
        except LookupError as exc:
            raise ValueError(f"link calibration: the catalog holds no system {system_id!r}") from exc
        self.execute(SetCalibrations(self._state.calibrations, text=f"save link calibration '{link.name}' to the "
                                     "catalog", changes=frozenset({"system"}),
                                     store=(SystemEdit(system_id, saved_system(before, link), before),)))

    def _store_edits(self, command: Command, forward: bool) -> None:
        """Run the catalog writes of ``command`` (their inverse, last first, on undo)."""
        edits = getattr(command, "store", ())
        if not edits or self._store is None:
            return
        for edit in edits if forward else reversed(edits):
            edit.run(self._store, forward)
            if edit.device_id:
                self._catalog_named.pop(edit.device_id, None)
        self._hardware = ((None,), ())
