"""PlotTitle: a plot's title and key drawn over pyqtgraph's empty title row."""

from __future__ import annotations

import pyqtgraph as pg
from PySide6.QtGui import QColor

from explorer.ui.panels.plotting import new_plot, set_title


def test_plot_title_line_key_and_elision(qtbot):
    view = pg.GraphicsLayoutWidget()
    qtbot.addWidget(view)
    plot = new_plot("first")
    view.addItem(plot)
    view.resize(500, 300)
    view.show()
    qtbot.waitExposed(view)
    title = plot.plot_title
    assert title.line.toPlainText() == "first" and title.key_line.toPlainText() == ""
    set_title(plot, "Energy on GPU A", [("#d62728", "HBM"), ("#1f77b4", "arithmetic (MACs)")])
    assert title.key_line.toPlainText() == "\u25a0 HBM   \u25a0 arithmetic (MACs)"
    assert title.key_line.rows[0][0][1] == QColor("#d62728")  # the square in the level's colour
    assert plot.titleLabel.text == ""  # pyqtgraph's own title stays empty: its row, 30 px, is kept
    long = "A title far longer than the plot is wide, " * 4
    set_title(plot, long)
    shown = title.line.toPlainText()
    assert shown.endswith("\u2026") and long.startswith(shown[:-1]) and title.line.toolTip() == long
    assert title.line.box_size()[0] <= plot.titleLabel.size().width()
    names = ["DRAM (weights and feature maps; a long level name)", "dedicated SRAM (staging, also long)", "MACs"]
    set_title(plot, "short", [("#d62728", names[0]), ("#ff7f0e", names[1]), ("#1f77b4", names[2])])
    assert title.key_line.box_size()[0] <= plot.titleLabel.size().width()  # each name elided to a share
    shown = [run[0].strip() for run in title.key_line.rows[0][1::2]]
    assert shown[2] == "MACs" and shown[0].endswith("\u2026") and names[0].startswith(shown[0][:-1])
    assert all(n in title.key_line.toolTip() for n in names)
