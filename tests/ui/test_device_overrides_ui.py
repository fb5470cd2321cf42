"""Device overrides in the app (issue 23): an edit of a compared device in the catalog becomes the project's
override (saved with it); a project opened with overrides applies them on a machine whose catalog lacks the edit,
says so, and the planner marks the device."""

from __future__ import annotations

import pytest
from test_device_editor import Script

from explorer.core.session.device_overrides import apply_overrides
from explorer.core.session.project import Project, load_project, save_project
from explorer.core.session.workspace import Workspace
from explorer.core.workload.templates import get_template
from explorer.ui.catalog.dock import CatalogDock
from explorer.ui.planner.planner_panel import OVERRIDDEN_MARK, PlannerPanel

H100, L4 = "nvidia-h100-sxm5", "nvidia-l4"


@pytest.fixture
def workspace(repository):
    return Workspace(get_template("gpt2").build(), lookup=lambda ids: repository.devices(ids))


@pytest.fixture
def dock(qtbot, workspace, repository):
    widget = CatalogDock(workspace, repository)
    qtbot.addWidget(widget)
    return widget


def test_a_catalog_edit_of_a_compared_device_becomes_a_project_override(dock, repository, workspace, tmp_path):
    workspace.select_devices([H100, L4])
    shipped_tdp = workspace.devices[0].tdp.value

    def edit(dialog):
        dialog.quantity_edits["tdp"].setText("650 W")
        dialog.quantity_edits["peak.fp16"].setText("900 TFLOP/s")
        return True

    Script(dock, edit)
    dock.edit_device(H100)
    assert shipped_tdp != 650.0
    assert dict(workspace.device_overrides) == {H100: {"peak.fp16": 900e12, "tdp": 650.0}}
    assert workspace.analysis.devices.tdp[0] == 650.0 and workspace.analysis.devices.peak[0] == 900e12
    path = tmp_path / "edited.hwproj"
    save_project(Project.of(workspace), path)
    assert dict(load_project(path).device_overrides[H100]) == {"peak.fp16": 900e12, "tdp": 650.0}
    workspace.undo()  # the override is one undoable step (the catalog keeps its edit)
    assert workspace.device_overrides == {}


def test_opening_a_project_applies_its_overrides_and_the_planner_marks_the_device(qtbot, repository, tmp_path):
    # written on a machine where the H100 was edited: its price and bandwidth travel in the project
    author = Workspace(get_template("gpt2").build(), lookup=lambda ids: repository.devices(ids))
    author.select_devices([H100, L4])
    author.override_device(apply_overrides(author.devices[0], {"bandwidth": 2.0e12, "price": 27_500.0}))
    path = tmp_path / "p.hwproj"
    save_project(Project.of(author), path)

    from explorer.ui.project_controller import ProjectController

    reader = Workspace(lookup=lambda ids: repository.devices(ids))  # this machine's catalog: the shipped H100
    controller = ProjectController(reader)
    messages = []
    controller.message.connect(messages.append)
    assert controller.open_project(path)
    assert reader.devices[0].bandwidth == 2.0e12 and reader.devices[0].price.value == 27_500.0
    assert list(reader.analysis.totals.time) == list(author.analysis.totals.time)
    assert "the project overrides figures of nvidia-h100-sxm5: bandwidth 2 TB/s, price 27,500.00 USD" in messages[0]
    panel = PlannerPanel(reader)
    qtbot.addWidget(panel)
    panel.replan()
    names = [panel.quotes.item(r, 0).text() for r in range(panel.quotes.rowCount())]
    assert names[0] == reader.devices[0].name + OVERRIDDEN_MARK and not names[1].endswith(OVERRIDDEN_MARK)
    assert "bandwidth 2 TB/s" in panel.quotes.item(0, 0).toolTip()
    rows = [panel.table.item(r, 1).text() for r in range(panel.table.rowCount())]
    assert reader.devices[0].name + OVERRIDDEN_MARK in rows
    assert panel.result.by_id(H100).price == 27_500.0


def test_the_planner_drops_a_devices_overrides_on_request(qtbot, repository):
    ws = Workspace(get_template("gpt2").build(), lookup=lambda ids: repository.devices(ids))
    ws.select_devices([H100, L4])
    catalog_h100 = ws.devices[0]
    ws.override_device(apply_overrides(catalog_h100, {"tdp": 500.0}))
    panel = PlannerPanel(ws)
    qtbot.addWidget(panel)
    assert panel.overridden_actions(1) == []  # the L4 has none
    (action,) = panel.overridden_actions(0)
    assert action.text() == f"Use the catalog's figures for {catalog_h100.name}"
    action.trigger()
    assert ws.device_overrides == {} and ws.devices[0] is catalog_h100
    assert not panel.quotes.item(0, 0).text().endswith(OVERRIDDEN_MARK)
    ws.undo()
    assert dict(ws.device_overrides[H100]) == {"tdp": 500.0}
