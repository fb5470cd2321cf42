"""The docks beyond the four analysis panels: the chapter's calculators, the procurement planner and the
imported trace. They join the analysis panels' tab group; the calculators follow the selected devices.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

from PySide6.QtWidgets import QDockWidget, QScrollArea, QWidget

from explorer.core.hardware.device import Device

from .binding import bind
from .widgets.lazy_dock import LazyDock

if TYPE_CHECKING:  # the calculators are imported when their tab is first shown
    from explorer.core.calculators.batch_sweep import DeviceRidge


def ridge_devices(devices: Sequence[Device], precision: str) -> list[DeviceRidge]:
    """The devices as the calculators take them (name, dense peak at ``precision`` in FLOP/s, main-memory
    bandwidth in B/s). Devices without a peak at the precision or without a bandwidth are left out: the
    calculators' ridge lines and device pickers need both numbers."""
    from explorer.core.calculators.batch_sweep import DeviceRidge

    out = []
    for device in devices:
        peak, bandwidth = device.peak_flops(precision), device.bandwidth
        if math.isfinite(peak) and peak > 0 and math.isfinite(bandwidth) and bandwidth > 0:
            out.append(DeviceRidge(f"{device.name} {precision.upper()}", peak, bandwidth))
    return out


class CalculatorDevices:
    """Keeps a :class:`~explorer.ui.calculators.panel.CalculatorsPanel` on the workspace's selected devices
    at the analysis precision (the chapter's V100/A100/T4/H100 when none of them has the figures)."""

    def __init__(self, workspace, panel):
        self.workspace, self.panel = workspace, panel
        self.devices: tuple[DeviceRidge, ...] | None = None
        bind(panel, workspace.changed, self.sync)
        self.sync()

    def sync(self, changes=frozenset({"devices"})) -> None:
        if not {"devices", "assumptions"} & set(changes):
            return
        from explorer.core.calculators.batch_sweep import CHAPTER_DEVICES

        ws = self.workspace
        devices = tuple(ridge_devices(ws.devices, ws.assumptions.precision)) or CHAPTER_DEVICES
        if devices != self.devices:  # setting devices resets the pickers: only when they change
            self.devices = devices
            self.panel.set_devices(list(devices))


def _scrolling(widget: QWidget) -> QScrollArea:
    """The calculators stack their plots under their inputs and scroll, each on its own, in a narrow or short
    dock; narrower than the list and the inputs (about 530 px) they scroll sideways here instead of being clipped
    (and of forcing that minimum width on every analysis tab)."""
    area = QScrollArea()
    area.setWidget(widget)
    area.setWidgetResizable(True)
    area.setFrameShape(QScrollArea.Shape.NoFrame)
    return area


def add_extra_docks(window, area) -> list[QDockWidget]:
    """Create the Procurement planner, Calculators and Trace docks on ``window`` (a MainWindow) in ``area``,
    tabbed with its analysis panels, each built the first time its tab is shown or its widget asked for
    (``window.planner``, ``window.calculators``, ``window.trace_panel``); returns the docks."""
    ws = window.workspace

    def planner() -> QWidget:
        from .planner.planner_panel import PlannerPanel

        return PlannerPanel(ws)

    def calculators() -> QWidget:
        from .calculators.panel import CalculatorsPanel

        panel = CalculatorsPanel()
        window.calculator_devices = CalculatorDevices(ws, panel)
        return _scrolling(panel)

    def trace() -> QWidget:
        from .traces.panel import TracePanel

        return TracePanel(ws)

    docks: list[QDockWidget] = []
    for title, name, factory in (("Procurement planner", "planner_dock", planner),
                                 ("Calculators", "calculators_dock", calculators),
                                 ("Trace", "trace_dock", trace)):
        dock = window._add_dock(title, name, LazyDock(title, factory, window), area)
        group = [*window.panel_docks, *docks]
        if group:
            window.tabifyDockWidget(group[-1], dock)
        docks.append(dock)
    return docks
