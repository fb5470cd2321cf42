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


def test_the_batch_search_follows_the_times_switch(qtbot, workspace):  # noqa: F811
    """Under the calibrated model every batch is planned with the calibrated times (the H100 SXM5's curves), as
    ``plan --search-batch --time-model calibrated``; switching back plans with the ideal ones again."""
    from explorer.core.analysis.batch_search import search_batch

    panel = make_panel(qtbot, workspace)
    panel.target.setText("20000 tokens/s")
    panel.latency.setText("50 ms")
    panel.search_batch.setChecked(True)
    ideal = [(d.id, d.batch, d.units, d.latency) for d in panel.result.ranked]
    workspace.set_assumptions(time_model="calibrated")
    panel.replan()
    a = workspace.analysis
    expected = search_batch(a.model, a.devices, a.precision, a.ctx, workspace.requirements, workspace.assumptions,
                            time_model="calibrated")
    got = [(d.id, d.batch, d.units, d.latency) for d in panel.result.ranked]
    assert got == [(d.id, d.batch, d.units, d.latency) for d in expected.result.ranked] != ideal
    workspace.set_assumptions(time_model="ideal")
    panel.replan()
    assert [(d.id, d.batch, d.units, d.latency) for d in panel.result.ranked] == ideal
