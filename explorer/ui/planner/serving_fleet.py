"""The planner's serving rows: the Serving panel's workload and service levels as a requirement, and per device the
fewest replicas meeting them and their cost (``workspace.results.serving_fleet``; docs/serving.md)."""

from __future__ import annotations

import math

from PySide6.QtCore import QTimer
from PySide6.QtWidgets import (
    QAbstractItemView,
    QGroupBox,
    QHeaderView,
    QLabel,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
)

from ..binding import bind_many
from ..panels.serving_worker import Estimator

HEADERS = ("device", "rate per replica\nat the service levels (req/s)", "replicas", "price per device\n(USD)",
           "capital\n(USD)", "TCO over the horizon\n(USD)", "owned\n(USD/M tokens)", "rented\n(USD/M tokens)",
           "note")
TIPS = ("The device; one replica per device",
        "The highest arrival rate one replica serves meeting every service level [requests/s] (analytic estimate)",
        "ceil(workload rate / rate per replica)",
        "The planner's quote, else the catalog's list price [USD]", "replicas x price per device [USD]",
        "capital + electricity at TDP for the busy share of the time, x PUE, over the horizon [USD]",
        "TCO per million output tokens served over the horizon [USD per million tokens]",
        "replicas x the catalog's cloud price per hour, per million output tokens [USD per million tokens]",
        "Why a row has no answer or no cost")


def _cell(v) -> str:
    if isinstance(v, str):
        return v
    if not math.isfinite(v):
        return "\u2014"
    return f"{v:,.4g}" if abs(v) < 1e3 else f"{v:,.0f}"


class ServingFleetBox(QGroupBox):
    """Read-only: edit the workload and service levels in the Serving panel, the quotes above."""

    def __init__(self, workspace, parent=None):
        super().__init__("Serving: replicas per device", parent)  # short: the planner keeps under 400 px
        self.setToolTip("Replicas per device for the Serving panel's workload and service levels")
        self.workspace = workspace
        self.setObjectName("serving_fleet")
        lay = QVBoxLayout(self)
        self.caption = QLabel()
        self.caption.setWordWrap(True)
        lay.addWidget(self.caption)
        self.table = QTableWidget(0, len(HEADERS))
        self.table.setHorizontalHeaderLabels(list(HEADERS))
        for j, tip in enumerate(TIPS):
            self.table.horizontalHeaderItem(j).setToolTip(tip)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.verticalHeader().setVisible(False)
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.table.setMinimumHeight(110)
        lay.addWidget(self.table)
        self.rows: tuple = ()
        self._stale = True
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(0)
        self._timer.timeout.connect(self.refresh)
        # sized on a worker thread when it would build surfaces or search (a model edit), at once when kept
        self.estimator = Estimator(workspace, "serving_fleet", self)
        self.estimator.ready.connect(self._timer.start)
        bind_many(self, [(workspace.analysis_updated, lambda _a: self._timer.start())])
        self._timer.start()

    def showEvent(self, event) -> None:
        super().showEvent(event)
        if self._stale:
            self._timer.start()

    def refresh(self) -> None:
        """Size the fleet now when the box is on screen (an edit elsewhere costs nothing until it is seen)."""
        self._stale = not self.isVisible()
        if self._stale:
            return
        ws = self.workspace
        choice = ws.results.serving_choice
        self.rows, error, busy = self.estimator.get()
        if error:
            error = f"Not sized: {error}."
        elif busy:
            n = len(ws.devices)
            error = f"Sizing the serving fleet on {n} device{'s' if n != 1 else ''}\u2026"
        a = ws.assumptions
        self.caption.setText(
            error or (f"Workload: {choice.describe()}. " + (
                f"Owned cost over {a.years:g} years at {a.electricity_usd_per_kwh:g} USD/kWh and PUE {a.pue:g}; "
                "cheapest first." if self.rows else "Select one or more devices to size a serving fleet.")))
        self.table.setRowCount(len(self.rows))
        for i, r in enumerate(self.rows):
            values = (r.name, r.slo_rate if r.feasible else "none", r.replicas if r.feasible else "\u2014",
                      r.price_per_device, r.capital, r.tco, r.cost_per_million, r.rented_per_million, r.reason)
            for j, v in enumerate(values):
                item = QTableWidgetItem(str(v) if isinstance(v, int) else _cell(v))
                item.setToolTip(TIPS[j])
                self.table.setItem(i, j, item)
