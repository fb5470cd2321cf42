"""The planner's serving rows: the Serving panel's workload and service levels as a requirement, and per device and per
system chosen in the Systems panel the fewest replicas meeting them and their cost, cheapest first
(``workspace.results.serving_fleet``; for systems ``workspace.results.serving_systems``, as ``hwexplorer plan --rate
... --system S``: every serving layout sized, the cheapest kept; docs/serving.md)."""

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

from explorer.core.serving.fleet import rank_key

from ..binding import bind_many
from ..panels.serving_worker import Estimator
from ..panels.systems_controls import short_name

HEADERS = ("device or system", "replica\n(devices)", "rate per replica\nat the service levels (req/s)", "replicas",
           "devices", "price per device\n(USD)", "capital\n(USD)", "TCO over the horizon\n(USD)",
           "owned\n(USD/M tokens)", "rented\n(USD/M tokens)", "note")
TIPS = ("The device (one replica per device), or the system chosen in the Systems panel (its nodes, its "
        "communication options)",
        ("What one replica is: one device, or the system's chosen serving layout of tp x pp devices (the cheapest "
         "owned USD per million output tokens of those searched, then the fewest devices) [devices]"),
        "The highest arrival rate one replica serves meeting every service level [requests/s] (analytic estimate)",
        "ceil(workload rate / rate per replica)", "replicas x devices per replica [devices]",
        "The planner's quote, else the catalog's list price [USD]", "devices x price per device [USD]",
        "capital + electricity at TDP for the busy share of the time, x PUE, over the horizon [USD]",
        "TCO per million output tokens served over the horizon [USD per million tokens]",
        "devices x the catalog's cloud price per hour, per million output tokens [USD per million tokens]",
        "Why a row has no answer or no cost")
NONE = "\u2014"


def _cell(v) -> str:
    if isinstance(v, str):
        return v
    if isinstance(v, int):
        return str(v)
    if not math.isfinite(v):
        return NONE
    return f"{v:,.4g}" if abs(v) < 1e3 else f"{v:,.0f}"


def fleet_cells(rows, systems=()) -> list[tuple]:
    """The table's rows, cheapest first over devices and systems together: one per device's fleet (``rows``:
    :class:`~explorer.core.serving.fleet.FleetRow`) and one per system's chosen layout (``systems``:
    :class:`~explorer.core.serving.system_serving.SystemServing`), in the headers' units."""
    entries = [(r, r.name, "1 device", r.replicas if r.feasible else None, r.reason) for r in rows]
    entries += [(s.fleet, short_name(s.system), f"{s.label} ({s.chosen.replica_devices})",
                 s.chosen.devices if s.chosen.feasible else None, s.reason) for s in systems]
    # a system whose layouts leave no room for a KV cache (no fleet at all) goes last
    entries.sort(key=lambda e: (e[0] is None, rank_key(e[0]) if e[0] is not None else ()))
    out = []
    for r, name, replica, devices, reason in entries:
        if r is None:
            out.append((name, NONE, "none", *(NONE,) * 7, reason))
            continue
        out.append((name, replica, r.slo_rate if r.feasible else "none", r.replicas if r.feasible else NONE,
                    devices if devices is not None else NONE, r.price_per_device, r.capital, r.tco,
                    r.cost_per_million, r.rented_per_million, reason))
    return out


class ServingFleetBox(QGroupBox):
    """Read-only: edit the workload and service levels in the Serving panel, the systems in the Systems panel, the
    quotes above."""

    def __init__(self, workspace, parent=None):
        super().__init__("Serving: replicas per device or system", parent)  # short: the planner keeps under 400 px
        self.setToolTip("Replicas per device, and per system chosen in the Systems panel (its cheapest serving "
                        "layout), for the Serving panel's workload and service levels")
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
        self.systems: tuple = ()
        self._stale = True
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(0)
        self._timer.timeout.connect(self.refresh)
        # sized on a worker thread when it would build surfaces or search (a model edit), at once when kept
        self.estimator = Estimator(workspace, "serving_fleet", self)
        self.estimator.ready.connect(self._timer.start)
        # the chosen systems: every serving layout through the system pass (~0.5 s each), on a worker too
        self.system_estimator = Estimator(workspace, "serving_systems", self)
        self.system_estimator.ready.connect(self._timer.start)
        bind_many(self, [(workspace.analysis_updated, lambda _a: self._timer.start())])
        self._timer.start()

    def _times(self) -> str:
        """Where the sized rows' step times come from (the Times switch; docs/calibration.md)."""
        ws = self.workspace
        if ws.assumptions.time_model == "ideal":
            return " Times: the ideal model (spec)."
        setups = ws.results.serving_setups if self.rows else ()  # kept: the rows were sized from them
        by_id = {d.id: s for d, s in zip(ws.devices, setups)}  # the rows are ranked, not in the devices' order
        rows = [(r.name, by_id[r.device_id].time_source) for r in self.rows if r.device_id in by_id]
        rows += [(short_name(s.system), s.answer.setup.time_source) for s in self.systems if s.answer is not None]
        return " Times: the calibrated model" + (" (" + "; ".join(f"{n}: {t}" for n, t in rows) + ")"
                                                  if rows else "") + "."

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
        self.systems, sys_error, sys_busy = self.system_estimator.get()
        n, k = len(ws.devices), len(ws.results.hardware)
        errors = [f"Not sized: {e}." for e in dict.fromkeys((error, sys_error)) if e]
        if busy or sys_busy:
            what = ([f"{n} device{'s' if n != 1 else ''}"] if busy else []) + (
                [f"{k} system{'s' if k != 1 else ''} (every serving layout)"] if sys_busy else [])
            errors.append("Sizing the serving fleet on " + " and ".join(what) + "\u2026")
        a = ws.assumptions
        cells = fleet_cells(self.rows, self.systems)
        self.caption.setText(" ".join(errors) or (f"Workload: {choice.describe()}. " + (
            f"Owned cost over {a.years:g} years at {a.electricity_usd_per_kwh:g} USD/kWh and PUE {a.pue:g}; "
            "cheapest first; a system's replica is its cheapest serving layout." + self._times() if cells else
            "Select one or more devices, or systems in the Systems panel, to size a serving fleet.")))
        self.table.setRowCount(len(cells))
        for i, values in enumerate(cells):
            for j, v in enumerate(values):
                item = QTableWidgetItem(_cell(v))
                item.setToolTip(TIPS[j] if j < len(TIPS) - 1 or not v else f"{TIPS[j]}: {v}")
                self.table.setItem(i, j, item)
