"""The layer inspector: a form generated from the focused layer's ``LayerKind.params``.

Spin boxes carry the schema's minimum (a parameter whose help says what its minimum stands for, "0 = heads" or
"(-1 = padding)", shows "auto (...)" there), combos the allowed choices, check boxes the booleans. A value the
spin box refuses (a negative kernel size) is said in the error line, not dropped silently. Every edit is one
undoable command; a value equal to the default is removed from the layer rather than written out, and a width
that dense layers further on took is carried to them (:func:`~.edits.with_carried`). Whether the layer fits its
input is shown below the form, with the reason when it does not; a dense layer over a 3-D tensor says that it
applies over the last dimension and offers to insert a Flatten.
"""

from __future__ import annotations

import re
from dataclasses import replace

from PySide6.QtCore import QRegularExpression, QSignalBlocker, Qt, Signal
from PySide6.QtGui import QRegularExpressionValidator, QValidator
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QFormLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from explorer.core.session.commands import ReplaceLayer
from explorer.core.session.workspace import Workspace
from explorer.core.workload.layers import REGISTRY, Param, format_shape
from explorer.core.workload.model import LayerSpec

from ..binding import bind_many
from .defaults import layer_names
from .edits import flatten_before, last_dim_note, with_carried

INT_MAX = 2**31 - 1
NAME_PATTERN = r"[A-Za-z0-9_.\-]{0,80}"


def _auto_text(p: Param) -> str | None:
    """'auto (hidden / heads)' for a parameter whose help says what its minimum stands for: "0 = hidden / heads",
    "...; 0 = heads" or "... (-1 = padding)"; None for a parameter whose minimum is a value like any other."""
    if p.minimum is None or p.type is not int:
        return None
    stand_in = re.escape(str(int(p.minimum)))
    found = (re.match(rf"{stand_in} = (.+)$", p.help) or re.search(rf"; {stand_in} = (.+)$", p.help)
             or re.search(rf"\({stand_in} = ([^)]+)\)", p.help))
    return f"auto ({found.group(1)})" if found else None


class _SpinBox(QSpinBox):
    """A spin box that says what it refused (typing '-' into a field whose minimum is 1 is otherwise a no-op)."""

    refused = Signal(str)

    def validate(self, text, pos):
        state = super().validate(text, pos)
        result = state[0] if isinstance(state, tuple) else state
        if result == QValidator.State.Invalid:
            self.refused.emit(text)
        return state


class LayerInspector(QWidget):
    def __init__(self, workspace: Workspace, parent=None):
        super().__init__(parent)
        self.ws = workspace
        self.layer = -1
        self._kind = ""
        self.editors: dict[str, QWidget] = {}
        self.title = QLabel(textFormat=Qt.TextFormat.RichText, wordWrap=True)
        self.summary = QLabel(wordWrap=True)
        self.summary.setStyleSheet("color: palette(placeholder-text);")
        self.form = QFormLayout()
        self.form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
        self.form.setRowWrapPolicy(QFormLayout.RowWrapPolicy.WrapLongRows)
        self.shapes = QLabel(wordWrap=True)
        self.error = QLabel(wordWrap=True)
        self.error.setStyleSheet("color: #b00020;")
        self.note = QLabel(wordWrap=True)  # a layer that fits but may not do what was meant
        self.note.setStyleSheet("color: #9a6700;")
        self.flatten_button = QPushButton("Insert Flatten before")
        self.flatten_button.setToolTip("Insert a flatten layer before this one and set in_features to the flattened "
                                       "size (one undoable edit)")
        self.flatten_button.clicked.connect(self._insert_flatten)
        self.name_edit = QLineEdit()
        self.name_edit.setValidator(QRegularExpressionValidator(QRegularExpression(NAME_PATTERN), self.name_edit))
        self.name_edit.editingFinished.connect(self._commit_name)
        self.repeat_spin = QSpinBox(minimum=1, maximum=10_000, keyboardTracking=False)
        self.repeat_spin.setToolTip("How many times this block runs in sequence (its output must keep its input shape)")
        self.repeat_spin.valueChanged.connect(self._commit_repeat)
        layout = QVBoxLayout(self)
        layout.addWidget(self.title)
        layout.addWidget(self.summary)
        layout.addLayout(self.form)
        layout.addWidget(self.shapes)
        layout.addWidget(self.error)
        layout.addWidget(self.note)
        layout.addWidget(self.flatten_button, 0, Qt.AlignmentFlag.AlignLeft)
        layout.addStretch(1)
        bind_many(self, [(workspace.layer_focused, self._on_focus), (workspace.changed, self._on_changed)])
        self._rebuild()

    # -- state
    @property
    def spec(self) -> LayerSpec | None:
        layers = self.ws.model.layers
        return layers[self.layer] if 0 <= self.layer < len(layers) else None

    def _on_focus(self, layer: int) -> None:
        self.layer = layer
        self._rebuild()

    def _on_changed(self, changes) -> None:
        if changes & {"layers", "input", "model", "assumptions"}:
            self.layer = self.ws.focused_layer
            spec = self.spec
            if spec is None or spec.kind != self._kind:
                self._rebuild()
            else:
                self._load_values()

    # -- building the form
    def _rebuild(self) -> None:
        while self.form.rowCount():
            row = self.form.takeRow(0)
            for item in (row.labelItem, row.fieldItem):
                widget = item.widget() if item else None
                if widget is not None and widget not in (self.name_edit, self.repeat_spin):
                    widget.deleteLater()
                elif widget is not None:
                    widget.hide()
        self.editors = {}
        spec = self.spec
        self._kind = spec.kind if spec else ""
        if spec is None:
            self.title.setText("<b>No layer selected</b>")
            self.summary.setText("Select a layer in the stack to edit its parameters.")
            self.shapes.clear()
            self.error.clear()
            self._show_note("")
            return
        kind = REGISTRY[spec.kind]
        self.form.addRow("Name", self.name_edit)
        self.name_edit.show()
        if kind.is_block:
            self.form.addRow("Repeat", self.repeat_spin)
            self.repeat_spin.show()
        for p in kind.params:
            editor = self._editor_for(p)
            editor.setToolTip(p.help or p.name)
            editor.setObjectName(f"param_{p.name}")
            self.editors[p.name] = editor
            if isinstance(editor, _SpinBox):
                editor.refused.connect(lambda text, p=p: self._refused(p, text))
            label = QLabel(p.name.replace("_", " "))
            label.setToolTip(p.help or p.name)
            self.form.addRow(label, editor)
        self._load_values()

    def _editor_for(self, p: Param) -> QWidget:
        if p.type is bool:
            box = QCheckBox()
            box.toggled.connect(lambda v, p=p: self._commit_param(p, bool(v)))
            return box
        if p.choices:
            combo = QComboBox()
            combo.addItems([str(c) for c in p.choices])
            combo.activated.connect(lambda i, p=p: self._commit_param(p, p.choices[i]))
            return combo
        if p.type is str:  # free text (a transformer block's lora_targets): checked by the layer, flagged if wrong
            edit = QLineEdit()
            edit.editingFinished.connect(lambda p=p, edit=edit: self._commit_param(p, edit.text().strip()))
            return edit
        if p.type is int:
            spin = _SpinBox(keyboardTracking=False)
            spin.setRange(int(p.minimum) if p.minimum is not None else -INT_MAX, INT_MAX)
            spin.setGroupSeparatorShown(True)
            spin.valueChanged.connect(lambda v, p=p: self._commit_param(p, int(v)))
        else:
            spin = QDoubleSpinBox(keyboardTracking=False, decimals=6)
            spin.setRange(float(p.minimum) if p.minimum is not None else -1e300, 1e300)
            spin.valueChanged.connect(lambda v, p=p: self._commit_param(p, float(v)))
        auto = _auto_text(p)
        if auto:
            spin.setSpecialValueText(auto)
        return spin

    def _load_values(self) -> None:
        spec = self.spec
        if spec is None:
            return
        kind = REGISTRY[spec.kind]
        params = spec.params
        self.title.setText(f"<b>{spec.name or spec.kind}</b> &nbsp;<i>{spec.kind} ({kind.group})</i>")
        self.summary.setText(kind.summary)
        with QSignalBlocker(self.name_edit):
            if not self.name_edit.hasFocus():
                self.name_edit.setText(spec.name)
        with QSignalBlocker(self.repeat_spin):
            self.repeat_spin.setValue(spec.repeat)
        for p in kind.params:
            editor = self.editors[p.name]
            value = params.get(p.name, p.default)
            with QSignalBlocker(editor):
                if isinstance(editor, QCheckBox):
                    editor.setChecked(bool(value))
                elif isinstance(editor, QComboBox):
                    editor.setCurrentText(str(value))
                elif isinstance(editor, QLineEdit):
                    editor.setText(str(value))
                elif value is not None:
                    editor.setValue(value)
        table = self.ws.table
        status = table.status[self.layer] if self.layer < len(table.status) else None
        self._show_note(last_dim_note(spec, status))
        if status is None:
            return
        if status.error:
            self.shapes.setText(f"Input {format_shape(status.in_shape)} (per sample); the layer is left out of the "
                                "analysis and its input passes through to the next layer.")
        else:
            self.shapes.setText(f"Input {format_shape(status.in_shape)} \u2192 output {format_shape(status.out_shape)} "
                                "(per sample)")
        self.error.setText(f"\u26a0 Does not fit: {status.error}" if status.error else "")

    def _show_note(self, text: str) -> None:
        self.note.setText(text)
        self.note.setVisible(bool(text))
        self.flatten_button.setVisible(bool(text))

    def _refused(self, p: Param, text: str) -> None:
        low = "" if p.minimum is None else f" \u2265 {int(p.minimum)}"
        self.error.setText(f"\u26a0 {p.name.replace('_', ' ')}: '{text.strip()}' is not accepted; expected a whole "
                           f"number{low}")

    def _insert_flatten(self) -> None:
        if self.spec is not None and self.note.text():
            self.ws.execute(flatten_before(self.ws.model, self.layer, self.ws.context))

    # -- committing edits as commands
    def _replace(self, new: LayerSpec, text: str) -> None:
        if self.spec is None or new == self.spec:
            return
        self.ws.execute(ReplaceLayer(self.layer, new, text=text))

    def _commit_param(self, p: Param, value) -> None:
        spec = self.spec
        if spec is None:
            return
        params = spec.params
        if not p.required and value == p.default:
            params.pop(p.name, None)
        else:
            params[p.name] = value
        new = replace(spec, items=tuple(params.items()))
        if new != spec:  # a width the dense layers after this one took follows the edit
            self.ws.execute(with_carried(self.layer, new, self.ws.model, self.ws.context,
                                         f"set {spec.name or spec.kind} {p.name}"))

    def _commit_name(self) -> None:
        spec = self.spec
        name = self.name_edit.text().strip()
        if spec is None or name == spec.name:
            return
        others = [n for i, n in enumerate(layer_names(self.ws.model)) if i != self.layer]
        if name in others:
            self.error.setText(f"\u26a0 name: '{name}' is already used by another layer")
            with QSignalBlocker(self.name_edit):
                self.name_edit.setText(spec.name)
            return
        self._replace(replace(spec, name=name), f"rename {spec.name or spec.kind} to {name or spec.kind}")

    def _commit_repeat(self, value: int) -> None:
        spec = self.spec
        if spec is not None:
            self._replace(replace(spec, repeat=int(value)), f"repeat {spec.name or spec.kind} \u00d7{value}")
