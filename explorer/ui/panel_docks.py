"""The analysis panels' docks, each built the first time its tab is shown (``widgets/lazy_dock.py``).

Until then the dock's title follows the workspace as the panel's own would (the panel's name and the time model it
shows, "Roofline — ideal model"): a tab's title is seen before its panel.
"""

from __future__ import annotations

from PySide6.QtWidgets import QWidget

from .binding import bind
from .widgets.lazy_dock import LazyDock


def panel_dock(cls, workspace, parent: QWidget | None = None) -> LazyDock:
    """A dock for the analysis panel class ``cls`` (an ``AnalysisPanel``), built when first shown or asked for;
    ``dock.panel_class`` is ``cls``."""
    dock = LazyDock(cls.title, lambda: cls(workspace), parent)
    dock.panel_class = cls

    def retitle(analysis) -> None:
        if not dock.built:  # once built, the panel titles its dock
            title = cls.dock_title(workspace, analysis)
            if dock.windowTitle() != title:
                dock.setWindowTitle(title)

    bind(dock, workspace.analysis_updated, retitle)
    return dock
