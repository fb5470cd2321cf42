"""The planner's batch search switch (issue 23), on the planner tests' workspace."""

from __future__ import annotations

from test_planner_ui import make_panel, workspace  # noqa: F401 - workspace: the fixture


def test_planner_searches_the_batch_when_asked(qtbot, workspace):  # noqa: F811
    from explorer.core.analysis.batch_search import search_batch

    panel = make_panel(qtbot, workspace)
    panel.target.setText("20000 tokens/s")
    panel.latency.setText("50 ms")
    panel.replan()
    plain = panel.result
    panel.search_batch.setChecked(True)  # replans
    a = workspace.analysis
    expected = search_batch(a.model, a.devices, a.precision, a.ctx, workspace.requirements, workspace.assumptions)
    assert [(d.id, d.batch, d.units) for d in panel.result.ranked] == \
        [(d.id, d.batch, d.units) for d in expected.result.ranked]
    for r, d in enumerate(panel.result.ranked):
        assert panel.table.item(r, 10).text() == d.reason and f"[batch {d.batch}: " in d.reason
    panel.search_batch.setChecked(False)
    assert [d.reason for d in panel.result.ranked] == [d.reason for d in plain.ranked]
