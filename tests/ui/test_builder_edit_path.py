"""The layer list's edit path on long models (issue 22): the model keeps what each layer cell shows and tells the
view which cells an edit changed and how, so that Qt measures the columns sized to their contents only when one
of their cells changed size, and a change of every row (a new batch) is one range, not one signal per row."""

from __future__ import annotations

from dataclasses import replace

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QHeaderView

from explorer.core.session.commands import ReplaceLayer
from explorer.core.session.workspace import Workspace
from explorer.core.workload.model import LayerSpec, Model
from explorer.ui.builder import layer_model
from explorer.ui.builder.layer_model import COLUMNS, FIT_COLUMNS, ROLES, LayerStackModel
from explorer.ui.builder.layer_view import LayerStackView


class CountingModel(LayerStackModel):
    """Counts the view's calls of ``data`` (what Qt's measuring of a column costs in Python)."""

    calls = 0

    def data(self, index, role=Qt.ItemDataRole.DisplayRole):
        CountingModel.calls += 1
        return super().data(index, role)


def long_model(n: int = 400) -> Model:
    layers = []
    for i in range(n // 4):
        layers += [LayerSpec.make("dense", f"up{i}", in_features=64, out_features=256),
                   LayerSpec.make("gelu", f"act{i}"),
                   LayerSpec.make("dense", f"down{i}", in_features=256, out_features=64),
                   LayerSpec.make("layernorm", f"ln{i}")]
    layers.append(LayerSpec.make("transformer_block", "blocks", repeat=2, heads=4))
    return Model.make("long", {"tokens": 32, "hidden": 64}, layers)


@pytest.fixture
def view(qtbot):
    ws = Workspace(long_model())
    v = LayerStackView(ws)
    qtbot.addWidget(v)
    model = CountingModel(ws, v)
    v.setModel(model)
    v.stack_model = model
    v.resize(900, 500)
    v.show()
    qtbot.waitExposed(v)
    qtbot.wait(10)
    return v


def signals(model) -> list[tuple]:
    seen = []
    model.dataChanged.connect(lambda a, b, roles=(): seen.append(
        ((a.row(), a.column(), a.internalId()), (b.row(), b.column()), tuple(roles))))
    model.layoutChanged.connect(lambda *_: seen.append("layout"))
    model.modelReset.connect(lambda: seen.append("reset"))
    return seen


def shown(model: LayerStackModel, rows) -> list:
    return [[[model.data(model.index(i, c), r) for r in ROLES] for c in range(len(COLUMNS))] for i in rows]


def fresh(model: LayerStackModel, rows) -> list:
    return [[[model._layer_data(i, c, r) for r in ROLES] for c in range(len(COLUMNS))] for i in rows]


def test_the_fit_columns_are_the_views_columns_sized_to_their_contents(view):
    header = view.header()
    fit = QHeaderView.ResizeMode.ResizeToContents
    assert {c for c in range(header.count()) if header.sectionResizeMode(c) == fit} == FIT_COLUMNS


def test_a_renamed_layer_repaints_its_name_and_qt_measures_nothing(view):
    ws, model = view.ws, view.stack_model
    seen = signals(model)
    CountingModel.calls = 0
    ws.execute(ReplaceLayer(2, replace(ws.model.layers[2], name="renamed")))
    # the name (column 0: its text) and the kind's tooltip (column 1, not its size): one signal each, no measuring
    assert seen == [((2, 0, 0), (2, 0), (int(Qt.ItemDataRole.DisplayRole),))], seen
    assert CountingModel.calls == 0
    assert model.data(model.index(2, 0)) == "renamed"


def test_a_changed_width_measures_the_fit_columns_once_and_says_what_changed(view):
    ws, model = view.ws, view.stack_model
    shown(model, range(4))  # as if painted
    seen = signals(model)
    CountingModel.calls = 0
    ws.execute(ReplaceLayer(2, ws.model.layers[2].with_params(bias=False)))  # 16,640 -> 16,384 parameters
    assert CountingModel.calls > 0  # Qt measured the fit columns' visible rows: the count's text changed
    fit = [s for s in seen if s[0][1] in FIT_COLUMNS and int(Qt.ItemDataRole.DisplayRole) in s[2]]
    assert fit == [((2, 6, 0), (2, 6), (int(Qt.ItemDataRole.DisplayRole),))], seen
    assert {s[0][0] for s in seen} == {2} and len(seen) <= 3  # the count, the key parameters and their tooltip
    assert model.data(model.index(2, 6)) == "16.38 k"
    assert shown(model, range(len(ws.model.layers))) == fresh(model, range(len(ws.model.layers)))


def test_a_new_batch_changes_every_row_in_one_signal_not_one_per_row(view):
    ws, model = view.ws, view.stack_model
    seen = signals(model)
    before = shown(model, range(10))
    ws.set_assumptions(batch=4)
    top = [s for s in seen if s == "layout" or s[0][2] == 0]
    assert len(top) == 1, top  # every layer's work changed: one range (before: one signal per row)
    assert len(seen) <= 2  # and the one block's operators
    after = shown(model, range(len(ws.model.layers)))
    assert after == fresh(model, range(len(ws.model.layers))) and after[:10] != before


def test_the_shown_cells_follow_random_edits_undo_and_redo(view):
    """Whatever an edit changes, what the model answers is what it computes afresh, for every cell and role."""
    ws, model = view.ws, view.stack_model
    n = len(ws.model.layers)
    steps = [lambda: ws.execute(ReplaceLayer(5, ws.model.layers[5].with_params(out_features=128))),
             lambda: ws.execute(ReplaceLayer(9, replace(ws.model.layers[9], name=""))),
             lambda: ws.execute(ReplaceLayer(n - 1, replace(ws.model.layers[n - 1], repeat=3))),
             lambda: ws.execute(ReplaceLayer(0, ws.model.layers[0].with_params(in_features=65))),  # does not fit
             ws.undo, ws.undo, ws.redo, lambda: ws.set_assumptions(seq_len=16)]
    for step in steps:
        shown(model, range(0, n, 3))
        step()
        assert shown(model, range(n)) == fresh(model, range(n))
        first, count = ws.table.layer_rows  # the rows the model kept or took are the table's
        assert model._first.tolist() == first.tolist() and model._n_rows.tolist() == count.tolist()


def test_the_kept_cells_are_bounded(view, monkeypatch):
    monkeypatch.setattr(layer_model, "MAX_CELLS", 50)
    model = view.stack_model
    assert shown(model, range(len(view.ws.model.layers))) == fresh(model, range(len(view.ws.model.layers)))
    assert len(model._cells) <= 50


def test_the_kept_size_hints_measure_as_the_delegate_does(view):
    """The view keeps each layer cell's size hint while the model keeps its cell: Qt's measuring of the columns
    sized to their contents reads them (a few ``data`` calls instead of eight a cell) and finds the same widths."""
    ws = view.ws
    widths = [view.sizeHintForColumn(c) for c in sorted(FIT_COLUMNS)]
    CountingModel.calls = 0
    ws.execute(ReplaceLayer(2, ws.model.layers[2].with_params(bias=False)))  # the count's text changes: measured
    assert 0 < CountingModel.calls <= 8 * 3  # the changed cell's size hint, not every visible row's (~350 calls)
    kept = [view.sizeHintForColumn(c) for c in sorted(FIT_COLUMNS)]
    view.sizes.clear()
    assert kept == [view.sizeHintForColumn(c) for c in sorted(FIT_COLUMNS)]
    assert kept[-1] >= widths[-1] - 20  # still a sensible width
    font = view.font()
    font.setPointSize(font.pointSize() + 6)
    view.setFont(font)  # forgets the sizes: measured again with the larger font
    assert view.sizeHintForColumn(max(FIT_COLUMNS)) > kept[-1]
