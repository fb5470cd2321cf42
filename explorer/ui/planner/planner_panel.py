"""The procurement planner panel: requirements in, the chapter's checks, units, costs and a ranking out.

The requirements and quotes are the session's (``workspace.requirements``, saved in the project): an edit of a
field becomes a ``SetRequirements`` command (consecutive edits of one field make one undo step), and an undo, a
redo or an opened project fills the fields again. The table shows ``workspace.results.plan`` (no re-evaluation;
the plan is cheap), refreshed through a zero-interval single-shot timer, so a burst of edits plans once. Under it,
when systems are chosen (the Systems panel), :mod:`.systems_plan` sizes the fleet on each with real layouts
(``workspace.results.system_plan``, as ``hwexplorer plan --system``).
"""

from __future__ import annotations

import datetime
import functools
import math

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QBrush, QColor
from PySide6.QtWidgets import (
    QComboBox,
    QDoubleSpinBox,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QPushButton,
    QSizePolicy,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from explorer.core.analysis.procurement import PlanResult, Requirements, format_usd, parse_rate
from explorer.core.money import parse_money
from explorer.core.session.commands import SetRequirements
from explorer.core.units import UnitError, format_si
from explorer.ui.binding import bind_many
from explorer.ui.planner.override_marks import OVERRIDDEN_MARK, override_actions, overridden_tip, show_menu
from explorer.ui.planner.batch_choice import BatchSearchChoice, searched_plan, searched_system_plan
from explorer.ui.planner.quote_cells import mark_cell, store_fields
from explorer.ui.planner.rank_choice import RankChoice
from explorer.ui.widgets.on_screen import OnScreenUpdate
from explorer.ui.widgets.quantity_edit import ERROR_STYLE, QuantityEdit
from explorer.ui.widgets.vertical_scroll import VerticalScrollArea

from .serving_fleet import ServingFleetBox
from .systems_plan import SystemPlanTable

STATUS_COLORS = {"pass": "#1B7F3B", "fail": "#B00020", "n/a": "#6B6B6B", "unknown": "#9A6700", "split": "#1F5FA8"}
STATUS_FILL = {"pass": "#E6F4EA", "fail": "#FCE8EA", "n/a": "#F1F1F1", "unknown": "#FFF4DB", "split": "#E8F0FB"}
RESULT_COLUMNS = ("#", "Device", "Units", "Memory", "Latency floor", "Compute", "Capital", "Electricity", "TCO",
                  "Buy or rent", "Reason")
QUOTE_COLUMNS = ("Device", "Price quote (USD)", "Cloud price (USD/h)")


class PlannerPanel(QWidget):
    """Requirement fields, per-device quotes, and a results table with pass/fail colours and reasons."""

    planned = Signal(object)  # the new PlanResult, or None when there is nothing to plan

    def __init__(self, workspace, parent=None):
        super().__init__(parent)
        self.workspace = workspace
        self.setObjectName("PlannerPanel")
        self.result: PlanResult | None = None
        content = QWidget()  # in a scroll area, which covers the panel: the content is what is on screen
        self.updates = OnScreenUpdate(content, self.replan)  # planned when on screen (not behind another tab)

        # the contents scroll down in a short dock instead of setting the main window's minimum height
        shell = QVBoxLayout(self)
        shell.setContentsMargins(0, 0, 0, 0)
        shell.addWidget(VerticalScrollArea(content))
        outer = QVBoxLayout(content)
        outer.setContentsMargins(4, 4, 4, 4)
        top = QHBoxLayout()
        outer.addLayout(top)
        box = QGroupBox("Requirements")
        form = QFormLayout(box)
        self.target = QLineEdit()
        self.target.setPlaceholderText("e.g. 2000 tokens/s or 500 inferences/s")
        self.target.setAccessibleName("Target throughput")
        self.target_error = QLabel()
        self.target_error.setStyleSheet(ERROR_STYLE)
        self.target_error.setWordWrap(True)  # unwrapped, a long reason widened the dock area (and kept it wide)
        self.target_error.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Minimum)
        self.target_error.setMinimumWidth(1)
        self.target_error.hide()
        target_box = QVBoxLayout()
        target_box.setSpacing(1)
        target_box.addWidget(self.target)
        target_box.addWidget(self.target_error)
        form.addRow("Target throughput", target_box)
        self.latency = QuantityEdit("time", "Latency limit", check_range=False)
        form.addRow("Latency limit", self.latency)
        self.budget = QuantityEdit("money", "Budget", check_range=False)
        self.budget_covers = QComboBox()
        self.budget_covers.addItems(["capital", "tco"])
        row = QHBoxLayout()
        row.addWidget(self.budget, 1)
        row.addWidget(self.budget_covers)
        form.addRow("Budget", row)
        self.power_cap = QuantityEdit("power", "Power cap", check_range=False)
        self.power_scope = QComboBox()
        self.power_scope.addItems(["site", "node"])
        row = QHBoxLayout()
        row.addWidget(self.power_cap, 1)
        row.addWidget(self.power_scope)
        form.addRow("Power cap", row)
        a = workspace.assumptions
        self.years = QDoubleSpinBox(minimum=0.25, maximum=30.0, singleStep=0.5, value=a.years, suffix=" years")
        form.addRow("Horizon", self.years)
        self.electricity = QuantityEdit("energy_price", "Electricity price", f"{a.electricity_usd_per_kwh:g} USD/kWh",
                                        check_range=False)
        form.addRow("Electricity", self.electricity)
        self.pue = QDoubleSpinBox(minimum=1.0, maximum=3.0, singleStep=0.05, value=a.pue, decimals=2)
        form.addRow("PUE", self.pue)
        self.rank_by = RankChoice(workspace)
        form.addRow("Rank by", self.rank_by)
        self.search_batch = BatchSearchChoice()
        self.search_batch.toggled.connect(lambda _on: self.replan())
        form.addRow("Batch", self.search_batch)
        top.addWidget(box, 1)
        quotes_box = QGroupBox("Quotes")
        quotes_box.setToolTip("Prices you were quoted override the catalog's; an empty cell keeps the catalog figure")
        quotes_layout = QVBoxLayout(quotes_box)
        self.quotes = QTableWidget(0, len(QUOTE_COLUMNS))
        self.quotes.setHorizontalHeaderLabels(QUOTE_COLUMNS)
        self.quotes.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Stretch)
        self.quotes.verticalHeader().hide()
        self.quotes.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)  # "use the catalog's figures"
        self.quotes.customContextMenuRequested.connect(self._quotes_menu)
        quotes_layout.addWidget(self.quotes)
        self.quote_error = QLabel()
        self.quote_error.setStyleSheet(ERROR_STYLE)
        self.quote_error.setWordWrap(True)
        self.quote_error.hide()
        quotes_layout.addWidget(self.quote_error)
        top.addWidget(quotes_box, 1)

        self.message = QLabel()
        self.message.setWordWrap(True)
        self.switch_phase = QPushButton()
        self.switch_phase.hide()
        self.switch_phase.clicked.connect(self._switch_phase)
        msg_row = QHBoxLayout()
        msg_row.addWidget(self.message, 1)
        msg_row.addWidget(self.switch_phase)
        outer.addLayout(msg_row)
        self.table = QTableWidget(0, len(RESULT_COLUMNS))
        self.table.setHorizontalHeaderLabels(RESULT_COLUMNS)
        self.table.verticalHeader().hide()
        self.table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        self.table.setWordWrap(False)  # one line per device; the reason's full text is in its tooltip
        # columns are fitted once per plan (ResizeToContents would measure the whole column on every cell set)
        self.table.horizontalHeader().setStretchLastSection(True)
        outer.addWidget(self.table, 1)
        self.systems_plan = SystemPlanTable()
        self.systems_plan.setVisible(False)  # shown while systems are chosen
        outer.addWidget(self.systems_plan, 1)
        self.serving_fleet = ServingFleetBox(workspace, self)  # the serving rows (explorer/ui/planner/serving_fleet.py)
        outer.addWidget(self.serving_fleet)

        self._edited_field = ""  # the field the user changed since the last commit ('' for none)
        self.target.textChanged.connect(functools.partial(self._edited, "target"))
        for name, edit in (("latency", self.latency), ("budget", self.budget), ("power cap", self.power_cap),
                           ("electricity price", self.electricity)):
            edit.value_changed.connect(functools.partial(self._edited, name))
        for name, combo in (("budget basis", self.budget_covers), ("power scope", self.power_scope)):
            combo.currentIndexChanged.connect(functools.partial(self._edited, name))
        for name, spin in (("horizon", self.years), ("PUE", self.pue)):
            spin.valueChanged.connect(functools.partial(self._edited, name))
        self.quotes.itemChanged.connect(functools.partial(self._edited, "quotes"))
        bind_many(self, [(workspace.analysis_updated, self._on_analysis), (workspace.changed, self._on_changed)])
        self._sync_quote_rows()
        self.show_requirements(workspace.requirements)
        self.schedule()

    # -- scheduling
    @property
    def pending(self) -> bool:
        return self.updates.pending

    def schedule(self, *_args) -> None:
        self.updates.request()

    def _on_analysis(self, _analysis) -> None:
        self._sync_quote_rows()
        self.schedule()

    # -- the session's requirements: the fields edit them (SetRequirements) and show them after undo, redo, open
    def _edited(self, field: str, *_args) -> None:
        self._edited_field = field
        self.schedule()

    def commit(self) -> None:
        """Make the fields' requirements the session's, as one undoable edit (a run of edits of one field merges
        into one), when the user changed a field, every field is valid and they differ."""
        field, self._edited_field = self._edited_field, ""
        if not field:
            return
        req = self.requirements()
        if req is None or req == self.workspace.requirements.with_defaults(self.workspace.assumptions):
            return
        self.workspace.execute(SetRequirements(req, text=f"edit {field}", merge_key=f"requirements.{field}"))

    def _on_changed(self, changes) -> None:
        if "requirements" in changes and self.requirements() != self.workspace.requirements.with_defaults(self.workspace.assumptions):
            self.show_requirements(self.workspace.requirements)

    def show_requirements(self, req: Requirements) -> None:
        """Fill the fields with ``req`` (an undo, a redo, an opened project), without committing them again."""
        req = req.with_defaults(self.workspace.assumptions)
        widgets = (self.target, self.latency, self.budget, self.budget_covers, self.power_cap, self.power_scope,
                   self.years, self.electricity, self.pue, self.quotes)
        blocked = [w.blockSignals(True) for w in widgets]
        try:
            if (req.target, req.target_unit) != self._target():  # fields that hold the value keep their text
                self.target.setText("" if req.target is None else f"{req.target:g} {req.target_unit}")
            for edit, value, text in (
                    (self.latency, req.latency, lambda v: format_si(v, "s", 12)),
                    (self.budget, req.budget, lambda v: f"{v:.12g} USD"),
                    (self.power_cap, req.power_cap, lambda v: format_si(v, "W", 12)),
                    (self.electricity, req.electricity_usd_per_kwh, lambda v: f"{v:.12g} USD/kWh")):
                now = edit.value() if edit.is_valid() else float("nan")
                if edit is self.electricity and now is not None:
                    now = float(f"{now * 3.6e6:.12g}")
                if now != value:
                    edit.setText("" if value is None else text(value))
            self.budget_covers.setCurrentText(req.budget_covers)
            self.power_scope.setCurrentText(req.power_scope)
            self.years.setValue(req.years)
            self.pue.setValue(req.pue)
            self._sync_quote_rows()
            for r in range(self.quotes.rowCount()):
                price, cloud = self._quote_texts(req, self.quotes.item(r, 0).data(Qt.ItemDataRole.UserRole))
                self.quotes.item(r, 1).setText(price)
                self.quotes.item(r, 2).setText(cloud)
        finally:
            for w, was in zip(widgets, blocked):
                w.blockSignals(was)
        self.requirements()  # shows (or clears) the fields' errors
        self._edited_field = ""
        self.schedule()

    # -- requirements from the fields
    def _sync_quote_rows(self) -> None:
        devices = self.workspace.devices
        known = {self.quotes.item(r, 0).data(Qt.ItemDataRole.UserRole): (self.quotes.item(r, 1).text(),
                                                                          self.quotes.item(r, 2).text())
                 for r in range(self.quotes.rowCount()) if self.quotes.item(r, 0) is not None}
        self.quotes.blockSignals(True)
        self.quotes.setRowCount(len(devices))
        overrides = self.workspace.device_overrides
        for r, device in enumerate(devices):
            name = QTableWidgetItem(device.name + (OVERRIDDEN_MARK if device.id in overrides else ""))
            if device.id in overrides:  # the project's figures win over the catalog's: say which
                name.setToolTip(overridden_tip(overrides[device.id]))
            name.setData(Qt.ItemDataRole.UserRole, device.id)
            name.setFlags(name.flags() & ~Qt.ItemFlag.ItemIsEditable)
            self.quotes.setItem(r, 0, name)
            price, cloud = known.get(device.id) or self._quote_texts(self.workspace.requirements, device.id)
            self.quotes.setItem(r, 1, QTableWidgetItem(price))
            self.quotes.setItem(r, 2, QTableWidgetItem(cloud))
        self.quotes.blockSignals(False)

    def overridden_actions(self, row: int) -> list:
        """The quotes row ``row``'s context menu: "Use the catalog's figures" for an overridden device."""
        return override_actions(self.workspace, self.quotes.item(row, 0), self)

    def _quotes_menu(self, pos) -> None:
        show_menu(self.overridden_actions(self.quotes.rowAt(pos.y())), self.quotes.viewport().mapToGlobal(pos), self)

    @staticmethod
    def _quote_texts(req: Requirements, device_id: str) -> tuple[str, str]:
        """The quote cells' texts for ``device_id`` (USD; USD/h) from ``req`` ('' where none)."""
        price, cloud = req.price.get(device_id), req.cloud_price.get(device_id)
        return ("" if price is None else f"{price:.12g}", "" if cloud is None else f"{cloud * 3600:.12g}")

    def set_quote(self, device_id: str, price: str = "", cloud: str = "") -> None:
        """Enter a quote for a device (e.g. ``"30000"`` USD and ``"4.10"`` USD/h); empty keeps the catalog's."""
        for r in range(self.quotes.rowCount()):
            if self.quotes.item(r, 0).data(Qt.ItemDataRole.UserRole) == device_id:
                self.quotes.item(r, 1).setText(price)
                self.quotes.item(r, 2).setText(cloud)
                return
        raise KeyError(device_id)

    def _quotes(self) -> tuple[dict[str, float], dict[str, float], list[str]]:
        prices, clouds, errors = {}, {}, []
        for r in range(self.quotes.rowCount()):
            dev = self.quotes.item(r, 0).data(Qt.ItemDataRole.UserRole)
            for col, rate, out in ((1, False, prices), (2, True, clouds)):
                item = self.quotes.item(r, col)
                text = item.text().strip()
                error = ""
                if text:  # one reader for every money field: "30000", "$30k", "1.2M USD", "$4.10/h"
                    try:
                        usd = float(parse_money(text, QUOTE_COLUMNS[col], rate=rate, bare=True).magnitude)
                        out[dev] = usd / 3600.0 if rate else usd
                    except UnitError as exc:
                        name = self.quotes.item(r, 0).text().removesuffix(OVERRIDDEN_MARK)
                        error = f"{QUOTE_COLUMNS[col]} of {name}: {exc.reason}"
                        errors.append(error)
                mark_cell(item, error)  # a bad cell is marked and left out; the other quotes still count
        self.quote_error.setText("; ".join(errors))
        self.quote_error.setVisible(bool(errors))
        return prices, clouds, errors

    def _target(self) -> tuple[float | None, str] | None:
        """The target field's value and unit ((None, 'tokens/s') when empty; None when invalid)."""
        try:
            return parse_rate(self.target.text(), "Target throughput") if self.target.text().strip() else (
                None, "tokens/s")
        except UnitError:
            return None

    def requirements(self) -> Requirements | None:
        """The requirements the fields describe, or None while a field is invalid (its error is shown)."""
        target, unit = None, "tokens/s"
        text = self.target.text().strip()
        error = ""
        if text:
            try:
                target, unit = parse_rate(text, "Target throughput")
            except UnitError as exc:
                error = exc.reason
        self.target_error.setText(error)
        self.target_error.setVisible(bool(error))
        prices, clouds, _ = self._quotes()
        edits = (self.latency, self.budget, self.power_cap, self.electricity)
        if error or not all(e.is_valid() for e in edits):
            return None
        electricity = self.electricity.value()  # USD/J
        per_kwh = float(f"{electricity * 3.6e6:.12g}") if electricity else None
        return Requirements(
            target=target, target_unit=unit, latency=self.latency.value(), budget=self.budget.value(),
            budget_covers=self.budget_covers.currentText(), power_cap=self.power_cap.value(),
            power_scope=self.power_scope.currentText(), years=self.years.value(),
            electricity_usd_per_kwh=per_kwh, pue=self.pue.value(),
            **store_fields(self.workspace.requirements, self._shown_ids(), prices, clouds,
                           datetime.date.today().isoformat()))

    def _shown_ids(self) -> set[str]:
        return {self.quotes.item(r, 0).data(Qt.ItemDataRole.UserRole) for r in range(self.quotes.rowCount())}

    # -- planning
    def replan(self) -> None:
        self.commit()
        self.updates.cancel()
        self.switch_phase.hide()
        self._plan_systems()
        analysis = self.workspace.analysis
        if analysis is None:
            return self._show(None, "Select devices to plan a purchase.")
        req = self.requirements()
        if req is None:
            return self._show(None, "Fix the highlighted field to plan.")
        if req.target is not None and req.target_unit != analysis.totals.throughput_unit:
            phase = "decode" if req.target_unit == "tokens/s" else "prefill"
            self.switch_phase.setText(f"Switch to {phase}")
            self.switch_phase.setProperty("phase", phase)
            self.switch_phase.show()
            return self._show(None, f"The target is in {req.target_unit} but the analysis ({analysis.ctx.phase}) "
                                    f"counts {analysis.totals.throughput_unit}.")
        try:
            result = self.workspace.results.plan
            if self.search_batch.isChecked():
                result = searched_plan(self.workspace)
        except ValueError as exc:
            return self._show(None, str(exc))
        best = result.ranked[0]
        note = (f"Recommended: {best.name} \u2014 {best.reason}." if best.feasible else
                "No device meets every requirement with the figures available.")
        if req.target is None:
            note += " Enter a target throughput to size the fleet."
        self._show(result, note)

    def _plan_systems(self) -> None:
        """The systems section: ``results.system_plan`` (hidden while no system is chosen)."""
        chosen = bool(self.workspace.state.system.system_ids)
        self.systems_plan.setVisible(chosen)
        if not chosen:
            return
        unit = "tokens/s" if self.workspace.assumptions.phase == "decode" else "inferences/s"
        plans, message, why = (), "", ()
        if self.requirements() is None:
            message = "Fix the highlighted field to plan."
        else:
            try:
                plans = self.workspace.results.system_plan
                if plans and self.search_batch.isChecked():  # the batch and the layout, searched together
                    search = searched_system_plan(self.workspace)
                    plans, why = search.result, search.why
            except ValueError as exc:
                message = str(exc)
        self.systems_plan.show_plans(plans, unit, message, why)

    def _switch_phase(self) -> None:
        self.workspace.set_assumptions(phase=self.switch_phase.property("phase"))

    def _show(self, result: PlanResult | None, message: str) -> None:
        self.result = result
        self.message.setText(message)
        self.table.setRowCount(0 if result is None else len(result.devices))
        if result is not None:
            for r, d in enumerate(result.ranked):
                self._fill_row(r, d)
            self.table.resizeColumnsToContents()
        self.planned.emit(result)

    def _fill_row(self, r: int, d) -> None:
        br = "\u2014"
        if d.buy_or_rent:
            br = (f"{d.buy_or_rent} ({d.break_even_months:.1f} months)" if math.isfinite(d.break_even_months)
                  else "rent (never pays off)")
        cells = [str(d.rank), d.name, str(d.units) if d.units else "\u2014"]
        for c, (_, label) in zip(d.checks, d.verdicts):  # a split model reads SPLIT OVER N UNITS, not FAIL
            value = format_si(c.value, c.unit, 3) if math.isfinite(c.value) else ""
            cells.append(f"{label} {value}".strip())
        cells += [format_usd(d.capital), format_usd(d.energy_cost), format_usd(d.tco), br, d.reason]
        for col, text in enumerate(cells):
            item = QTableWidgetItem(text)
            if 3 <= col <= 5:
                check, (status, _) = d.checks[col - 3], d.verdicts[col - 3]
                item.setForeground(QBrush(QColor(STATUS_COLORS[status])))
                item.setBackground(QBrush(QColor(STATUS_FILL[status])))
                item.setToolTip(check.detail or f"missing: {check.missing}")
            if col == 1 or col == len(cells) - 1:
                verdict = {True: "pass", False: "fail", None: "unknown"}[d.feasible]
                item.setForeground(QBrush(QColor(STATUS_COLORS[verdict])))
                item.setToolTip(d.reason + (f"\nmissing: {', '.join(d.missing)}" if d.missing else ""))
            if col == 1 and d.id in self.workspace.device_overrides:
                item.setText(d.name + OVERRIDDEN_MARK)
                item.setToolTip(item.toolTip() + "\n" + overridden_tip(self.workspace.device_overrides[d.id]))
            self.table.setItem(r, col, item)
