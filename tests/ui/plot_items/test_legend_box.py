"""LegendBox: the roofline legend's rows of coloured text runs."""

from __future__ import annotations

from PySide6.QtGui import QColor, QFontMetricsF

from explorer.ui.plot_items.legend_box import LegendBox

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
