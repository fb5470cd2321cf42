"""Project files in the window: New, New from template, Open, Save, Save As, recent files, the dirty title,
the close prompt, and crash recovery.

Reading and writing go through ``explorer.core.session.project`` (validated before anything changes; atomic save).
Recovery: a few seconds after an unsaved edit the project is written to
``user_data_dir("hwexplorer")/recovery/session-<pid>-<n>.json``, held by a lock file while this session
runs. Saving, returning to the saved state or closing normally deletes it; a file whose lock is stale was
left by a session that crashed, and the next start offers to restore it (as one undoable edit on top of
the file it came from).
"""

from __future__ import annotations

import json
import os
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path

from PySide6.QtCore import QLockFile, QObject, QSettings, QTimer, Signal
from PySide6.QtWidgets import QFileDialog, QMessageBox, QWidget

from explorer.core.files import atomic_write_text
from explorer.core.session.commands import (
    Composite,
    SelectDevices,
    SetAssumptions,
    SetCalibrations,
    SetDeviceOverrides,
    SetModel,
    SetRequirements,
    SetServing,
    SetTrace,
)
from explorer.core.session.device_overrides import describe
from explorer.core.session.project import SUFFIX, Project, ProjectError, load_project, save_project
from explorer.core.session.workspace import Assumptions, Workspace
from explorer.core.settings import Preferences
from explorer.core.workload.model import Model, layers_json
from explorer.core.workload.templates import get_template

from .binding import bind_many

APP_TITLE = "Hardware Explorer"
FILE_FILTER = "Hardware Explorer projects (*.hwproj);;JSON files (*.json);;All files (*)"
RECENT_KEY = "project/recent"
MAX_RECENT = 8
AUTOSAVE_DELAY_MS = 5000
RECOVERY_KIND = "hwexplorer-recovery"


def recovery_dir() -> Path:
    import platformdirs

    return Path(platformdirs.user_data_dir("hwexplorer", appauthor=False)) / "recovery"


def blank_model() -> Model:
    return Model.make("untitled", {"tokens": 128, "hidden": 768})


@dataclass(frozen=True)
class Recovery:
    """Unsaved work left by a session that did not close normally."""

    file: Path
    project: Project
    original: Path | None  # the project file it was opened from, None for an untitled project
    saved_at: str

    @property
    def lock_file(self) -> Path:
        return self.file.with_suffix(".lock")

    def discard(self) -> None:
        self.file.unlink(missing_ok=True)
        self.lock_file.unlink(missing_ok=True)


def read_recovery(file: Path) -> Recovery:
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ProjectError(f"{file}: unreadable recovery file ({exc})") from None
    if not isinstance(data, dict) or data.get("kind") != RECOVERY_KIND:
        raise ProjectError(f"{file}: not a recovery file")
    project = Project.from_dict(data.get("project"), str(file))
    original = data.get("path")
    return Recovery(file, project, Path(original) if isinstance(original, str) else None, str(data.get("saved_at", "")))


def _when(saved_at: str) -> str:
    try:
        return datetime.fromisoformat(saved_at).strftime("%Y-%m-%d %H:%M")
    except ValueError:
        return "an unknown time"


def _session_pid(file: Path) -> int | None:
    parts = file.stem.split("-")
    return int(parts[1]) if len(parts) == 3 and parts[1].isdigit() else None


class ProjectController(QObject):
    title_changed = Signal(str)
    recent_changed = Signal()
    message = Signal(str)  # for the status bar

    def __init__(self, workspace: Workspace, window: QWidget | None = None,
                 preferences: Callable[[], Preferences] | None = None, autosave_ms: int = AUTOSAVE_DELAY_MS):
        super().__init__(window)
        self.ws = workspace
        self.window = window
        self._preferences = preferences or Preferences
        self.path: Path | None = None
        self._session = recovery_dir() / f"session-{os.getpid()}-{time.time_ns() % 10**12}.json"
        self._lock: QLockFile | None = None
        self._timer = QTimer(self, singleShot=True, interval=autosave_ms)
        self._timer.timeout.connect(self.autosave)
        bind_many(self, [(workspace.changed, self._on_changed), (workspace.dirty_changed, self._on_dirty)])

    # -- title
    @property
    def display_name(self) -> str:
        return self.path.name if self.path else "Untitled"

    def title(self) -> str:
        return f"{self.display_name}{'*' if self.ws.is_dirty else ''} \u2014 {APP_TITLE}"

    def _emit_title(self) -> None:
        self.title_changed.emit(self.title())

    def _set_path(self, path: Path | None) -> None:
        self.path = Path(path).resolve() if path else None
        if self.path:
            self.add_recent(self.path)
        self._emit_title()

    # -- new / open / save
    def new_project(self, model: Model | None = None, phase: str = "prefill") -> bool:
        """Start an untitled project (asking to save first); the selected devices are kept."""
        if not self.maybe_save():
            return False
        prefs = self._preferences()
        assumptions = Assumptions(**prefs.assumption_defaults(), phase=phase)
        self.ws.reset(model or blank_model(), self.ws.device_ids, assumptions)
        self._set_path(None)
        self.message.emit(f"New project: {self.ws.model.name}")
        return True

    def new_from_template(self, template_id: str) -> bool:
        template = get_template(template_id)
        return self.new_project(template.build(), template.phase_default)

    def open_project(self, path: str | Path | None = None) -> bool:
        if path is None:
            path = self.ask_open_path()
            if not path:
                return False
        path = Path(path)
        try:
            project = load_project(path)
        except ProjectError as exc:
            if not path.exists():
                self.remove_recent(path)
            QMessageBox.critical(self.window, "Cannot open project",
                                 f"{exc}\n\nThe open project was not changed.")
            return False
        if not self.maybe_save():
            return False
        self.ws.reset(project.model, project.device_ids, project.assumptions, project.trace, project.requirements,
                      project.system, project.training, project.serving, project.device_overrides,
                      project.calibrations)
        self._set_path(path)
        found = {d.id for d in self.ws.devices}
        missing = [i for i in project.device_ids if i not in found]
        note = f" ({len(missing)} device(s) not in the catalog: {', '.join(missing)})" if missing else ""
        overridden = [i for i in project.device_overrides if i in found]
        if overridden:  # the project's figures win over this machine's catalog: say so
            note += (f"; the project overrides figures of {', '.join(overridden)}: "
                     + "; ".join(describe(project.device_overrides[i]) for i in overridden))
        self.message.emit(f"Opened {path.name}{note}")
        return True

    def save(self) -> bool:
        if self.path is None:
            return self.save_as()
        return self._write(self.path)

    def save_as(self, path: str | Path | None = None) -> bool:
        if path is None:
            path = self.ask_save_path()
            if not path:
                return False
        path = Path(path)
        if not path.suffix:
            path = path.with_suffix(SUFFIX)
        return self._write(path)

    def _write(self, path: Path) -> bool:
        try:
            save_project(Project.of(self.ws), path)
        except OSError as exc:
            QMessageBox.critical(self.window, "Cannot save project",
                                 f"{path}: {exc.strerror or exc}\n\nThe previous file, if any, is unchanged.")
            return False
        self.ws.mark_clean()
        self._set_path(path)
        self.discard_own_recovery()
        self.message.emit(f"Saved {path.name}")
        return True

    def maybe_save(self) -> bool:
        """Ask to save unsaved changes; False when the user cancels (or saving fails)."""
        if not self.ws.is_dirty:
            return True
        buttons = QMessageBox.StandardButton
        answer = QMessageBox.question(self.window, "Unsaved changes",
                                      f"Save the changes to {self.display_name} before closing it?",
                                      buttons.Save | buttons.Discard | buttons.Cancel, buttons.Save)
        if answer == buttons.Save:
            return self.save()
        return answer == buttons.Discard

    def ask_open_path(self) -> str:
        path, _ = QFileDialog.getOpenFileName(self.window, "Open project", self._folder(), FILE_FILTER)
        return path

    def ask_save_path(self) -> str:
        start = str(self.path) if self.path else str(Path(self._folder()) / f"{self.ws.model.name}{SUFFIX}")
        path, _ = QFileDialog.getSaveFileName(self.window, "Save project as", start, FILE_FILTER)
        return path

    def _folder(self) -> str:
        recent = self.recent_files()
        return str(Path(recent[0]).parent) if recent else str(Path.home())

    # -- recent files (QSettings)
    def recent_files(self) -> list[str]:
        value = QSettings().value(RECENT_KEY, [])
        if isinstance(value, str):  # INI files return a one-item list as a plain string
            value = [value]
        return [str(v) for v in (value or [])]

    def add_recent(self, path: Path) -> None:
        items = [str(path)] + [p for p in self.recent_files() if p != str(path)]
        QSettings().setValue(RECENT_KEY, items[:MAX_RECENT])
        self.recent_changed.emit()

    def remove_recent(self, path: Path) -> None:
        items = [p for p in self.recent_files() if Path(p) != Path(path).resolve() and p != str(path)]
        QSettings().setValue(RECENT_KEY, items)
        self.recent_changed.emit()

    def clear_recent(self) -> None:
        QSettings().setValue(RECENT_KEY, [])
        self.recent_changed.emit()

    # -- autosave and recovery
    def _on_changed(self, _changes) -> None:
        if self.ws.is_dirty and not self._timer.isActive():
            self._timer.start()

    def _on_dirty(self, dirty: bool) -> None:
        if not dirty:
            self.discard_own_recovery()
        self._emit_title()

    @property
    def recovery_file(self) -> Path:
        return self._session

    def autosave(self) -> bool:
        """Write the unsaved project to this session's recovery file (nothing when there is nothing unsaved)."""
        if not self.ws.is_dirty:
            return False
        try:
            self._session.parent.mkdir(parents=True, exist_ok=True)
            if self._lock is None:
                self._lock = QLockFile(str(self._session.with_suffix(".lock")))
                self._lock.setStaleLockTime(0)
                self._lock.tryLock(0)
            atomic_write_text(self._session, self._recovery_text())
        except OSError as exc:
            self.message.emit(f"Autosave failed: {exc}")
            return False
        return True

    def _recovery_text(self) -> str:
        """The recovery file: compact JSON (read back by :func:`read_recovery` only), the model's layers joined from
        each spec's JSON text made once (``LayerSpec.to_json``), so a 10,000-layer model is not encoded again every
        autosave on the UI thread (~50 ms and ~20,000 objects a time)."""
        project = Project.of(self.ws)
        marker = f"layers-{uuid.uuid4().hex}"  # no other string of the file can be it
        data = replace(project, model=replace(project.model, layers=())).to_dict()
        data["model"]["layers"] = marker
        text = json.dumps({"kind": RECOVERY_KIND, "format": 1, "path": str(self.path) if self.path else None,
                           "saved_at": datetime.now().isoformat(timespec="seconds"), "project": data},
                          separators=(",", ":"))
        return text.replace(f'"{marker}"', layers_json(project.model), 1) + "\n"

    def discard_own_recovery(self) -> None:
        self._timer.stop()
        self._session.unlink(missing_ok=True)

    def shutdown(self) -> None:
        """Normal close: nothing to recover."""
        self.discard_own_recovery()
        if self._lock is not None:
            self._lock.unlock()
            self._lock = None

    def pending_recoveries(self) -> list[Recovery]:
        """Recovery files left by sessions that are no longer running, newest first."""
        folder = recovery_dir()
        if not folder.is_dir():
            return []
        found = []
        for file in sorted(folder.glob("session-*.json"), key=lambda f: f.stat().st_mtime, reverse=True):
            if file == self._session or not self._is_abandoned(file):
                continue
            try:
                found.append(read_recovery(file))
            except ProjectError as exc:
                self.message.emit(f"Ignored an unreadable recovery file: {exc}")
        return found

    def _is_abandoned(self, file: Path) -> bool:
        if _session_pid(file) == os.getpid():
            return True  # same pid, other session: the pid was reused after that session ended
        lock = QLockFile(str(file.with_suffix(".lock")))
        lock.setStaleLockTime(0)
        if lock.tryLock(0):
            lock.unlock()
            return True
        return False

    def offer_recovery(self) -> bool:
        """At start: offer to restore each abandoned recovery file; returns whether one was restored."""
        restored = False
        for rec in self.pending_recoveries():
            what = rec.original.name if rec.original else "an untitled project"
            buttons = QMessageBox.StandardButton
            answer = QMessageBox.question(
                self.window, "Restore unsaved work?",
                f"Hardware Explorer did not close normally. Unsaved changes to {what} (model "
                f"\u201c{rec.project.model.name}\u201d) were kept at {_when(rec.saved_at)}.\n\n"
                "Restore them? (No discards them.)", buttons.Yes | buttons.No, buttons.Yes)
            if answer == buttons.Yes and not restored:
                self.restore(rec)
                restored = True
            rec.discard()
        return restored

    def restore(self, rec: Recovery) -> None:
        """Open the file the work came from (if it still opens), then apply the recovered state as one edit."""
        base_path = None
        if rec.original is not None:
            try:
                base = load_project(rec.original)
                self.ws.reset(base.model, base.device_ids, base.assumptions, base.trace, base.requirements,
                              base.system, base.training, base.serving, base.device_overrides, base.calibrations)
                base_path = rec.original
            except ProjectError:
                base_path = None
        if base_path is None:
            self.ws.reset(blank_model(), (), rec.project.assumptions)
        self._set_path(base_path)
        p = rec.project
        self.ws.execute(Composite((SetModel(p.model), SelectDevices(p.device_ids), SetAssumptions(p.assumptions.to_dict()),
                                   SetTrace(p.trace), SetRequirements(p.requirements),
                                   SetDeviceOverrides(p.device_overrides), SetCalibrations(p.calibrations),
                                   *((SetServing(p.serving),) if p.serving is not None else ())),
                                  text="restore unsaved changes"))
        self._emit_title()
        self.message.emit(f"Restored unsaved changes to {rec.original.name if rec.original else 'an untitled project'}")
