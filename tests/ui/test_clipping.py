"""Nothing clipped (issue 24): the calculators in the analysis dock at the default window size and at 1280 x 800,
the tiling and cost notes, the cost charts' row notes, the charts of a short panel. Asserted through widget
geometry against the viewport, size hints and text widths, never by looking."""

from __future__ import annotations

import pyqtgraph as pg
import pytest
from PySide6.QtCore import QPoint, QRect, Qt
from PySide6.QtGui import QFontMetrics
from PySide6.QtWidgets import QCheckBox, QComboBox, QLabel, QPushButton, QScrollArea, QStyle, QWidget

from explorer.core.calculators import CALCULATORS
from explorer.ui.calculators.panel import CalculatorsPanel

# the width of the analysis dock the calculators are in: the main window at 1600 x 1000 (its default) and at
# 1280 x 800 gives it about these (tests/ui/test_clipping.py::test_the_window_fits_1280_by_800 checks the latter)
DOCK_WIDTHS = (850, 620)


def clipped(root: QWidget, viewport: QWidget) -> list[str]:
    """What of ``root`` the ``viewport`` cuts on the right, or what is narrower than its text: labels, check
    boxes, buttons and combo boxes below their size hint, plots narrower than their title."""
    bad = []
    right = viewport.width()
    for w in [root, *root.findChildren(QWidget)]:
        width = QWidget.width(w)  # (some calculator sections have an input named "width")
        if not w.isVisibleTo(root) or width <= 0 or w.window() is not root.window():
            continue
        x = w.mapTo(viewport, QPoint(0, 0)).x()
        name = f"{type(w).__name__} {w.text() if isinstance(w, (QLabel, QCheckBox, QPushButton)) else ''!r}"
        if x + width > right + 1:
            bad.append(f"{name}: right edge {x + width} > {right}")
        need = None
        if isinstance(w, QLabel) and not w.wordWrap() and w.text():
            need = w.minimumSizeHint().width()
        elif isinstance(w, (QCheckBox, QPushButton)):
            need = w.sizeHint().width()
        elif isinstance(w, QComboBox):
            need = _combo_need(w)
        elif isinstance(w, pg.PlotWidget):
            need = w.getPlotItem().titleLabel.item.boundingRect().width()
        if need is not None and width < need:
            bad.append(f"{name}: {width} px wide, needs {need}")
    return bad


def _combo_need(combo: QComboBox) -> int | None:
    """The width a combo box needs to show its current choice whole; None when it elides it but says it whole
    in its tooltip (the calculators' chapter examples)."""
    metrics = combo.fontMetrics()
    longest = max((metrics.horizontalAdvance(combo.itemText(i)) for i in range(combo.count())), default=0)
    if combo.sizeAdjustPolicy() == QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon:
        assert combo.toolTip() == combo.currentText()
        return None
    chrome = combo.sizeHint().width() - longest  # frame, margins and arrow
    return chrome + metrics.horizontalAdvance(combo.currentText())


@pytest.mark.parametrize("width", DOCK_WIDTHS)
def test_no_calculator_is_clipped_in_the_analysis_dock(qtbot, width):
    panel = CalculatorsPanel()
    dock = QScrollArea()  # as the main window holds it (explorer/ui/extras.py)
    dock.setWidget(panel)
    dock.setWidgetResizable(True)
    qtbot.addWidget(dock)
    dock.resize(width, 670)
    dock.show()
    qtbot.waitExposed(dock)
    for calc in CALCULATORS:
        widget = panel.show_calculator(calc.id)
        for section in widget.sections:
            if widget.tabs is not None:
                widget.tabs.setCurrentWidget(section)
            qtbot.wait(5)
            assert dock.horizontalScrollBar().maximum() == 0, calc.id  # the dock does not scroll sideways
            assert clipped(panel, dock.viewport()) == [], f"{calc.id}: {type(section).__name__}"
            if width < section.side_by_side_width():
                assert section.stacked()  # narrow: the plots are under the inputs, the calculator scrolls
    # every calculator's name is shown whole, on one line or wrapped onto more
    lst = panel.list
    margin = 2 * (lst.style().pixelMetric(QStyle.PixelMetric.PM_FocusFrameHMargin) + 1)  # the delegate's
    for row in range(lst.count()):
        rect = lst.visualItemRect(lst.item(row))
        assert rect.right() <= lst.viewport().width()
        text = QFontMetrics(lst.font()).boundingRect(
            QRect(0, 0, rect.width() - margin, 10_000), Qt.TextFlag.TextWordWrap, lst.item(row).text())
        assert text.height() <= rect.height(), lst.item(row).text()


def test_a_wide_calculator_keeps_its_plots_beside_the_inputs(qtbot):
    panel = CalculatorsPanel()
    qtbot.addWidget(panel)
    panel.resize(1400, 800)
    panel.show()
    qtbot.waitExposed(panel)
    section = panel.show_calculator("amdahl").sections[0]
    qtbot.wait(5)
    assert not section.stacked()
    plot = section.curve_plot
    assert plot.mapTo(section, QPoint(0, 0)).x() >= section.inputs_column.width()  # to the right of the inputs
