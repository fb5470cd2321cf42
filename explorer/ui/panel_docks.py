"""The analysis panels' docks, each built the first time its tab is shown (``widgets/lazy_dock.py``).

A panel is given as its class or as a :class:`~explorer.ui.panels.PanelSpec` (module, class name, title): then its
module is imported only when the panel is built or its class is asked for. Until the panel is built the dock's title
follows the workspace as the panel's own would (the panel's name and the time model it shows, "Roofline — ideal
model", from the start: a built panel titles its dock so when it is first shown): a tab's title is seen before its
panel.
"""

from __future__ import annotations

from PySide6.QtWidgets import QWidget

from .binding import bind
from .widgets.lazy_dock import LazyDock


def panel_name(panel) -> str:
    """The class name of ``panel`` (a panel class or a PanelSpec)."""
    return panel.__name__ if isinstance(panel, type) else panel.name


def panel_dock(panel, workspace, parent: QWidget | None = None) -> LazyDock:
    """A dock for ``panel`` (an ``AnalysisPanel`` class or a PanelSpec), built when first shown or asked for;
    ``dock.panel_class()`` is the class (imported then)."""
    load = (lambda: panel) if isinstance(panel, type) else panel.load
    dock = LazyDock(panel.dock_title(workspace, workspace.analysis), lambda: load()(workspace), parent)
    dock.panel_class = load

    def retitle(analysis) -> None:
        if not dock.built:  # once built, the panel titles its dock
            title = panel.dock_title(workspace, analysis)
            if dock.windowTitle() != title:
                dock.setWindowTitle(title)

    bind(dock, workspace.analysis_updated, retitle)
    return dock
