"""Project files: the model, the selected devices and the assumptions, as versioned JSON (docs/project-file.md).

Saving is atomic (the previous file survives a crash mid-save). Opening validates everything before anything
changes, so a corrupt or newer-format file leaves the open project untouched.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from explorer.core.files import atomic_write_text
from explorer.core.session.workspace import Assumptions, Workspace
from explorer.core.workload.model import Model, ModelError

FORMAT = 1
KIND = "hwexplorer-project"


class ProjectError(ValueError):
    """The project file cannot be read; the message names the file and the field."""


@dataclass(frozen=True)
class Project:
    model: Model
    device_ids: tuple[str, ...]
    assumptions: Assumptions

    @classmethod
    def of(cls, ws: Workspace) -> "Project":
        return cls(ws.model, ws.device_ids, ws.assumptions)

    def to_dict(self) -> dict:
        return {"format": FORMAT, "kind": KIND, "model": self.model.to_dict(), "devices": list(self.device_ids),
                "assumptions": self.assumptions.to_dict()}

    def dumps(self) -> str:
        return json.dumps(self.to_dict(), indent=2) + "\n"

    @classmethod
    def from_dict(cls, data, where: str) -> "Project":
        if not isinstance(data, dict) or data.get("kind") != KIND:
            raise ProjectError(f"{where}: not a Hardware Explorer project (no \"kind\": \"{KIND}\")")
        fmt = data.get("format")
        if isinstance(fmt, int) and fmt > FORMAT:
            raise ProjectError(f"{where}: format {fmt} was written by a newer Hardware Explorer; this version reads "
                               f"format {FORMAT}. Update the application to open it.")
        if fmt != FORMAT:
            raise ProjectError(f"{where}: format: expected {FORMAT}, got {fmt!r}")
        devices = data.get("devices", [])
        if not isinstance(devices, list) or not all(isinstance(d, str) for d in devices):
            raise ProjectError(f"{where}: devices: expected a list of device ids")
        try:
            model = Model.from_dict(data.get("model"), f"{where}: model")
            assumptions = Assumptions.from_dict(data.get("assumptions") or {}, "assumptions")
        except ModelError as exc:
            raise ProjectError(str(exc)) from None
        except ValueError as exc:
            raise ProjectError(f"{where}: {exc}") from None
        return cls(model, tuple(devices), assumptions)


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
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ProjectError(f"{path}: line {exc.lineno}, column {exc.colno}: invalid JSON ({exc.msg})") from None
    return Project.from_dict(data, str(path))
