"""File -> Export report: choose a file, then build and write the report in a worker thread with a progress dialog.

:func:`export_report` is the menu entry point; :func:`start_export` runs one export without any dialog (the
worker and its signals) so the main window and tests can drive it directly.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QObject, QRunnable, Qt, QThreadPool, QTimer, QUrl, Signal
from PySide6.QtGui import QDesktopServices
from PySide6.QtWidgets import (
    QFileDialog,
    QInputDialog,
    QLineEdit,
    QMessageBox,
    QProgressDialog,
    QWidget,
)

from explorer import report as report_pkg
from explorer.report.build import default_title

_RUNNING: set = set()  # dialogs of exports in flight, kept alive until their job ends
FILTERS = {"PDF report (*.pdf)": ".pdf", "HTML report, self-contained (*.html)": ".html",
           "CSV tables (*.csv)": ".csv"}


class ExportJob(QObject):
    """Signals of one export: ``progress(percent, message)``, then ``finished(paths)`` or ``failed(message)``."""

    progress = Signal(int, str)
    finished = Signal(list)
    failed = Signal(str)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.paths: list[str] | None = None  # set when the report is written
        self.error: str | None = None  # set when it failed
        self.confirmation: QMessageBox | None = None  # the note saying where the report went (with a parent)
        self.finished.connect(self._written)
        self.failed.connect(self._failed)

    @property
    def done(self) -> bool:
        return self.paths is not None or self.error is not None

    def _written(self, paths: list) -> None:
        self.paths = list(paths)

    def _failed(self, message: str) -> None:
        self.error = message


class _Worker(QRunnable):
    def __init__(self, job: ExportJob, analysis, assumptions, path: Path, requirements, systems=None,
                 training=None, serving=None, title: str | None = None):
        super().__init__()
        self.job, self.analysis, self.assumptions, self.path, self.requirements = (job, analysis, assumptions, path,
                                                                                    requirements)
        self.systems = systems
        self.training = training
        self.serving = serving  # a function making the Serving section (its simulation runs here, off the GUI)
        self.title = title
        self.setAutoDelete(True)

    def run(self) -> None:
        try:
            written = report_pkg.export_report(
                self.analysis, self.assumptions, self.path, self.requirements,
                progress=lambda fraction, message: self.job.progress.emit(int(round(100 * fraction)), message),
                systems=self.systems, training=self.training,
                serving=self.serving() if self.serving is not None else None, title=self.title)
        except Exception as exc:  # noqa: BLE001 - any failure becomes a message in the GUI thread
            self.job.failed.emit(str(exc) if isinstance(exc, (ValueError, OSError)) else
                                 f"{type(exc).__name__}: {exc}")
            return
        self.job.finished.emit([str(p) for p in written])


def start_export(workspace, path: str | Path, requirements=None, pool: QThreadPool | None = None,
                 title: str | None = None) -> ExportJob:
    """Write the report of ``workspace``'s current analysis to ``path`` in a worker thread (started when the event
    loop next runs); returns its signals.
    Problems known before any work (no devices, unwritable path, unknown format) raise ReportError/ValueError."""
    analysis = workspace.analysis
    if analysis is None:
        raise report_pkg.ReportError("select at least one device before exporting a report")
    report_pkg.format_of(path)
    report_pkg.check_writable(path)
    job = ExportJob()
    worker = _Worker(job, analysis, workspace.assumptions, Path(path), requirements,
                     _systems_section(workspace, requirements), _training_section(workspace),
                     _serving_section(workspace), title)
    # start on the next turn of the event loop, so the caller connects to the job's signals first
    QTimer.singleShot(0, job, lambda: (pool or QThreadPool.globalInstance()).start(worker))
    return job


def _systems_section(workspace, requirements):
    """The Systems section of the workspace's chosen systems (None without any), with the fleet when the
    requirements give a target."""
    results = workspace.results.systems
    if not results:
        return None
    from explorer.core.parallel.sizing import size_fleet
    from explorer.report.systems_section import build_section

    req = requirements if requirements is not None else workspace.requirements
    plans = size_fleet(results, req.target, req.latency, req.price) if req.target is not None else ()
    return build_section(results, plans)


def _training_section(workspace):
    """The Training section of the workspace's training part on its chosen systems (None without systems)."""
    results = workspace.results.training
    if not results:
        return None
    from explorer.report.training_section import build_section

    return build_section(results, by_hand=workspace.state.training.layout is not None)


def _serving_section(workspace):
    """A function making the Serving section of the state's serving part (None when it has none)."""
    choice, a = workspace.state.serving, workspace.assumptions
    if choice is None:
        return None
    from explorer.report.serving_section import build_serving_section

    model, devices = workspace.model, workspace.devices
    return lambda: build_serving_section(model, devices, choice, a.precision, a.tensor_formats,
                                         time_model=a.time_model)


def ask_title(parent: QWidget | None, workspace) -> str | None:
    """Ask for the report's title, prefilled with the one it would get (the model and the device count);
    None if cancelled. An emptied field keeps that default."""
    analysis = workspace.analysis
    default = default_title(analysis) if analysis is not None else ""
    title, ok = QInputDialog.getText(parent, "Export report", "Report title:", QLineEdit.EchoMode.Normal, default)
    if not ok:
        return None
    return title.strip() or default


def export_report(parent: QWidget | None, workspace, requirements=None) -> ExportJob | None:
    """Ask for a title and a file (PDF, HTML or CSV) and export the report with a progress dialog; when it is
    written, offer to open the file or its folder. None if cancelled."""
    title = ask_title(parent, workspace)
    if title is None:
        return None
    name = (workspace.model.name or "report").split(" (")[0].replace(" ", "-").lower()
    path, chosen = QFileDialog.getSaveFileName(parent, "Export report", f"{name}-report.pdf", ";;".join(FILTERS))
    if not path:
        return None
    if not Path(path).suffix:
        path += FILTERS.get(chosen, ".pdf")
    return run_with_progress(parent, workspace, path, requirements, title=title)


def confirm_written(parent: QWidget, paths: list[str]) -> QMessageBox:
    """A non-modal note naming the files written, with Open (the report) and Show Folder."""
    box = QMessageBox(QMessageBox.Icon.Information, "Export report",
                      "The report was written:\n" + "\n".join(paths), QMessageBox.StandardButton.Close, parent)
    open_button = box.addButton("Open", QMessageBox.ButtonRole.ActionRole)
    folder_button = box.addButton("Show Folder", QMessageBox.ButtonRole.ActionRole)
    open_button.clicked.connect(lambda: QDesktopServices.openUrl(QUrl.fromLocalFile(paths[0])))
    folder_button.clicked.connect(lambda: QDesktopServices.openUrl(QUrl.fromLocalFile(str(Path(paths[0]).parent))))
    box.setWindowModality(Qt.WindowModality.NonModal)
    box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
    box.show()
    return box


def run_with_progress(parent: QWidget | None, workspace, path: str | Path, requirements=None,
                      title: str | None = None) -> ExportJob | None:
    try:
        job = start_export(workspace, path, requirements, title=title)
    except ValueError as exc:
        QMessageBox.warning(parent, "Export report", str(exc))
        return None
    dialog = QProgressDialog("Preparing the report\u2026", "", 0, 100, parent)
    dialog.setWindowTitle("Export report")
    dialog.setCancelButton(None)  # a half-written report is never left behind; the write is short
    dialog.setWindowModality(Qt.WindowModality.WindowModal)
    dialog.setMinimumDuration(0)
    job.setParent(dialog)
    job.progress.connect(lambda percent, message: (dialog.setLabelText(message), dialog.setValue(percent)))

    _RUNNING.add(dialog)

    def done(paths):
        dialog.close()
        _RUNNING.discard(dialog)
        if parent is not None:  # say where it went, and offer to open it
            job.confirmation = confirm_written(parent, paths)

    def failed(message):
        dialog.close()
        _RUNNING.discard(dialog)
        QMessageBox.warning(parent, "Export report", f"The report was not written: {message}")

    job.finished.connect(done)
    job.failed.connect(failed)
    dialog.job = job
    dialog.setValue(0)  # a modal progress dialog processes events here: the export may already be running
    return job
