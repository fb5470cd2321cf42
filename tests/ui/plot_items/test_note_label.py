"""NoteLabel: a panel's note, wrapped to its width, a new line at each newline, as high as its whole text."""

from __future__ import annotations

from PySide6.QtCore import Qt

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
    label.show()
    line = label.fontMetrics().lineSpacing()
    label.setText("first line")
    assert inked_rows(label) and max(inked_rows(label)) < line  # one line
    label.setText("first line\nsecond line")
    assert label.text() == "first line\nsecond line"
    assert max(inked_rows(label)) >= line  # ink on the second line
    least = label.height()
    label.setText("word " * 60)  # about four lines at 400 px: the label grows to show them all (it cut them off)
    rows = inked_rows(label)
    assert label.height() > least and max(rows) >= 3 * line and max(rows) < label.height()
    text = label.fontMetrics().boundingRect(0, 0, 400, 10_000, Qt.TextFlag.TextWordWrap, "word " * 60)
    assert label.height() >= text.height()
    label.resize(1600, label.height())  # wider: fewer lines, down to the two it was made with
    assert least <= label.height() < text.height()
    label.setText("short")
    assert label.height() == least
