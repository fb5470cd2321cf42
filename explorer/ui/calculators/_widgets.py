"""Building blocks shared by the calculator widgets: result tables, plots, sections and the calculator.

A calculator widget (:class:`CalculatorWidget`) has a preset combo and one or more :class:`Section` s
(tabs when there are several). A section owns the inputs of one or more core functions, recomputes on
every change and shows a result table and its plots. Inputs are entered in display units (GB/s, ms...)
and handed to the core in SI units (see ``_inputs``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QSize, Qt
from PySide6.QtGui import QFontMetricsF
from PySide6.QtWidgets import (
    QBoxLayout,
    QComboBox,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QSizePolicy,
    QTableWidget,
    QTableWidgetItem,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from explorer.core.calculators import CalculatorInputError, Preset, get_calculator

from ._inputs import (  # noqa: F401  (re-exported for the calculator modules)
    PLOT_COLORS,
    PRECISIONS,
    DevicePicker,
    UnitSpinBox,
    connect_change,
    default_setter,
    duration,
    int_spin,
    percent,
    ratio,
    select_data,
    value_combo,
)

PLOT_MIN_WIDTH = 300  # px; a plot is never narrower than its title either
INPUTS_WIDTH = (360, 470)  # px, the inputs and results column beside the plots (min, max)


class ResultTable(QTableWidget):
    """Two columns, quantity and value (with its unit); rows are replaced on every recompute."""

    def __init__(self):
        super().__init__(0, 2)
        self.setHorizontalHeaderLabels(["Result", "Value"])
        self.verticalHeader().setVisible(False)
        self.horizontalHeader().setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        self.horizontalHeader().setSectionResizeMode(1, QHeaderView.ResizeMode.ResizeToContents)
        self.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        self.setSelectionMode(QTableWidget.SelectionMode.NoSelection)
        self.setMinimumHeight(180)

    def set_rows(self, rows: Sequence[tuple[str, str]]) -> None:
        self.setRowCount(len(rows))
        for r, (name, value) in enumerate(rows):
            self.setItem(r, 0, QTableWidgetItem(name))
            item = QTableWidgetItem(value)
            item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
            self.setItem(r, 1, item)

    def rows(self) -> dict[str, str]:
        return {self.item(r, 0).text(): self.item(r, 1).text() for r in range(self.rowCount())}

    def value(self, name: str) -> str:
        rows = self.rows()
        if name not in rows:
            raise KeyError(f"no result row {name!r}; rows: {', '.join(rows)}")
        return rows[name]


def make_plot(
    title: str,
    x_label: str,
    y_label: str,
    *,
    x_units: str | None = None,
    y_units: str | None = None,
    log_x: bool = False,
    log_y: bool = False,
) -> pg.PlotWidget:
    """A white plot with black axes, readable in screenshots and printed docs; never narrower than its title."""
    plot = pg.PlotWidget(background="w")
    item = plot.getPlotItem()
    item.setTitle(title, color="k", size="11pt")
    title_width = QFontMetricsF(item.titleLabel.item.font()).horizontalAdvance(title)
    for side in ("left", "bottom"):
        axis = item.getAxis(side)
        axis.setPen("k")
        axis.setTextPen("k")
    item.setLabel("bottom", x_label, units=x_units, color="k")
    item.setLabel("left", y_label, units=y_units, color="k")
    item.showGrid(x=True, y=True, alpha=0.25)
    item.setLogMode(log_x, log_y)
    item.setMenuEnabled(False)
    plot.setMinimumSize(max(PLOT_MIN_WIDTH, round(title_width) + 24), 240)
    return plot


def _decade_label(exponent: int) -> str:
    value = 10.0**exponent
    if -3 <= exponent <= 4:
        return f"{value:g}"
    return f"1e{exponent}"


def log_ticks(plot: pg.PlotWidget, side: str, low: float, high: float) -> None:
    """Label only the decades of a log axis between data values ``low`` and ``high`` (both > 0);
    pyqtgraph otherwise labels every minor tick and the labels collide."""
    lo = int(np.floor(np.log10(max(low, 1e-300))))
    hi = int(np.ceil(np.log10(max(high, low, 1e-300))))
    major = [(float(e), _decade_label(e)) for e in range(lo, hi + 1)]
    minor = [(float(np.log10(k * 10.0**e)), "") for e in range(lo, hi) for k in range(2, 10)]
    plot.getPlotItem().getAxis(side).setTicks([major, minor])


def bar_labels(plot: pg.PlotWidget, labels: Sequence[str]) -> None:
    """Name the bars at x = 0, 1, ... on the bottom axis."""
    plot.getPlotItem().getAxis("bottom").setTicks([list(enumerate(labels))])


class Section(QWidget):
    """Inputs, results and plots of one or more core functions; recomputes whenever an input changes."""

    title = ""

    def __init__(self, functions: Sequence[Callable[..., Any]]):
        super().__init__()
        self.functions = tuple(functions)
        self.result: Any = None
        self._setters: dict[str, Callable[[Any], None]] = {}
        self._updating = True  # no recompute until the calculator widget has finished building

        # inputs and results beside the plots, or above them when the section is narrower than both side by side
        # (the calculators share the analysis dock: about 850 px on a 1600 px screen, 630 on a 1280 px one)
        outer = self._outer = QBoxLayout(QBoxLayout.Direction.LeftToRight, self)
        outer.setContentsMargins(0, 0, 0, 0)  # the calculator's layout has margins
        left = QVBoxLayout()
        inputs = QGroupBox("Inputs")
        self.form = QFormLayout(inputs)
        self.form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
        self.form.setRowWrapPolicy(QFormLayout.RowWrapPolicy.WrapLongRows)  # a field goes under a long label
        left.addWidget(inputs)
        outputs = QGroupBox("Results")
        out_layout = QVBoxLayout(outputs)
        self.results = ResultTable()
        out_layout.addWidget(self.results)
        self.error = QLabel()
        self.error.setStyleSheet("color: #b00020;")
        self.error.setWordWrap(True)
        out_layout.addWidget(self.error)
        left.addWidget(outputs, 1)
        holder = self.inputs_column = QWidget()
        holder.setLayout(left)
        holder.setMinimumWidth(INPUTS_WIDTH[0])
        holder.setMaximumWidth(INPUTS_WIDTH[1])
        outer.addWidget(holder)
        self.plots = QVBoxLayout()
        outer.addLayout(self.plots, 1)

    # -- reflow
    def _plots_width(self) -> int:
        widgets = [self.plots.itemAt(i).widget() for i in range(self.plots.count())]
        return max([max(w.minimumWidth(), w.minimumSizeHint().width()) for w in widgets if w is not None] or [0])

    def _inputs_width(self) -> int:
        holder = self.inputs_column
        return max(holder.minimumWidth(), holder.minimumSizeHint().width())

    def side_by_side_width(self) -> int:
        """The narrowest width (px) at which the inputs and the plots fit side by side (never, when the inputs
        need more than their column's maximum)."""
        if self._inputs_width() > INPUTS_WIDTH[1]:
            return 16777215
        m = self._outer.contentsMargins()
        return m.left() + m.right() + self._inputs_width() + self._outer.spacing() + self._plots_width()

    def stacked(self) -> bool:
        """Whether the inputs and results are above the plots (the section is too narrow for both in a row)."""
        return self._outer.direction() == QBoxLayout.Direction.TopToBottom

    def minimumSizeHint(self) -> QSize:
        """As narrow as the inputs or the plots alone: narrower than both side by side, the section stacks them."""
        m = self._outer.contentsMargins()
        width = m.left() + m.right() + max(self._inputs_width(), self._plots_width())
        return QSize(width, super().minimumSizeHint().height())

    def resizeEvent(self, event) -> None:
        stack = event.size().width() < self.side_by_side_width()
        if stack != self.stacked():
            self._outer.setDirection(
                QBoxLayout.Direction.TopToBottom if stack else QBoxLayout.Direction.LeftToRight
            )
            # stacked, the inputs take the section's width; side by side, at most INPUTS_WIDTH[1]
            self.inputs_column.setMaximumWidth(16777215 if stack else INPUTS_WIDTH[1])
            self.updateGeometry()
        super().resizeEvent(event)

    # -- inputs
    def field(
        self,
        name: str,
        label: str,
        widget: QWidget,
        setter: Callable[[Any], None] | None = None,
        form: QFormLayout | None = None,
    ) -> QWidget:
        """Add an input row; ``name`` is the core keyword a preset sets through ``setter``."""
        if label:
            (form or self.form).addRow(label, widget)
        else:  # check boxes carry their own text: span both columns
            (form or self.form).addRow(widget)
        self._setters[name] = setter or default_setter(widget)
        connect_change(widget, self.recompute)
        return widget

    def bind(self, name: str, setter: Callable[[Any], None]) -> None:
        """Let presets set ``name`` through a custom setter (inputs built from several widgets)."""
        self._setters[name] = setter

    def apply_inputs(self, preset: Preset) -> None:
        self._updating = True
        try:
            self.before_preset(preset)
            for name, value in preset.inputs.items():
                if name not in self._setters:
                    raise KeyError(f"{type(self).__name__} has no input {name!r} (preset {preset.name!r})")
                self._setters[name](value)
        finally:
            self._updating = False
        self.recompute()

    def before_preset(self, preset: Preset) -> None:
        """Hook: switch modes before a preset's values are set."""

    # -- results
    def recompute(self, *_: object) -> None:
        if self._updating:
            return
        try:
            self.result = self.compute()
        except CalculatorInputError as exc:
            self.result = None
            self.error.setText(str(exc))
            self.results.set_rows([])
            return
        self.error.clear()
        self.render(self.result)

    def compute(self) -> Any:
        raise NotImplementedError

    def render(self, result: Any) -> None:
        raise NotImplementedError


class CalculatorWidget(QWidget):
    """A calculator: a preset combo over its sections (shown as tabs when there are several)."""

    calculator_id = ""

    def __init__(self, sections: Sequence[Section]):
        super().__init__()
        self.calculator = get_calculator(self.calculator_id)
        self.sections = list(sections)
        layout = QVBoxLayout(self)
        title = QLabel(f"<b>{self.calculator.title}</b> \u2014 {self.calculator.summary}")
        title.setWordWrap(True)
        layout.addWidget(title)
        # the chapter's examples on a row of their own: a long example name elides in the combo (its tooltip and
        # list show it whole) instead of widening the calculator
        header = QHBoxLayout()
        header.addWidget(QLabel("Chapter example:"))
        self.preset_combo = QComboBox()
        self.preset_combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.preset_combo.setMinimumContentsLength(24)
        self.preset_combo.addItem("(custom inputs)")
        for preset in self.calculator.presets:
            self.preset_combo.addItem(preset.name)
        self.preset_combo.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        self.preset_combo.view().setMinimumWidth(self.preset_combo.view().sizeHintForColumn(0) + 24)
        self.preset_combo.currentIndexChanged.connect(self._preset_chosen)
        self.preset_combo.currentTextChanged.connect(self.preset_combo.setToolTip)
        header.addWidget(self.preset_combo, 1)
        layout.addLayout(header)
        self.source_label = QLabel()
        self.source_label.setWordWrap(True)
        self.source_label.setStyleSheet("color: #444;")
        layout.addWidget(self.source_label)
        if len(self.sections) == 1:
            self.tabs = None
            layout.addWidget(self.sections[0], 1)
        else:
            self.tabs = QTabWidget()
            for section in self.sections:
                self.tabs.addTab(section, section.title)
            layout.addWidget(self.tabs, 1)
        for section in self.sections:
            section._updating = False
            section.recompute()
        if self.calculator.presets:
            self.preset_combo.setCurrentIndex(1)

    def section_for(self, function: Callable[..., Any]) -> Section:
        for section in self.sections:
            if function in section.functions:
                return section
        raise KeyError(f"no section of {self.calculator_id} runs {function.__name__}")

    def apply_preset(self, name_or_index: str | int) -> Section:
        """Set the inputs of a chapter preset (by name or index in the calculator's list)."""
        presets = self.calculator.presets
        if isinstance(name_or_index, int):
            preset = presets[name_or_index]
        else:
            matches = [p for p in presets if p.name == name_or_index]
            if not matches:
                raise KeyError(f"no preset {name_or_index!r} in {self.calculator_id}")
            preset = matches[0]
        section = self.section_for(preset.function)
        if self.tabs is not None:
            self.tabs.setCurrentWidget(section)
        section.apply_inputs(preset)
        text = f"Source: {preset.source}."
        if preset.printed:
            text += f" The chapter prints: {preset.printed}."
        if preset.notes:
            text += f" {preset.notes}"
        self.source_label.setText(text)
        index = presets.index(preset) + 1
        if self.preset_combo.currentIndex() != index:
            self.preset_combo.blockSignals(True)
            self.preset_combo.setCurrentIndex(index)
            self.preset_combo.blockSignals(False)
            self.preset_combo.setToolTip(self.preset_combo.currentText())
        return section

    def _preset_chosen(self, index: int) -> None:
        if index >= 1:
            self.apply_preset(index - 1)

    def set_devices(self, devices: Sequence[Any]) -> None:
        for section in self.sections:
            setter = getattr(section, "set_devices", None)
            if setter is not None:
                setter(devices)
