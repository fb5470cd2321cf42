"""ConflictDialog: someone saved the device since it was opened; show both values per field and let the user
decide. Nothing is lost: the user's edit travels with the dialog (``error.mine``) for a retry.
"""

from __future__ import annotations

import enum

from PySide6.QtWidgets import (
    QAbstractItemView,
    QDialog,
    QDialogButtonBox,
    QHeaderView,
    QLabel,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from explorer.store.errors import ConflictError
from explorer.store.overrides import describe_value


class ConflictChoice(enum.Enum):
    EDIT_AGAIN = "edit"  # re-open the editor with my values, to be saved against the new version
    SAVE_MINE = "save"  # overwrite the stored version with my edit
    DISCARD = "discard"  # keep theirs, drop my edit


class ConflictDialog(QDialog):
    def __init__(self, error: ConflictError, parent: QWidget | None = None):
        super().__init__(parent)
        self.error = error
        self.choice = ConflictChoice.EDIT_AGAIN
        self.setWindowTitle(f"Conflict saving {error.mine.id}")
        self.intro = intro = QLabel(
            f"<b>{error.mine.name}</b> was changed by someone else since you opened it: you edited version "
            f"{error.expected_version}, the catalog now has version {error.theirs_version}. "
            "Your edit has <b>not</b> been saved, and it is kept: edit it again, save it over theirs, or "
            "discard it."
        )
        intro.setWordWrap(True)
        self.table = QTableWidget(len(error.fields), 3)
        self.table.setHorizontalHeaderLabels(["Field", "Mine (unsaved)", "Theirs (in the catalog)"])
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.verticalHeader().hide()
        for row, conflict in enumerate(error.fields):
            for column, text in enumerate((conflict.field, describe_value(conflict.mine),
                                           describe_value(conflict.theirs))):
                item = QTableWidgetItem(text)
                item.setToolTip(text)
                self.table.setItem(row, column, item)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(1, QHeaderView.ResizeMode.Stretch)
        header.setSectionResizeMode(2, QHeaderView.ResizeMode.Stretch)
        if not error.fields:
            self.table.hide()
            intro.setText(intro.text() + "<br>Your edit and the stored device are identical; saving is safe.")
        buttons = QDialogButtonBox()
        self.edit_button = buttons.addButton("Edit again", QDialogButtonBox.ButtonRole.AcceptRole)
        self.save_button = buttons.addButton("Save mine over theirs", QDialogButtonBox.ButtonRole.AcceptRole)
        self.discard_button = buttons.addButton("Discard my edit", QDialogButtonBox.ButtonRole.RejectRole)
        for button, choice in ((self.edit_button, ConflictChoice.EDIT_AGAIN),
                               (self.save_button, ConflictChoice.SAVE_MINE),
                               (self.discard_button, ConflictChoice.DISCARD)):
            button.clicked.connect(lambda _=False, c=choice: self.choose(c))
        self.edit_button.setDefault(True)
        layout = QVBoxLayout(self)
        layout.addWidget(intro)
        layout.addWidget(self.table)
        layout.addWidget(buttons)
        self.resize(760, 340)

    def rows(self) -> list[tuple[str, str, str]]:
        """(field, mine, theirs) as shown."""
        return [tuple(self.table.item(r, c).text() for c in range(3)) for r in range(self.table.rowCount())]

    def choose(self, choice: ConflictChoice) -> None:
        self.choice = choice
        if choice is ConflictChoice.DISCARD:
            self.reject()
        else:
            self.accept()

    def button(self, choice: ConflictChoice) -> QPushButton:
        return {ConflictChoice.EDIT_AGAIN: self.edit_button, ConflictChoice.SAVE_MINE: self.save_button,
                ConflictChoice.DISCARD: self.discard_button}[choice]
