"""The live analysis panels, all drawn from the workspace's one bundle of results.

The main window adds each class of :data:`PANELS` as a dock or tab (``Panel(workspace, parent=None)``, with a
``title``) and puts :class:`AnalysisControls` (precision, batch, sequence length, phase) in a toolbar.
"""

from .controls import AnalysisControls
from .cost import CostPanel
from .design_space import DesignSpacePanel
from .energy import EnergyPanel
from .fidelity import FidelityPanel
from .roofline import RooflinePanel
from .serving import ServingPanel
from .systems import SystemsPanel
from .tiling import TilingPanel
from .training import TrainingPanel

PANELS = (RooflinePanel, EnergyPanel, TilingPanel, CostPanel, FidelityPanel, SystemsPanel, TrainingPanel, DesignSpacePanel,
          ServingPanel)

__all__ = ["PANELS", "AnalysisControls", "CostPanel", "DesignSpacePanel", "EnergyPanel", "FidelityPanel", "RooflinePanel", "ServingPanel",
           "SystemsPanel", "TilingPanel", "TrainingPanel"]
