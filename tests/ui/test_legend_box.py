"""LegendBox (the roofline legend's rows of coloured text runs) and PlotTitle (a plot's title and key)."""

from __future__ import annotations

from PySide6.QtGui import QColor, QFontMetricsF

from explorer.ui.panels.legend_box import LegendBox

DARK = "#282828"


def test_rows_join_runs_of_one_style_and_size_the_box(qapp):
    legend = LegendBox(anchor=(1, 1))
    legend.set_rows([
        [("\u2501\u2501\u2501 ", "#1f77b4", False), ("GPU A", DARK, True), (" \u2014 ridge 153 FLOP/B", DARK, False)],
        [("\u2501\u2501\u2501 ", "#d62728", False), ("GPU B", DARK, False), (" \u2014 ridge 295 FLOP/B", DARK, False)],
    ])
    assert [len(row) for row in legend.rows] == [3, 2]  # the second row's name and ridge are one run
    assert legend.rows[1][1] == ("GPU B \u2014 ridge 295 FLOP/B", QColor(DARK), False)
    assert legend.toPlainText() == (
        "\u2501\u2501\u2501 GPU A \u2014 ridge 153 FLOP/B\n\u2501\u2501\u2501 GPU B \u2014 ridge 295 FLOP/B"
    )
    w, h = legend.box_size()
    plain = QFontMetricsF(legend.fonts[False])
    assert h == 2 * plain.height() + 2 * legend.pad
    assert w >= plain.horizontalAdvance("\u2501\u2501\u2501 GPU B \u2014 ridge 295 FLOP/B") + 2 * legend.pad - 1
    box = legend.boundingRect()
    assert (box.right(), box.bottom()) == (0, 0)  # anchored at its bottom-right corner
    legend.set_rows([])
    assert legend.boundingRect().isNull() and legend.toPlainText() == ""


def test_plot_title_line_key_and_elision(qtbot):
    import pyqtgraph as pg

    from explorer.ui.panels.plotting import new_plot, set_title

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
