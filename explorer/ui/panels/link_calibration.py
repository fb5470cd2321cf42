"""Link calibrations in the app (issue 21): fit a chosen system's level to an nccl-tests output, see the fit, keep it
under a name and choose which one the calibrated model uses on that level.

The Systems panel's **Links…** button opens this window. For the system and level chosen at the top it lists the
level's named fits (``stated`` first: the system's own figures); **Import nccl-tests…** reads an
``all_reduce_perf`` / ``all_gather_perf`` / ``reduce_scatter_perf`` / ``alltoall_perf`` output, fits it as
``hwexplorer calibrate link`` does (:func:`~explorer.core.session.link_calibrations.import_link`) and keeps it
under a name, in use: one undoable step; choosing and removing are one step each. The chart shows the chosen fit:
the run's measured bus bandwidth against the message size (log x), the fitted curve, and the stated per-direction
bandwidth (what a ring's bus bandwidth reaches at full speed). The view only maps the core's values.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QComboBox,
    QDialog,
    QHBoxLayout,
    QLabel,
    QMessageBox,
    QPushButton,
    QVBoxLayout,
)

from explorer.core.parallel.link_fit import LEVELS
from explorer.core.session.link_calibrations import domain_of, import_link

from ..binding import bind_many
from .calibration_chooser import ask_file_and_name
from .plotting import new_plot

FILTER = "nccl-tests or rccl-tests output (*.txt *.log *.out);;All files (*)"
SIZES = (("every message", 0.0), ("64 KiB and up", 2.0**16), ("1 MiB and up", 2.0**20))
JOINS = (("alpha-beta", "sum"), ("soft join", "soft"))
STATED = "stated figures"


class LinkCalibrationDialog(QDialog):
    """``System [combo] Level [combo] | Fit [combo] [Import nccl-tests…] [Remove]``, the fit's chart and a line
    describing it. Non-modal; follows the workspace's undo and redo."""

    def __init__(self, workspace, parent=None):
        super().__init__(parent)
        self.workspace = workspace
        self.setWindowTitle("Link calibrations (nccl-tests)")
        self.resize(860, 560)
        outer = QVBoxLayout(self)
        top = QHBoxLayout()
        self.system_combo, self.level_combo, self.fit_combo = QComboBox(), QComboBox(), QComboBox()
        self.system_combo.setToolTip("One of the systems chosen in the Systems panel")
        self.level_combo.setToolTip("The level the run measured: the scale-up or the scale-out domain")
        self.fit_combo.setToolTip("Which fit the calibrated time model uses on this level (stated figures: the "
                                  "system's own, and a fit saved in the system by 'calibrate link --save')")
        self.fit_combo.setMinimumContentsLength(22)
        self.fit_combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        for label, combo in (("System:", self.system_combo), ("Level:", self.level_combo), ("Fit:", self.fit_combo)):
            top.addWidget(QLabel(label))
            top.addWidget(combo)
        self.system_combo.activated.connect(lambda _i: self.refresh())
        self.level_combo.activated.connect(lambda _i: self.refresh())
        self.fit_combo.activated.connect(self._chosen)
        top.addStretch(1)
        outer.addLayout(top)
        second = QHBoxLayout()
        self.size_combo, self.join_combo = QComboBox(), QComboBox()
        for text, value in SIZES:
            self.size_combo.addItem(text, value)
        self.size_combo.setCurrentIndex(2)
        self.size_combo.setToolTip("Fit only these messages: small ones run NCCL's low-latency protocols, which one "
                                   "alpha-beta line cannot follow with the large ones (docs/calibration.md)")
        for text, value in JOINS:
            self.join_combo.addItem(text, value)
        self.join_combo.setToolTip("alpha-beta: latency + size / bandwidth; soft join: also fit how slowly the bus "
                                   "bandwidth ramps up (calibrate link --join soft)")
        self.import_button = QPushButton("Import nccl-tests\u2026")
        self.import_button.setToolTip("Fit this level to an nccl-tests (or rccl-tests) output: all_reduce_perf, "
                                      "all_gather_perf, reduce_scatter_perf or alltoall_perf (undoable; saved "
                                      "with the project)")
        self.import_button.clicked.connect(lambda: self.import_file())
        self.remove_button = QPushButton("Remove")
        self.remove_button.setToolTip("Remove the chosen fit from the project (undoable): the stated figures apply")
        self.remove_button.clicked.connect(self.remove_chosen)
        self.save_button = QPushButton("Save to catalog")
        self.save_button.setToolTip("Store the chosen fit in the catalog's system, on this level's domain, as "
                                    "'hwexplorer calibrate link --save --name' does: every project and the command "
                                    "line then use it under the calibrated model (undoable; 'calibrate revert' "
                                    "gives the shipped figures back)")
        self.save_button.clicked.connect(lambda: self.save_chosen())
        for w in (QLabel("Fit messages:"), self.size_combo, QLabel("Model:"), self.join_combo, self.import_button,
                  self.remove_button, self.save_button):
            second.addWidget(w)
        second.addStretch(1)
        outer.addLayout(second)
        self.plot = new_plot(log_x=True)
        self.plot.setLabel("bottom", "message size (B)")
        self.plot.setLabel("left", "bus bandwidth (GB/s)")
        self.plot.getAxis("left").enableAutoSIPrefix(False)
        self.plot.addLegend(offset=(-10, -10))  # bottom right: below the plateau, right of the ramp
        self.measured = pg.PlotDataItem(pen=None, symbol="o", symbolSize=7, symbolPen=pg.mkPen("#1f77b4"),
                                        symbolBrush=pg.mkBrush("#1f77b4"), name="measured (nccl-tests busbw)")
        self.left_out = pg.PlotDataItem(pen=None, symbol="o", symbolSize=7, symbolPen=pg.mkPen("#1f77b4"),
                                        symbolBrush=pg.mkBrush(None), name="measured, not fitted")
        self.fitted = pg.PlotDataItem(pen=pg.mkPen("#d62728", width=2), name="fit")
        self.stated = pg.InfiniteLine(angle=0, pen=pg.mkPen("#555555", width=1.5, style=Qt.PenStyle.DashLine))
        for item in (self.measured, self.left_out, self.fitted):
            self.plot.addItem(item)
        self.plot.addItem(self.stated)
        self.plot.legend.addItem(pg.PlotDataItem(pen=pg.mkPen("#555555", width=1.5, style=Qt.PenStyle.DashLine)),
                                 "stated per-direction bandwidth")
        self.chart = pg.PlotWidget(plotItem=self.plot, background="w")
        outer.addWidget(self.chart, 1)
        self.note = QLabel()
        self.note.setObjectName("link_fit_note")
        self.note.setWordWrap(True)
        self.note.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        outer.addWidget(self.note)
        bind_many(self, [(workspace.changed, lambda changes: "system" in changes and self.refresh())])
        self.refresh()

    # -- what is chosen
    @property
    def system_id(self) -> str:
        return self.system_combo.currentData() or ""

    @property
    def level(self) -> str:
        return self.level_combo.currentData() or LEVELS[0]

    def system(self):
        return self.workspace.system(self.system_id) if self.system_id else None

    def select(self, system_id: str, level: str | None = None) -> None:
        """Show ``system_id`` (one of the chosen systems) and ``level``."""
        self.refresh()
        i = self.system_combo.findData(system_id)
        if i >= 0:
            self.system_combo.setCurrentIndex(i)
        self.refresh()
        if level is not None and self.level_combo.findData(level) >= 0:
            self.level_combo.setCurrentIndex(self.level_combo.findData(level))
        self.refresh()

    # -- mapping the state to the widgets
    def refresh(self) -> None:
        ws = self.workspace
        current, level = self.system_id, self.level
        ids = ws.state.system.system_ids
        _fill(self.system_combo, [(i, (s.name.split(" (")[0] if (s := ws.system(i)) else i)) for i in ids], current)
        system = self.system()
        levels = [lv for lv in LEVELS if system is not None and domain_of(system, lv) is not None]
        _fill(self.level_combo, [(lv, lv) for lv in levels], level)
        links = ws.calibrations.links
        fits = links.of(self.system_id, self.level) if system is not None else ()
        used = links.used(self.system_id, self.level) if system is not None else None
        _fill(self.fit_combo, [(None, STATED), *((f.name, f.name) for f in fits)], used.name if used else None)
        for i, f in enumerate(fits, start=1):
            self.fit_combo.setItemData(i, f.describe(), Qt.ItemDataRole.ToolTipRole)
        self.fit_combo.setEnabled(system is not None)
        self.import_button.setEnabled(system is not None and bool(levels))
        self.remove_button.setEnabled(used is not None)
        self.save_button.setEnabled(used is not None and hasattr(ws.calibration_store, "update_system"))
        self.draw(system, used)

    def draw(self, system, link) -> None:
        domain = domain_of(system, self.level) if system is not None else None
        stated = system.bandwidth(domain) if domain is not None else float("nan")
        self.stated.setVisible(bool(np.isfinite(stated)))
        if np.isfinite(stated):
            self.stated.setValue(stated / 1e9)
        if link is None:
            for item in (self.measured, self.left_out, self.fitted):
                item.setData([], [])
            if np.isfinite(stated):
                self.plot.setYRange(0, stated / 1e9 * 1.15, padding=0)
            self.note.setText("No fit in use on this level: the calibrated model uses the system's stated figures"
                              + (f" ({domain.name}: {stated / 1e9:.1f} GB/s per direction)." if domain else ".")
                              + " Import an nccl-tests output to fit it.")
            return
        size = np.asarray(link.size)
        _predicted, measured = link.curve(size)
        fitted = size >= link.min_size
        self.measured.setData(size[fitted], measured[fitted] / 1e9)
        self.left_out.setData(size[~fitted], measured[~fitted] / 1e9)
        grid = np.geomspace(size.min(), size.max(), 200)
        self.fitted.setData(grid, link.curve(grid)[0] / 1e9)
        top = max(float(measured.max()), float(stated) if np.isfinite(stated) else 0.0) / 1e9
        self.plot.setYRange(0, top * 1.15, padding=0)  # the stated line and every point in view, room for the key
        self.plot.setXRange(np.log10(size.min()), np.log10(size.max()), padding=0.03)
        share = f", {link.bandwidth_Bps / stated * 100:.0f} % of the stated {stated / 1e9:.1f} GB/s" \
            if np.isfinite(stated) and stated > 0 else ""
        self.note.setText(f"In use on {domain.name} ({self.level}): {link.describe()}{share}.")

    # -- edits (each one undoable step of the workspace)
    def _chosen(self, index: int) -> None:
        if self.system_id:
            self.workspace.choose_link_calibration(self.system_id, self.level, self.fit_combo.itemData(index))

    def remove_chosen(self) -> None:
        name = self.fit_combo.currentData()
        if self.system_id and name is not None:
            self.workspace.remove_link_calibration(self.system_id, name)

    def save_chosen(self) -> bool:
        """Store the chosen fit in the catalog database's system (one undoable step); a failure is said in a
        message box and nothing changes."""
        name = self.fit_combo.currentData()
        if not self.system_id or name is None:
            return False
        try:
            self.workspace.save_link_to_catalog(self.system_id, name)
        except ValueError as exc:
            QMessageBox.warning(self, "Cannot save the fit", str(exc))
            return False
        return True

    def import_file(self, path: str | Path | None = None, name: str | None = None) -> bool:
        """Fit the chosen system's level to the nccl-tests output ``path`` and keep it as ``name`` (asked for when
        not given), in use: one undoable step. A file that cannot be fitted is said in a message box."""
        system = self.system()
        if system is None:
            return False
        asked = ask_file_and_name(self, path, name, f"Import an nccl-tests output for {system.name}", FILTER,
                                  "Name the fit", f"A name for this fit of {system.name}'s {self.level} link:")
        if asked is None:
            return False
        path, name = asked
        try:
            link, _fit = import_link(path, system, name, self.level, min_size=self.size_combo.currentData(),
                                     join=self.join_combo.currentData())
        except (ValueError, OSError) as exc:
            QMessageBox.warning(self, "Cannot fit the link", f"{path.name}: {exc}")
            return False
        self.workspace.add_link_calibration(system.id, link)
        self.select(system.id, link.level)
        return True


def _fill(combo: QComboBox, items, current) -> None:
    """Put ``items`` ((data, text) pairs) in ``combo``, keeping ``current`` chosen when it is still there."""
    combo.blockSignals(True)
    combo.clear()
    for data, text in items:
        combo.addItem(text, data)
    i = next((k for k, (data, _text) in enumerate(items) if data == current), 0)
    combo.setCurrentIndex(i if combo.count() else -1)
    combo.blockSignals(False)
