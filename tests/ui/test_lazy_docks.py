"""The main window's analysis tabs are built the first time they are shown (issue 22: cold start): only the tab on
screen is built when the window appears; a tab chosen later catches up with the workspace; a panel asked for before
it is shown is built at once; the tabs' titles follow the time model before their panels exist, as the panels'
own titles would."""

from __future__ import annotations

import pytest
from PySide6.QtWidgets import QDockWidget, QLabel, QMessageBox, QWidget

from explorer.core.session.workspace import Workspace
from explorer.ui.app import device_lookup
from explorer.ui.main_window import MainWindow
from explorer.ui.panels import PANEL_SPECS, PANELS, EnergyPanel, FidelityPanel, RooflinePanel, SystemsPanel
from explorer.ui.widgets.lazy_dock import LazyDock

EXTRAS = ("planner_dock", "calculators_dock", "trace_dock")


@pytest.fixture
def window(qtbot, shared_repository, monkeypatch):
    monkeypatch.setattr(QMessageBox, "question", lambda *a, **k: QMessageBox.StandardButton.Discard)
    win = MainWindow(Workspace(lookup=device_lookup(shared_repository)), shared_repository)
    qtbot.addWidget(win)
    return win


def built(window) -> set[str]:
    return {d.objectName() for d in window.findChildren(LazyDock) if d.built}


def test_a_new_window_builds_no_tab_until_shown_then_only_the_tab_on_screen(window, qtbot):
    lazy = window.findChildren(LazyDock)
    assert len(lazy) == len(PANELS) + len(EXTRAS)
    assert built(window) == set()
    assert window.findChildren(RooflinePanel) == [] and window.findChildren(EnergyPanel) == []
    window.show()
    qtbot.waitExposed(window)
    assert built(window) == {"panel_RooflinePanel"}  # the first tab, on screen; the others wait behind it
    roofline = window.panel_docks[0].widget()
    assert isinstance(roofline, RooflinePanel) and roofline.isVisible()
    qtbot.waitUntil(lambda: roofline.redraws >= 1)  # it drew the workspace as it was when it appeared


def test_a_tab_chosen_later_is_built_then_and_draws_the_current_results(window, qtbot):
    window.show()
    qtbot.waitExposed(window)
    window.new_from_template("gpt2")
    window.workspace.select_devices(["nvidia-h100-sxm5"])
    window.workspace.set_assumptions(batch=4)
    energy_dock = window.findChild(QDockWidget, "panel_EnergyPanel")
    assert not energy_dock.built
    energy_dock.raise_()
    assert energy_dock.built  # chosen: built in the same turn, before it is painted
    panel = energy_dock.widget()
    qtbot.waitUntil(lambda: panel.redraws == 1)
    assert "batch 4" in panel.per_layer.plot_title.text
    assert panel.isVisible() and not panel.visibleRegion().isEmpty()
    assert built(window) == {"panel_RooflinePanel", "panel_EnergyPanel"}
    window.findChild(QDockWidget, "calculators_dock").raise_()
    assert "calculators_dock" in built(window)
    assert window.calculators.isVisible()


def test_a_panel_asked_for_before_it_is_shown_is_built_at_once_and_waits_hidden(window):
    assert window.panel(FidelityPanel) is window.findChild(QDockWidget, "panel_FidelityPanel").widget()
    assert built(window) == {"panel_FidelityPanel"}
    panel = window.panel(FidelityPanel)
    assert isinstance(panel, FidelityPanel) and panel.redraws == 0 and panel.updates.stale  # drawn when shown
    assert window.panel(QLabel) is None
    assert window.trace_panel.trace is None and "trace_dock" in built(window)
    assert window.planner.requirements() is not None and "planner_dock" in built(window)


def test_titles_of_tabs_not_built_follow_the_time_model_as_the_panels_would(window, qtbot, shared_repository,
                                                                           monkeypatch):
    window.new_from_template("gpt2")
    window.workspace.select_devices(["nvidia-h100-sxm5"])
    window.workspace.set_assumptions(time_model="calibrated")
    titles = {d.objectName(): d.windowTitle() for d in window.panel_docks}
    assert built(window) == set()
    assert titles["panel_RooflinePanel"].startswith("Roofline \u2014 ")
    assert titles["panel_FidelityPanel"] == "Fidelity \u2014 ideal vs calibrated"
    assert titles["panel_EnergyPanel"] == "Memory-hierarchy energy"  # no time shown: no caption
    assert titles["panel_TilingPanel"] == "Tiling fringe tax \u2014 ideal model (not calibrated here)"
    # a window whose panels are all built titles its docks the same
    other = MainWindow(Workspace(lookup=device_lookup(shared_repository)), shared_repository)
    qtbot.addWidget(other)
    for dock in other.panel_docks:
        assert isinstance(dock.widget(), QWidget)
    other.new_from_template("gpt2")
    other.workspace.select_devices(["nvidia-h100-sxm5"])
    other.workspace.set_assumptions(time_model="calibrated")
    assert {d.objectName(): d.windowTitle() for d in other.panel_docks} == titles
    assert other.panel(SystemsPanel).shown_title == titles["panel_SystemsPanel"]


def test_the_factory_may_not_ask_for_its_own_dock(qtbot):
    holder = QWidget()
    qtbot.addWidget(holder)
    dock = LazyDock("loop", lambda: dock.widget(), holder)
    with pytest.raises(RuntimeError, match="while it was being built"):
        dock.widget()
    assert not dock.built


def test_the_panel_specs_name_each_panel_class_its_title_and_time_model_in_tab_order():
    from explorer.core.session.workspace import Assumptions
    from explorer.ui.panels.base import AnalysisPanel, time_caption

    assert tuple(spec.load() for spec in PANEL_SPECS) == PANELS
    for spec, cls in zip(PANEL_SPECS, PANELS, strict=True):
        assert (spec.name, spec.title, spec.time_model) == (cls.__name__, cls.title, cls.time_model)
        assert cls.__module__ == f"explorer.ui.panels.{spec.module}"
        assert spec.own_caption == (cls.caption.__func__ is not AnalysisPanel.caption.__func__), spec.name
        if spec.own_caption:  # the spec words the ideal model's caption itself (without importing the class)
            ws = Workspace(assumptions=Assumptions(time_model="ideal"))
            assert cls.caption(ws) == "ideal model" == time_caption(spec.time_model, ws) and spec.time_model == "follows"


def test_a_new_window_titles_its_tabs_as_their_panels_will_before_any_is_built(window):
    """The panels title their docks when first drawn; a tab not built has that title from the start (a hidden tab's
    title is on screen in the tab bar)."""
    assert built(window) == set()
    ws = window.workspace
    for dock in window.panel_docks:
        assert dock.windowTitle() == dock.panel_class().dock_title(ws, ws.analysis), dock.objectName()
    assert window.findChild(QDockWidget, "panel_TilingPanel").windowTitle() == "Tiling fringe tax \u2014 ideal model"
