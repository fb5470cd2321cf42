"""The report as one XLSX workbook (openpyxl), one sheet per table, for people who take the numbers into their own
spreadsheets: Summary (one row per device, the plan's columns included), Layers (every operator on every device),
Sensitivity and Break-even (when the plan has a target), Assumptions, Method, Sources and, with those sections,
Systems, Training and Serving (per device and method: the rate, capacity and knee, TTFT/TPOT percentiles against
the targets, goodput, throughput per device, cost per million output tokens and energy per token; the rows of
``FILE-serving.csv``, with "service levels met" as a true/false cell).

The cells are those of the CSV export: numbers as numbers (SI units, stated in each header), unknowns empty, and
text that a spreadsheet would run as a formula (``= + - @``, a tab, a carriage return at the start) made inert
with a leading apostrophe, then stored as a plain string (never a formula).
"""

from __future__ import annotations

import csv
import io
import math

from openpyxl import Workbook
from openpyxl.cell import WriteOnlyCell
from openpyxl.styles import Font

from explorer.core.files import spreadsheet_safe

from .build import ReportData
from .csv_export import layers_csv, summary_csv, systems_csv

_BOLD = Font(bold=True)


def _value(cell):
    """A CSV cell back as a number where it is one; text stays text."""
    if isinstance(cell, str):
        try:
            x = float(cell)
        except ValueError:
            return cell
        return x if math.isfinite(x) else None
    if isinstance(cell, float) and not math.isfinite(cell):
        return None
    return cell


def _plain(value):
    """A cell of the serving rows as openpyxl stores it: Python numbers and booleans, unknown (NaN) empty."""
    if hasattr(value, "item"):  # a numpy scalar
        value = value.item()
    return _value(value) if isinstance(value, float) else value


def _cell(ws, value, bold: bool = False) -> WriteOnlyCell:
    value = spreadsheet_safe(value) if isinstance(value, str) else value
    c = WriteOnlyCell(ws, value=value)
    if isinstance(value, str):
        c.data_type = "s"  # a string, whatever it starts with: never a formula
    if bold:
        c.font = _BOLD
    return c


def _sheet(wb: Workbook, title: str, header: list[str], rows) -> None:
    ws = wb.create_sheet(title)
    ws.append([_cell(ws, h, bold=True) for h in header])
    for row in rows:
        ws.append([_cell(ws, v) for v in row])


def _csv_rows(text: str) -> tuple[list[str], list[list]]:
    from explorer.core.files import spreadsheet_unsafe

    rows = list(csv.reader(io.StringIO(text)))
    header = [spreadsheet_unsafe(h) for h in rows[0]] if rows else []
    return header, [[_value(spreadsheet_unsafe(c)) for c in r] for r in rows[1:]]


def render_xlsx(data: ReportData) -> bytes:
    wb = Workbook(write_only=True)
    _sheet(wb, "Summary", *_csv_rows(summary_csv(data)))
    _sheet(wb, "Layers", *_csv_rows(layers_csv(data)))
    sens = getattr(data, "sensitivity", None)
    if sens is not None:
        from .sensitivity_section import break_even_table, sensitivity_table

        _sheet(wb, "Sensitivity", *sensitivity_table(sens, numbers=True))
        _sheet(wb, "Break-even", *break_even_table(sens, numbers=True))
    _sheet(wb, "Assumptions", ["Assumption", "Value"], data.assumptions)
    _sheet(wb, "Method", ["Quantity", "Formula"], data.method)
    _sheet(wb, "Sources", ["Device", "Figure", "Value as written", "Source", "URL", "Date read"],
           [(s.device, s.figure, s.value, s.title, s.url, s.date) for s in data.sources])
    if data.systems:
        _sheet(wb, "Systems", *_csv_rows(systems_csv(data)))
    if getattr(data, "training", None):
        from .csv_export import training_csv

        _sheet(wb, "Training", *_csv_rows(training_csv(data)))
    if getattr(data, "serving", None):
        from .serving_section import csv_rows

        head, *rows = csv_rows(data.serving)
        _sheet(wb, "Serving", head, [[_plain(v) for v in r] for r in rows])
    out = io.BytesIO()
    wb.save(out)
    return out.getvalue()
