"""The planner's systems section: the fleet each system chosen in the Systems panel needs, with real layouts.

It maps ``workspace.results.system_plan`` (:func:`explorer.core.parallel.sizing.size_fleet` over every valid
layout of each system, as ``hwexplorer plan --system``) to one row per system: the layout needing the fewest
devices that fits and meets the latency limit, its replicas, devices, nodes, communication share and capital. It
replaces the device table's even split (``ceil(memory / capacity)`` units at no communication cost) for those
systems. Units are in every header and tooltip.
"""

from __future__ import annotations

import math

from PySide6.QtCore import Qt
from PySide6.QtGui import QBrush, QColor
from PySide6.QtWidgets import QLabel, QTableWidget, QTableWidgetItem, QVBoxLayout, QWidget

from explorer.core.analysis.batch_search import DEFAULT_CAP
from explorer.core.analysis.procurement import format_usd
from explorer.core.parallel.sizing import NOT_PRICED, SystemPlan

DASH = "\u2014"
PASS, FAIL = "#1B7F3B", "#B00020"
EMPTY = "Choose systems in the Systems panel to size the fleet on them with real parallel layouts."


def columns(rate_unit: str) -> tuple[tuple[str, str], ...]:
    """(header, tooltip) of each column; ``rate_unit`` tokens/s (decode) or inferences/s (prefill)."""
    return (
        ("System", "The system (a node, rack or slice of the catalog), as a cluster of the Systems panel's nodes"),
        ("Layout\n[degrees]", ("The layout needing the fewest devices that holds the model and meets the latency "
                              "limit: tensor (TP), pipeline (PP), expert (EP) and data (DP) parallel degrees, m: "
                              "micro-batches")),
        ("Replica\n[devices]", "Devices per replica = TP \u00d7 PP"),
        (f"Per replica\n[{rate_unit}]", f"What one replica delivers, in {rate_unit}: the layout's throughput / DP"),
        ("Latency\n[ms]", "Step latency of the layout in milliseconds (per decode step, or per inference)"),
        ("Comm. share\n[%]", "Exposed communication (collectives and pipeline sends) as a percentage of the step"),
        ("Replicas\n[count]", "ceil(target / per-replica rate); one without a target"),
        ("Devices\n[count]", "Replicas \u00d7 devices per replica"),
        ("Nodes\n[count]", "ceil(devices / devices per node)"),
        ("Price/device\n[USD]", "Your quote for the device (in the quotes above), else the catalog's list price"),
        ("Capital\n[USD]", "Devices \u00d7 price per device; " + NOT_PRICED),
        ("Feasible", "Whether a layout holds the model in device memory and meets the latency limit"),
    )


def _g(x: float, digits: int = 4) -> str:
    return DASH if not math.isfinite(x) else f"{x:,.{digits}g}" if abs(x) < 1e4 else f"{x:,.0f}"


def plan_cells(p: SystemPlan) -> list[str]:
    """The row of one system plan as shown (a pure function, tested against sizing's numbers)."""
    layout = p.layout.label() if p.layout is not None else DASH
    layout += f" @ batch {p.batch}" if p.batch and p.layout is not None else ""
    verdict = "yes" if p.feasible else f"NO: {p.reason}"
    return [p.name.split(" (")[0], layout, str(p.replica_devices) if p.replica_devices else DASH, _g(p.replica_throughput),
            _g(p.latency * 1e3), _g(100 * p.comm_share, 3), str(p.replicas) if p.replicas else DASH,
            str(p.devices) if p.devices else DASH, str(p.nodes) if p.nodes else DASH,
            format_usd(p.price_per_device), format_usd(p.capital), verdict]


class SystemPlanTable(QWidget):
    """A title, a note and one row per chosen system."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.plans: tuple[SystemPlan, ...] = ()
        self.title = QLabel("<b>Systems</b> (from the Systems panel; fleet sized with real parallel layouts)")
        self.note = QLabel(EMPTY)
        self.note.setWordWrap(True)
        self.table = QTableWidget(0, 0)
        self.table.verticalHeader().hide()
        self.table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        self.table.setWordWrap(False)
        self.table.horizontalHeader().setStretchLastSection(True)
        self.table.setMinimumHeight(90)
        self._set_columns("tokens/s")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 4, 0, 0)
        layout.setSpacing(2)
        layout.addWidget(self.title)
        layout.addWidget(self.note)
        layout.addWidget(self.table, 1)

    def _set_columns(self, rate_unit: str) -> None:
        cols = columns(rate_unit)
        self.table.setColumnCount(len(cols))
        for i, (header, tip) in enumerate(cols):
            item = QTableWidgetItem(header)
            item.setToolTip(tip)
            self.table.setHorizontalHeaderItem(i, item)

    def headers(self) -> list[str]:
        """The column titles on one line each (they are shown on two: the name over its unit)."""
        return [self.table.horizontalHeaderItem(i).text().replace("\n", " ") for i in range(self.table.columnCount())]

    def cells(self, row: int) -> list[str]:
        return [self.table.item(row, c).text() for c in range(self.table.columnCount())]

    def show_plans(self, plans: tuple[SystemPlan, ...], rate_unit: str, message: str = "",
                   why: tuple[str, ...] = ()) -> None:
        """Show ``plans`` (empty: ``message``, or the hint to choose systems); ``why``: per plan, why a batch
        search chose its batch and layout (the layout cell's tooltip)."""
        self.plans = plans
        self._set_columns(rate_unit)
        self.table.setRowCount(len(plans))
        for r, p in enumerate(plans):
            for c, text in enumerate(plan_cells(p)):
                item = QTableWidgetItem(text)
                if 2 <= c <= 10:  # numbers
                    item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
                if c == 0 or c == self.table.columnCount() - 1:
                    item.setForeground(QBrush(QColor(PASS if p.feasible else FAIL)))
                    reason = f": {p.reason}" if p.reason else ""
                    item.setToolTip(f"{p.name} ({p.system_id}), {p.devices} x {p.device_id}{reason}")
                if c == 1 and r < len(why):
                    item.setToolTip(why[r])
                self.table.setItem(r, c, item)
        if plans:
            self.table.resizeColumnsToContents()
        searched = f" and every power-of-two batch up to {DEFAULT_CAP}" if why else ""
        self.note.setText(message or (EMPTY if not plans else
                                      "Replicas = ceil(target / per-replica rate); devices = replicas \u00d7 TP "
                                      f"\u00d7 PP, over every valid layout{searched} of each system (the Systems "
                                      f"panel's chosen layout is not imposed); {NOT_PRICED}."
                                      + (" Hover a layout for why its batch was chosen." if why else "")))
