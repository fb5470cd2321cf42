"""File menu imports: a model (ONNX or a model file, as one undoable edit), a profiler trace (the Trace dock and
crosses on the roofline), and the device catalog's import and export (delegated to the catalog dock). Formats,
file filters and loading come from the importer registry (``explorer.core.importers``); a file dropped on the
window goes through the same ``import_model`` / ``import_trace``.

Errors are shown in a message box that names the file and what is wrong; the open project is left untouched.
"""

from __future__ import annotations

import re
from pathlib import Path

from PySide6.QtCore import QObject, Qt
from PySide6.QtWidgets import QDockWidget, QFileDialog, QInputDialog, QMessageBox

from explorer.core.session.commands import SetModel, SetTrace

# the importers (ONNX, Hugging Face configs, traces) are imported when a file is first imported, not at start-up
_SYMBOLIC = re.compile(r"dimension \d+ is symbolic \('([^']+)'\)")
DEFAULT_DIM = 128
DEFAULT_CLOCK_MHZ = 800.0


class Importer(QObject):
    """The File menu's import commands for a MainWindow (which owns the panels they feed)."""

    def __init__(self, window):
        super().__init__(window)
        self.window = window
        self.summary: QMessageBox | None = None  # the last import's summary (non-modal)

    @property
    def trace(self):
        """The session's trace (``workspace.trace``)."""
        return self.window.workspace.trace

    # -- models
    def import_model(self, path: str | Path | None = None) -> bool:
        """Ask for a model file (unless given), import it with the model importer that recognizes it and make
        it the workspace's model (Undo restores the previous one). An ONNX graph's symbolic input sizes other
        than the batch are asked for. False if nothing changed."""
        from explorer.core.importers import file_filter, load

        if path is None:
            path, _ = QFileDialog.getOpenFileName(self.window, "Import model", "", file_filter("model"))
            if not path:
                return False
        dims: dict[str, int] = {}
        while True:
            try:
                result = load(path, kind="model", **({"dims": dims} if dims else {}))
                break
            except (ValueError, OSError) as exc:  # the registry's, the model file's and ONNX's errors
                symbol = _SYMBOLIC.search(str(exc))
                if symbol is None or symbol.group(1) in dims:
                    self._error("Import model", f"The model was not imported.\n\n{exc}")
                    return False
                size, ok = QInputDialog.getInt(
                    self.window, "Import model",
                    f"The input dimension '{symbol.group(1)}' has no fixed size.\nSize to analyze it at:",
                    DEFAULT_DIM, 1, 10_000_000)
                if not ok:
                    return False
                dims[symbol.group(1)] = size
        name = Path(path).name
        self.window.workspace.execute(SetModel(result.value, text=f"import {name}"))
        self._show_model_summary(name, result)
        return True

    def _show_model_summary(self, name: str, result) -> None:
        layers = len(result.value.layers)
        unsupported_ops = result.details.get("unsupported", ())
        unsupported = sum(n for _, n in unsupported_ops)
        text = f"Imported {layers} layers from {name}."
        if unsupported_ops:
            listed = ", ".join(f"{op} \u00d7{n}" for op, n in unsupported_ops)
            text += (f"\n\n{unsupported} operator(s) of {len(unsupported_ops)} type(s) are not supported and "
                     f"are kept as opaque layers with their traffic and no work: {listed}.")
        self.window.statusBar().showMessage(text.splitlines()[0] + " Undo restores the previous model.", 10000)
        if not unsupported_ops and not result.warnings:
            return
        details = []
        if unsupported_ops:
            details.append("Unsupported operators (count):")
            details += [f"  {op}: {n}" for op, n in unsupported_ops]
        if result.warnings:
            details.append("Warnings:")
            details += [f"  - {w}" for w in result.warnings]
        box = QMessageBox(QMessageBox.Icon.Warning if unsupported_ops else QMessageBox.Icon.Information,
                          "Model imported", text, QMessageBox.StandardButton.Ok, self.window)
        box.setInformativeText(f"{len(result.warnings)} warning(s); see the details." if result.warnings else "")
        box.setDetailedText("\n".join(details))
        box.setWindowModality(Qt.WindowModality.NonModal)
        box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        box.destroyed.connect(lambda *_: setattr(self, "summary", None))
        self.summary = box
        box.show()

    # -- traces
    def import_trace(self, path: str | Path | None = None):
        """Ask for a trace file (unless given), read it and show it; the Torq trace.csv's clock is asked for.
        Returns the trace, or None when nothing was loaded."""
        from explorer.core.importers import file_filter, load

        if path is None:
            path, _ = QFileDialog.getOpenFileName(self.window, "Import profiler trace", "", file_filter("trace"))
            if not path:
                return None
        clock_hz = None
        while True:
            try:
                trace = load(path, kind="trace", clock_hz=clock_hz).value
                break
            except (ValueError, OSError) as exc:  # TraceError, or the registry's (no trace format fits)
                if getattr(exc, "field", None) == "clock_hz" and clock_hz is None:
                    mhz, ok = QInputDialog.getDouble(
                        self.window, "Import trace",
                        "This trace counts time in clock cycles.\nNPU clock frequency (MHz):",
                        DEFAULT_CLOCK_MHZ, 0.001, 1_000_000.0, 3)
                    if not ok:
                        return None
                    clock_hz = mhz * 1e6
                    continue
                self._error("Import trace", f"The trace was not loaded.\n\n{exc}")
                return None
        self.set_trace(trace, f"load {Path(path).name}")
        self.window.statusBar().showMessage(f"Loaded {Path(path).name}: {self._placed(trace)}", 10000)
        return trace

    def _placed(self, trace) -> str:
        from explorer.core.analysis.roofline_measured import measured_roofline
        from explorer.core.traces import kernel_events

        ws = self.window.workspace
        analysis = ws.analysis
        if analysis is None:
            return f"{len(kernel_events(trace))} kernels; select a device to place them on the Roofline"
        ids = analysis.devices.ids
        m = measured_roofline(trace, analysis, ids.index(ws.focused_device) if ws.focused_device in ids else 0)
        return f"{len(m)} of {m.kernels} kernels placed on the Roofline" + (f" ({m.note})" if m.note else "")

    def set_trace(self, trace, text: str = "load trace") -> None:
        """Make ``trace`` the session's (None clears it) as one undoable edit, and show the Trace dock."""
        self.window.workspace.execute(SetTrace(trace, text=text if trace is not None else "clear trace"))
        if trace is not None:
            dock = self.window.findChild(QDockWidget, "trace_dock")
            if dock is not None:
                dock.show()
                dock.raise_()

    # -- the device catalog
    def import_catalog(self) -> tuple[str, ...]:
        dock = self.window.catalog_dock
        if dock is None:
            return ()
        ids = dock.import_catalog()
        if ids:
            self.window.statusBar().showMessage(f"Imported {len(ids)} device(s) into the catalog", 8000)
        return ids

    def export_catalog(self) -> int:
        dock = self.window.catalog_dock
        if dock is None:
            return 0
        count = dock.export_catalog()
        if count:
            self.window.statusBar().showMessage(f"Exported {count} device(s)", 8000)
        return count

    def _error(self, title: str, message: str) -> None:
        QMessageBox.warning(self.window, title, message)
