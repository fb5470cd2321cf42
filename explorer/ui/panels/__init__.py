"""The live analysis panels, all drawn from the workspace's one bundle of results.

The main window adds each panel of :data:`PANEL_SPECS` as a dock in one tab group (``Panel(workspace,
parent=None)``, with a ``title``), built the first time its tab is shown, and puts :class:`AnalysisControls`
(precision, batch, sequence length, phase) in a toolbar. A spec names the panel's module, class and tab title
without importing it: a panel's module (and the core it draws from) is imported when its tab is first shown, or
when its class is asked for here (``from explorer.ui.panels import EnergyPanel``, :data:`PANELS`), not at
start-up (issue 22).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass


@dataclass(frozen=True)
class PanelSpec:
    """Where an analysis panel's class is (``explorer.ui.panels.<module>.<name>``), its tab's title and the time
    model it shows (the class's ``title`` and ``time_model``: a test checks they agree)."""

    module: str
    name: str
    title: str
    time_model: str = "follows"  # the class's ``time_model``
    own_caption: bool = False  # the class words its caption itself (``caption`` overridden)

    def load(self) -> type:
        """The panel class (its module imported now if it was not)."""
        return getattr(importlib.import_module(f"{__name__}.{self.module}"), self.name)

    def dock_title(self, workspace, analysis=None) -> str:
        """The title the panel's dock has for ``workspace`` (``AnalysisPanel.dock_title``), without importing the
        panel's module unless the class words its caption itself and the Times switch is on "calibrated" (under the
        ideal model every panel that follows the switch says "ideal model": a test checks the classes that word
        their own)."""
        if self.own_caption and workspace.assumptions.time_model != "ideal":
            return self.load().dock_title(workspace, analysis)
        from .base import time_caption, titled

        return titled(self.title, time_caption(self.time_model, workspace, analysis))


#: the analysis panels in tab order
PANEL_SPECS = (
    PanelSpec("roofline", "RooflinePanel", "Roofline"),
    PanelSpec("energy", "EnergyPanel", "Memory-hierarchy energy", "none"),
    PanelSpec("tiling", "TilingPanel", "Tiling fringe tax", "ideal"),
    PanelSpec("cost", "CostPanel", "Cost per TFLOP/s"),
    PanelSpec("fidelity", "FidelityPanel", "Fidelity", "both"),
    PanelSpec("systems", "SystemsPanel", "Systems", own_caption=True),
    PanelSpec("training", "TrainingPanel", "Training", own_caption=True),
    PanelSpec("design_space", "DesignSpacePanel", "Design space", "follows"),
    PanelSpec("serving", "ServingPanel", "Serving", own_caption=True),
)
_CLASSES = {spec.name: spec for spec in PANEL_SPECS} | {"AnalysisControls": PanelSpec("controls", "AnalysisControls", "")}

__all__ = ["PANELS", "PANEL_SPECS", "AnalysisControls", "CostPanel", "DesignSpacePanel", "EnergyPanel", "FidelityPanel",
           "PanelSpec", "RooflinePanel", "ServingPanel", "SystemsPanel", "TilingPanel", "TrainingPanel"]


def __getattr__(name: str):
    """``PANELS`` (every panel class, in tab order) and the classes by name, imported on first use."""
    if name == "PANELS":
        value = tuple(spec.load() for spec in PANEL_SPECS)
    elif name in _CLASSES:
        value = _CLASSES[name].load()
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value
