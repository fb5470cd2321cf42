"""NoteLabel: a panel's note, wrapped to its width, a new line at each newline, cut off after its lines."""

from __future__ import annotations

from explorer.ui.plot_items.note_label import NoteLabel


def inked_rows(label: NoteLabel) -> list[int]:
    image = label.grab().toImage()
    background = image.pixelColor(image.width() - 1, image.height() - 1)
    return [y for y in range(image.height())
            if any(image.pixelColor(x, y) != background for x in range(0, 200))]


def test_newline_starts_a_second_line_and_long_text_wraps(qtbot):
    label = NoteLabel(2)
    qtbot.addWidget(label)
    label.resize(400, label.height())
    line = label.fontMetrics().lineSpacing()
    label.setText("first line")
    assert inked_rows(label) and max(inked_rows(label)) < line  # one line
    label.setText("first line\nsecond line")
    assert label.text() == "first line\nsecond line"
    assert max(inked_rows(label)) >= line  # ink on the second line
    label.setText("word " * 60)  # wider than 400 px: wrapped onto the second line, the rest cut off
    rows = inked_rows(label)
    assert max(rows) >= line and max(rows) < label.height()
