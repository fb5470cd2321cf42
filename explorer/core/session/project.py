"""Project files: the session's state (model, devices, assumptions, trace, planner requirements, systems, training
run, serving workload, device overrides, named calibrations) as versioned JSON (docs/project-file.md).

Saving is atomic (the previous file survives a crash mid-save). Opening validates everything before anything
changes, so a corrupt or newer-format file leaves the open project untouched. Files of an older format are
migrated on opening (:data:`MIGRATIONS`); saving writes the current format.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field, fields, replace
from pathlib import Path

from explorer.core.analysis.procurement import Requirements
from explorer.core.files import NestingError, atomic_write_text, names, parse_nested, single_line
from explorer.core.formats import TENSORS
from explorer.core.traces.model import Trace, trace_from_dict, trace_to_dict
from explorer.core.workload.model import Model, ModelError

from .device_overrides import DeviceOverrides, check_overrides
from .link_calibrations import LinkCalibrations
from .named_calibrations import Calibrations
from .serving_choice import ServingChoice
from .state import Assumptions, State, SystemChoice
from .training_choice import TrainingChoice

FORMAT = 9
KIND = "hwexplorer-project"
SUFFIX = ".hwproj"  # the project file's suffix


class ProjectError(ValueError):
    """The project file cannot be read; the message names the file and the field."""


def _v1_to_v2(data: dict) -> dict:
    """Format 2 adds the imported trace and the planner's requirements (neither was saved before)."""
    return {**data, "format": 2, "trace": None, "requirements": {}}


def _v2_to_v3(data: dict) -> dict:
    """Format 3 adds the systems the model is sized on (none before). ``lm_head`` was added within format 2 when
    every position was computed, and its default became ``last`` later: a format-2 file without it (written before
    it existed, or by hand) still means ``all``. Format 3 always writes it."""
    out = {**data, "format": 3, "system": {}}
    assumptions = data.get("assumptions", {})
    if isinstance(assumptions, dict) and "lm_head" not in assumptions:
        out["assumptions"] = {**assumptions, "lm_head": "all"}
    return out


def _v3_to_v4(data: dict) -> dict:
    """Format 4 adds the time model the panels show (``assumptions.time_model``): a file written before it showed
    the ideal model."""
    out = {**data, "format": 4}
    assumptions = data.get("assumptions", {})
    if isinstance(assumptions, dict):
        out["assumptions"] = {**assumptions, "time_model": assumptions.get("time_model", "ideal")}
    return out


def _v4_to_v5(data: dict) -> dict:
    """Format 5 adds the training run (``training``; before it, the defaults). The key stays optional on read."""
    return {**data, "format": 5}


def _add_serving(data: dict, fmt: int) -> dict:
    """Format ``fmt`` adds the serving workload and service levels (``serving``; null: none set, as before).
    (Its own function, so that the number it lands at can change.)"""
    return {**data, "format": fmt, "serving": data.get("serving")}


def _add_device_overrides(data: dict, fmt: int) -> dict:
    """Format ``fmt`` adds the device overrides (``device_overrides``: a user's edited figures by device id, which
    before lived only in that user's catalog): a file written before it has none, ``{}``. (Its own function, so
    that the number it lands at can change.)"""
    return {**data, "format": fmt, "device_overrides": {}}


def _add_calibrations(data: dict, fmt: int) -> dict:
    """Format ``fmt`` adds the named calibrations and the one in use per device (``calibrations``): a file written
    before it has none, ``{}``, and every device uses its catalog calibration, as it did. (Its own function, so
    that the number it lands at can change.)"""
    return {**data, "format": fmt, "calibrations": {}}


def _calibrations_by_name(data: dict, fmt: int) -> dict:
    """Format ``fmt`` keeps the named calibrations in the catalog database (beside their device, exported and
    imported with it) and the project names the one it uses (``calibrations.<device>.in_use``, which may now name a
    catalog calibration). A format-8 file carried its calibrations whole (``named``): they stay the project's own,
    read as before, and win over a catalog calibration of the same name, so the file opens with the same numbers.
    The same format adds the named link fits of the systems (``link_calibrations``; ``{}`` when migrated: every
    system keeps its own figures). (Its own function, so that the number it lands at can change.)"""
    return {**data, "format": fmt, "calibrations": data.get("calibrations", {}), "link_calibrations": {}}


#: ``MIGRATIONS[n]`` turns a format-n mapping into a format n+1 one.
MIGRATIONS = {1: _v1_to_v2, 2: _v2_to_v3, 3: _v3_to_v4, 4: _v4_to_v5, 5: lambda data: _add_serving(data, 6),
              6: lambda data: _add_device_overrides(data, 7), 7: lambda data: _add_calibrations(data, 8),
              8: lambda data: _calibrations_by_name(data, 9)}


def _assumptions_to_dict(a: Assumptions) -> dict:
    """The assumptions as written: the tensors' formats only where set (absent: the precision), so a project
    without them is the file it always was."""
    return {k: v for k, v in a.to_dict().items() if not (k in TENSORS and v is None)}


QUOTE_MAPPINGS = ("price", "cloud_price", "price_source", "cloud_price_source")


def requirements_to_dict(req: Requirements) -> dict:
    """The requirements that differ from the defaults, in SI units (docs/project-file.md)."""
    default = Requirements()
    out = {}
    for f in fields(Requirements):
        value = getattr(req, f.name)
        if value != getattr(default, f.name):
            out[f.name] = dict(value) if f.name in QUOTE_MAPPINGS else value
    return out


def requirements_from_dict(data, where: str = "requirements") -> Requirements:
    if not isinstance(data, dict):
        raise ValueError(f"{where}: expected an object")
    known = {f.name for f in fields(Requirements)}
    unknown = sorted(set(data) - known)
    if unknown:
        raise ValueError(f"{where}: unknown keys {names(unknown)}")
    for name in ("price", "cloud_price"):
        quotes = data.get(name, {})
        if not isinstance(quotes, dict) or not all(isinstance(v, (int, float)) and not isinstance(v, bool)
                                                   and math.isfinite(v) for v in quotes.values()):
            raise ValueError(f"{where}.{name}: expected an object of numbers by device id")
    for name in ("price_source", "cloud_price_source"):  # optional: files before them have none
        notes = data.get(name, {})
        if not isinstance(notes, dict) or not all(isinstance(v, str) for v in notes.values()):
            raise ValueError(f"{where}.{name}: expected an object of texts by device id")
    for name, value in data.items():
        if name not in (*QUOTE_MAPPINGS, "target_unit", "budget_covers", "power_scope", "rank_by") and not (
                value is None or (isinstance(value, (int, float)) and not isinstance(value, bool))):
            raise ValueError(f"{where}.{name}: expected a number or null, got {value!r}")
    try:
        return Requirements(**data)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{where}.{exc}") from None


@dataclass(frozen=True)
class Project:
    model: Model
    device_ids: tuple[str, ...]
    assumptions: Assumptions
    trace: Trace | None = None
    requirements: Requirements = Requirements()
    system: SystemChoice = SystemChoice()
    training: TrainingChoice = TrainingChoice()
    serving: ServingChoice | None = None
    device_overrides: DeviceOverrides = field(default_factory=dict)
    calibrations: Calibrations = field(default_factory=Calibrations)

    def __post_init__(self):
        object.__setattr__(self, "device_overrides", check_overrides(self.device_overrides))
        self.calibrations.checked()

    @classmethod
    def of(cls, ws) -> "Project":
        """The project of a workspace (anything with a ``state``)."""
        return cls.of_state(ws.state)

    @classmethod
    def of_state(cls, state: State) -> "Project":
        return cls(state.model, state.device_ids, state.assumptions, state.trace, state.requirements, state.system,
                   state.training, state.serving, state.device_overrides, state.calibrations)

    @property
    def state(self) -> State:
        return State(self.model, self.device_ids, self.assumptions, self.trace, self.requirements, self.system,
                     self.training, self.serving, self.device_overrides, self.calibrations)

    def to_dict(self) -> dict:
        return {"format": FORMAT, "kind": KIND, "model": self.model.to_dict(), "devices": list(self.device_ids),
                "assumptions": _assumptions_to_dict(self.assumptions),
                "trace": None if self.trace is None else trace_to_dict(self.trace),
                "requirements": requirements_to_dict(self.requirements), "system": self.system.to_dict(),
                "training": self.training.to_dict(),
                "serving": None if self.serving is None else self.serving.to_dict(),
                "device_overrides": {dev: dict(values) for dev, values in self.device_overrides.items()},
                "calibrations": self.calibrations.to_dict(),
                "link_calibrations": self.calibrations.links.to_dict()}

    def dumps(self) -> str:
        return json.dumps(self.to_dict(), indent=2) + "\n"

    @classmethod
    def from_dict(cls, data, where: str) -> "Project":
        if not isinstance(data, dict) or data.get("kind") != KIND:
            raise ProjectError(f"{where}: not a Hardware Explorer project (no \"kind\": \"{KIND}\")")
        fmt = data.get("format")
        if isinstance(fmt, bool) or not isinstance(fmt, int):
            raise ProjectError(f"{where}: format: expected a whole number, got {fmt!r}")
        if fmt > FORMAT:
            raise ProjectError(f"{where}: format {fmt} was written by a newer Hardware Explorer; this version reads "
                               f"format {FORMAT}. Update the application to open it.")
        while fmt in MIGRATIONS:
            data = MIGRATIONS[fmt](data)
            fmt = data["format"]
        if fmt != FORMAT:
            raise ProjectError(f"{where}: format: expected {FORMAT}, got {fmt!r}")
        devices = data.get("devices", [])
        if not isinstance(devices, list) or not all(isinstance(d, str) for d in devices):
            raise ProjectError(f"{where}: devices: expected a list of device ids")
        if not isinstance(data.get("assumptions", {}), dict):
            raise ProjectError(f"{where}: assumptions: expected an object, got {data['assumptions']!r:.40}")
        try:
            model = Model.from_dict(data.get("model"), f"{where}: model")
            assumptions = Assumptions.from_dict(data.get("assumptions") or {}, "assumptions")
            trace = data.get("trace")
            trace = None if trace is None else trace_from_dict(trace, "trace")
            requirements = requirements_from_dict(data.get("requirements") or {}, "requirements")
            system = SystemChoice.from_dict(data.get("system", {}), "system")
            training = TrainingChoice.from_dict(data.get("training", {}), "training")  # optional: the defaults
            serving = data.get("serving")
            serving = None if serving is None else ServingChoice.from_dict(serving, "serving")
            overrides = check_overrides(data.get("device_overrides", {}), "device_overrides")
            calibrations = Calibrations.from_dict(data.get("calibrations", {}), "calibrations")
            links = LinkCalibrations.from_dict(data.get("link_calibrations", {}), "link_calibrations")
            calibrations = replace(calibrations, links=links)
        except ModelError as exc:
            raise ProjectError(single_line(str(exc))) from None
        except ValueError as exc:  # a key of the file may hold a line break: the message stays one line
            raise ProjectError(single_line(f"{where}: {exc}")) from None
        return cls(model, tuple(devices), assumptions, trace, requirements, system, training, serving, overrides,
                   calibrations)


def save_project(project: Project, path: str | Path) -> None:
    atomic_write_text(path, project.dumps())


def load_project(path: str | Path) -> Project:
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ProjectError(f"{path}: cannot read ({exc.strerror})") from None
    except UnicodeDecodeError:
        raise ProjectError(f"{path}: not a text file") from None
    try:
        data = parse_nested(json.loads, text)
    except NestingError as exc:
        raise ProjectError(f"{path}: {exc}") from None
    except json.JSONDecodeError as exc:
        raise ProjectError(f"{path}: line {exc.lineno}, column {exc.colno}: invalid JSON ({exc.msg})") from None
    return Project.from_dict(data, str(path))
