"""Projects in the window: save/open round trip, corrupt and newer files, atomic save, recent files, the close
prompt, and crash recovery at the next start."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from PySide6.QtWidgets import QMessageBox

from explorer.core.session.commands import RemoveLayers
from explorer.core.session.project import load_project
from explorer.core.session.workspace import Workspace
from explorer.core.workload.templates import get_template
from explorer.ui.main_window import MainWindow
from explorer.ui.project_controller import recovery_dir

Button = QMessageBox.StandardButton


class Dialogs:
    """Records message boxes and answers questions with a scripted button."""

    def __init__(self, monkeypatch):
        self.errors: list[tuple[str, str]] = []
        self.questions: list[tuple[str, str]] = []
        self.answer = Button.Discard
        monkeypatch.setattr(QMessageBox, "critical", self._critical)
        monkeypatch.setattr(QMessageBox, "question", self._question)

    def _critical(self, parent, title, text, *args, **kwargs):
        self.errors.append((title, text))
        return Button.Ok

    def _question(self, parent, title, text, *args, **kwargs):
        self.questions.append((title, text))
        return self.answer


@pytest.fixture
def dialogs(monkeypatch):
    return Dialogs(monkeypatch)


@pytest.fixture
def make_window(qtbot, dialogs):
    def make(**kwargs):
        win = MainWindow(Workspace(), None, panels=(), **kwargs)
        qtbot.addWidget(win)
        return win

    return make


@pytest.fixture
def window(make_window):
    return make_window()


def gpt2_project(window: MainWindow):
    window.new_from_template("gpt2")
    ws = window.workspace
    ws.select_devices(["nvidia-h100-sxm5", "google-tpu-v5e", "nvidia-l4"])
    ws.set_assumptions(batch=8, precision="bf16", phase="decode", electricity_usd_per_kwh=0.2)
    return ws


def test_round_trip(window, tmp_path):
    ws = gpt2_project(window)
    assert window.windowTitle() == "Untitled* \u2014 Hardware Explorer"
    path = tmp_path / "gpt2 study"
    assert window.controller.save_as(path)
    saved = tmp_path / "gpt2 study.hwproj"
    assert window.windowTitle() == "gpt2 study.hwproj \u2014 Hardware Explorer" and not ws.is_dirty
    data = json.loads(saved.read_text())
    assert data["format"] == 9 and data["kind"] == "hwexplorer-project"
    assert data["devices"] == ["nvidia-h100-sxm5", "google-tpu-v5e", "nvidia-l4"]
    assert data["assumptions"]["batch"] == 8 and data["model"]["name"] == "GPT-2 (124M)"
    model, devices, assumptions = ws.model, ws.device_ids, ws.assumptions

    assert window.new_project()
    assert ws.model.layers == () and window.windowTitle() == "Untitled \u2014 Hardware Explorer"
    assert window.open_project(saved)
    assert (ws.model, ws.device_ids, ws.assumptions) == (model, devices, assumptions)
    assert not ws.stack.can_undo and not ws.is_dirty
    assert window.controller.recent_files()[0] == str(saved.resolve())
    window.actions.fill_recent()
    labels = [a.text() for a in window.actions.recent_menu.actions()]
    assert labels[0] == "&1 gpt2 study.hwproj"

    ws.set_assumptions(batch=16)
    assert window.windowTitle() == "gpt2 study.hwproj* \u2014 Hardware Explorer"
    assert window.controller.save()
    assert load_project(saved).assumptions.batch == 16


def test_new_project_uses_the_preferences_and_keeps_the_devices(window):
    from explorer.core.settings import Preferences, load_preferences

    ws = window.workspace
    ws.select_devices(["nvidia-l4"])
    prefs = Preferences(default_precision="int8", electricity_usd_per_kwh=0.25, pue=1.5, years=4, utilization=0.5)
    assert window.apply_preferences(prefs)
    assert load_preferences() == prefs.checked()
    assert window.new_from_template("llama2-7b")
    assert ws.device_ids == ("nvidia-l4",)
    a = ws.assumptions
    assert (a.precision, a.electricity_usd_per_kwh, a.pue, a.years, a.utilization) == ("int8", 0.25, 1.5, 4, 0.5)
    assert a.phase == get_template("llama2-7b").phase_default
    assert ws.model.name == "Llama-2-7B" and not ws.is_dirty


@pytest.mark.parametrize("content, reason", [
    ("{\"format\": 1, \"kind\": \"hwexplorer-project\", \"model\": ", "invalid JSON"),
    ("\x00\x01binary", "invalid JSON"),
    ('{"format": 1, "kind": "something-else"}', "not a Hardware Explorer project"),
    (('{"format": 1, "kind": "hwexplorer-project", "model": {"format": 1, "name": "m", "input": {"tokens": 8}, '
      '"layers": [{"kind": "warp_drive"}]}}'), "unknown layer kind 'warp_drive'"),
    ('{"format": 10, "kind": "hwexplorer-project"}', "written by a newer Hardware Explorer"),
])
def test_a_bad_file_leaves_the_open_project_untouched(window, dialogs, tmp_path, content, reason):
    ws = gpt2_project(window)
    assert window.controller.save_as(tmp_path / "good.hwproj")
    ws.set_assumptions(batch=3)
    before = (ws.model, ws.device_ids, ws.assumptions, ws.stack.undo_text, window.windowTitle())
    bad = tmp_path / "bad.hwproj"
    bad.write_text(content, encoding="utf-8")
    assert not window.open_project(bad)
    assert (ws.model, ws.device_ids, ws.assumptions, ws.stack.undo_text, window.windowTitle()) == before
    assert window.controller.path == (tmp_path / "good.hwproj").resolve()
    title, text = dialogs.errors[-1]
    assert title == "Cannot open project" and reason in text and "bad.hwproj" in text
    assert "The open project was not changed." in text
    assert not dialogs.questions  # nothing was asked: the file was rejected before the save prompt


def test_missing_recent_file_is_reported_and_forgotten(window, dialogs, tmp_path):
    gpt2_project(window)
    path = tmp_path / "gone.hwproj"
    assert window.controller.save_as(path)
    path.unlink()
    assert not window.open_project(str(path))
    assert "cannot read" in dialogs.errors[-1][1]
    assert str(path.resolve()) not in window.controller.recent_files()


def test_save_is_atomic_a_crash_mid_save_keeps_the_old_file(window, dialogs, tmp_path, monkeypatch):
    ws = gpt2_project(window)
    folder = tmp_path / "projects"
    folder.mkdir()
    path = folder / "p.hwproj"
    assert window.controller.save_as(path)
    old = path.read_bytes()
    ws.execute(RemoveLayers((0, 1)))

    def crash(src, dst):
        raise OSError(28, "No space left on device")

    with monkeypatch.context() as patch:
        patch.setattr(os, "replace", crash)
        assert not window.controller.save()
    assert path.read_bytes() == old  # the previous file is intact
    assert load_project(path).model == get_template("gpt2").build()
    assert [p.name for p in folder.iterdir()] == ["p.hwproj"]  # no temporary file left behind
    title, text = dialogs.errors[-1]
    assert title == "Cannot save project" and "No space left on device" in text and "unchanged" in text
    assert ws.is_dirty and window.windowTitle().startswith("p.hwproj*")


def test_closing_with_unsaved_changes_asks(qtbot, window, dialogs, tmp_path):
    ws = gpt2_project(window)
    window.show()
    qtbot.waitExposed(window)
    dialogs.answer = Button.Cancel
    assert not window.close() and window.isVisible()
    assert dialogs.questions[-1][0] == "Unsaved changes"
    dialogs.answer = Button.Save  # untitled: Save asks where; the user cancels the file dialog
    window.controller.ask_save_path = lambda: ""
    assert not window.close() and window.isVisible()
    window.controller.ask_save_path = lambda: str(tmp_path / "kept.hwproj")
    assert window.close() and not window.isVisible()
    assert load_project(tmp_path / "kept.hwproj").device_ids == ws.device_ids


def test_a_clean_project_closes_without_asking(qtbot, window, dialogs):
    window.show()
    qtbot.waitExposed(window)
    assert window.close()
    assert not dialogs.questions


# ------------------------------------------------------------------------------------------- recovery
def test_autosave_writes_a_recovery_file_and_saving_removes_it(qtbot, make_window, tmp_path):
    window = make_window(autosave_ms=10)
    ws = gpt2_project(window)
    recovery = window.controller.recovery_file
    qtbot.waitUntil(recovery.exists, timeout=2000)
    assert recovery.parent == recovery_dir() and recovery_dir().is_relative_to(tmp_path)
    data = json.loads(recovery.read_text())
    assert data["kind"] == "hwexplorer-recovery" and data["path"] is None
    assert data["project"]["assumptions"]["batch"] == 8
    assert window.controller.save_as(tmp_path / "saved.hwproj")
    assert not recovery.exists()
    ws.set_assumptions(batch=2)
    qtbot.waitUntil(recovery.exists, timeout=2000)
    ws.undo()  # back to the saved state: nothing to recover
    assert not recovery.exists()


def test_recovery_is_offered_at_the_next_start_and_restored(make_window, dialogs, tmp_path):
    crashed = make_window()
    ws = gpt2_project(crashed)
    assert crashed.controller.save_as(tmp_path / "study.hwproj")
    ws.set_assumptions(batch=32)
    ws.execute(RemoveLayers((2,)))
    assert crashed.controller.autosave()
    lost = (ws.model, ws.device_ids, ws.assumptions)
    # the session ends without closing: no shutdown(), its recovery file stays

    fresh = make_window()
    pending = fresh.controller.pending_recoveries()
    assert [r.file for r in pending] == [crashed.controller.recovery_file]
    dialogs.answer = Button.Yes
    assert fresh.controller.offer_recovery()
    assert "did not close normally" in dialogs.questions[-1][1] and "study.hwproj" in dialogs.questions[-1][1]
    ws2 = fresh.workspace
    assert (ws2.model, ws2.device_ids, ws2.assumptions) == lost
    assert ws2.is_dirty and fresh.windowTitle() == "study.hwproj* \u2014 Hardware Explorer"
    assert ws2.stack.undo_text == "restore unsaved changes"
    ws2.undo()  # back to the file as it was saved
    assert ws2.assumptions.batch == 8 and len(ws2.model.layers) == 4
    assert not crashed.controller.recovery_file.exists()
    assert fresh.controller.pending_recoveries() == []


def test_declining_recovery_discards_it(make_window, dialogs):
    crashed = make_window()
    gpt2_project(crashed)
    assert crashed.controller.autosave()
    fresh = make_window()
    dialogs.answer = Button.No
    assert not fresh.controller.offer_recovery()
    assert fresh.workspace.model.layers == () and not fresh.workspace.is_dirty
    assert not crashed.controller.recovery_file.exists()


def test_a_running_session_is_not_offered(make_window, dialogs, tmp_path):
    """A recovery file whose lock is held by a live process belongs to a window that is still open."""
    recovery_dir().mkdir(parents=True, exist_ok=True)
    child = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import sys, time
        from PySide6.QtCore import QLockFile
        lock = QLockFile({str(recovery_dir() / 'session-1-2.lock')!r})
        lock.setStaleLockTime(0)
        print(lock.tryLock(0), flush=True)
        sys.stdin.readline()
    """)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline().strip() == "True"
        crashed = make_window()
        gpt2_project(crashed)
        crashed.controller.autosave()
        Path(crashed.controller.recovery_file).rename(recovery_dir() / "session-1-2.json")
        Path(crashed.controller.recovery_file).with_suffix(".lock").unlink(missing_ok=True)
        assert make_window().controller.pending_recoveries() == []
    finally:
        child.communicate("\n", timeout=20)
    assert [r.file.name for r in make_window().controller.pending_recoveries()] == ["session-1-2.json"]


CRASHING_SESSION = """
import os, sys
os.environ["QT_QPA_PLATFORM"] = "offscreen"
from PySide6.QtWidgets import QApplication
app = QApplication([])
from explorer.core.session.workspace import Workspace
from explorer.ui.main_window import MainWindow
window = MainWindow(Workspace(), None, panels=())
window.new_from_template("resnet50")
window.workspace.select_devices(["nvidia-t4"])
window.workspace.set_assumptions(batch=64)
assert window.controller.autosave()
print(window.controller.recovery_file, flush=True)
os._exit(3)  # a crash: no close event, no cleanup
"""


def test_recovery_after_a_real_crash(make_window, dialogs):
    env = dict(os.environ)
    done = subprocess.run([sys.executable, "-c", CRASHING_SESSION], check=False, env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 3, done.stderr
    left = Path(done.stdout.strip().splitlines()[-1])
    assert left.exists() and left.with_suffix(".lock").exists()
    fresh = make_window()
    dialogs.answer = Button.Yes
    assert fresh.controller.offer_recovery()
    ws = fresh.workspace
    assert ws.model.name.startswith("ResNet-50") and ws.device_ids == ("nvidia-t4",) and ws.assumptions.batch == 64
    assert fresh.windowTitle() == "Untitled* \u2014 Hardware Explorer"
    assert not left.exists()
