"""Turn command-line MODEL and DEV arguments into models and devices, with one-line errors."""

from __future__ import annotations

from pathlib import Path

from explorer.core.hardware.device_file import DeviceFileError, load_device_file
from explorer.core.importers import load
from explorer.core.session.project import SUFFIX as PROJECT_SUFFIX
from explorer.core.session.project import ProjectError, load_project
from explorer.core.workload.model import ModelError

from ..core.units import UnitError
from .common import CliError, is_path


def load_model_arg(spec: str):
    """A template id, a model file (any model importer: our JSON, ONNX) or a project file (its model and phase);
    returns ``(model, default phase)``."""
    if is_path(spec) or Path(spec).exists():
        path = Path(spec)
        if not path.exists():
            raise CliError(f"MODEL: no such file: {spec}")
        if path.suffix.lower() == PROJECT_SUFFIX:
            try:
                project = load_project(path)
            except ProjectError as exc:
                raise CliError(str(exc)) from None
            return project.model, project.assumptions.phase
        try:
            return load(path, kind="model").value, "prefill"
        except (ModelError, ValueError) as exc:
            raise CliError(str(exc)) from None
    from explorer.core.workload.templates import get_template

    try:
        template = get_template(spec)
    except ValueError as exc:
        raise CliError(f"MODEL: {exc}") from None
    return template.build(), template.phase_default


def with_project_overrides(model_arg: str, devices: list, db_url: str | None = None) -> list:
    """When MODEL is a project file, ``devices`` with the project's device overrides applied (a user's edited
    figures saved with the project, docs/project-file.md) and the named calibration the project uses on each
    (``calibrations``: one it carries, else the catalog database's of that name), each overridden or recalibrated
    device named on stderr, and a name neither holds said there too (the catalog's calibration is used)."""
    import sys

    from explorer.core.session.device_overrides import apply_overrides, describe
    from explorer.core.session.named_calibrations import apply_calibration

    path = Path(model_arg)
    if path.suffix.lower() != PROJECT_SUFFIX or not path.exists():
        return devices
    project = load_project(path)  # already read once by MODEL: a bad file stopped there
    overrides, cals = project.device_overrides, project.calibrations
    wanted = [d.id for d in devices if d.id in cals.in_use and cals.used(d.id) is None]
    catalog = {}
    if wanted:
        from ..store.resolve import catalog_calibrations

        catalog = catalog_calibrations(wanted, db_url)
    used = {d.id: cals.resolve(d.id, catalog.get(d.id, ())) for d in devices}
    for d in devices:
        if d.id in overrides:
            print(f"hwexplorer: the project overrides figures of {d.id}: {describe(overrides[d.id])}",
                  file=sys.stderr)
        if used[d.id] is not None:
            print(f"hwexplorer: the project's calibration of {d.id} is {used[d.id].describe()}",
                  file=sys.stderr)
        elif d.id in cals.in_use:
            print(f"hwexplorer: the project uses the calibration {cals.in_use[d.id]!r} of {d.id}, which the catalog "
                  "does not hold: its catalog calibration is used", file=sys.stderr)
    return [apply_calibration(apply_overrides(d, overrides.get(d.id)), used[d.id]) for d in devices]


def resolve_devices(specs: list[str], db_url: str | None):
    devices = []
    for spec in specs:
        try:
            if is_path(spec):
                if not Path(spec).exists():
                    raise CliError(f"--device: no such file: {spec}")
                devices.append(load_device_file(spec))
            else:
                from ..store.resolve import resolve_device

                devices.append(resolve_device(spec, db_url))
        except (DeviceFileError, UnitError, ValueError) as exc:
            raise CliError(f"--device {spec}: {exc}") from None
    ids = [d.id for d in devices]
    duplicates = sorted({i for i in ids if ids.count(i) > 1})
    if duplicates:
        raise CliError(f"--device: {', '.join(duplicates)} given more than once")
    return devices


def project_devices(model_arg: str, ids, db_url: str | None = None) -> list:
    """The devices ``ids`` as a command on MODEL uses them: resolved (catalog or file), then, when MODEL is a
    project, with its device overrides and chosen named calibrations (:func:`with_project_overrides`). Every
    command that takes a project times its devices through this one helper, so ``plan``, ``report``, ``serve``
    and ``analyze`` (``--device`` or ``--system``) apply a project alike."""
    return with_project_overrides(model_arg, resolve_devices(list(ids), db_url), db_url)


def with_project_links(model_arg: str, system):
    """``system`` (one node) as a command on MODEL uses it: when MODEL is a project, the link fits the project uses
    on its levels are stored on their domains (``link_calibrations``, the app's Systems panel "Links…":
    :meth:`LinkCalibrations.apply`, as the app's workspace does before making the cluster), each named on stderr;
    the calibrated time model then times those levels with them. ``system`` itself otherwise."""
    import sys

    path = Path(model_arg)
    if path.suffix.lower() != PROJECT_SUFFIX or not path.exists():
        return system
    from explorer.core.parallel.link_fit import LEVELS
    from explorer.core.session.link_calibrations import domain_of

    links = load_project(path).calibrations.links  # already read once by MODEL: a bad file stopped there
    for level in LEVELS:
        used = links.used(system.id, level)
        if used is not None and domain_of(system, level) is not None:
            print(f"hwexplorer: the project's link calibration of {system.id} {level} is {used.describe()}",
                  file=sys.stderr)
    return links.apply(system)
