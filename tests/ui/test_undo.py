"""Undo and redo of every kind of edit, made through the widgets and undone through the Edit menu actions."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QModelIndex, Qt
from PySide6.QtGui import QKeySequence
from PySide6.QtWidgets import QMessageBox

from explorer.core.session.workspace import Workspace
from explorer.core.workload.model import LayerSpec, Model
from explorer.ui.builder import mime
from explorer.ui.main_window import MainWindow

L = LayerSpec.make


def tiny_transformer() -> Model:
    return Model.make("tiny", {"tokens": 32, "hidden": 128}, [
        L("transformer_block", "h", repeat=2, heads=2), L("layernorm", "ln_f"),
        L("dense", "head", in_features=128, out_features=1000)])


def state(ws: Workspace):
    return ws.model, ws.device_ids, ws.assumptions


@pytest.fixture
def window(qtbot, monkeypatch):
    monkeypatch.setattr(QMessageBox, "question", lambda *a, **k: QMessageBox.StandardButton.Discard)
    win = MainWindow(Workspace(tiny_transformer()), None, panels=())
    qtbot.addWidget(win)
    return win


def check_undo_redo(window: MainWindow, edit, expect_text: str):
    """Run ``edit``; the Edit menu names it; undo restores the state before, redo the state after."""
    ws = window.workspace
    before = state(ws)
    edit()
    after = state(ws)
    assert after != before
    actions = window.actions
    assert actions.undo.isEnabled() and actions.undo.text() == f"&Undo {expect_text}"
    actions.undo.trigger()
    assert state(ws) == before
    assert actions.redo.isEnabled() and actions.redo.text() == f"&Redo {expect_text}"
    actions.redo.trigger()
    assert state(ws) == after
    actions.undo.trigger()
    return before, after


def test_shortcuts_are_the_platform_ones(window):
    assert window.actions.undo.shortcut() == QKeySequence(QKeySequence.StandardKey.Undo)
    redo_keys = [k.toString() for k in window.actions.redo.shortcuts()]
    assert "Ctrl+Y" in redo_keys and "Ctrl+Shift+Z" in redo_keys
    assert window.actions.save.shortcut() == QKeySequence(QKeySequence.StandardKey.Save)
    assert not window.actions.undo.isEnabled() and window.actions.undo.text() == "&Undo"


def test_undo_add_from_the_palette(window):
    tree = window.palette.tree
    check_undo_redo(window, lambda: tree.itemActivated.emit(tree.item_for("gelu"), 0), "add gelu")
    assert [s.name for s in window.workspace.model.layers] == ["h", "ln_f", "head"]


def test_undo_remove_through_the_delete_action(window):
    view = window.layer_view

    def delete():
        view.select_layers((0, 1))
        window.actions.delete.trigger()

    _, after = check_undo_redo(window, delete, "delete 2 layers")
    assert [s.name for s in after[0].layers] == ["head"]


def test_undo_move_by_drop(window):
    model = window.layer_view.stack_model
    _, after = check_undo_redo(
        window, lambda: model.dropMimeData(mime.encode_rows([2]), Qt.DropAction.MoveAction, 0, 0, QModelIndex()),
        "move layer")
    assert [s.name for s in after[0].layers] == ["head", "h", "ln_f"]


def test_undo_parameter_change_in_the_inspector(window):
    window.workspace.focus_layer(0)
    heads = window.inspector.editors["heads"]
    assert heads.value() == 2
    _, after = check_undo_redo(window, lambda: heads.setValue(4), "set h heads")
    assert after[0].layers[0].params["heads"] == 4
    assert heads.value() == 2  # the form follows undo
    ffn = window.inspector.editors["ffn"]
    check_undo_redo(window, lambda: (ffn.setCurrentIndex(2), ffn.activated.emit(2)), "set h ffn")
    bias = window.inspector.editors["bias"]
    check_undo_redo(window, lambda: bias.setChecked(False), "set h bias")


def test_a_value_equal_to_the_default_is_removed_not_written(window):
    window.workspace.focus_layer(0)
    window.inspector.editors["kv_heads"].setValue(1)
    assert window.workspace.model.layers[0].params == {"heads": 2, "kv_heads": 1}
    window.inspector.editors["kv_heads"].setValue(0)
    assert window.workspace.model.layers[0].params == {"heads": 2}
    assert window.inspector.editors["kv_heads"].text() == "auto (heads)"


def test_undo_repeat_and_rename(window):
    window.workspace.focus_layer(0)
    inspector = window.inspector
    _, after = check_undo_redo(window, lambda: inspector.repeat_spin.setValue(12), "repeat h \u00d712")
    assert after[0].layers[0].repeat == 12

    def rename():
        inspector.name_edit.setText("blocks")
        inspector.name_edit.editingFinished.emit()

    check_undo_redo(window, rename, "rename h to blocks")
    inspector.name_edit.setText("head")  # taken by another layer: refused, with the reason
    inspector.name_edit.editingFinished.emit()
    assert window.workspace.model.layers[0].name == "h"
    assert "already used" in inspector.error.text()


def test_undo_device_selection(window):
    ws = window.workspace
    before, after = check_undo_redo(window, lambda: ws.select_devices(["nvidia-h100-sxm5", "google-tpu-v5e"]),
                                    "select devices")
    assert after[1] == ("nvidia-h100-sxm5", "google-tpu-v5e") and before[1] == ()


def test_undo_assumptions(window):
    settings = window.model_settings
    _, after = check_undo_redo(window, lambda: settings.batch.setValue(8), "set batch 8")
    assert after[2].batch == 8 and settings.batch.value() == 1
    _, after = check_undo_redo(window, lambda: settings.phase.activated.emit(1), "set phase decode")
    assert after[2].phase == "decode"
    _, after = check_undo_redo(window, lambda: settings.precision.activated.emit(6), "set precision int8")
    assert after[2].precision == "int8"
    _, after = check_undo_redo(window, lambda: settings.seq_len.setValue(512), "set seq len 512")
    assert after[2].seq_len == 512
    _, after = check_undo_redo(window, lambda: settings.electricity.setValue(0.3),
                               "set electricity usd per kwh 0.3")
    assert after[2].electricity_usd_per_kwh == 0.3
    _, after = check_undo_redo(window, lambda: settings.utilization.setValue(90.0), "set utilization 0.9")
    assert after[2].utilization == pytest.approx(0.9)


def test_undo_model_settings(window):
    settings = window.model_settings
    _, after = check_undo_redo(window, lambda: settings.input_spins["tokens"].setValue(64), "input tokens 64")
    assert after[0].input_dict == {"tokens": 64, "hidden": 128}
    assert settings.input_spins["tokens"].value() == 32

    def rename():
        settings.name_edit.setText("small GPT")
        settings.name_edit.editingFinished.emit()

    _, after = check_undo_redo(window, rename, "rename model to small GPT")
    assert after[0].name == "small GPT"
    _, after = check_undo_redo(window, lambda: settings.form_combo.activated.emit(0), "input Image (C, H, W)")
    assert after[0].input_dict == {"channels": 3, "height": 224, "width": 224}
    assert window.workspace.table.errors == []  # undone: the transformer fits its tokens again


def test_ctrl_z_and_ctrl_shift_z_reach_the_workspace(qtbot, window):
    window.show()
    window.activateWindow()
    qtbot.waitActive(window)
    window.layer_view.setFocus()
    qtbot.waitUntil(window.layer_view.hasFocus)
    ws = window.workspace
    ws.set_assumptions(batch=4)
    qtbot.keyClick(window.layer_view, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier)
    assert ws.assumptions.batch == 1
    qtbot.keyClick(window.layer_view, Qt.Key.Key_Z,
                   Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.ShiftModifier)
    assert ws.assumptions.batch == 4
    window.close()


def test_a_text_parameter_is_edited_as_text(window):
    """A transformer block's lora_targets (free text): the inspector shows it and an edit is one undoable command."""
    window.workspace.focus_layer(0)
    targets = window.inspector.editors["lora_targets"]
    assert targets.text() == "q,k,v,o"

    def edit():
        targets.setText("q,v")
        targets.editingFinished.emit()

    _, after = check_undo_redo(window, edit, "set h lora_targets")
    assert after[0].layers[0].params["lora_targets"] == "q,v"
    assert targets.text() == "q,k,v,o"  # the form follows undo
