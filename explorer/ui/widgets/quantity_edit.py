"""QuantityEdit: a line edit for one physical quantity, checked with the project's unit registry as you type.

The text is what the user (or vendor) wrote, e.g. ``"3.35 TB/s"``; :meth:`QuantityEdit.value` is the
magnitude in the kind's SI unit (byte/s here) or None when the field is empty (= unknown) or invalid.
A wrong unit (``"3.35 kg"``), a missing unit or an implausible magnitude is shown inline under the field
with the reason, and :attr:`validity_changed` tells a dialog to disable its OK button.
"""

from __future__ import annotations

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QLabel, QLineEdit, QSizePolicy, QVBoxLayout, QWidget

from explorer.core.hardware.device_file import RANGES
from explorer.core.units import KINDS, UnitError, parse_si

COUNT = "count"  # a positive whole number (tensor cores, SMs, array rows): no unit
ERROR_STYLE = "color: #b00020;"


def parse_count(text: str, field: str) -> float:
    """Read a positive whole number such as ``"528"`` (for counts, which carry no unit)."""
    cleaned = text.strip().replace(",", "")
    try:
        number = float(cleaned)
    except ValueError:
        raise UnitError(field, f"'{text}' is not a whole number") from None
    if number <= 0 or number != int(number):
        raise UnitError(field, f"'{text}' must be a positive whole number")
    return number


class QuantityEdit(QWidget):
    """A QLineEdit plus an inline error label; empty means unknown and is valid unless ``required``."""

    validity_changed = Signal(bool)
    value_changed = Signal()  # after every edit (valid or not)

    def __init__(self, kind: str, field: str, text: str = "", *, required: bool = False,
                 check_range: bool = True, inline_error: bool = True, parent: QWidget | None = None):
        super().__init__(parent)
        if kind != COUNT and kind not in KINDS:
            raise ValueError(f"QuantityEdit: unknown quantity kind {kind!r}")
        self.kind = kind
        self.field = field
        self.required = required
        self.check_range = check_range
        self.inline_error = inline_error  # False: the owner shows error() itself (e.g. under a table row)
        self._value: float | None = None
        self._error = ""
        self.line_edit = QLineEdit(self)
        self.line_edit.setPlaceholderText(self._example())
        self.line_edit.setClearButtonEnabled(True)
        self.line_edit.setAccessibleName(field)
        self.error_label = QLabel(self)
        self.error_label.setStyleSheet(ERROR_STYLE)
        self.error_label.setWordWrap(True)
        self.error_label.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Minimum)
        self.error_label.hide()
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(1)
        layout.addWidget(self.line_edit)
        layout.addWidget(self.error_label)
        self.setFocusProxy(self.line_edit)
        self.line_edit.textChanged.connect(self._on_text_changed)
        self._validate(emit=False)
        if text:
            self.setText(text)

    # -- public API
    def text(self) -> str:
        return self.line_edit.text().strip()

    def setText(self, text: str) -> None:
        self.line_edit.setText(text)

    def value(self) -> float | None:
        """The SI magnitude (``KINDS[kind].si_unit``; a plain count for COUNT), None if empty or invalid."""
        return self._value

    def is_valid(self) -> bool:
        return not self._error

    def is_empty(self) -> bool:
        return not self.text()

    def error(self) -> str:
        """The reason the text is rejected (without the field name), or ''."""
        return self._error

    def si_unit(self) -> str:
        return "" if self.kind == COUNT else KINDS[self.kind].si_unit

    # -- internals
    def _example(self) -> str:
        return "e.g. 128" if self.kind == COUNT else f"e.g. {KINDS[self.kind].example}"

    def _parse(self, text: str) -> float:
        if self.kind == COUNT:
            return parse_count(text, self.field)
        try:
            value = parse_si(text, self.kind, self.field)
        except UnitError:
            raise
        except Exception:  # noqa: BLE001 - pint's parser raises AssertionError/TokenError on half-typed text
            example = KINDS[self.kind].example
            raise UnitError(self.field, f"cannot read '{text}'; expected e.g. '{example}'") from None
        low, high = RANGES.get(self.kind, (None, None))
        if self.check_range and low is not None and not low <= value <= high:
            words = self.kind.replace("_", " ")
            raise UnitError(self.field, f"'{text}' is outside the plausible range for a {words}")
        return value

    def _on_text_changed(self, _text: str) -> None:
        self._validate(emit=True)
        self.value_changed.emit()

    def _validate(self, emit: bool) -> None:
        was_valid = self.is_valid()
        text = self.text()
        if not text:
            self._value = None
            self._error = "is required" if self.required else ""
        else:
            try:
                self._value = self._parse(text)
                self._error = ""
            except UnitError as exc:
                self._value = None
                self._error = exc.reason
        self.error_label.setText(self._error)
        self.error_label.setVisible(bool(self._error) and self.inline_error)
        self.line_edit.setToolTip(f"{self.field}: {self._error}" if self._error else self._tooltip())
        self.line_edit.setStyleSheet("QLineEdit { border: 1px solid #b00020; }" if self._error else "")
        if emit and was_valid != self.is_valid():
            self.validity_changed.emit(self.is_valid())

    def _tooltip(self) -> str:
        if self.kind == COUNT:
            return f"{self.field}: a whole number; empty = unknown"
        kind = KINDS[self.kind]
        return (f"{self.field}: a {self.kind.replace('_', ' ')} with its unit, e.g. {kind.example}; "
                f"stored in {kind.si_unit}; empty = unknown")
