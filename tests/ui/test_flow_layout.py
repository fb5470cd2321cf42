"""The wrapping control rows (explorer/ui/widgets/flow_layout.py) that keep the panels' header rows from setting
the main window's minimum width: at any width every control is shown whole, inside its row, overlapping none,
with each label on the line of its control."""

from __future__ import annotations

import pytest
from PySide6.QtWidgets import QComboBox, QLabel, QPushButton, QWidget

from explorer.ui.widgets.flow_layout import FlowLayout


def _row(qtbot):
    row = QWidget()
    flow = FlowLayout(row)
    flow.setContentsMargins(0, 0, 0, 0)
    pairs = []
    for name in ("Device", "Colour by", "Precision", "Phase"):
        label, combo = QLabel(f"{name}:"), QComboBox()
        combo.addItems([f"{name} choice with a long name", "b"])
        flow.addWidget(label)
        flow.addWidget(combo)
        pairs.append((label, combo))
    flow.addStretch(1)
    buttons = [QPushButton(t) for t in ("PNG\u2026", "SVG\u2026", "Copy CSV")]
    for b in buttons:
        flow.addWidget(b)
    qtbot.addWidget(row)
    return row, flow, pairs, buttons


def _place(row, flow, width):
    height = flow.heightForWidth(width)
    row.resize(width, height)
    flow.setGeometry(row.rect())
    return height


@pytest.mark.parametrize("width", [200, 320, 500, 800, 1400])
def test_every_control_is_whole_inside_the_row_and_overlaps_none(qtbot, width):
    row, flow, pairs, buttons = _row(qtbot)
    width = max(width, flow.minimumSize().width())
    height = _place(row, flow, width)
    widgets = [w for pair in pairs for w in pair] + buttons
    rects = [w.geometry() for w in widgets]
    for w, r in zip(widgets, rects, strict=True):
        assert row.rect().contains(r), (type(w).__name__, r, width, height)
        assert r.width() >= w.minimumSizeHint().width()
    for i, a in enumerate(rects):
        for b in rects[i + 1:]:
            assert not a.intersects(b), (a, b)
    for label, combo in pairs:  # the label on its control's line, before it
        assert label.geometry().center().y() == pytest.approx(combo.geometry().center().y(), abs=2)
        assert label.geometry().right() < combo.geometry().left()


def test_a_narrow_row_wraps_onto_more_lines_and_a_wide_one_keeps_one(qtbot):
    row, flow, _pairs, _buttons = _row(qtbot)
    one_line = flow.sizeHint()
    assert _place(row, flow, one_line.width() + 100) == one_line.height()
    narrow = _place(row, flow, one_line.width() // 3)
    assert narrow >= 3 * one_line.height()  # a third of the width: at least three lines
    assert flow.minimumSize().width() < one_line.width() // 3


def test_buttons_after_the_stretch_stay_right_aligned(qtbot):
    row, flow, pairs, buttons = _row(qtbot)
    width = flow.sizeHint().width() + 300
    _place(row, flow, width)
    assert buttons[-1].geometry().right() == width - 1
    assert pairs[-1][1].geometry().right() < buttons[0].geometry().left() - 250  # the free width between


def test_a_hidden_control_takes_no_room(qtbot):
    _row_widget, flow, pairs, _buttons = _row(qtbot)
    wide = flow.sizeHint().width()
    pairs[1][1].hide()
    assert flow.sizeHint().width() < wide - pairs[1][1].sizeHint().width() + 1


def test_a_group_stays_on_one_line(qtbot):
    row = QWidget()
    flow = FlowLayout(row)
    flow.setContentsMargins(0, 0, 0, 0)
    combo = QComboBox()
    combo.addItem("a long first control " * 3)
    flow.addWidget(combo)
    flow.addStretch(1)
    buttons = [QPushButton(t) for t in ("PNG\u2026", "SVG\u2026", "Copy CSV")]
    flow.addGroup(buttons)
    qtbot.addWidget(row)
    group = sum(b.sizeHint().width() for b in buttons) + 2 * flow.spacing()
    assert flow.minimumSize().width() >= group
    _place(row, flow, max(combo.sizeHint().width(), group) + 10)  # too narrow for both: two lines
    ys = {b.geometry().y() for b in buttons}
    assert len(ys) == 1 and ys.pop() > combo.geometry().bottom()
    assert buttons[-1].geometry().right() == row.width() - 1  # still on the right, on their own line
