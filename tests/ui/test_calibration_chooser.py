"""The Fidelity panel's calibration chooser (issue 21): import a named calibration from a measurement file, choose
which one the calibrated model uses, undo and redo both; the panel says which calibration is in use."""

from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QFileDialog, QInputDialog, QMessageBox

from explorer.core.hardware.device_file import load_device_file
from explorer.core.session.workspace import Assumptions, Workspace
from explorer.core.workload.model import load_model_file
from explorer.ui.panels import FidelityPanel

ROOT = Path(__file__).resolve().parents[2]
TRACES = ROOT / "tests" / "fixtures" / "traces"


@pytest.fixture
def ws():
    device = load_device_file(ROOT / "catalog" / "nvidia-h100-sxm5.yaml")
    w = Workspace(load_model_file(TRACES / "smallnet.json"), lookup=lambda ids: [device] if device.id in ids else [],
                  assumptions=Assumptions(precision="fp16", time_model="calibrated"))
    w.select_devices([device.id])
    return w


@pytest.fixture
def panel(qtbot, ws):
    p = FidelityPanel(ws)
    qtbot.addWidget(p)
    p.resize(1100, 800)
    p.show()
    qtbot.waitExposed(p)
    qtbot.waitUntil(lambda: not p.pending, timeout=4000)
    return p


def _settle(qtbot, panel):
    qtbot.waitUntil(lambda: not panel.pending, timeout=4000)


def _items(combo):
    return [combo.itemText(i) for i in range(combo.count())]


def _time(ws) -> float:
    return float(ws.analysis.model_time("calibrated").sum())


def test_import_choose_undo_redo_through_the_panel(qtbot, ws, panel):
    chooser, combo = panel.chooser, panel.chooser.combo
    assert _items(combo) == ["catalog"] and combo.currentText() == "catalog"
    # the shipped H100 has calibration curves with sources: the panel says the catalog's are in use
    assert panel.in_use.text().startswith("Calibration in use on NVIDIA H100") and "the catalog's" in \
        panel.in_use.text()
    t_catalog = _time(ws)

    assert chooser.import_file(TRACES / "torch_cuda_calibration_trace.json", "cluster A, 2026-11")
    _settle(qtbot, panel)
    assert _items(combo) == ["catalog", "cluster A, 2026-11"] and combo.currentText() == "cluster A, 2026-11"
    assert "'cluster A, 2026-11' (fit-cluster-a-2026-11)" in panel.in_use.text()
    assert "kernels of torch_cuda_calibration_trace.json at fp16" in panel.in_use.text()
    assert ws.stack.undo_text == "import calibration 'cluster A, 2026-11'"
    t_a = _time(ws)
    assert t_a != t_catalog

    assert chooser.import_file(TRACES / "ncu_calibration_raw.csv", "vendor datasheet fit")
    _settle(qtbot, panel)
    t_b = _time(ws)
    assert combo.currentText() == "vendor datasheet fit" and t_b != t_a

    combo.setCurrentIndex(0)
    combo.activated.emit(0)  # the user picks "catalog"
    _settle(qtbot, panel)
    assert _time(ws) == t_catalog and "the catalog's" in panel.in_use.text()
    assert ws.stack.undo_text == "use the catalog's calibration"

    ws.undo()
    _settle(qtbot, panel)
    assert combo.currentText() == "vendor datasheet fit" and _time(ws) == t_b
    ws.undo()  # the second import
    _settle(qtbot, panel)
    assert _items(combo) == ["catalog", "cluster A, 2026-11"] and _time(ws) == t_a
    ws.redo()
    _settle(qtbot, panel)
    assert combo.currentText() == "vendor datasheet fit" and "vendor datasheet fit" in panel.in_use.text()
    assert chooser.remove_button.isEnabled()
    chooser.remove_button.click()  # the chosen one goes; the catalog's is used again
    _settle(qtbot, panel)
    assert _items(combo) == ["catalog", "cluster A, 2026-11"] and combo.currentText() == "catalog"
    assert _time(ws) == t_catalog and not chooser.remove_button.isEnabled()
    assert ws.stack.undo_text == "remove calibration 'vendor datasheet fit'"
    ws.undo()
    _settle(qtbot, panel)
    assert combo.currentText() == "vendor datasheet fit" and _time(ws) == t_b


def test_import_asks_for_the_file_and_the_name(qtbot, ws, panel, monkeypatch):
    path = str(TRACES / "ncu_calibration_raw.csv")
    monkeypatch.setattr(QFileDialog, "getOpenFileName", staticmethod(lambda *a, **k: (path, "")))
    asked = []
    monkeypatch.setattr(QInputDialog, "getText",
                        staticmethod(lambda *a, **k: (asked.append(k.get("text")) or "lab run", True)))
    assert panel.chooser.import_file()
    assert asked and asked[0].startswith("ncu_calibration_raw, ")
    assert ws.calibrations.used(ws.focused_device).name == "lab run"


def test_a_file_that_cannot_be_fitted_changes_nothing(qtbot, ws, panel, tmp_path, monkeypatch):
    bad = tmp_path / "k.csv"
    bad.write_text("kind,m,n,k,time\ngemm,64,64,64,-3 us\n")
    said, before = [], ws.state
    monkeypatch.setattr(QMessageBox, "warning", staticmethod(lambda *a: said.append(a[2])))
    assert not panel.chooser.import_file(bad, "bad")
    assert said and said[0].startswith("k.csv: ") and "\n" not in said[0]
    assert ws.state is before and ws.stack.undo_text == "select devices" and panel.chooser.combo.count() == 1


def test_the_window_saves_opens_and_recovers_the_calibrations(qtbot, tmp_path, monkeypatch):
    """File > Save and Open keep the named calibrations and the choice; crash recovery restores them as one step."""
    from explorer.ui.main_window import MainWindow

    monkeypatch.setattr(QMessageBox, "question", staticmethod(lambda *a, **k: QMessageBox.StandardButton.Yes))

    h100 = load_device_file(ROOT / "catalog" / "nvidia-h100-sxm5.yaml")

    def window():
        win = MainWindow(Workspace(lookup=lambda ids: [h100] if h100.id in ids else []), None, panels=())
        qtbot.addWidget(win)
        return win

    first = window()
    first.new_from_template("gpt2")
    ws = first.workspace
    ws.select_devices(["nvidia-h100-sxm5"])
    ws.set_assumptions(precision="fp16", time_model="calibrated")
    base = ws.catalog_device("nvidia-h100-sxm5")
    from explorer.core.session.named_calibrations import import_calibration

    cal = import_calibration(TRACES / "torch_cuda_calibration_trace.json", base, "fp16", "lab")
    assert first.controller.save_as(tmp_path / "study.hwproj")
    ws.add_calibration("nvidia-h100-sxm5", cal)
    time_lab = _time(ws)
    assert first.controller.autosave()  # the session then ends without closing: its recovery file stays

    second = window()
    assert second.controller.offer_recovery()
    ws2 = second.workspace
    assert ws2.calibrations.used("nvidia-h100-sxm5") == cal and _time(ws2) == time_lab
    assert ws2.stack.undo_text == "restore unsaved changes"
    ws2.undo()  # the file as saved: no named calibration
    assert ws2.calibrations.of("nvidia-h100-sxm5") == ()
    ws2.redo()
    assert second.controller.save_as(tmp_path / "study.hwproj")

    third = window()
    assert third.open_project(tmp_path / "study.hwproj")
    ws3 = third.workspace
    assert ws3.calibrations == ws2.calibrations and _time(ws3) == time_lab
    assert ws3.devices[0].calibration == cal.calibration and "fit-lab" in ws3.devices[0].sources


def test_in_the_app_an_import_goes_to_the_catalog_and_travels_with_the_device(qtbot, tmp_path, monkeypatch):
    """The app's workspace keeps imported calibrations in the catalog database (undo deletes them there), the
    project names the one in use, and the catalog dock's export and import carry them with the device."""
    from explorer.store import io as store_io
    from explorer.store.engine import open_catalog
    from explorer.ui.app import build_window

    monkeypatch.setenv("HWEXPLORER_DB", f"sqlite:///{tmp_path / 'catalog.sqlite3'}")
    monkeypatch.setattr(QMessageBox, "question", lambda *a, **k: QMessageBox.StandardButton.Discard)
    window = build_window()
    qtbot.addWidget(window)
    ws, repo, dev = window.workspace, window.repository, "nvidia-h100-sxm5"
    ws.select_devices([dev])
    ws.set_assumptions(precision="fp16", time_model="calibrated")
    panel = window.panel(FidelityPanel)  # its tab never shown: built when asked for
    assert panel.chooser.import_file(TRACES / "torch_cuda_calibration_trace.json", "cluster A, 2026-11")
    assert [c.name for c in repo.calibrations(dev)] == ["cluster A, 2026-11"] and ws.calibrations.of(dev) == ()
    assert _items(panel.chooser.combo) == ["catalog", "cluster A, 2026-11"]
    assert "kept in the catalog database" in panel.chooser.combo.itemData(1, Qt.ItemDataRole.ToolTipRole)
    ws.undo()
    assert repo.calibrations(dev) == () and _items(panel.chooser.combo) == ["catalog"]
    ws.redo()
    cal = repo.calibrations(dev)[0]
    assert ws.used_calibration(dev) == cal
    path = tmp_path / "h100.yaml"
    assert window.catalog_dock.export_file(path, (dev,)) == 1
    other = open_catalog(f"sqlite:///{tmp_path / 'other.sqlite3'}", seed=False)
    try:
        assert store_io.import_file(other, path).added == (dev,)
        assert other.calibrations(dev) == (cal,)
    finally:
        other.close()
    # a project naming a calibration this catalog does not hold: the catalog's is used, and the panel says so
    named = ws.calibrations
    repo.delete_calibration(dev, cal.name)
    ws.reset(ws.model, ws.device_ids, ws.assumptions, calibrations=named)
    panel.redraw(ws.analysis)
    assert ws.used_calibration(dev) is None and "the project names 'cluster A, 2026-11', which this catalog does " \
        "not hold" in panel.in_use.text()
    window.workspace.mark_clean()
    repo.engine.dispose()
