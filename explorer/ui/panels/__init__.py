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
    """Where an analysis panel's class is (``explorer.ui.panels.<module>.<name>``) and its tab's title (the
    class's ``title``: a test checks they agree)."""

    module: str
    name: str
    title: str

    def load(self) -> type:
        """The panel class (its module imported now if it was not)."""
        return getattr(importlib.import_module(f"{__name__}.{self.module}"), self.name)


#: the analysis panels in tab order
PANEL_SPECS = (
    PanelSpec("roofline", "RooflinePanel", "Roofline"),
    PanelSpec("energy", "EnergyPanel", "Memory-hierarchy energy"),
    PanelSpec("tiling", "TilingPanel", "Tiling fringe tax"),
    PanelSpec("cost", "CostPanel", "Cost per TFLOP/s"),
    PanelSpec("fidelity", "FidelityPanel", "Fidelity"),
    PanelSpec("systems", "SystemsPanel", "Systems"),
    PanelSpec("training", "TrainingPanel", "Training"),
    PanelSpec("design_space", "DesignSpacePanel", "Design space"),
    PanelSpec("serving", "ServingPanel", "Serving"),
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
