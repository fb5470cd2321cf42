"""The Systems panel's link calibrations (issue 21): import a published nccl-tests table for a chosen system's
level, see the fit (measured and fitted bus bandwidth against the stated figure), choose, remove, undo; the Systems
panel's times follow under the calibrated model."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PySide6.QtWidgets import QMessageBox

from explorer.core.hardware.catalog_files import load_shipped_devices, load_shipped_systems
from explorer.core.parallel.layout import Layout
from explorer.core.session.state import SystemChoice
from explorer.core.session.workspace import Assumptions, Workspace
from explorer.core.workload.templates import get_template
from explorer.ui.panels.link_calibration import STATED, LinkCalibrationDialog
from explorer.ui.panels.systems import SystemsPanel

ROOT = Path(__file__).resolve().parents[2]
NCCL = ROOT / "tests" / "fixtures" / "nccl" / "mi300x-8gpu-all_reduce_perf.txt"
SYSTEM = "amd-instinct-mi300x-platform"


@pytest.fixture(scope="module")
def catalog():
    return {d.id: d for d in load_shipped_devices()}, {s.id: s for s in load_shipped_systems()}


@pytest.fixture
def ws(catalog):
    devices, systems = catalog
    w = Workspace(lookup=lambda ids: [devices[i] for i in ids if i in devices],
                  systems=lambda ids: tuple(systems.values()) if ids is None else
                  tuple(systems[i] for i in ids if i in systems))
    w.reset(get_template("llama2-70b").build(), (), Assumptions(precision="fp16", batch=8, seq_len=4096,
                                                                 phase="decode", time_model="calibrated"),
            system=SystemChoice(system_ids=(SYSTEM,), layout=Layout(tp=8)))
    return w


@pytest.fixture
def dialog(qtbot, ws):
    d = LinkCalibrationDialog(ws)
    qtbot.addWidget(d)
    return d


def _comm(ws) -> float:
    r = ws.results.systems[0]
    return float(np.asarray(r.analysis.comm_time)[r.chosen].sum())


def _items(combo):
    return [combo.itemText(i) for i in range(combo.count())]


def test_import_shows_the_fit_and_switches_the_systems_times(dialog, ws):
    stated = _comm(ws)
    assert _items(dialog.system_combo) == ["AMD Instinct MI300X Platform"] and _items(dialog.level_combo) == \
        ["scale-up"]
    assert _items(dialog.fit_combo) == [STATED] and not dialog.remove_button.isEnabled()
    assert dialog.stated.value() == pytest.approx(448.0)  # the platform file's GB/s per direction
    assert dialog.size_combo.currentData() == 2**20  # 1 MiB and up, the fit docs/calibration.md reports
    assert dialog.import_file(NCCL, "MI300X run")
    assert _items(dialog.fit_combo) == [STATED, "MI300X run"] and dialog.fit_combo.currentText() == "MI300X run"
    assert ws.stack.undo_text == "import link calibration 'MI300X run'"
    x, y = dialog.measured.getData()
    assert len(x) == 14 and 10 ** x.min() == pytest.approx(2**20)  # 1 MiB to 8 GiB, fitted (log x)
    assert len(dialog.left_out.getData()[0]) == 17  # 8 B to 512 KiB, drawn hollow
    assert 200 < y.max() < 448  # measured bus bandwidth, GB/s
    fy = dialog.fitted.getData()[1]
    assert fy.max() == pytest.approx(297.8, rel=2e-3)  # the fit approaches its per-direction bandwidth
    assert "297.789 GB/s per direction" in dialog.note.text() and "66 % of the stated 448.0 GB/s" in dialog.note.text()
    fitted = _comm(ws)
    assert fitted > stated
    dialog.fit_combo.activated.emit(0)  # the stated figures
    assert _comm(ws) == stated and ws.stack.undo_text == "use the system's link figures"
    assert not dialog.remove_button.isEnabled() and dialog.note.text().startswith("No fit in use")
    ws.undo()
    assert dialog.fit_combo.currentText() == "MI300X run" and _comm(ws) == fitted
    dialog.remove_chosen()
    assert _items(dialog.fit_combo) == [STATED] and _comm(ws) == stated
    ws.undo()
    ws.undo()
    ws.undo()  # the import
    assert _items(dialog.fit_combo) == [STATED] and ws.calibrations.links.of(SYSTEM) == ()


def test_a_file_that_cannot_be_fitted_changes_nothing(dialog, ws, tmp_path, monkeypatch):
    shown = []
    monkeypatch.setattr(QMessageBox, "warning", lambda *a: shown.append(a[2]))
    bad = tmp_path / "bad.txt"
    bad.write_text("not an nccl-tests table\n")
    assert not dialog.import_file(bad, "bad")
    assert len(shown) == 1 and shown[0].startswith("bad.txt: ") and "\n" not in shown[0]
    assert ws.stack.undo_text is None or "link" not in ws.stack.undo_text


def test_the_systems_panel_opens_it(qtbot, ws):
    panel = SystemsPanel(ws)
    qtbot.addWidget(panel)
    assert panel.links_button.text() == "Links\u2026"
    panel.links_button.click()
    assert panel.links_dialog is not None and panel.links_dialog.isVisible()
    assert panel.links_dialog.system_id == SYSTEM
    panel.links_dialog.close()



def test_save_to_catalog_stores_the_chosen_fit_in_the_catalogs_system(qtbot, tmp_path):
    """The window's Save to catalog: the chosen fit goes into the catalog database's system as
    ``calibrate link --save --name`` stores it (tests/core/test_link_save_catalog.py: byte for byte); undoable."""
    from explorer.store.engine import open_catalog
    from tests.core.test_link_save_catalog import stored, workspace

    repo = open_catalog(f"sqlite:///{tmp_path / 'c.sqlite3'}")
    try:
        ws = workspace(repo)
        d = LinkCalibrationDialog(ws)
        qtbot.addWidget(d)
        shipped = stored(repo)
        assert not d.save_button.isEnabled()  # no fit in use: nothing to save
        assert d.import_file(NCCL, "MI300X run") and d.save_button.isEnabled()
        d.save_button.click()
        assert ws.stack.undo_text == "save link calibration 'MI300X run' to the catalog"
        domain = repo.system_record(SYSTEM).system.scale_up
        assert (domain.calibration.alpha.text, domain.calibration.bandwidth.text) == ("1.83626 us", "297.789 GB/s")
        assert domain.calibration.alpha.source == "fit-mi300x-run"
        ws.undo()
        assert stored(repo) == shipped
    finally:
        repo.close()


def test_save_to_catalog_is_off_without_a_catalog_database(dialog, ws, monkeypatch):
    assert dialog.import_file(NCCL, "MI300X run")
    assert not dialog.save_button.isEnabled()  # the workspace keeps no catalog database: nowhere to save
    warned = []
    monkeypatch.setattr(QMessageBox, "warning", lambda *a: warned.append(a[2]))
    assert not dialog.save_chosen()  # said in one message, nothing changes
    assert warned == ["link calibration: no catalog database to save the fit in"]
    assert ws.stack.undo_text == "import link calibration 'MI300X run'"
