"""The catalog editor: unit-checked fields (QuantityEdit), the device dialog, saving and conflicts."""

from __future__ import annotations

import math
import os
import uuid
from dataclasses import replace

import pytest
from PySide6.QtCore import Qt
from sqlalchemy import create_engine, text

from explorer.core.hardware.catalog_files import shipped_catalog_dir
from explorer.core.hardware.device import Cited
from explorer.core.hardware.device_file import device_to_dict, load_device_file
from explorer.core.session.workspace import Workspace
from explorer.store.engine import open_catalog, parse_url
from explorer.store.errors import ConflictError
from explorer.ui.catalog.conflict import ConflictChoice, ConflictDialog
from explorer.ui.catalog.dock import CatalogDock
from explorer.ui.catalog.editor import DeviceEditorDialog
from explorer.ui.widgets.quantity_edit import COUNT, QuantityEdit

H100 = shipped_catalog_dir() / "nvidia-h100-sxm5.yaml"


@pytest.fixture
def h100():
    return load_device_file(H100)


def quantity(qtbot, kind="bandwidth", field="memory[0].bandwidth", **kw) -> QuantityEdit:
    edit = QuantityEdit(kind, field, **kw)
    qtbot.addWidget(edit)
    return edit


# ---------------------------------------------------------------------------------------- QuantityEdit
def test_terabytes_and_gigabytes_per_second_give_the_same_si_value(qtbot):
    edit = quantity(qtbot)
    qtbot.keyClicks(edit.line_edit, "3.35 TB/s")
    tb = edit.value()
    edit.setText("3350 GB/s")
    gb = edit.value()
    assert tb == pytest.approx(3.35e12, rel=1e-12)
    assert gb == pytest.approx(3.35e12, rel=1e-12)
    assert edit.is_valid() and edit.error() == ""
    assert edit.si_unit() == "byte/s"


def test_binary_and_decimal_bytes_stay_distinct(qtbot):
    edit = quantity(qtbot, "bytes", "memory[0].capacity")
    edit.setText("80 GB")
    assert edit.value() == 80e9
    edit.setText("80 GiB")
    assert edit.value() == 80 * 2**30
    edit.setText("80 KB")
    assert edit.value() is None
    assert "ambiguous" in edit.error()


def test_wrong_dimension_is_rejected_inline_with_the_reason(qtbot):
    edit = quantity(qtbot)
    edit.show()
    with qtbot.waitSignal(edit.validity_changed) as blocker:
        edit.setText("3.35 kg")
    assert blocker.args == [False]
    assert edit.value() is None
    assert not edit.is_valid()
    assert "[mass]" in edit.error() and "not a bandwidth" in edit.error()
    assert edit.error_label.isVisible()
    assert edit.error_label.text() == edit.error()
    assert edit.line_edit.toolTip().startswith("memory[0].bandwidth:")
    with qtbot.waitSignal(edit.validity_changed) as blocker:
        edit.setText("3.35 TB/s")
    assert blocker.args == [True]
    assert not edit.error_label.isVisible()


def test_missing_unit_and_implausible_magnitude_are_rejected(qtbot):
    edit = quantity(qtbot, "power", "tdp")
    edit.setText("400")
    assert edit.value() is None and "no unit" in edit.error()
    edit.setText("400 GW")  # 4e11 W is beyond the device-file range (1e6 W)
    assert edit.value() is None and "plausible range" in edit.error()
    edit.setText("400 W")
    assert edit.value() == 400.0


def test_empty_means_unknown_unless_required(qtbot):
    optional = quantity(qtbot, "power", "tdp")
    assert optional.value() is None and optional.is_valid() and optional.is_empty()
    required = quantity(qtbot, "power", "tdp", required=True)
    assert not required.is_valid() and required.error() == "is required"


def test_counts_are_positive_whole_numbers(qtbot):
    edit = quantity(qtbot, COUNT, "matrix_engine.units")
    edit.setText("528")
    assert edit.value() == 528.0
    edit.setText("2.5")
    assert edit.value() is None and "whole number" in edit.error()
    edit.setText("-3")
    assert not edit.is_valid()


def test_vendor_spellings_are_read(qtbot):
    edit = quantity(qtbot, "throughput", "peak.int8")
    edit.setText("624 TOPS")
    assert edit.value() == pytest.approx(624e12)
    edit.setText("1.2 GMAC/s")
    assert edit.value() == pytest.approx(2.4e9)  # 1 MAC = 2 FLOP


@pytest.mark.parametrize("partial", ["3.35 TB/", "3.35 TB/s)", "(3", "3 *", "+"])
def test_half_typed_text_is_an_inline_error_not_an_exception(qtbot, partial):
    edit = quantity(qtbot)
    edit.setText(partial)
    assert edit.value() is None and not edit.is_valid()
    assert edit.error().startswith(f"cannot read '{partial}'")


def test_unknown_kind_is_a_programming_error(qtbot):
    with pytest.raises(ValueError, match="unknown quantity kind"):
        QuantityEdit("mass", "tdp")


# ------------------------------------------------------------------------------------ DeviceEditorDialog
def editor(qtbot, device=None, **kw) -> DeviceEditorDialog:
    dialog = DeviceEditorDialog(device, **kw)
    qtbot.addWidget(dialog)
    return dialog


def fill_minimal(dialog: DeviceEditorDialog) -> None:
    dialog.id_edit.setText("my-npu")
    dialog.name_edit.setText("My NPU")
    dialog.vendor_edit.setText("Acme")
    dialog.kind_combo.setCurrentIndex(dialog.kind_combo.findData("npu"))
    dialog.tier_combo.setCurrentIndex(dialog.tier_combo.findData("edge"))
    dialog.quantity_edits["peak.int8"].setText("26 TOPS")
    dialog.quantity_edits["peak.fp16"].setText("13 TFLOP/s")
    dialog.quantity_edits["tdp"].setText("2.5 W")
    dialog.quantity_edits["price"].setText("$199")
    row = dialog.memory_editor.add_row({})
    row.name.setText("LPDDR4X")
    row.edits["capacity"].setText("8 GB")
    row.edits["bandwidth"].setText("3350 GB/s")
    onchip = dialog.memory_editor.add_row({"role": "onchip"})
    onchip.name.setText("SRAM")
    onchip.edits["capacity"].setText("4 MiB")


def test_ok_is_disabled_while_any_field_is_invalid(qtbot):
    dialog = editor(qtbot)
    assert not dialog.ok_button.isEnabled()  # id, name and vendor are required
    fill_minimal(dialog)
    assert dialog.ok_button.isEnabled(), dialog.invalid_fields()
    dialog.quantity_edits["tdp"].setText("3.35 kg")
    assert not dialog.ok_button.isEnabled()
    problems = dialog.invalid_fields()
    assert any(p.startswith("tdp: '3.35 kg' is a quantity of dimension [mass]") for p in problems)
    assert "tdp: '3.35 kg'" in dialog.problems_label.text()
    dialog.quantity_edits["tdp"].setText("2.5 W")
    dialog.memory_editor.rows[0].edits["bandwidth"].setText("3.35 kg")
    assert not dialog.ok_button.isEnabled()
    assert any(p.startswith("memory[0].bandwidth:") for p in dialog.invalid_fields())
    row_errors = dialog.memory_editor.rows[0].errors
    assert not row_errors.isHidden() and row_errors.text().startswith("bandwidth: '3.35 kg' is a quantity of")
    dialog.memory_editor.rows[0].edits["bandwidth"].setText("3.35 TB/s")
    assert dialog.ok_button.isEnabled()


def test_id_must_be_well_formed_and_free(qtbot):
    dialog = editor(qtbot, taken_ids={"nvidia-h100-sxm5"})
    fill_minimal(dialog)
    dialog.id_edit.setText("My NPU")
    assert not dialog.ok_button.isEnabled() and "lowercase" in dialog.id_error.text()
    dialog.id_edit.setText("nvidia-h100-sxm5")
    assert not dialog.ok_button.isEnabled() and "already in the catalog" in dialog.id_error.text()


def test_accept_builds_the_device_with_si_values(qtbot):
    dialog = editor(qtbot)
    fill_minimal(dialog)
    dialog.accept()
    device = dialog.device()
    assert device is not None and device.id == "my-npu" and device.origin == "user"
    assert device.kind == "npu" and device.tier == "edge"
    assert device.peak_flops("int8") == pytest.approx(26e12)
    assert device.peak_flops("fp16") == pytest.approx(13e12)
    assert device.bandwidth == pytest.approx(3.35e12)
    assert device.memory_capacity == 8e9
    assert device.memory[1].capacity.value == 4 * 2**20
    assert device.tdp.value == 2.5 and device.price.value == 199.0
    assert math.isnan(device.peak_flops("fp32"))  # left empty = unknown, never guessed
    assert device.ridge("int8") == pytest.approx(26e12 / 3.35e12)


def test_cross_field_problems_from_the_shared_validation_keep_the_dialog_open(qtbot):
    dialog = editor(qtbot)
    fill_minimal(dialog)
    dialog.engine_combo.setCurrentIndex(dialog.engine_combo.findData("systolic"))  # no rows / cols
    dialog.accept()
    assert dialog.device() is None
    assert "a systolic array needs rows and cols" in dialog.problems_label.text()
    dialog.quantity_edits["matrix_engine.rows"].setText("128")
    dialog.quantity_edits["matrix_engine.cols"].setText("128")
    dialog.accept()
    assert dialog.device().matrix_engine.rows.value == 128


def test_duplicated_device_keeps_unedited_fields_and_their_sources(qtbot, h100):
    dialog = editor(qtbot, h100, taken_ids={h100.id})
    assert dialog.quantity_edits["peak.fp16"].text() == "989.5 TFLOP/s"
    assert dialog.memory_editor.rows[0].edits["bandwidth"].text() == "3.35 TB/s"
    dialog.id_edit.setText("h100-derated")
    unchanged = dialog.build_device()
    expected = device_to_dict(h100)
    expected["id"] = "h100-derated"
    assert device_to_dict(unchanged) == expected  # nothing lost: sources, links, notes, conflicts, tiles
    dialog.quantity_edits["tdp"].setText("500 W")
    dialog.memory_editor.rows[0].edits["bandwidth"].setText("3000 GB/s")
    edited = dialog.build_device()
    assert edited.tdp.value == 500.0 and edited.tdp.source is None  # the user's figure cites nothing
    assert edited.bandwidth == 3e12 and edited.memory[0].bandwidth.source is None
    assert edited.memory[0].capacity.source == "ds"  # unchanged figures keep their source
    assert edited.memory[2].instances == 132
    assert edited.peak["fp16"].source == "ds" and edited.host_link == h100.host_link


# ------------------------------------------------------------------------- through the dock and repository

@pytest.fixture
def workspace(repository):
    return Workspace(lookup=lambda ids: repository.devices(ids))


@pytest.fixture
def dock(qtbot, workspace, repository):
    widget = CatalogDock(workspace, repository)
    qtbot.addWidget(widget)
    return widget


class Script:
    """Stands in for the user at modal dialogs: each step gets the dialog and returns whether to accept."""

    def __init__(self, dock, *steps):
        self.steps = list(steps)
        self.seen = []
        dock.exec_dialog = self.run
        dock.show_error = lambda title, message: self.seen.append(("error", title, message))
        dock.confirm = lambda title, question: self.seen.append(("confirm", title, question)) or True

    def run(self, dialog) -> bool:
        assert self.steps, f"unexpected dialog {type(dialog).__name__}: {dialog.windowTitle()}"
        self.seen.append(dialog)
        accepted = self.steps.pop(0)(dialog)
        if accepted and isinstance(dialog, DeviceEditorDialog):
            assert dialog.ok_button.isEnabled(), dialog.invalid_fields()
            dialog.accept()
            return dialog.result() == dialog.DialogCode.Accepted
        return accepted


def test_add_device_round_trip_into_the_repository(dock, repository, workspace):
    def fill(dialog):
        assert dialog.windowTitle() == "Add custom device"
        fill_minimal(dialog)
        return True

    script = Script(dock, fill)
    added = dock.add_device()
    assert not script.steps and added is not None
    stored = repository.record("my-npu")
    assert stored.version == 1 and stored.origin == "user"
    assert stored.device == added  # exactly what the dialog produced, read back from the database
    assert stored.device.memory[0].bandwidth.text == "3350 GB/s"
    assert stored.device.bandwidth == pytest.approx(3.35e12)
    assert dock.current_id() == "my-npu"  # the new row is shown and current
    model = dock.model
    row = model.index(model.row_of("my-npu"), 0)
    assert model.index(row.row(), 6).data() == "3,350"  # Bandwidth [GB/s]
    assert model.index(row.row(), 5).data() == "13"  # Peak FP16 [TFLOP/s]
    assert model.index(row.row(), 12).data() == "user"
    assert dock.buttons["Delete"].isEnabled()
    assert "Acme" in [dock.filter_bar.vendor.itemText(i) for i in range(dock.filter_bar.vendor.count())]
    # compare it, then delete it: the selection drops it through an undoable command
    model.setData(row, 2, Qt.ItemDataRole.CheckStateRole)
    assert workspace.device_ids == ("my-npu",)
    assert dock.delete_device("my-npu")
    assert script.seen[-1][0] == "confirm"
    assert "my-npu" not in repository.ids() and model.row_of("my-npu") == -1
    assert workspace.device_ids == ()
    workspace.undo()
    assert workspace.device_ids == ("my-npu",)  # the stored Device is still known to the workspace


def test_cancelled_editor_adds_nothing(dock, repository):
    Script(dock, lambda dialog: False)
    count = repository.count()
    assert dock.add_device() is None
    assert repository.count() == count


def test_shipped_devices_cannot_be_deleted(dock, repository):
    script = Script(dock)
    assert not dock.delete_device("nvidia-h100-sxm5")
    assert script.seen[0][0] == "error" and "shipped device" in script.seen[0][2]
    assert "nvidia-h100-sxm5" in repository.ids()


def test_duplicate_then_edit_the_copy(dock, repository, workspace):
    def rename(dialog):
        assert dialog.id_edit.text() == "nvidia-h100-sxm5-copy"
        assert dialog.name_edit.text() == "NVIDIA H100 SXM5 80GB (copy)"
        dialog.quantity_edits["tdp"].setText("500 W")
        return True

    Script(dock, rename)
    copy = dock.duplicate_device("nvidia-h100-sxm5")
    assert repository.get("nvidia-h100-sxm5-copy").tdp.value == 500.0
    assert repository.get("nvidia-h100-sxm5").tdp.value == 700.0
    assert copy.memory[0].bandwidth.source == "ds"  # unchanged figures keep their citation
    workspace.select_devices(["nvidia-h100-sxm5-copy"])
    assert workspace.devices[0].tdp.value == 500.0

    def derate(dialog):
        assert dialog.id_edit.isReadOnly()
        dialog.memory_editor.rows[0].edits["bandwidth"].setText("2 TB/s")
        return True

    Script(dock, derate)
    saved = dock.edit_device("nvidia-h100-sxm5-copy")
    assert repository.record(saved.id).version == 2
    assert workspace.devices[0].bandwidth == 2e12  # put_devices: the compared device was re-analyzed
    assert workspace.analysis.devices.bandwidth[0] == 2e12


def test_conflict_shows_both_values_and_keeps_the_edit(dock, repository, workspace):
    device_id = "nvidia-h100-sxm5"
    workspace.select_devices([device_id])
    original = repository.record(device_id)

    def my_edit(dialog):
        dialog.quantity_edits["tdp"].setText("650 W")
        # meanwhile a colleague saves the same device in the shared catalog
        repository.update(replace(original.device, tdp=Cited(600.0, "600 W")), original.version)
        return True

    shown = {}

    def conflict(dialog):
        assert isinstance(dialog, ConflictDialog)
        shown["rows"] = dialog.rows()
        dialog.choose(ConflictChoice.EDIT_AGAIN)
        return True

    def again(dialog):
        assert dialog.quantity_edits["tdp"].text() == "650 W"  # my edit, not theirs
        dialog.quantity_edits["peak.fp16"].setText("990 TFLOP/s")
        return True

    script = Script(dock, my_edit, conflict, again)
    saved = dock.edit_device(device_id)
    assert not script.steps
    assert ("tdp", "650 W", "600 W") in shown["rows"]  # mine vs theirs, per field
    stored = repository.record(device_id)
    assert stored.version == original.version + 2  # theirs, then my retry against their version
    assert stored.device.tdp.value == 650.0 and stored.device.peak["fp16"].value == 990e12
    assert saved.tdp.value == 650.0
    assert workspace.devices[0].tdp.value == 650.0


def test_conflict_save_mine_or_discard(dock, repository):
    device_id = "nvidia-l4"

    def edit_with_race(tdp_text, theirs):
        def step(dialog):
            dialog.quantity_edits["tdp"].setText(tdp_text)
            record = repository.record(device_id)
            repository.update(replace(record.device, tdp=Cited(theirs, f"{theirs:g} W")), record.version)
            return True
        return step

    def choose(choice):
        def step(dialog):
            dialog.choose(choice)
            return choice is not ConflictChoice.DISCARD
        return step

    Script(dock, edit_with_race("80 W", 70.0), choose(ConflictChoice.SAVE_MINE))
    dock.edit_device(device_id)
    assert repository.get(device_id).tdp.value == 80.0
    Script(dock, edit_with_race("90 W", 75.0), choose(ConflictChoice.DISCARD))
    assert dock.edit_device(device_id) is None
    assert repository.get(device_id).tdp.value == 75.0  # theirs kept, nothing swallowed silently
    assert "75" in dock.detail.toPlainText()


def test_conflict_dialog_lists_fields(qtbot, repository):
    record = repository.record("nvidia-t4")
    repository.update(replace(record.device, tdp=Cited(60.0, "60 W")), record.version)
    mine = replace(record.device, tdp=Cited(65.0, "65 W"), notes="my note")
    with pytest.raises(ConflictError) as caught:
        repository.update(mine, record.version)
    dialog = ConflictDialog(caught.value)
    qtbot.addWidget(dialog)
    rows = {f: (m, t) for f, m, t in dialog.rows()}
    assert rows["tdp"] == ("65 W", "60 W")
    assert rows["notes"][0] == "my note"
    assert "you edited version 1, the catalog now has version 2" in dialog.intro.text()
    dialog.button(ConflictChoice.SAVE_MINE).click()
    assert dialog.choice is ConflictChoice.SAVE_MINE and dialog.result() == dialog.DialogCode.Accepted


# ------------------------------------------------------------------ a shared PostgreSQL catalog (two users)
@pytest.fixture
def shared_catalog_url():
    """A private schema in the test PostgreSQL database (HWEXPLORER_TEST_PG_URL), dropped afterwards."""
    url = os.environ.get("HWEXPLORER_TEST_PG_URL")
    if not url:
        pytest.skip("no PostgreSQL server: set HWEXPLORER_TEST_PG_URL (see .ci/start_postgres.sh)")
    admin = create_engine(parse_url(url))
    schema = f"ui_catalog_{uuid.uuid4().hex[:10]}"
    with admin.begin() as conn:
        conn.execute(text(f'CREATE SCHEMA "{schema}"'))
    yield f"{url}{'&' if '?' in url else '?'}options=-csearch_path%3D{schema}"
    with admin.begin() as conn:
        conn.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
    admin.dispose()


@pytest.mark.postgres
def test_conflict_between_two_users_of_a_shared_postgresql_catalog(qtbot, shared_catalog_url):
    mine, theirs = open_catalog(shared_catalog_url), open_catalog(shared_catalog_url)  # two team members
    try:
        workspace = Workspace(lookup=lambda ids: mine.devices(ids))
        dock = CatalogDock(workspace, mine)
        qtbot.addWidget(dock)
        device_id = "nvidia-a100-sxm4-80gb"
        opened = mine.record(device_id).version
        shown = {}

        def my_edit(dialog):
            dialog.quantity_edits["price"].setText("12000 USD")
            record = theirs.record(device_id)  # the colleague saves first, from another machine
            theirs.update(replace(record.device, price=Cited(15000.0, "15000 USD")), record.version)
            return True

        def conflict(dialog):
            shown["rows"] = dialog.rows()
            dialog.choose(ConflictChoice.EDIT_AGAIN)
            return True

        def again(dialog):
            assert dialog.quantity_edits["price"].text() == "12000 USD"
            return True

        Script(dock, my_edit, conflict, again)
        dock.edit_device(device_id)
        assert ("price", "12000 USD", "15000 USD") in shown["rows"]
        assert theirs.record(device_id).version == opened + 2
        assert theirs.get(device_id).price.value == 12000.0  # the colleague now reads my retried edit
    finally:
        mine.engine.dispose()
        theirs.engine.dispose()


def test_the_detail_pane_says_shipped_edited_as_the_table_and_the_command_line_do(dock, repository):
    """Issue 24: after an edit the detail pane said "shipped catalog" where the CLI said "shipped (edited)"."""
    from explorer.store.query import DeviceFilter

    device_id = "nvidia-l4"
    dock.select_device(device_id)
    assert "\nOrigin\nshipped\n" in dock.detail.toPlainText()

    def edit(dialog):
        dialog.quantity_edits["tdp"].setText("80 W")
        return True

    Script(dock, edit)
    dock.edit_device(device_id)
    assert dock.current_id() == device_id and repository.record(device_id).overrides == ("tdp",)
    assert "\nOrigin\nshipped (edited)\n" in dock.detail.toPlainText()
    assert dock.model.index(dock.model.row_of(device_id), 12).data() == "shipped (edited)"
    [row] = [r for r in repository.rows(DeviceFilter()) if r.id == device_id]
    assert row.origin_label == "shipped (edited)"  # the column `catalog list` prints
