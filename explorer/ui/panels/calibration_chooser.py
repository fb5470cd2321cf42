"""The Fidelity panel's calibration chooser: which calibration the calibrated model uses on the device in focus, and
importing a new one from a measurement file (issue 21).

A combo lists the device's catalog calibration ("catalog") and its named calibrations: those the catalog database
keeps beside the device, and any a format-8 project carries itself (marked "project")
(:mod:`explorer.core.session.named_calibrations`); choosing one, or importing one (a kernel CSV, a PyTorch profiler
trace or an Nsight Compute CSV, fitted as ``hwexplorer calibrate kernels`` fits it, at the assumptions' precision,
stored in the catalog database), or removing one, is one undoable step of the workspace. Which one is chosen is
saved with the project, by name. The view only maps the core's values.
"""

from __future__ import annotations

from datetime import date
from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QComboBox,
    QFileDialog,
    QHBoxLayout,
    QInputDialog,
    QLabel,
    QMessageBox,
    QPushButton,
    QWidget,
)

from explorer.core.session.named_calibrations import catalog_calibration_text, import_calibration

from ..binding import bind_many


def ask_file_and_name(parent, path, name, file_title: str, file_filter: str, name_title: str,
                      name_label: str) -> tuple[Path, str] | None:
    """``(path, name)`` of a measurement file to import and the name to keep its fit under: each asked for when not
    given (the name proposed from the file's stem and today's date); None when the user cancels either."""
    if path is None:
        path, _ = QFileDialog.getOpenFileName(parent, file_title, "", file_filter)
        if not path:
            return None
    path = Path(path)
    if name is None:
        name, ok = QInputDialog.getText(parent, name_title, name_label,
                                        text=f"{path.stem}, {date.today().isoformat()}")
        if not ok:
            return None
    return path, name


FILTER = "Measured kernels (*.csv *.json);;Kernel CSV or Nsight Compute CSV (*.csv);;PyTorch profiler trace (*.json)"
TIP = Qt.ItemDataRole.ToolTipRole


class CalibrationChooser(QWidget):
    """``Calibration: [combo] [Import…] [Remove]`` for the workspace's device in focus."""

    def __init__(self, workspace, parent=None):
        super().__init__(parent)
        self.workspace = workspace
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(4)
        layout.addWidget(QLabel("Calibration:"))
        self.combo = QComboBox()
        self.combo.setObjectName("calibration_combo")
        self.combo.setMinimumContentsLength(28)
        self.combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.combo.activated.connect(self._chosen)
        layout.addWidget(self.combo)
        self.import_button = QPushButton("Import\u2026")
        self.import_button.setToolTip("Fit a new named calibration of this device to measured kernels: a CSV of "
                                      "shapes and times, a PyTorch profiler trace (.json) or an Nsight Compute CSV "
                                      "(undoable; kept in the catalog with the device, chosen in the project)")
        self.import_button.clicked.connect(lambda: self.import_file())
        layout.addWidget(self.import_button)
        self.remove_button = QPushButton("Remove")
        self.remove_button.setToolTip("Remove the chosen named calibration (from the catalog, or from the project "
                                      "that carries it; undoable); the catalog's calibration is used again")
        self.remove_button.clicked.connect(self.remove_chosen)
        layout.addWidget(self.remove_button)
        bind_many(self, [(workspace.changed, lambda changes: "devices" in changes and self.refresh()),
                         (workspace.device_focused, lambda _d: self.refresh())])
        self.refresh()

    @property
    def device_id(self) -> str:
        return self.workspace.focused_device

    def refresh(self) -> None:
        ws, dev = self.workspace, self.device_id
        self.combo.blockSignals(True)
        self.combo.clear()
        base = ws.catalog_device(dev) if dev else None
        self.combo.addItem("catalog", None)
        self.combo.setItemData(0, "The catalog's calibration of this device: "
                               + (catalog_calibration_text(base) if base is not None else "none"), TIP)
        for cal, where in ws.calibration_choices(dev) if dev else ():
            mark = where == "project" and ws.calibration_store is not None  # a format-8 project's own
            self.combo.addItem(f"{cal.name} (project)" if mark else cal.name, cal.name)
            self.combo.setItemData(self.combo.count() - 1, f"{cal.describe()}; kept in the {where}"
                                   + (" database" if where == "catalog" else " file (format 8)"), TIP)
        used = ws.used_calibration(dev) if dev else None
        self.combo.setCurrentIndex(0 if used is None else self.combo.findData(used.name))
        self.combo.setToolTip(self.combo.itemData(self.combo.currentIndex(), TIP) or "")
        self.combo.blockSignals(False)
        self.combo.setEnabled(bool(dev))
        self.import_button.setEnabled(base is not None)
        self.remove_button.setEnabled(used is not None)

    def _chosen(self, index: int) -> None:
        if self.device_id:
            self.workspace.choose_calibration(self.device_id, self.combo.itemData(index))

    def remove_chosen(self) -> None:
        name = self.combo.currentData()
        if self.device_id and name is not None:
            self.workspace.remove_calibration(self.device_id, name)

    def import_file(self, path: str | Path | None = None, name: str | None = None) -> bool:
        """Fit the device in focus to the measurement file ``path`` and keep it as ``name`` (asked for when not
        given), in use: one undoable step. A file that cannot be fitted is said in a message box, nothing changes."""
        ws, dev = self.workspace, self.device_id
        base = ws.catalog_device(dev) if dev else None
        if base is None:
            return False
        asked = ask_file_and_name(self, path, name, f"Import measured kernels of {base.name}", FILTER,
                                  "Name the calibration", f"A name for this calibration of {base.name}:")
        if asked is None:
            return False
        path, name = asked
        try:
            cal = import_calibration(path, base, ws.assumptions.precision, name)
        except (ValueError, OSError) as exc:
            QMessageBox.warning(self, "Cannot import the calibration", f"{path.name}: {exc}")
            return False
        ws.add_calibration(dev, cal)
        return True
