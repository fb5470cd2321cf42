"""Model settings: the model's name and input (``SetModel``), and the assumptions every analysis uses:
precision, batch, sequence length and phase (the toolbar's editors, :mod:`~explorer.ui.widgets.assumption_editors`)
and the cost figures (``SetAssumptions``). All undoable."""

from __future__ import annotations

from dataclasses import replace

from PySide6.QtCore import QSignalBlocker
from PySide6.QtWidgets import (
    QComboBox,
    QDoubleSpinBox,
    QFormLayout,
    QGroupBox,
    QLineEdit,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from explorer.core.session.commands import SetModel
from explorer.core.session.workspace import Workspace
from explorer.core.workload.model import INPUT_FORMS
from explorer.core.workload.templates import edited_name

from ..binding import bind
from ..widgets.assumption_editors import AssumptionEditors, set_assumptions
from .edits import carried_widths

FORM_LABELS = ("Image (C, H, W)", "Token embeddings (S, H)", "Token ids (S)", "Feature vector (F)")
INPUT_DEFAULTS = {"channels": 3, "height": 224, "width": 224, "tokens": 128, "hidden": 768, "features": 512}
INPUT_TIPS = {"channels": "image channels", "height": "image height (pixels)", "width": "image width (pixels)",
              "tokens": "tokens per sequence (the default sequence length)", "hidden": "hidden size per token",
              "features": "input features per sample"}
BIG = 100_000_000


def _spin(minimum: int, maximum: int, tip: str) -> QSpinBox:
    spin = QSpinBox(minimum=minimum, maximum=maximum, keyboardTracking=False)
    spin.setGroupSeparatorShown(True)
    spin.setToolTip(tip)
    return spin


def _double(minimum: float, maximum: float, step: float, decimals: int, suffix: str, tip: str) -> QDoubleSpinBox:
    spin = QDoubleSpinBox(minimum=minimum, maximum=maximum, singleStep=step, decimals=decimals, suffix=suffix,
                          keyboardTracking=False)
    spin.setToolTip(tip)
    return spin


def _fit_narrow_column(widget: QWidget, forms) -> None:
    """The settings live in the left column: combo boxes as wide as their longest choice ("naive (scores through
    memory)") made the form wider than the column, which clipped the fields on the right. They take the field's
    width instead (a long choice is elided, and shown whole in the open list)."""
    for form in forms:
        form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
    for combo in widget.findChildren(QComboBox):
        combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        combo.setMinimumContentsLength(8)


class ModelSettings(QWidget):
    def __init__(self, workspace: Workspace, parent=None):
        super().__init__(parent)
        self.ws = workspace
        self.name_edit = QLineEdit()
        self.name_edit.editingFinished.connect(self._commit_name)
        self.form_combo = QComboBox()
        self.form_combo.addItems(FORM_LABELS)
        self.form_combo.activated.connect(self._commit_form)
        self.input_spins = {k: _spin(1, BIG, INPUT_TIPS[k]) for k in INPUT_DEFAULTS}
        for key, spin in self.input_spins.items():
            spin.valueChanged.connect(lambda v, key=key: self._commit_input(key, int(v)))
        self.run = AssumptionEditors(workspace, self)
        self.precision, self.batch, self.seq_len, self.phase = (
            self.run.precision, self.run.batch, self.run.seq_len, self.run.phase)
        self.electricity = _double(0.001, 10.0, 0.01, 3, " USD/kWh", "electricity price (US dollars only)")
        self.electricity.valueChanged.connect(lambda v: self._set(electricity_usd_per_kwh=float(v)))
        self.pue = _double(1.0, 5.0, 0.05, 2, "", "power usage effectiveness: facility power / IT power (>= 1)")
        self.pue.valueChanged.connect(lambda v: self._set(pue=float(v)))
        self.utilization = _double(1.0, 100.0, 5.0, 1, " %", "duty cycle for TCO and cost per million")
        self.utilization.valueChanged.connect(lambda v: self._set(utilization=float(v) / 100.0))
        self.years = _double(0.25, 50.0, 0.5, 2, " years", "years of ownership for TCO")
        self.years.valueChanged.connect(lambda v: self._set(years=float(v)))

        model_box = QGroupBox("Model")
        self.model_form = QFormLayout(model_box)
        self.model_form.setRowWrapPolicy(QFormLayout.RowWrapPolicy.WrapLongRows)
        self.model_form.addRow("Name", self.name_edit)
        self.model_form.addRow("Input", self.form_combo)
        for key, spin in self.input_spins.items():
            self.model_form.addRow(key.capitalize(), spin)
        run_box = QGroupBox("Run")
        run_form = QFormLayout(run_box)
        run_form.setRowWrapPolicy(QFormLayout.RowWrapPolicy.WrapLongRows)
        for label, widget in self.run.rows():
            run_form.addRow(label, widget)
        cost_box = QGroupBox("Cost")
        cost_form = QFormLayout(cost_box)
        cost_form.setRowWrapPolicy(QFormLayout.RowWrapPolicy.WrapLongRows)
        cost_form.addRow("Electricity", self.electricity)
        cost_form.addRow("PUE", self.pue)
        cost_form.addRow("Utilization", self.utilization)
        cost_form.addRow("Ownership", self.years)
        layout = QVBoxLayout(self)
        for box in (model_box, run_box, cost_box):
            layout.addWidget(box)
        layout.addStretch(1)
        _fit_narrow_column(self, (self.model_form, run_form, cost_form))
        bind(self, workspace.changed, self._on_changed)
        self.refresh()

    # -- showing the workspace
    def _on_changed(self, changes) -> None:
        if changes & {"input", "model", "assumptions", "layers"}:  # the run editors follow on their own
            self.refresh()

    def refresh(self) -> None:
        model, a = self.ws.model, self.ws.assumptions
        inp = model.input_dict
        form = next(i for i, f in enumerate(INPUT_FORMS) if set(f) == set(inp))
        widgets = [self.name_edit, self.form_combo, *self.input_spins.values(), self.electricity, self.pue,
                   self.utilization, self.years]
        blockers = [QSignalBlocker(w) for w in widgets]
        try:
            if not self.name_edit.hasFocus():
                self.name_edit.setText(model.name)
            self.form_combo.setCurrentIndex(form)
            for key, spin in self.input_spins.items():
                self.model_form.setRowVisible(spin, key in inp)
                spin.setValue(inp.get(key, INPUT_DEFAULTS[key]))
            self.electricity.setValue(a.electricity_usd_per_kwh)
            self.pue.setValue(a.pue)
            self.utilization.setValue(a.utilization * 100.0)
            self.years.setValue(a.years)
        finally:
            del blockers

    # -- edits as commands
    def _set(self, **values) -> None:
        if not set_assumptions(self.ws, **values):
            self.refresh()

    def _set_model(self, model, text: str) -> None:
        if model != self.ws.model:
            self.ws.execute(SetModel(model, text=text))

    def _commit_name(self) -> None:
        name = self.name_edit.text().strip()
        if not name:
            self.name_edit.setText(self.ws.model.name)
            return
        self._set_model(replace(self.ws.model, name=name), f"rename model to {name}")

    def _commit_form(self, index: int) -> None:
        old = self.ws.model.input_dict
        new = {k: old.get(k, INPUT_DEFAULTS[k]) for k in INPUT_FORMS[index]}
        self._set_model(replace(self.ws.model, input=tuple(new.items())), f"input {FORM_LABELS[index]}")

    def _commit_input(self, key: str, value: int) -> None:
        inp = self.ws.model.input_dict
        if key in inp and inp[key] != value:
            inp[key] = value
            model = replace(self.ws.model, input=tuple(inp.items()))
            carried = carried_widths(self.ws.model, model, self.ws.context)  # lm_head.in_features follows hidden
            if carried:
                layers = tuple(carried.get(i, spec) for i, spec in enumerate(model.layers))
                model = replace(model, name=edited_name(model.name, layers), layers=layers)
            self._set_model(model, f"input {key} {value}")
