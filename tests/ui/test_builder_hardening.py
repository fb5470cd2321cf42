"""What a new user found in the builder (issue 24): the first layer picks the input, a dense layer over a 3-D tensor
says so and offers a Flatten, stand-in values read "auto", a refused value says why, layers left out are said in
the status bar and the panels, a changed width carries to lm_head, and an edited template is marked as edited."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QModelIndex, Qt
from PySide6.QtWidgets import QMessageBox

from explorer.core.session.commands import ReplaceLayer
from explorer.core.session.workspace import Workspace
from explorer.core.workload.model import LayerSpec, Model
from explorer.ui.app import device_lookup
from explorer.ui.builder import LayerInspector, LayerStackModel, ModelSettings, mime
from explorer.ui.main_window import MainWindow
from explorer.ui.project_controller import blank_model

L = LayerSpec.make
COPY = Qt.DropAction.CopyAction


@pytest.fixture
def window(qtbot, shared_repository, monkeypatch):
    monkeypatch.setattr(QMessageBox, "question", lambda *a, **k: QMessageBox.StandardButton.Discard)
    win = MainWindow(Workspace(lookup=device_lookup(shared_repository)), shared_repository)
    qtbot.addWidget(win)
    return win


def inspector_on(qtbot, ws: Workspace, layer: int) -> LayerInspector:
    inspector = LayerInspector(ws)
    qtbot.addWidget(inspector)
    ws.focus_layer(layer)
    return inspector


# ------------------------------------------------------------------------------ 1. the first layer picks the input
@pytest.mark.parametrize(("kind", "expected"), [
    ("conv2d", {"channels": 3, "height": 224, "width": 224}),
    ("maxpool", {"channels": 3, "height": 224, "width": 224}),
    ("embedding", {"tokens": 128}),
    ("attention", {"tokens": 128, "hidden": 768}),  # the blank model's input already fits: kept
    ("dense", {"tokens": 128, "hidden": 768}),
])
def test_the_first_layer_dropped_into_a_new_model_fits(kind, expected):
    ws = Workspace(blank_model())
    assert LayerStackModel(ws).dropMimeData(mime.encode_kind(kind), COPY, -1, 0, QModelIndex())
    assert ws.model.input_dict == expected
    assert not ws.table.errors, ws.table.errors
    ws.undo()  # one step: the layer and the input it needed
    assert ws.model == blank_model()


def test_double_clicking_a_kind_into_a_new_model_sets_its_input(window):
    window.palette.kind_activated.emit("conv2d")
    ws = window.workspace
    assert [s.kind for s in ws.model.layers] == ["conv2d"] and not ws.table.errors
    assert window.model_settings.form_combo.currentText() == "Image (C, H, W)"
    assert window.workspace.stack.undo_text == "add conv2d (input: image)"


def test_a_chosen_input_is_not_overridden_once_the_model_has_layers():
    ws = Workspace(Model.make("m", {"tokens": 16, "hidden": 64}, [L("attention", "a", heads=1)]))
    assert LayerStackModel(ws).dropMimeData(mime.encode_kind("conv2d"), COPY, -1, 0, QModelIndex())
    assert ws.model.input_dict == {"tokens": 16, "hidden": 64}  # flagged as not fitting instead
    assert [i for i, _ in ws.table.errors] == [1]


def test_an_embedding_bag_fits_the_vector_it_is_dropped_on():
    ws = Workspace(Model.make("m", {"features": 64}, [L("dense", "d", in_features=64, out_features=32)]))
    assert LayerStackModel(ws).dropMimeData(mime.encode_kind("embedding_bag"), COPY, -1, 0, QModelIndex())
    assert ws.model.layers[-1].params["embedding_dim"] == 32 and not ws.table.errors


# ------------------------------------------------------------------------------ 2. dense over the last dimension
def image_dense() -> Model:
    return Model.make("m", {"channels": 3, "height": 8, "width": 8},
                      [L("conv2d", "c", out_channels=4, kernel_size=3, padding=1),
                       L("dense", "fc", in_features=8, out_features=10)])


def test_dense_on_an_image_says_it_applies_over_the_last_dimension_and_offers_a_flatten(qtbot):
    ws = Workspace(image_dense())
    inspector = inspector_on(qtbot, ws, 1)
    assert not ws.table.errors  # it fits, which is why nothing said so before
    assert inspector.note.isVisibleTo(inspector) and inspector.flatten_button.isVisibleTo(inspector)
    assert "last dimension only: 8 features at each of 32 positions" in inspector.note.text()
    inspector.flatten_button.click()
    assert [s.kind for s in ws.model.layers] == ["conv2d", "flatten", "dense"]
    assert ws.model.layers[2].params["in_features"] == 4 * 8 * 8 and not ws.table.errors
    assert ws.table.status[2].out_shape == (10,)
    ws.focus_layer(2)
    assert not inspector.note.isVisibleTo(inspector) and not inspector.flatten_button.isVisibleTo(inspector)
    ws.undo()  # one step
    assert ws.model == image_dense()


def test_dense_on_token_embeddings_says_nothing(qtbot):
    ws = Workspace(Model.make("m", {"tokens": 8, "hidden": 16}, [L("dense", "d", in_features=16, out_features=4)]))
    inspector = inspector_on(qtbot, ws, 0)
    assert not inspector.note.isVisibleTo(inspector) and inspector.note.text() == ""


# ------------------------------------------------------------------------------ 3. "auto" and refused values
def test_conv2d_stand_ins_read_auto_like_maxpool(qtbot):
    ws = Workspace(Model.make("m", {"channels": 3, "height": 8, "width": 8},
                              [L("conv2d", "c", out_channels=4, kernel_size=3), L("maxpool", "p", kernel_size=2)]))
    inspector = inspector_on(qtbot, ws, 0)
    editors = inspector.editors
    assert editors["kernel_h"].text() == "auto (kernel_size)"
    assert editors["stride_w"].text() == "auto (stride)"
    assert editors["padding_h"].text() == "auto (padding)"  # -1 stands for "padding"
    assert editors["padding"].text() == "0"  # a real value, not a stand-in
    ws.focus_layer(1)
    assert inspector.editors["stride"].text() == "auto (kernel size)"


def test_a_negative_kernel_size_is_refused_with_a_message(qtbot):
    from PySide6.QtTest import QTest

    ws = Workspace(Model.make("m", {"channels": 3, "height": 8, "width": 8},
                              [L("conv2d", "c", out_channels=4, kernel_size=3)]))
    inspector = inspector_on(qtbot, ws, 0)
    spin = inspector.editors["kernel_size"]
    spin.lineEdit().selectAll()
    QTest.keyClicks(spin, "-3")
    assert ws.model.layers[0].params["kernel_size"] == 3  # refused
    assert "kernel size" in inspector.error.text() and "\u2265 1" in inspector.error.text()


# ------------------------------------------------------------------------------ 4. layers left out are said
def test_layers_left_out_are_said_in_the_status_bar_and_every_panel(window):
    window.new_from_template("resnet50")
    ws = window.workspace
    ws.execute(ReplaceLayer(1, L("dense", "bad", in_features=7, out_features=7)))
    assert "left out of the totals" in window.totals.text()
    assert "bad: 'dense' expects 7 input features" in window.totals.toolTip()
    for dock in window.panel_docks:
        panel = dock.widget()
        panel.flush()
        assert panel.left_out.isVisibleTo(panel), panel.title
        assert panel.left_out.text() == "\u26a0 1 layer does not fit: left out of the totals"
        assert "bad:" in panel.left_out.toolTip()
    ws.undo()
    for dock in window.panel_docks:
        dock.widget().flush()
        assert not dock.widget().left_out.isVisibleTo(dock.widget())
    assert "left out" not in window.totals.text()


# ------------------------------------------------------------------------------ 5. widths carry; edits are marked
def test_changing_the_hidden_size_of_llama_carries_to_lm_head(window):
    window.new_from_template("llama2-7b")
    ws = window.workspace
    inspector = window.inspector
    ws.focus_layer(0)  # embed_tokens
    inspector.editors["embedding_dim"].setValue(2048)
    head = ws.model.layers[-1]
    assert head.name == "lm_head" and head.params["in_features"] == 2048
    assert not ws.table.errors
    assert "lm_head.in_features follows" in ws.stack.undo_text
    assert ws.model.name == "Llama-2-7B (edited)"
    assert window.model_settings.name_edit.text() == "Llama-2-7B (edited)"
    ws.undo()  # one step, name included
    assert ws.model.layers[-1].params["in_features"] == 4096 and ws.model.name == "Llama-2-7B"


def test_changing_the_input_hidden_size_carries_to_the_dense_layers(qtbot):
    ws = Workspace(Model.make("m", {"tokens": 8, "hidden": 16},
                              [L("layernorm", "n"), L("dense", "head", in_features=16, out_features=4)]))
    settings = ModelSettings(ws)
    qtbot.addWidget(settings)
    settings.input_spins["hidden"].setValue(32)
    assert ws.model.layers[1].params["in_features"] == 32 and not ws.table.errors


def test_a_template_keeps_its_name_until_its_layers_change(window):
    window.new_from_template("gpt2")
    ws = window.workspace
    window.layer_view.select_layers((1,))
    assert ws.model.name == "GPT-2 (124M)"
    window.layer_view.duplicate_selected()
    assert ws.model.name == "GPT-2 (124M) (edited)"
    ws.undo()
    assert ws.model.name == "GPT-2 (124M)"
