"""The Preferences dialog (defaults for new projects, stored by ``explorer.core.settings``) and the About box."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QDoubleSpinBox,
    QFormLayout,
    QLabel,
    QMessageBox,
    QVBoxLayout,
    QWidget,
)

from explorer.core.precision import BYTES_PER_ELEMENT, PRECISIONS
from explorer.core.settings import CURRENCIES, Preferences

BOOK = ("V. J. Reddi et al., <i>Machine Learning Systems</i>, chapter \u201cHardware Acceleration\u201d (harvard-edge/"
        "cs249r_book, CC BY-NC-SA 4.0): the roofline, energy, tiling and dataflow models")
HOROWITZ = ("M. Horowitz, \u201cComputing\u2019s energy problem (and what we can do about it)\u201d, ISSCC 2014: "
            "default energy per operation and per byte (45 nm) where a device gives none")


class PreferencesDialog(QDialog):
    """Edit the defaults new projects start from; optionally apply them to the open project too."""

    def __init__(self, prefs: Preferences, parent: QWidget | None = None):
        super().__init__(parent)
        self.setWindowTitle("Preferences")
        self.precision = QComboBox()
        for name in PRECISIONS:
            self.precision.addItem(f"{name} ({BYTES_PER_ELEMENT[name]:g} B/element)", name)
        self.precision.setCurrentIndex(PRECISIONS.index(prefs.default_precision))
        self.electricity = QDoubleSpinBox(minimum=0.001, maximum=10.0, decimals=3, singleStep=0.01, suffix=" USD/kWh")
        self.electricity.setValue(prefs.electricity_usd_per_kwh)
        self.pue = QDoubleSpinBox(minimum=1.0, maximum=5.0, decimals=2, singleStep=0.05)
        self.pue.setValue(prefs.pue)
        self.pue.setToolTip("power usage effectiveness: facility power / IT power (1.0 = no overhead)")
        self.currency = QComboBox()
        self.currency.addItems(CURRENCIES)
        self.currency.setEnabled(len(CURRENCIES) > 1)
        self.currency.setToolTip("Only US dollars for now: prices in the catalog are list prices in USD and "
                                 "no exchange rates are defined.")
        self.years = QDoubleSpinBox(minimum=0.25, maximum=50.0, decimals=2, singleStep=0.5, suffix=" years")
        self.years.setValue(prefs.years)
        self.utilization = QDoubleSpinBox(minimum=1.0, maximum=100.0, decimals=1, singleStep=5.0, suffix=" %")
        self.utilization.setValue(prefs.utilization * 100.0)
        self.apply_to_project = QCheckBox("Also apply to the open project (undoable)")
        form = QFormLayout()
        form.addRow("Default precision", self.precision)
        form.addRow("Electricity price", self.electricity)
        form.addRow("PUE", self.pue)
        form.addRow("Currency", self.currency)
        form.addRow("Years of ownership (TCO)", self.years)
        form.addRow("Utilization (TCO)", self.utilization)
        note = QLabel("These are the defaults a new project starts from; each project keeps its own assumptions. "
                      "Currency: USD only for now.")
        note.setWordWrap(True)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addLayout(form)
        layout.addWidget(note)
        layout.addWidget(self.apply_to_project)
        layout.addWidget(buttons)

    def preferences(self) -> Preferences:
        return Preferences(default_precision=self.precision.currentData(),
                           electricity_usd_per_kwh=self.electricity.value(), pue=self.pue.value(),
                           currency=self.currency.currentText(), years=self.years.value(),
                           utilization=self.utilization.value() / 100.0).checked()


def about_text(device_count: int | None, source_count: int | None) -> str:
    from explorer import __version__  # read from the package metadata when first asked for

    if device_count is None:
        catalog = "Device catalog: not available."
    else:
        catalog = (f"Device catalog: {device_count} devices citing {source_count} sources (vendor datasheets, "
                   "papers and product pages; each figure shows its source in the catalog).")
    return (f"<h3>Hardware Explorer {__version__}</h3>"
            "<p>Choose, size and tune ML accelerators: roofline, energy, tiling and cost models.</p>"
            "<p><b>Data sources</b></p><ul>"
            f"<li>{catalog}</li><li>Models and formulas: {BOOK}.</li><li>Default energies: {HOROWITZ}.</li></ul>"
            "<p>Licensed under the Apache License 2.0.</p>")


def catalog_source_counts(repository) -> tuple[int | None, int | None]:
    """(devices, distinct cited sources) of the catalog, or (None, None) when it cannot be read."""
    if repository is None:
        return None, None
    try:
        devices = repository.devices()
    except Exception:  # noqa: BLE001 - the About box must open even when the database is unreachable
        return None, None
    sources = {(s.title, s.url) for d in devices for s in d.sources.values()}
    return len(devices), len(sources)


def show_about(parent: QWidget | None, repository=None) -> None:
    box = QMessageBox(parent)
    box.setWindowTitle("About Hardware Explorer")
    box.setTextFormat(Qt.TextFormat.RichText)
    box.setText(about_text(*catalog_source_counts(repository)))
    box.setIconPixmap(parent.windowIcon().pixmap(64, 64) if parent is not None else box.iconPixmap())
    box.exec()
