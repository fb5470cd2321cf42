"""Nothing clipped (issue 24): the calculators in the analysis dock at the default window size and at 1280 x 800,
the tiling and cost notes, the cost charts' row notes, the charts of a short panel. Asserted through widget
geometry against the viewport, size hints and text widths, never by looking."""

from __future__ import annotations

import pyqtgraph as pg
import pytest
from PySide6.QtCore import QPoint, QRect, Qt
from PySide6.QtGui import QFontMetrics
from PySide6.QtWidgets import QCheckBox, QComboBox, QLabel, QPushButton, QScrollArea, QStyle, QWidget
from test_panels import GPU, NPU, make, settle, small_model, ws  # noqa: F401 - ws: the fixture

from explorer.core.calculators import CALCULATORS
from explorer.core.hardware.device_file import device_from_dict
from explorer.core.session.workspace import Assumptions, Workspace
from explorer.ui.calculators.panel import CalculatorsPanel
from explorer.ui.panels import CostPanel, EnergyPanel, TilingPanel

# the width of the analysis dock the calculators are in: about 850 px in the main window at 1600 x 1000 (its
# default); 620 px is what a 1280 px wide window would leave it (the window cannot be that narrow yet: the cost and
# tiling panels' header rows need about 810 px, see the report of issue 24)
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


# ------------------------------------------------------------------------------------------------ analysis panels
BARE = {  # a device with no price, no TDP, no fp16 peak and no matrix engine: every row note at its longest
    "id": "bare",
    "name": "Bare accelerator with a long name",
    "vendor": "t",
    "kind": "npu",
    "peak": {"int8": "100 TOP/s"},
    "memory": [{"name": "DRAM", "role": "offchip", "capacity": "16 GB", "bandwidth": "1 TB/s"}],
}


@pytest.fixture
def bare_ws():
    devices = {d["id"]: device_from_dict(d) for d in (GPU, NPU, BARE)}
    w = Workspace(small_model(), lookup=lambda ids: [devices[i] for i in ids if i in devices],
                  assumptions=Assumptions(precision="fp16"))
    w.select_devices(["gpu", "npu", "bare"])
    return w


def note_height(label, text: str) -> int:
    """The height the whole ``text`` takes, wrapped to the label's width."""
    rect = label.fontMetrics().boundingRect(QRect(0, 0, label.width(), 100_000), Qt.TextFlag.TextWordWrap, text)
    return rect.height()


def test_the_tiling_explanation_is_shown_whole(qtbot, ws):  # noqa: F811
    panel = make(qtbot, TilingPanel, ws, size=(640, 700))
    text = panel.message.text()
    assert "Times re-evaluate this GEMM" in text  # the suggestion and how its times are estimated
    assert panel.message.height() >= note_height(panel.message, text)  # it was cut off after three lines


def test_tiling_charts_of_a_device_without_a_matrix_engine_say_so(qtbot, bare_ws):
    bare_ws.focus_device("bare")
    panel = make(qtbot, TilingPanel, bare_ws)
    for plot in (panel.sweep_plot, panel.fold_plot):
        assert plot.getAxis("bottom").style["showValues"] is False
        assert plot.getAxis("left").style["showValues"] is False  # no empty 0-1 axis
        assert plot.getAxis("bottom").labelText.startswith("nothing to plot: no matrix engine")
    bars = panel.bars_plot.getAxis("bottom")
    assert bars.style["showValues"] is False and "nothing to plot" in bars.labelText
    bare_ws.focus_device("gpu")  # a device with an engine: numbers and labels come back
    settle(qtbot, panel)
    assert panel.sweep_plot.getAxis("left").style["showValues"] is True
    assert "(the GEMM dimension swept" in panel.sweep_plot.getAxis("bottom").labelText
    assert panel.bars_plot.getAxis("bottom").labelText == "mapping efficiency (%)"


def test_the_cost_notes_are_shown_whole_or_elided_with_a_tooltip(qtbot, bare_ws):
    panel = make(qtbot, CostPanel, bare_ws, size=(640, 700))
    note = panel.power_note
    assert note.text().startswith("Power assumption:") and note.text().endswith("no cited source).")
    assert note.height() >= note_height(note, note.text())  # it was cut off after two lines
    cut = 0
    for key, plot in (("per_tflops", panel.per_tflops), ("tco", panel.tco_plot), ("million", panel.million)):
        edge = plot.vb.sceneBoundingRect().right()
        for t in panel.notes[key]:
            if not t.isVisible():
                continue
            left = t.parentItem().mapToScene(t.pos()).x() + t.transform().dx()  # (drawn at screen size)
            right = left + t.boundingRect().width()
            assert right <= edge + 1, t.text()  # it ran past the chart's edge
            if t.text().endswith("\u2026"):
                cut += 1
                assert t.toolTip().startswith(t.text()[:-1]) and len(t.toolTip()) > len(t.text())
            else:
                assert t.toolTip() == ""
    assert cut  # the bare device's "— no price, no TDP, no fp16 peak..." does not fit 640 px


def test_a_short_panel_keeps_readable_charts_and_scrolls_to_its_table(qtbot, ws):  # noqa: F811
    panel = make(qtbot, EnergyPanel, ws, size=(1000, 420))
    assert panel.minimumSizeHint().height() <= 420  # the dock may be this short
    assert panel.per_layer.vb.height() >= 100  # it was 8 px
    assert panel.scroll.verticalScrollBar().maximum() > 0  # the table and the notes are below, a scroll away
    panel.scroll.ensureWidgetVisible(panel.message)
    assert panel.message.visibleRegion().boundingRect().height() == panel.message.height()


def test_the_energy_ladder_names_do_not_overlap_at_the_default_size(qtbot, ws):  # noqa: F811
    panel = make(qtbot, EnergyPanel, ws, size=(850, 670))  # the analysis dock in a 1600 x 1000 window
    rows = len(panel._ladder_entries)
    line = QFontMetrics(panel.ladder.getAxis("left").font()).height()
    assert rows >= 6 and panel.ladder.vb.height() / rows >= line  # they overlapped in the lower row
