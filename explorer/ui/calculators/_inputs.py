"""Input widgets and value formatting for the calculators.

Spin boxes show values in a display unit (GB/s, ms, %) and exchange SI values with the core; combo
boxes carry their value as item data; presets set widgets through :func:`default_setter`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np
from PySide6.QtWidgets import QCheckBox, QComboBox, QDoubleSpinBox, QSpinBox, QWidget

from explorer.core.units import Q_, format_si

PLOT_COLORS = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf")
PRECISIONS = (
    ("FP32 (4 B)", 4.0),
    ("FP16 / BF16 (2 B)", 2.0),
    ("FP8 / INT8 (1 B)", 1.0),
    ("INT4 (0.5 B)", 0.5),
)


class UnitSpinBox(QDoubleSpinBox):
    """A spin box showing a value in a display unit (``suffix``) and exchanging it in SI with the core.

    ``unit`` is a pint unit whose SI magnitude gives the scale ("GB/s" -> 1e9 byte/s); use ``scale``
    for units pint does not know (ratios, percentages).
    """

    def __init__(
        self,
        unit: str = "",
        *,
        si_unit: str | None = None,
        scale: float | None = None,
        minimum: float = 0.0,
        maximum: float = 1e9,
        decimals: int = 3,
        step: float = 1.0,
        value_si: float | None = None,
        suffix: str | None = None,
    ):
        super().__init__()
        if scale is None:
            scale = float(Q_(1.0, unit).to(si_unit).magnitude) if si_unit else 1.0
        self.scale = scale
        self.setDecimals(decimals)
        self.setRange(minimum, maximum)
        self.setSingleStep(step)
        self.setSuffix(f" {unit}" if suffix is None and unit else (suffix or ""))
        self.setKeyboardTracking(False)
        self.setGroupSeparatorShown(True)
        self.setMinimumWidth(150)
        if value_si is not None:
            self.set_si_value(value_si)

    def si_value(self) -> float:
        return self.value() * self.scale

    def set_si_value(self, value: float) -> None:
        self.setValue(float(value) / self.scale)


def int_spin(minimum: int = 1, maximum: int = 10**9, value: int = 1, suffix: str = "") -> QSpinBox:
    box = QSpinBox()
    box.setRange(minimum, maximum)
    box.setValue(value)
    box.setKeyboardTracking(False)
    box.setMinimumWidth(150)
    box.setGroupSeparatorShown(True)
    if suffix:
        box.setSuffix(f" {suffix}")
    return box


def value_combo(items: Iterable[tuple[str, Any]], current: Any | None = None) -> QComboBox:
    box = QComboBox()
    for text, data in items:
        box.addItem(text, data)
    if current is not None:
        select_data(box, current)
    return box


def select_data(box: QComboBox, value: Any) -> None:
    """Select the item whose data equals ``value`` (numbers compared with a tolerance)."""
    for i in range(box.count()):
        data = box.itemData(i)
        same = (
            abs(float(data) - float(value)) <= 1e-9 * max(1.0, abs(float(value)))
            if isinstance(data, (int, float)) and isinstance(value, (int, float))
            else data == value
        )
        if same:
            box.setCurrentIndex(i)
            return
    raise ValueError(f"{value!r} is not one of the choices of {box.objectName() or 'the combo box'}")


def ratio(x: float, digits: int = 3) -> str:
    if not np.isfinite(x):
        return "\u221e"
    return f"{x:.{digits}g}\u00d7"


def duration(seconds: float) -> str:
    """SI seconds, with days or years added for long runs (training times)."""
    text = format_si(seconds, "s")
    if np.isfinite(seconds) and seconds >= 365 * 86400:
        text += f" ({seconds / (365 * 86400):.3g} years)"
    elif np.isfinite(seconds) and seconds >= 86400:
        text += f" ({seconds / 86400:.3g} days)"
    return text


def percent(x: float, digits: int = 3) -> str:
    return f"{100.0 * x:.{digits}g} %"


def connect_change(widget: QWidget, slot: Callable[..., None]) -> None:
    if isinstance(widget, (QDoubleSpinBox, QSpinBox)):
        widget.valueChanged.connect(slot)
    elif isinstance(widget, QCheckBox):
        widget.toggled.connect(slot)
    elif isinstance(widget, QComboBox):
        widget.currentIndexChanged.connect(slot)


def default_setter(widget: QWidget) -> Callable[[Any], None]:
    if isinstance(widget, UnitSpinBox):
        return widget.set_si_value
    if isinstance(widget, QSpinBox):
        return lambda v: widget.setValue(int(v))
    if isinstance(widget, QDoubleSpinBox):
        return lambda v: widget.setValue(float(v))
    if isinstance(widget, QCheckBox):
        return lambda v: widget.setChecked(bool(v))
    if isinstance(widget, QComboBox):
        return lambda v: select_data(widget, v)
    raise TypeError(f"no default setter for {type(widget).__name__}")


class DevicePicker(QComboBox):
    """Fills a bandwidth and a peak spin box from a catalog device (anything with ``name``,
    ``peak_flops`` in FLOP/s and ``bandwidth`` in B/s)."""

    def __init__(self, bandwidth_box: UnitSpinBox, peak_box: UnitSpinBox, devices: Sequence[Any] = ()):
        super().__init__()
        self._bandwidth_box = bandwidth_box
        self._peak_box = peak_box
        self.currentIndexChanged.connect(self._picked)
        self.set_devices(devices)

    def set_devices(self, devices: Sequence[Any]) -> None:
        self.blockSignals(True)
        self.clear()
        self.addItem("(enter values below)", None)
        for device in devices:
            self.addItem(device.name, device)
        self.blockSignals(False)

    def _picked(self, index: int) -> None:
        device = self.itemData(index)
        if device is not None:
            self._bandwidth_box.set_si_value(device.bandwidth)
            self._peak_box.set_si_value(device.peak_flops)
