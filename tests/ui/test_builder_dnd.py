"""Layer builder drag and drop: the model's mimeData/dropMimeData, then synthetic drag events on the view."""

from __future__ import annotations

import json

import pytest
from PySide6.QtCore import QMimeData, QModelIndex, QPoint, QPointF, Qt
from PySide6.QtGui import QDragEnterEvent, QDragMoveEvent, QDropEvent
from PySide6.QtWidgets import QApplication

from explorer.core.session.commands import ReplaceLayer
from explorer.core.session.workspace import Workspace
from explorer.core.workload.layers import format_shape
from explorer.core.workload.model import LayerSpec, Model
from explorer.ui.builder import mime
from explorer.ui.builder.layer_model import COL_MACS, COL_NAME, COL_REPEAT, COL_SHAPE, LayerStackModel
from explorer.ui.builder.layer_view import LayerStackView
from explorer.ui.builder.palette import LayerPalette

L = LayerSpec.make
COPY, MOVE = Qt.DropAction.CopyAction, Qt.DropAction.MoveAction


def small_cnn() -> Model:
    """(3, 32, 32) -> conv 16 -> relu -> conv 32 (stride 2) -> relu."""
    return Model.make("cnn", {"channels": 3, "height": 32, "width": 32}, [
        L("conv2d", "c1", out_channels=16, kernel_size=3, padding=1), L("relu", "r1"),
        L("conv2d", "c2", out_channels=32, kernel_size=3, stride=2, padding=1), L("relu", "r2")])


def names(ws: Workspace) -> list[str]:
    return [spec.name for spec in ws.model.layers]


@pytest.fixture
def ws():
    return Workspace(small_cnn())


@pytest.fixture
def model(ws):
    return LayerStackModel(ws)


@pytest.fixture
def view(qtbot, ws):
    widget = LayerStackView(ws)
    qtbot.addWidget(widget)
    widget.resize(900, 400)
    return widget


# ------------------------------------------------------------------------------ the MIME payloads (one module)
def test_kind_payload_is_a_small_json_key():
    data = mime.encode_kind("conv2d")
    assert data.formats()[0] == "application/x-hwexplorer-layer-kind"
    assert json.loads(bytes(data.data(mime.LAYER_KIND).data())) == {"kind": "conv2d"}
    assert mime.decode_kind(data) == "conv2d"
    with pytest.raises(ValueError, match="kind: unknown layer kind 'nope'"):
        mime.encode_kind("nope")


@pytest.mark.parametrize("payload", [b"{broken", b'{"kind": "nope"}', b'{"kind": 3}', b"[]", b"\xff\xfe"])
def test_bad_kind_payloads_decode_to_nothing(payload):
    data = QMimeData()
    data.setData(mime.LAYER_KIND, payload)
    assert mime.decode_kind(data) is None


def test_palette_drags_the_kind_key(qtbot):
    palette = LayerPalette()
    qtbot.addWidget(palette)
    kinds = palette.tree.kinds()
    assert {"conv2d", "dense", "attention", "transformer_block", "layernorm", "gelu"} <= set(kinds)
    item = palette.tree.item_for("layernorm")
    assert item.parent().text(0) == "Normalization"
    assert "layernorm" in item.toolTip(0) and not item.icon(0).isNull()
    assert mime.decode_kind(palette.tree.mimeData([item])) == "layernorm"
    groups = [palette.tree.topLevelItem(i).text(0) for i in range(palette.tree.topLevelItemCount())]
    assert groups[:6] == ["Linear algebra", "Convolution", "Normalization", "Activation", "Attention", "Blocks"]


# --------------------------------------------------------------------------------------- model level
def test_drop_a_kind_between_layers_fits_the_tensor_there(ws, model):
    assert model.canDropMimeData(mime.encode_kind("conv2d"), COPY, 2, 0, QModelIndex())
    assert model.dropMimeData(mime.encode_kind("conv2d"), COPY, 2, 0, QModelIndex())
    spec = ws.model.layers[2]
    assert spec.kind == "conv2d" and spec.name == "conv2d_1"
    assert spec.params == {"out_channels": 16, "kernel_size": 3, "padding": 1}  # 16 channels arrive at row 2
    assert ws.table.status[2].out_shape == (16, 32, 32) and not ws.table.errors
    assert model.rowCount() == 5 and model.index(2, COL_NAME).data() == "conv2d_1"
    assert ws.stack.undo_text == "add conv2d"
    ws.undo()
    assert names(ws) == ["c1", "r1", "c2", "r2"] and model.rowCount() == 4


def test_drop_at_the_end_on_an_item_and_into_an_empty_model(ws, model):
    assert model.dropMimeData(mime.encode_kind("global_avgpool"), COPY, -1, 0, QModelIndex())
    assert ws.model.layers[-1].kind == "global_avgpool"
    assert model.dropMimeData(mime.encode_kind("dense"), COPY, -1, 0, QModelIndex())
    assert ws.model.layers[-1].params == {"in_features": 32, "out_features": 32}  # after the pool: (32,)
    assert model.dropMimeData(mime.encode_kind("sigmoid"), COPY, -1, 0, model.index(0, COL_NAME))
    assert names(ws)[:3] == ["c1", "sigmoid_1", "r1"]  # dropped onto a row: after it
    empty = Workspace(Model.make("empty", {"tokens": 64, "hidden": 256}))
    empty_model = LayerStackModel(empty)
    assert empty_model.dropMimeData(mime.encode_kind("attention"), COPY, -1, -1, QModelIndex())
    assert empty.model.layers[0].params == {"heads": 4}  # 256 / 64-wide heads
    assert not empty.table.errors


def test_reorder_rows_with_the_internal_type_and_move_only(ws, model):
    data = model.mimeData([model.index(0, 0), model.index(0, 3), model.index(1, 0)])
    assert data.hasFormat(mime.LAYER_ROWS) and mime.decode_rows(data) == (0, 1)
    assert not model.canDropMimeData(data, COPY, 4, 0, QModelIndex())  # reordering is MoveAction only
    assert not model.dropMimeData(data, COPY, 4, 0, QModelIndex())
    assert model.dropMimeData(data, MOVE, 4, 0, QModelIndex())
    assert names(ws) == ["c2", "r2", "c1", "r1"]
    assert ws.table.status[3].out_shape == (16, 16, 16)  # c1 now convolves c2's 16x16 output
    ws.undo()
    assert names(ws) == ["c1", "r1", "c2", "r2"] and not ws.table.errors


def test_dropping_rows_where_they_are_is_not_an_edit(ws, model):
    for dest in (0, 1, 2):
        assert not model.dropMimeData(mime.encode_rows([0, 1]), MOVE, dest, 0, QModelIndex())
    assert not ws.stack.can_undo
    assert not model.dropMimeData(mime.encode_rows([9]), MOVE, 0, 0, QModelIndex())  # no such row


def test_block_rows_expand_into_operators_that_add_up(qtbot):
    ws = Workspace(Model.make("t", {"tokens": 16, "hidden": 64}, [L("transformer_block", "h", repeat=3, heads=4)]))
    model = LayerStackModel(ws)
    block = model.index(0, 0)
    table = ws.table
    assert model.rowCount(block) == table.status[0].n_rows > 5
    assert model.index(0, COL_REPEAT).data() == "\u00d73"
    children = [model.index(r, COL_NAME, block).data() for r in range(model.rowCount(block))]
    assert children[0] == "norm1" and children[-1] == "residual2"
    total_macs = float((table.columns["macs"] * table.columns["count"]).sum())
    assert total_macs == 3 * float(table.columns["macs"].sum())
    assert model.flags(model.index(0, COL_REPEAT)) & Qt.ItemFlag.ItemIsEditable
    assert not model.flags(model.index(0, 0, block)) & Qt.ItemFlag.ItemIsDragEnabled
    assert model.setData(model.index(0, COL_REPEAT), 6)
    assert ws.model.layers[0].repeat == 6 and model.index(0, COL_REPEAT).data() == "\u00d76"
    assert ws.stack.undo_text == "repeat h \u00d76"


def test_rows_follow_the_batch_and_ignore_precision_and_devices(ws, model):
    macs = model.index(0, COL_MACS).data()
    touched = []
    model.dataChanged.connect(lambda *args: touched.append(args))
    ws.set_assumptions(precision="bf16")  # the rows show shapes, work and parameters: nothing to redraw
    ws.select_devices(["some-device"])
    assert touched == [] and model.index(0, COL_MACS).data() == macs
    ws.set_assumptions(batch=2)  # twice the work of the convolutions (the ReLUs count no MACs, shapes are per sample)
    assert {t[0].row() for t in touched} == {0, 2} and model.index(0, COL_MACS).data() != macs
    touched.clear()
    spec = ws.model.layers[2]
    ws.execute(ReplaceLayer(2, spec.with_params(padding=0)))  # c2 shrinks its output: c2 and r2 change
    assert sorted({t[0].row() for t in touched}) == [2, 3]
    assert model.index(2, COL_SHAPE).data() == format_shape(ws.table.status[2].out_shape)


def test_a_layer_that_does_not_fit_is_flagged_not_dropped(ws, model):
    bad = L("batchnorm", "bn", num_features=8)  # c1 outputs 16 channels
    from explorer.core.session.commands import AddLayers

    ws.execute(AddLayers(1, (bad,)))
    assert names(ws) == ["c1", "bn", "r1", "c2", "r2"]
    shape_text = model.index(1, COL_SHAPE).data()
    assert shape_text.startswith("\u26a0") and "8 features" in shape_text and "16" in shape_text
    assert model.index(1, COL_MACS).data() == "\u2014"
    assert model.index(1, COL_NAME).data(Qt.ItemDataRole.BackgroundRole) is not None
    assert "does not fit" in model.index(1, COL_NAME).data(Qt.ItemDataRole.ToolTipRole)
    assert model.index(4, COL_SHAPE).data() == "(32, 16, 16)"  # the layers after it are still analyzed


# ------------------------------------------------------------------------------------ synthetic events
def _drag_and_drop(view: LayerStackView, data: QMimeData, pos: QPoint, actions, source=None) -> QDropEvent:
    viewport = view.viewport()
    buttons, mods = Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier
    enter = QDragEnterEvent(pos, actions, data, buttons, mods)
    QApplication.sendEvent(viewport, enter)
    move = QDragMoveEvent(pos, actions, data, buttons, mods)
    QApplication.sendEvent(viewport, move)
    drop = QDropEvent(QPointF(pos), actions, data, buttons, mods)
    QApplication.sendEvent(viewport, drop)
    return drop


def test_synthetic_drop_from_the_palette_above_a_row(qtbot, ws, view):
    view.show()
    qtbot.waitExposed(view)
    rect = view.visualRect(view.model().index(2, 0))
    drop = _drag_and_drop(view, mime.encode_kind("batchnorm"), QPoint(rect.center().x(), rect.top() + 2), COPY)
    assert drop.isAccepted()
    assert [s.kind for s in ws.model.layers] == ["conv2d", "relu", "batchnorm", "conv2d", "relu"]
    assert view.selected_layers() == (2,) and ws.focused_layer == 2
    view.hide()


def test_synthetic_drop_below_the_last_row_appends(qtbot, ws, view):
    view.show()
    qtbot.waitExposed(view)
    below = QPoint(50, view.visualRect(view.model().index(3, 0)).bottom() + 40)
    _drag_and_drop(view, mime.encode_kind("flatten"), below, COPY)
    assert ws.model.layers[-1].kind == "flatten"
    view.hide()


def test_synthetic_internal_move_reorders_through_one_command(qtbot, ws, view):
    view.show()
    qtbot.waitExposed(view)
    view.select_layers((0, 1))
    data = view.model().mimeData(view.selectionModel().selectedIndexes())
    rect = view.visualRect(view.model().index(3, 0))
    _drag_and_drop(view, data, QPoint(rect.center().x(), rect.bottom() - 2), MOVE)  # below the last row
    assert names(ws) == ["c2", "r2", "c1", "r1"]
    assert view.selected_layers() == (2, 3)
    assert ws.stack.undo_text == "move layers"
    ws.undo()
    assert names(ws) == ["c1", "r1", "c2", "r2"]
    assert view.selected_layers() == (0, 1)  # the selection follows the layers, not the row numbers
    view.hide()


def test_unknown_payload_is_refused_by_the_view(qtbot, ws, view):
    view.show()
    qtbot.waitExposed(view)
    data = QMimeData()
    data.setText("conv2d")
    _drag_and_drop(view, data, QPoint(20, 20), COPY)
    assert names(ws) == ["c1", "r1", "c2", "r2"] and not ws.stack.can_undo
    view.hide()


# -------------------------------------------------------------------------- delete and duplicate
def test_multi_select_delete_and_duplicate(qtbot, ws, view):
    view.select_layers((1, 3))
    assert view.duplicate_selected()
    assert names(ws) == ["c1", "r1", "c2", "r2", "r1_1", "r2_1"]
    assert view.selected_layers() == (4, 5)
    view.select_layers((0, 4, 5))
    assert view.delete_selected()
    assert names(ws) == ["r1", "c2", "r2"]
    assert ws.stack.undo_text == "delete 3 layers"
    ws.undo()
    assert names(ws) == ["c1", "r1", "c2", "r2", "r1_1", "r2_1"]
    ws.undo()
    assert names(ws) == ["c1", "r1", "c2", "r2"]
    view.select_layers(())
    assert not view.delete_selected() and not view.duplicate_selected()
