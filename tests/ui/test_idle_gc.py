"""The idle collector (explorer/ui/idle_gc.py): Python's young-generation passes run after the workspace's last
change, not inside an edit; Python's thresholds come back when it goes."""

from __future__ import annotations

import gc

import pytest
from PySide6.QtWidgets import QWidget

from explorer.core.session.workspace import Workspace
from explorer.core.workload.model import LayerSpec, Model
from explorer.ui import idle_gc
from explorer.ui.idle_gc import IDLE_MS, RAISED, IdleCollector


@pytest.fixture
def ws():
    return Workspace(Model.make("m", {"tokens": 8, "hidden": 16},
                                [LayerSpec.make("dense", "d", in_features=16, out_features=16)]))


@pytest.fixture
def owner(qtbot):
    w = QWidget()
    qtbot.addWidget(w)
    return w


def test_the_young_threshold_is_raised_while_installed_and_restored_after(ws, owner, qtbot):
    before = gc.get_threshold()
    collector = IdleCollector(ws, owner)
    assert gc.get_threshold() == (max(RAISED, before[0]), *before[1:])
    collector.uninstall()
    assert gc.get_threshold() == before
    parent, other = QWidget(), QWidget()
    IdleCollector(ws, parent)
    second = IdleCollector(ws, other)
    assert gc.get_threshold() != before
    parent.deleteLater()  # destroyed with its window: the other one still wants the raised threshold
    qtbot.wait(50)
    assert gc.get_threshold() != before
    second.uninstall()  # the last one: the thresholds come back
    assert gc.get_threshold() == before
    other.deleteLater()


def test_the_young_generations_are_collected_once_the_workspace_has_not_changed_for_a_while(ws, owner, qtbot,
                                                                                              monkeypatch):
    collected = []
    monkeypatch.setattr(idle_gc.gc, "collect", lambda generation=2: collected.append(generation) or 0)
    counts = iter([(5000, 3, 4), (5000, 3, 10), (10, 0, 0)])
    monkeypatch.setattr(idle_gc.gc, "get_count", lambda: next(counts))
    collector = IdleCollector(ws, owner)
    try:
        ws.set_assumptions(batch=2)
        qtbot.wait(IDLE_MS // 3)
        assert collected == []  # not while edits may follow
        ws.set_assumptions(batch=4)  # a stream of edits: counted from the last one
        qtbot.wait(IDLE_MS * 2 // 3)
        assert collected == []
        qtbot.waitUntil(lambda: collected == [1], timeout=IDLE_MS * 4)  # the young and middle generations
        ws.set_assumptions(batch=8)
        qtbot.waitUntil(lambda: collected == [1, 2], timeout=IDLE_MS * 4)  # ten passes since the last full one
        ws.set_assumptions(batch=16)
        qtbot.wait(IDLE_MS * 2)
        assert collected == [1, 2]  # under Python's threshold: nothing to do
        assert collector.passes == [1, 2]
    finally:
        collector.uninstall()


def test_a_real_collection_after_an_edit(ws, owner, qtbot):
    collector = IdleCollector(ws, owner)
    try:
        garbage = [[i] for i in range(2000)]  # past Python's own threshold of 700
        for item in garbage:
            item.append(item)  # each a cycle: only the collector frees them
        del garbage, item
        assert gc.isenabled() and gc.get_count()[0] > 700, (gc.isenabled(), gc.get_count())
        ws.set_assumptions(batch=2)
        qtbot.waitUntil(lambda: bool(collector.passes), timeout=IDLE_MS * 6)
        assert gc.get_count()[0] < 700
    finally:
        collector.uninstall()
