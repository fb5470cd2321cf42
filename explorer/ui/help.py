"""The Help menu's quick start (what to do first, what each panel answers) and its links to the documentation."""

from __future__ import annotations

import sys
from pathlib import Path

from PySide6.QtCore import Qt, QUrl
from PySide6.QtGui import QDesktopServices
from PySide6.QtWidgets import QMessageBox, QWidget

#: (menu text, file under docs/) for Help > Documentation.
DOCS = (
    ("Command line", "cli.md"),
    ("Model files and layer kinds", "model-file.md"),
    ("Templates and their published figures", "templates.md"),
    ("Hugging Face configs", "hf-config.md"),
    ("Device files", "device-file.md"),
    ("Project files", "project-file.md"),
    ("Profiler traces", "traces.md"),
    ("The device catalog", "catalog.md"),
    ("How the code is laid out", "architecture.md"),
)

QUICK_START = """<h3>Quick start</h3>
<ol>
<li><b>A model.</b> File &rarr; New from Template (ResNet-50 to Llama 3.1 405B, Mixtral, DeepSeek-V3), File &rarr;
Import Model (a Hugging Face <tt>config.json</tt>, an ONNX file, a model file), or drag layer kinds from the palette
into the layer list. Drop a file on the window to import it.</li>
<li><b>Devices.</b> Tick devices in the Device catalog (right). Every figure there names its source.</li>
<li><b>Assumptions.</b> Precision, batch, sequence length and phase in the toolbar; electricity, PUE, utilization
and ownership in Model settings.</li>
</ol>
<h3>What each panel answers</h3>
<ul>
<li><b>Roofline</b>: is each operator compute- or memory-bound on each device, and how far from its roof?
Hover a point for its numbers; click it to select its layer everywhere.</li>
<li><b>Memory-hierarchy energy</b>: where the joules go, per operator and per device, against the energy ladder.</li>
<li><b>Tiling fringe tax</b>: how much of the matrix engine a GEMM's shape leaves idle, and which padding helps.</li>
<li><b>Cost per TFLOP/s</b>: price per peak and per sustained FLOP/s, TCO and cost per million.</li>
<li><b>Training</b>: how long and how much to train the model on the systems chosen in the Systems panel: the
step time part by part, memory per device against capacity, MFU, and the days and MWh to train on T tokens.</li>
<li><b>Procurement planner</b>: which device, how many, at what cost, for a throughput, latency, budget and power
cap.</li>
<li><b>Trace</b>: File &rarr; Import Trace places measured kernels beside the model on the roofline.</li>
</ul>
<p>Edits are undoable (Edit &rarr; Undo); File &rarr; Save keeps the model, devices, assumptions, trace, planner, systems and
training run in one project file. File &rarr; Export Report writes PDF, HTML or CSV.</p>"""


def docs_dir() -> Path | None:
    """The documentation folder beside the application (the source tree's, or a bundle's), None when absent."""
    bundle = getattr(sys, "_MEIPASS", None)
    for folder in ((Path(bundle) / "docs") if bundle else None, Path(__file__).resolve().parents[2] / "docs"):
        if folder is not None and folder.is_dir():
            return folder
    return None


def show_quick_start(parent: QWidget | None) -> QMessageBox:
    """The quick start, non-modal (it can stay open beside the window)."""
    box = QMessageBox(QMessageBox.Icon.NoIcon, "Quick start", QUICK_START, QMessageBox.StandardButton.Close, parent)
    box.setTextFormat(Qt.TextFormat.RichText)
    box.setWindowModality(Qt.WindowModality.NonModal)
    box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
    box.show()
    return box


def open_doc(name: str) -> bool:
    """Open ``docs/name`` with the desktop's viewer; False when the documentation is not installed."""
    folder = docs_dir()
    if folder is None or not (folder / name).is_file():
        return False
    return QDesktopServices.openUrl(QUrl.fromLocalFile(str(folder / name)))
