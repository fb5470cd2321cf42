"""Comparison reports (PDF, self-contained HTML, CSV) for a model on selected devices, with the procurement plan.

Qt-free: the command line and the GUI's export both call :func:`export_report`. Files are written atomically
(temporary file in the same folder, then renamed): a crash mid-write leaves any previous report intact.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Callable

from explorer.core.files import atomic_write_bytes, atomic_write_text

from ..core.analysis.cost import CostAssumptionsLike
from ..core.analysis.evaluate import ModelAnalysis
from ..core.analysis.procurement import Requirements
from .build import ReportData, build_report

FORMATS = {".pdf": "pdf", ".html": "html", ".htm": "html", ".csv": "csv", ".xlsx": "xlsx"}
Progress = Callable[[float, str], None]

__all__ = ["FORMATS", "ReportData", "ReportError", "build_report", "check_writable", "export_report", "format_of",
           "write_report"]


class ReportError(ValueError):
    """The report cannot be written: unknown format or an unwritable path (the message says which and why)."""


def format_of(path: str | Path, fmt: str | None = None) -> str:
    if fmt is not None:
        if fmt not in ("pdf", "html", "csv", "xlsx"):
            raise ReportError(f"format: expected pdf, html, csv or xlsx, got {fmt!r}")
        return fmt
    suffix = Path(path).suffix.lower()
    if suffix not in FORMATS:
        raise ReportError(f"{path}: unknown report format '{suffix or '(none)'}'; use .pdf, .html, .csv or .xlsx")
    return FORMATS[suffix]


def check_writable(path: str | Path) -> Path:
    """Fail early, before any work, when ``path`` cannot be written; the message says why."""
    path = Path(path)
    folder = path.parent if str(path.parent) else Path(".")
    if path.is_dir():
        raise ReportError(f"cannot write the report to {path}: it is a folder")
    if not folder.exists():
        raise ReportError(f"cannot write the report to {path}: the folder {folder} does not exist")
    if not folder.is_dir():
        raise ReportError(f"cannot write the report to {path}: {folder} is not a folder")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise ReportError(f"cannot write the report to {path}: no permission to write in {folder}")
    if path.exists() and not os.access(path, os.W_OK):
        raise ReportError(f"cannot write the report to {path}: the file is read-only")
    return path


def _write(path: Path, payload: str | bytes) -> None:
    try:
        if isinstance(payload, bytes):
            atomic_write_bytes(path, payload)
        else:
            atomic_write_text(path, payload)
    except OSError as exc:
        raise ReportError(f"cannot write the report to {path}: {exc.strerror or exc}") from None


def write_report(data: ReportData, path: str | Path, fmt: str | None = None,
                 progress: Progress | None = None) -> list[Path]:
    """Render ``data`` in the format of ``path`` (or ``fmt``) and write it; returns the files written."""
    fmt = format_of(path, fmt)
    path = check_writable(path)
    report = progress or (lambda fraction, message: None)
    if fmt == "pdf":
        from .pdf import render_pdf

        report(0.4, "Laying out the PDF")
        _write(path, render_pdf(data))
        return [path]
    if fmt == "xlsx":
        from .xlsx_export import render_xlsx

        report(0.4, "Writing the XLSX workbook")
        _write(path, render_xlsx(data))
        return [path]
    if fmt == "html":
        from .html import render_html

        report(0.4, "Writing the HTML")
        _write(path, render_html(data))
        return [path]
    from .csv_export import layers_csv, layers_path, serving_csv, sibling_path, summary_csv, systems_csv, training_csv

    report(0.4, "Writing the CSV tables")
    layers = check_writable(layers_path(path))
    systems = check_writable(sibling_path(path, "systems")) if data.systems else None
    training = check_writable(sibling_path(path, "training")) if data.training else None
    serving = check_writable(sibling_path(path, "serving")) if data.serving else None
    _write(path, summary_csv(data))
    _write(layers, layers_csv(data))
    written = [path, layers]
    if systems is not None:
        _write(systems, systems_csv(data))
        written.append(systems)
    if training is not None:
        _write(training, training_csv(data))
        written.append(training)
    if serving is not None:
        _write(serving, serving_csv(data))
        written.append(serving)
    return written


def export_report(analysis: ModelAnalysis, assumptions: CostAssumptionsLike, path: str | Path,
                  requirements: Requirements | None = None, fmt: str | None = None,
                  progress: Progress | None = None, systems=None, training=None, serving=None,
                  title: str | None = None) -> list[Path]:
    """Build and write a report in one call (what the CLI and the GUI's worker run)."""
    format_of(path, fmt)
    check_writable(path)
    report = progress or (lambda fraction, message: None)
    report(0.05, "Collecting results")
    data = build_report(analysis, assumptions, requirements, title=title or None,
                        **({"systems": systems} if systems else {}),
                        **({"training": training} if training else {}), **({"serving": serving} if serving else {}))
    written = write_report(data, path, fmt, progress)
    report(1.0, "Done")
    return written
