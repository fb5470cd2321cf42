"""The comparison report as a print-quality PDF (reportlab platypus): A4, header with model and date, page X of Y."""

from __future__ import annotations

import io
import math
from xml.sax.saxutils import escape

from reportlab.lib import colors
from reportlab.lib.enums import TA_LEFT
from reportlab.lib.pagesizes import A4
from reportlab.lib.styles import ParagraphStyle
from reportlab.lib.units import mm
from reportlab.pdfgen import canvas as pdfcanvas
from reportlab.platypus import (
    BaseDocTemplate,
    CondPageBreak,
    Frame,
    KeepTogether,
    PageTemplate,
    Paragraph,
    Spacer,
    Table,
    TableStyle,
)

from ..core.analysis.procurement import format_usd
from ..core.units import format_si
from .build import ReportData, model_statement, pdf_text, references, summary_caption
from .systems_section import (
    LADDER_HEADERS,
    NOT_PRICED,
    NOTE,
    PLAN_HEADERS,
    ladder_rows,
    layout_rows,
    plan_rows,
    system_sources,
)
from .training_figures import training_figure
from .training_section import (
    MEMORY_HEADERS,
    STEP_HEADERS,
    assumptions,
    memory_rows,
    step_rows,
    summary_rows,
    training_sources,
)
from .figures import cost_figure, energy_caption, energy_figure, roofline_figure, tiling_figure

PAGE_W, PAGE_H = A4
MARGIN = 18 * mm
CONTENT_W = PAGE_W - 2 * MARGIN
NAVY = colors.HexColor("#1F3A5F")
ZEBRA = colors.HexColor("#F3F5F8")
RULE = colors.HexColor("#B8C2CC")
PASS, FAIL, NA = colors.HexColor("#1B7F3B"), colors.HexColor("#B00020"), colors.HexColor("#6B6B6B")
STATUS_COLOR = {"pass": PASS, "fail": FAIL, "n/a": NA, "unknown": colors.HexColor("#9A6700"), "split": NA}

BASE = ParagraphStyle("base", fontName="Helvetica", fontSize=9, leading=12, textColor=colors.HexColor("#222222"))
STYLES = {
    "title": ParagraphStyle("title", BASE, fontName="Helvetica-Bold", fontSize=20, leading=24, textColor=NAVY),
    "subtitle": ParagraphStyle("subtitle", BASE, fontSize=12.5, leading=16, textColor=colors.HexColor("#44546A")),
    "meta": ParagraphStyle("meta", BASE, fontSize=8.5, leading=11.5, textColor=colors.HexColor("#555555")),
    "h1": ParagraphStyle("h1", BASE, fontName="Helvetica-Bold", fontSize=13, leading=16, textColor=NAVY,
                         spaceBefore=10, spaceAfter=5, keepWithNext=1),
    "h2": ParagraphStyle("h2", BASE, fontName="Helvetica-Bold", fontSize=10, leading=13, textColor=NAVY,
                         spaceBefore=6, spaceAfter=3, keepWithNext=1),
    "body": BASE,
    "caption": ParagraphStyle("caption", BASE, fontSize=7.8, leading=10, textColor=colors.HexColor("#555555"),
                              spaceBefore=2, spaceAfter=8),
    "cell": ParagraphStyle("cell", BASE, fontSize=7.8, leading=9.6, alignment=TA_LEFT),
    "cellb": ParagraphStyle("cellb", BASE, fontName="Helvetica-Bold", fontSize=7.8, leading=9.6),
    "head": ParagraphStyle("head", BASE, fontName="Helvetica-Bold", fontSize=7.8, leading=9.6, textColor=colors.white),
    "box": ParagraphStyle("box", BASE, fontSize=9.5, leading=13),
    "ref": ParagraphStyle("ref", BASE, fontSize=7.8, leading=10, leftIndent=16, firstLineIndent=-16, spaceAfter=2),
}


def esc(s) -> str:
    return escape(pdf_text(s))


def P(s, style="cell", raw=False) -> Paragraph:
    return Paragraph(s if raw else esc(s), STYLES[style])


def grid_table(rows, widths, header_rows=1, zebra=True, extra=()) -> Table:
    t = Table(rows, colWidths=widths, repeatRows=header_rows)
    style = [("VALIGN", (0, 0), (-1, -1), "TOP"), ("LEFTPADDING", (0, 0), (-1, -1), 4),
             ("RIGHTPADDING", (0, 0), (-1, -1), 4), ("TOPPADDING", (0, 0), (-1, -1), 2.5),
             ("BOTTOMPADDING", (0, 0), (-1, -1), 2.5), ("LINEBELOW", (0, -1), (-1, -1), 0.6, RULE)]
    if header_rows:
        style += [("BACKGROUND", (0, 0), (-1, header_rows - 1), NAVY)]
    if zebra:
        for i in range(header_rows, len(rows)):
            if (i - header_rows) % 2:
                style.append(("BACKGROUND", (0, i), (-1, i), ZEBRA))
    t.setStyle(TableStyle(style + list(extra)))
    return t


def _make_canvas(data: ReportData):
    left = pdf_text(f"{data.model_name} \u2014 {data.subtitle}")

    class NumberedCanvas(pdfcanvas.Canvas):
        """Defers each page until the total is known, then draws the header and 'Page X of Y'."""

        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self._pages = []

        def showPage(self):  # noqa: N802 - reportlab's name
            self._pages.append(dict(self.__dict__))
            self._startPage()

        def save(self):
            total = len(self._pages)
            for state in self._pages:
                self.__dict__.update(state)
                self._decorate(total)
                super().showPage()
            super().save()

        def _decorate(self, total):
            self.saveState()
            self.setStrokeColor(RULE)
            self.setLineWidth(0.6)
            top = PAGE_H - MARGIN + 8
            self.setFont("Helvetica", 7.5)
            self.setFillColor(colors.HexColor("#555555"))
            self.drawString(MARGIN, top + 4, left)
            self.drawRightString(PAGE_W - MARGIN, top + 4, f"Prepared {data.created}")
            self.line(MARGIN, top, PAGE_W - MARGIN, top)
            bottom = MARGIN - 10
            self.line(MARGIN, bottom + 9, PAGE_W - MARGIN, bottom + 9)
            self.drawString(MARGIN, bottom, pdf_text(data.generator))
            self.drawRightString(PAGE_W - MARGIN, bottom, f"Page {self._pageNumber} of {total}")
            self.restoreState()

    return NumberedCanvas


def _summary_table(data: ReportData) -> Table:
    names = data.device_names
    label_w = 128
    col_w = (CONTENT_W - label_w) / len(names)
    rows = [[P("Metric", "head")] + [P(n, "head") for n in names]]
    for metric in data.summary:
        rows.append([P(metric.label, "cellb")] + [P(v) for v in metric.display])
    return grid_table(rows, [label_w] + [col_w] * len(names))


def _ranking_table(data: ReportData) -> Table:
    p = data.plan
    head = ["#", "Device", "Units", "Capital (USD)", f"Electricity, {data.cost.years:g} y (USD)",
            f"Rent, {data.cost.years:g} y (USD)", "Buy or rent", "Verdict"]
    widths = [16, 100, 34, 56, 62, 56, 62, CONTENT_W - 386]
    rows = [[P(h, "head") for h in head]]
    for d in p.ranked:
        verdict = {True: ("feasible", PASS), False: ("infeasible", FAIL), None: ("incomplete", NA)}[d.feasible]
        br = "\u2014"
        if d.buy_or_rent:
            br = (f"{d.buy_or_rent} ({d.break_even_months:.1f} mo)" if math.isfinite(d.break_even_months)
                  else "rent (never pays off)")
        rows.append([P(str(d.rank)), P(d.name, "cellb"), P(str(d.units) if d.units else "\u2014"),
                     P(format_usd(d.capital)), P(format_usd(d.energy_cost)), P(format_usd(d.cloud_cost)), P(br),
                     P(f'<font color="#{verdict[1].hexval()[2:]}"><b>{verdict[0]}</b></font>', raw=True)])
    return grid_table(rows, widths)


def _checks_table(data: ReportData) -> Table:
    head = ["Device", "Memory capacity", "Latency floor (bandwidth)", "Compute time"]
    widths = [92] + [(CONTENT_W - 92) / 3] * 3
    rows = [[P(h, "head") for h in head]]
    for d in data.plan.ranked:
        cells = [P(d.name, "cellb")]
        for c, (status, label) in zip(d.checks, d.verdicts):  # a split model reads SPLIT OVER N UNITS, not FAIL
            color = STATUS_COLOR[status].hexval()[2:]
            body = esc(c.detail if c.detail else f"no {c.missing}")
            cells.append(P(f'<font color="#{color}"><b>{label}</b></font> {body}', raw=True))
        rows.append(cells)
    return grid_table(rows, widths)


def _requirements_table(data: ReportData) -> Table:
    rows = [[P("Assumption", "head"), P("Value", "head")]]
    for k, v in data.assumptions:
        rows.append([P(k, "cellb"), P(v)])
    return grid_table(rows, [110, CONTENT_W - 110])


def _sources_tables(data: ReportData) -> list:
    refs, numbers = references(data.sources)
    widths = [CONTENT_W - 200, 120, 80]
    rows = [[P("Figure", "head"), P("Value as written", "head"), P("Source", "head")]]
    extra = []
    device = None
    for s in data.sources:
        if s.device != device:
            device = s.device
            rows.append([P(device, "cellb"), "", ""])
            extra += [("SPAN", (0, len(rows) - 1), (-1, len(rows) - 1)),
                      ("BACKGROUND", (0, len(rows) - 1), (-1, len(rows) - 1), colors.HexColor("#DDE5EE"))]
        rows.append([P(s.figure), P(s.value), P(f"[{numbers[(s.title, s.url, s.date)]}]")])
    out = [grid_table(rows, widths, zebra=False, extra=extra), P("References", "h2")]
    for n, s in refs:
        title = esc(s.title)
        if s.url:
            link = escape(s.url, {chr(34): "&quot;"})
            title += f' <a href="{link}" color="#0B5CAD"><u>{esc(s.url)}</u></a>'
        if s.date:
            title += f" (accessed {esc(s.date)})"
        out.append(Paragraph(f"[{n}] {title}", STYLES["ref"]))
    return out


def _figure(title: str, drawing, caption: str):
    return KeepTogether([P(title, "h2"), drawing, P(caption, "caption")])


def story(data: ReportData) -> list:
    s = []
    s.append(P(data.title, "title"))
    s.append(Spacer(1, 2))
    s.append(P(data.subtitle, "subtitle"))
    s.append(Spacer(1, 4))
    s.append(P(f"Prepared {data.created} with {data.generator}. Model: {model_statement(data.analysis)}. Devices: "
               f"{', '.join(data.device_names)}.", "meta"))
    s.append(Spacer(1, 8))
    box = Table([[P("<b>Recommendation.</b> " + esc(data.recommendation), "box", raw=True)]], colWidths=[CONTENT_W])
    box.setStyle(TableStyle([("BACKGROUND", (0, 0), (-1, -1), colors.HexColor("#EAF1F8")),
                             ("LINEBEFORE", (0, 0), (0, -1), 3, NAVY), ("LEFTPADDING", (0, 0), (-1, -1), 9),
                             ("TOPPADDING", (0, 0), (-1, -1), 6), ("BOTTOMPADDING", (0, 0), (-1, -1), 7)]))
    s.append(box)
    s.append(P("Summary", "h1"))
    s.append(_summary_table(data))
    s.append(P(summary_caption(data), "caption"))
    s.append(CondPageBreak(260))
    s.append(P("Procurement plan", "h1"))
    req = data.plan.requirements
    target = (f"{req.target:,.0f} {req.target_unit}" if req.target is not None else "none (one replica per device)")
    s.append(P(f"Target throughput: {target}; latency limit: "
               f"{format_si(req.latency, 's', 3) if req.latency else 'none'}; budget: "
               f"{format_usd(req.budget) if req.budget else 'none'}; power cap: "
               f"{format_si(req.power_cap, 'W', 3) + ' per ' + req.power_scope if req.power_cap else 'none'}.",
               "body"))
    s.append(P("Ranking", "h2"))
    s.append(_ranking_table(data))
    s.append(P(f"Units reach the target; capital, electricity and rent are for all of them over "
               f"{data.cost.years:g} years (the fleet's cost and cost per million are in the Summary). Buy or rent: "
               f"months until buying is cheaper than renting the same units.", "caption"))
    for d in data.plan.ranked:
        s.append(P(f"<b>#{d.rank} {esc(d.name)}</b> \u2014 {esc(d.reason)}.", "cell", raw=True))
    checks_note = ("Memory: weights + KV cache + activations against the main memory. Latency floor: bytes moved "
                   "per pass over the memory bandwidth against the latency limit (no compute can beat it). Compute: "
                   "FLOPs over the peak times the efficiency against the frame or token budget. N/A: no limit was "
                   "given.")
    s.append(KeepTogether([P("Can you run it? The chapter's three checks", "h2"), _checks_table(data),
                           P(checks_note, "caption")]))
    if data.sensitivity is not None:
        s.extend(_sensitivity_story(data))
    if data.systems:
        s.extend(_systems_story(data))
    if data.training:
        s.extend(_training_story(data))
    if data.serving:
        s.extend(_serving_story(data))
    s.append(CondPageBreak(340))
    s.append(P("Analysis", "h1"))
    s.append(_figure("Roofline", roofline_figure(data, CONTENT_W),
                     "Each device's compute ceiling and main-memory slope meet at its ridge point (dot). Circles are "
                     "the model's operators at their attainable performance on each device; their size follows "
                     "the share of time. Shaded bands: the chapter's intensity regimes."))
    s.append(_figure(f"Energy per {data.energy.unit}", energy_figure(data, CONTENT_W),
                     energy_caption(data)))
    s.append(_figure("Fringe tax (tiling)", tiling_figure(data, CONTENT_W),
                     "Mapping efficiency of the GEMM that loses the most time to partial tiles on each device, "
                     "swept across the dimension that maps worst; dashed lines are whole multiples of the array or "
                     "tile, the circle is the model's current size."))
    s.append(_figure("Cost", cost_figure(data, CONTENT_W),
                     f"Left: purchase plus electricity for all the plan's units over {data.cost.years:g} years (fleet "
                     f"TCO). Right: the Summary's cost per million {data.cost.unit}s, on the ranking's basis (buy or "
                     f"rent)."))
    s.append(CondPageBreak(220))
    s.append(P("Assumptions", "h1"))
    s.append(_requirements_table(data))
    s.append(P("Method", "h1"))
    rows = [[P("Quantity", "head"), P("Formula", "head")]] + [[P(k, "cellb"), P(v)] for k, v in data.method]
    s.append(grid_table(rows, [110, CONTENT_W - 110]))
    s.append(CondPageBreak(200))
    s.append(P("Data sources", "h1"))
    s.append(P("Every device figure the numbers above use, as written in the catalog, with its source. Defaults "
               "and figures entered for this plan are named as such.", "body"))
    s.append(Spacer(1, 4))
    s.extend(_sources_tables(data))
    return s


def _sensitivity_story(data: ReportData) -> list:
    from .sensitivity_section import break_even_table, sensitivity_table

    sens = data.sensitivity
    head, rows = sensitivity_table(sens)
    table = grid_table([[P(h, "head") for h in head]] + [[P(c) for c in r] for r in rows],
                       [118, 92, 72, CONTENT_W - 330, 48])
    head2, rows2 = break_even_table(sens)
    table2 = grid_table([[P(h, "head") for h in head2]] + [[P(c) for c in r] for r in rows2],
                        [CONTENT_W - 330, 60, 66, 70, 70, 64])
    verdict = ("the first-ranked device is the same in every scenario" if sens.stable else
               "the first-ranked device changes in the scenarios marked")
    return [CondPageBreak(200), P("Sensitivity", "h2"), table,
            P(f"Each row changes one input from the baseline and plans again ({sens.baseline.requirements.rank_by} "
              f"ranking): prices scale every purchase and rent price; utilization moves electricity, not the units "
              f"(sized at peak); a device leaves the ranking where it breaks a requirement (the budget over a longer "
              f"horizon, say); {verdict}.", "caption"),
            KeepTogether([P("Buy vs rent break-even", "h2"), table2,
                          P("Owning is cheaper after price / (rent - electricity) per unit-hour; electricity at the "
                            "baseline's utilization, PUE and price. No price: the device lacks a purchase or a rent "
                            "price.", "caption")])]


def _systems_story(data: ReportData) -> list:
    sec = data.systems
    out = [CondPageBreak(200), P("Systems", "h1")]
    short = ("System", "Devices", "Layout", "Fits", "Memory / device",
             "Step = compute + communication + bubble + sends", "Comm share", "Rate / device")
    head = [[P(h, "head") for h in short]]
    rows = head + [[P(c) for c in (*r[:5], f"{r[5]} = {r[6]} + {r[7]} + {r[8]} + {r[9]}", *r[10:])]
                   for r in layout_rows(sec)]
    widths = [84, 62, 62, 24, 58, 110, 38]
    out.append(grid_table(rows, widths + [CONTENT_W - sum(widths)]))
    out.append(P(NOTE, "caption"))
    ladder = ladder_rows(sec)
    if ladder:
        out.append(P("Bandwidth ladder: bytes one device moves per step", "h2"))
        rows = [[P(h, "head") for h in LADDER_HEADERS]]
        rows += [[P(c) for c in r] for r in ladder]
        out.append(grid_table(rows, [100, 150, 66, 84, CONTENT_W - 400]))
    if sec.plans:
        out.append(P("Fleet on each system", "h2"))
        rows = [[P(h, "head") for h in PLAN_HEADERS]] + [[P(c) for c in r] for r in plan_rows(sec, data.plan.unit)]
        widths = [80, 56, 44, 56, 40, 40, 40, 34, 44]
        out.append(grid_table(rows, widths + [CONTENT_W - sum(widths)]))
        out.append(P(f"replicas = ceil(target / replica rate); devices = replicas x tp x pp. {NOT_PRICED}.",
                     "caption"))
    sources = system_sources(sec)
    if sources:
        out.append(P("System figures and their sources", "h2"))
        rows = [[P(h, "head") for h in ("System", "Figure", "Value", "Source")]]
        rows += [[P(a), P(b), P(c), P(f"{t} {u} ({d})" if u else t)] for a, b, c, t, u, d in sources]
        out.append(grid_table(rows, [90, 120, 70, CONTENT_W - 280]))
    return out


FIGURE_NOTE = ("Per system, the chosen layout's step stacked part by part, and memory per device stacked against the "
               "device's capacity (red tick), as the Training panel draws them.")


def _training_story(data: ReportData) -> list:
    sec = data.training

    def table(head, rows, widths):
        return grid_table([[P(h, "head") for h in head]] + [[P(c) for c in r] for r in rows],
                          widths + [CONTENT_W - sum(widths)])

    rows = summary_rows(sec)
    out = [CondPageBreak(260), P("Training", "h1"),
           P("Time and cost to train on each system side by side, under its chosen layout.", "body"),
           table(("System", "Devices", "Chosen layout", "Fits", "Step", "Tokens/s", "MFU"),
                 [r[:7] for r in rows], [100, 80, 96, 26, 50, 60]),
           Spacer(1, 4),
           table(("System", "Time to train", "Device-hours", "Energy", "Electricity", "Rent", "TCO share"),
                 [[r[0], *r[7:]] for r in rows], [100, 62, 62, 62, 72, 72])]
    steps = step_rows(sec)
    if steps:
        out += [_figure("Step time and memory per device", training_figure(sec, CONTENT_W), FIGURE_NOTE),
                P("Step time of the chosen layout, part by part", "h2"),
                table([h.replace('Recompute', 'Recomp.') for h in STEP_HEADERS], steps, [80, *[50] * 7]),
                P("Forward and backward include their exposed tensor- and context-parallel communication; data "
                  "parallel is the exposed gradient reduction; per optimizer step.", "caption"),
                P("Memory per device", "h2"), table(MEMORY_HEADERS, memory_rows(sec), [100, 60, 60, 70, 60, 60])]
    out += [P("Training assumptions", "h2"),
            grid_table([[P("Assumption", "head"), P("Value", "head")]]
                       + [[P(k, "cellb"), P(v)] for k, v in assumptions(sec)], [90, CONTENT_W - 90])]
    sources = training_sources(sec)
    if sources:
        out.append(P("Device figures of the Training section and their sources", "h2"))
        out.append(table(("Device", "Figure", "Value", "Source"),
                         [[a, b, c, f"{t} {u} ({d})" if u else t] for a, b, c, t, u, d in sources], [90, 100, 80]))
    return out


def _serving_story(data: ReportData) -> list:
    from .serving_section import (
        CAPACITY_HEADERS,
        LATENCY_HEADERS,
        NOTE,
        capacity_rows,
        latency_rows,
        times_text,
    )

    sec = data.serving
    out = [CondPageBreak(200), P("Serving", "h1"), P(f"Workload: {sec.choice.describe()}.", "body")]
    rows = [[P(h, "head") for h in CAPACITY_HEADERS]] + [[P(c) for c in r] for r in capacity_rows(sec)]
    widths = [72, 60, 50, 48, 52, 54, 50, 52]  # the rest: Times
    out.append(grid_table(rows, widths + [CONTENT_W - sum(widths)]))
    out.append(P("Latency against the service levels", "h2"))
    rows = [[P(h, "head") for h in LATENCY_HEADERS]] + [[P(c) for c in r] for r in latency_rows(sec)]
    widths = [70, 62, 42, 42, 42, 42, 48]
    out.append(grid_table(rows, widths + [CONTENT_W - sum(widths)]))
    out.append(P(times_text(sec), "caption"))
    out.append(P(NOTE, "caption"))
    return out


def render_pdf(data: ReportData) -> bytes:
    buffer = io.BytesIO()
    doc = BaseDocTemplate(buffer, pagesize=A4, leftMargin=MARGIN, rightMargin=MARGIN, topMargin=MARGIN + 8,
                          bottomMargin=MARGIN + 4, title=pdf_text(data.title), author=pdf_text(data.generator),
                          subject=pdf_text(data.subtitle), creator=pdf_text(data.generator))
    frame = Frame(doc.leftMargin, doc.bottomMargin, doc.width, doc.height, id="body", leftPadding=0, rightPadding=0,
                  topPadding=0, bottomPadding=0)
    doc.addPageTemplates([PageTemplate("page", frames=[frame])])
    doc.build(story(data), canvasmaker=_make_canvas(data))
    return buffer.getvalue()
