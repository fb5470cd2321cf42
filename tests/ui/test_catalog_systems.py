"""The catalog dock's Systems tab through its real widgets: the list and its filters (against the repository's own
query), figures per device and direction with units and sources, the editor refusing a bad unit by field with
nothing written, edits reaching the Systems panel's choices and analysis, and import/export round trips."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
import yaml
from PySide6.QtCore import Qt

from explorer.core.hardware.system_file import system_to_dict
from explorer.core.session.commands import SetSystem
from explorer.core.session.state import SystemChoice
from explorer.core.session.workspace import Workspace
from explorer.core.workload.templates import get_template
from explorer.store.engine import open_catalog
from explorer.store.system_repository import SystemFilter
from explorer.ui.app import device_lookup, system_lookup
from explorer.ui.catalog.dock import CatalogDock
from explorer.ui.catalog.system_detail import system_html
from explorer.ui.catalog.system_editor import SystemEditorDialog
from explorer.ui.catalog.system_table import COLUMN_INDEX, COLUMNS, system_row_matches
from explorer.ui.panels.systems import SystemsPanel

DGX, L40S = "nvidia-dgx-h100", "pcie-server-8x-nvidia-l40s"


@pytest.fixture
def workspace(repository):
    return Workspace(get_template("llama3-70b").build(), lookup=device_lookup(repository),
                     systems=system_lookup(repository))


@pytest.fixture
def dock(qtbot, workspace, repository):
    widget = CatalogDock(workspace, repository)
    qtbot.addWidget(widget)
    widget.resize(1100, 700)
    widget.tabs.setCurrentWidget(widget.systems)
    return widget


class Script:
    """Stands in for the user at the dock's dialogs: each step gets the dialog and returns whether to accept."""

    def __init__(self, dock, *steps, path=""):
        self.steps, self.seen = list(steps), []
        dock.exec_dialog = self.run
        dock.show_error = lambda title, message: self.seen.append(("error", title, message))
        dock.confirm = lambda title, question: self.seen.append(("confirm", title, question)) or True
        dock.choose_file = lambda title, save, **kw: self.seen.append(("file", title, save)) or str(path)

    def run(self, dialog) -> bool:
        assert self.steps, f"unexpected dialog {dialog.windowTitle()}"
        self.seen.append(dialog)
        if not self.steps.pop(0)(dialog):
            return False
        assert isinstance(dialog, SystemEditorDialog)
        dialog.accept()
        return dialog.result() == dialog.DialogCode.Accepted

    def errors(self) -> list[tuple]:
        return [s for s in self.seen if isinstance(s, tuple) and s[0] == "error"]


def cell(dock, system_id: str, key: str) -> str:
    model = dock.systems.model
    return model.index(model.row_of(system_id), COLUMN_INDEX[key]).data()


# ------------------------------------------------------------------------------------------------ the list
def test_the_systems_tab_lists_every_catalog_system_with_units_in_the_headers(dock, repository):
    browser = dock.systems
    assert dock.tabs.tabText(1) == "Systems"
    assert sorted(browser.shown_ids()) == sorted(repository.system_ids()) and len(browser.shown_ids()) == 11
    headers = [browser.model.headerData(i, Qt.Orientation.Horizontal) for i in range(len(COLUMNS))]
    assert headers[4:9] == ["Devices [count]", "Per node [devices]", "Scale-up [GB/s]", "Scale-out [GB/s]",
                            "Host link [GB/s]"]
    tip = browser.model.headerData(COLUMN_INDEX["scale_up_bandwidth"], Qt.Orientation.Horizontal,
                                   Qt.ItemDataRole.ToolTipRole)
    assert "per direction" in tip and "bidirectional figure is halved" in tip
    # DGX H100: NVLink "900 GB/s" bidirectional -> 450 per direction; ConnectX-7 400 Gbit/s -> 50 GB/s; PCIe Gen5
    # x16 "128 GB/s" bidirectional -> 64 (catalog/systems/nvidia-dgx-h100.yaml)
    assert [cell(dock, DGX, k) for k in ("scale_up_bandwidth", "scale_out_bandwidth", "host_bandwidth")] == [
        "450", "50", "64"]
    assert cell(dock, L40S, "scale_out_bandwidth") == "\u2014"  # the file states no scale-out network
    assert cell(dock, "nvidia-gb200-nvl72", "devices") == "72" and cell(dock, "nvidia-gb200-nvl72", "kind") == "rack"


def test_the_filter_box_and_filters_narrow_the_list_as_the_repository_does(dock, repository, qtbot):
    browser, bar = dock.systems, dock.systems.filter_bar
    qtbot.keyClicks(bar.search, "h100")
    assert browser.shown_ids() == (DGX,)
    assert bar.count_label.text() == "1 of 11"
    bar.search.clear()
    bar.vendor.setCurrentIndex(bar.vendor.findData("Google"))
    assert sorted(browser.shown_ids()) == ["google-tpu-v5e-256-pod", "google-tpu-v5p-128-slice"]
    bar.vendor.setCurrentIndex(0)
    bar.kind.setCurrentIndex(bar.kind.findData("rack"))
    assert browser.shown_ids() == ("nvidia-gb200-nvl72",)
    bar.kind.setCurrentIndex(0)
    bar.device.setCurrentIndex(bar.device.findData("nvidia-b200"))
    assert sorted(browser.shown_ids()) == ["nvidia-dgx-b200", "nvidia-gb200-nvl72"]
    rows = repository.system_rows()
    for f in (SystemFilter(text="PCIe"), SystemFilter(text="nvidia", kinds=("node",)), SystemFilter(vendors=("amd",)),
              SystemFilter(device="nvidia-l4"), SystemFilter(origin="user"), SystemFilter(text="zzz")):
        assert [r.id for r in rows if system_row_matches(r, f)] == [r.id for r in repository.system_rows(f)]


def test_the_detail_pane_shows_each_figure_as_written_per_direction_with_its_source(dock, repository):
    dock.systems.select_system(DGX)
    html = dock.systems.detail.toHtml()
    text = dock.systems.detail.toPlainText()
    assert "900 GB/s" in text and "bidirectional (both directions together)" in text
    assert "450 GB/s per device, per direction" in text  # the NVLink figure halved
    assert "50 GB/s per device, per direction" in text  # 400 Gbit/s, stated per direction
    assert "600 ns" in text and "2 TB" in text  # NVLink latency 0.6 us; host memory per node
    assert "developer.nvidia.com/blog/introducing-nvidia-hgx-h100" in html
    l40s = system_html(repository.get_system(L40S))
    assert "Host memory per node</td><td>\u2014</td><td>\u2014</td>" in l40s  # unknown stays a dash
    assert not dock.systems.buttons["Delete"].isEnabled()  # shipped


# ------------------------------------------------------------------------------------------------ editing
def test_the_editor_refuses_a_bandwidth_in_the_wrong_unit_naming_the_field_and_nothing_changes(dock, repository):
    before = repository.system_record(DGX)
    shown = []

    def wrong_unit(dialog):
        dialog.domains_editor.rows[0].bandwidth.setText("900 GB")
        shown.append((dialog.ok_button.isEnabled(), dialog.problems_label.text()))
        dialog.accept()  # OK pressed anyway (Enter): the dialog stays open
        shown.append(dialog.result())
        return False  # then the user cancels

    script = Script(dock, wrong_unit)
    assert dock.systems.edit_system(DGX) is None and not script.steps
    assert shown[0] == (False, ("domains[0].bandwidth: '900 GB' is a byte count, not a bandwidth (expected "
                                "units like '3.35 TB/s')"))
    assert shown[1] != SystemEditorDialog.DialogCode.Accepted
    after = repository.system_record(DGX)
    assert after.version == before.version and after.system == before.system and after.overrides == ()


def test_the_editor_names_a_missing_level_from_the_system_files_own_checks(qtbot, repository):
    dialog = SystemEditorDialog(repository.get_system(DGX), devices=repository.ids(), lock_id=True)
    qtbot.addWidget(dialog)
    dialog.domains_editor.remove_row(dialog.domains_editor.rows[1])
    dialog.devices_edit.setText("16")
    assert not dialog.ok_button.isEnabled()
    assert "domains[0].size: the outermost domain holds 8 of the 16 devices; a level is missing" in \
        dialog.invalid_fields()


def test_a_refused_save_writes_nothing_and_keeps_the_edit(dock, repository, workspace):
    def copy(dialog):
        dialog.id_edit.setText("my-dgx")
        dialog.name_edit.setText("My DGX")
        repository.add_system(replace(repository.get_system(DGX), id="my-dgx", name="Theirs"))  # someone else
        return True

    seen_again = []

    def again(dialog):
        seen_again.append((dialog.id_edit.text(), dialog.name_edit.text()))
        return False

    script = Script(dock, copy, again)
    assert dock.systems.duplicate_system(DGX) is None
    assert seen_again == [("my-dgx", "My DGX")]  # the editor came back with the user's edit
    assert script.errors()[0][1] == "System id taken"
    assert repository.get_system("my-dgx").name == "Theirs"  # theirs, untouched


def test_an_edit_shows_up_in_the_systems_panel_and_re_analyzes_a_chosen_system(qtbot, dock, repository, workspace):
    panel = SystemsPanel(workspace)
    qtbot.addWidget(panel)
    combo = panel.controls.add_combo
    assert combo.findData("my-dgx") < 0

    def rename_and_slow(dialog):
        dialog.id_edit.setText("my-dgx")
        dialog.name_edit.setText("Lab DGX (ours)")
        dialog.domains_editor.rows[0].bandwidth.setText("450 GB/s")
        return True

    Script(dock, rename_and_slow)
    added = dock.systems.duplicate_system(DGX)
    assert added is not None and repository.get_system("my-dgx").name == "Lab DGX (ours)"
    assert combo.itemText(combo.findData("my-dgx")) == "Lab DGX"  # offered by its short name, at once
    workspace.execute(SetSystem(SystemChoice(system_ids=("my-dgx",))))
    assert workspace.results.systems[0].system.bandwidth(workspace.results.systems[0].system.domains[0]) == 225e9

    def faster(dialog):
        dialog.domains_editor.rows[0].bandwidth.setText("1.8 TB/s")
        dialog.name_edit.setText("Lab DGX v2")
        return True

    Script(dock, faster)
    assert dock.systems.edit_system("my-dgx") is not None
    result = workspace.results.systems[0]
    assert result.system.name == "Lab DGX v2" and result.system.bandwidth(result.system.domains[0]) == 900e9
    assert panel.controls.chips[0].text().startswith("Lab DGX")
    assert dock.systems.delete_system("my-dgx")  # deleting it drops it from the choice, undoably
    assert workspace.state.system.system_ids == () and combo.findData("my-dgx") < 0


# ------------------------------------------------------------------------------------------ import / export
@pytest.mark.parametrize("suffix", [".yaml", ".json"])
def test_export_the_shown_systems_and_import_them_into_another_catalog(dock, repository, tmp_path, suffix, qtbot):
    path = tmp_path / f"systems{suffix}"
    dock.systems.filter_bar.search.setText("dgx")
    script = Script(dock, path=path)
    dock.systems.menu_button.menu().actions()[1].trigger()  # the tab's File menu: Export the systems shown
    assert script.seen[0] == ("file", "Export the 3 systems shown", True)
    text = path.read_text(encoding="utf-8")
    data = json.loads(text) if suffix == ".json" else yaml.safe_load(text)
    assert data["count"] == 3 and [s["id"] for s in data["systems"]] == ["nvidia-dgx-b200", DGX, "nvidia-dgx-h200"]
    other = open_catalog("sqlite://")
    try:
        ws = Workspace(lookup=device_lookup(other), systems=system_lookup(other))
        target = CatalogDock(ws, other)
        qtbot.addWidget(target)
        asked = Script(target, path=path)
        assert sorted(target.systems.import_systems()) == ["nvidia-dgx-b200", DGX, "nvidia-dgx-h200"]
        assert asked.seen[1][0:2] == ("confirm", "Replace systems?")  # the ids were there: asked first
        assert other.get_system(DGX) == replace(repository.get_system(DGX), origin="shipped")
    finally:
        other.engine.dispose()


def test_a_user_system_round_trips_through_a_file(dock, repository, tmp_path, qtbot):
    mine = replace(repository.get_system(L40S), id="lab-l40s", name="Lab L40S box", origin="user")
    repository.add_system(mine)
    dock.systems.refresh()
    path = tmp_path / "lab.yaml"
    Script(dock, path=path)
    assert dock.systems.export_file(path, ("lab-l40s",)) == 1
    other = open_catalog("sqlite://")
    try:
        target = CatalogDock(Workspace(lookup=device_lookup(other), systems=system_lookup(other)), other)
        qtbot.addWidget(target)
        Script(target, path=path)
        assert target.import_file(path) == ("lab-l40s",)  # File > Import Catalog takes system files too
        assert target.tabs.currentWidget() is target.systems and target.systems.current_id() == "lab-l40s"
        assert other.get_system("lab-l40s") == mine
    finally:
        other.engine.dispose()


def test_an_import_with_a_bandwidth_in_the_wrong_unit_names_the_field_and_writes_nothing(dock, repository, tmp_path):
    data = system_to_dict(replace(repository.get_system(L40S), id="bad-box"))
    data["domains"][0]["bandwidth"] = "64 GB"
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    script = Script(dock, path=path)
    assert dock.systems.import_systems() == ()
    (_, title, message), = script.errors()
    assert title == "Import failed" and "Nothing was imported." in message
    assert "domains[0].bandwidth" in message and "'64 GB' is a byte count" in message
    assert "bad-box" not in repository.system_ids()


def test_in_the_main_window_a_system_added_in_the_dock_is_offered_by_the_systems_panel(qtbot, repository,
                                                                                       monkeypatch):
    from PySide6.QtWidgets import QMessageBox

    from explorer.ui.main_window import MainWindow

    monkeypatch.setattr(QMessageBox, "question", lambda *a, **k: QMessageBox.StandardButton.Discard)
    window = MainWindow(Workspace(lookup=device_lookup(repository), systems=system_lookup(repository)), repository)
    qtbot.addWidget(window)
    panel = window.panel(SystemsPanel)  # its tab never shown: built when asked for
    combo = panel.controls.add_combo
    offered = {combo.itemData(i) for i in range(1, combo.count())}
    assert offered == set(repository.system_ids())  # the catalog database's systems

    def copy(dialog):
        dialog.id_edit.setText("rack-of-l4")
        dialog.name_edit.setText("Our L4 rack (4 GPUs)")
        return True

    Script(window.catalog_dock, copy)
    assert window.catalog_dock.systems.duplicate_system("pcie-server-4x-nvidia-l4") is not None
    assert combo.itemText(combo.findData("rack-of-l4")) == "Our L4 rack"


def test_a_conflicting_save_shows_both_values_and_keeps_the_edit(qtbot, dock, repository):
    from explorer.ui.catalog.conflict import ConflictChoice, ConflictDialog

    def edit_while_someone_saves(dialog):
        dialog.vendor_edit.setText("NVIDIA (ours)")
        record = repository.system_record(L40S)  # someone else saves first
        repository.update_system(replace(record.system, vendor="Theirs Inc."), record.version)
        return True

    rows = []

    def resolve(error):
        conflict = ConflictDialog(error, dock)
        qtbot.addWidget(conflict)
        rows.extend(conflict.rows())
        return ConflictChoice.SAVE_MINE

    Script(dock, edit_while_someone_saves)
    dock.resolve_conflict = resolve
    saved = dock.systems.edit_system(L40S)
    assert saved is not None and rows == [("vendor", "NVIDIA (ours)", "Theirs Inc.")]
    record = repository.system_record(L40S)
    assert record.system.vendor == "NVIDIA (ours)" and record.version == 3 and record.overrides == ("vendor",)


def test_clicking_a_system_row_with_the_mouse_shows_it_in_the_detail_pane(dock, qtbot):
    """Issue 24's catalog bullet, for the Systems tab: a real click on a row (not select_system) moves the detail
    pane to that system, and a click on another row moves it again."""
    from PySide6.QtCore import Qt

    dock.show()
    qtbot.waitExposed(dock)
    browser = dock.systems
    for system_id, needle in ((L40S, "L40S"), (DGX, "DGX H100")):
        source = browser.model.index(browser.model.row_of(system_id), COLUMN_INDEX["name"])
        index = browser.proxy.mapFromSource(source)
        browser.table.scrollTo(index)
        rect = browser.table.visualRect(index)
        qtbot.mouseClick(browser.table.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
        qtbot.waitUntil(lambda n=needle: n in browser.detail.toPlainText(), timeout=2000)
        other = "DGX H100" if needle == "L40S" else "L40S"
        assert other not in browser.detail.toPlainText().splitlines()[0]
