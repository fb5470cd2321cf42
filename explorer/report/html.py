"""The comparison report as one self-contained HTML file: inline CSS, inline SVG figures, no external assets."""

from __future__ import annotations

import math
from html import escape

from reportlab.graphics import renderSVG

from ..core.analysis.procurement import check_verdict, format_usd
from ..core.units import format_si
from .systems_section import (
    LADDER_HEADERS,
    LAYOUT_HEADERS,
    NOT_PRICED,
    NOTE,
    PLAN_HEADERS,
    ladder_rows,
    layout_rows,
    plan_rows,
    system_sources,
)
from .build import ReportData, model_statement, references, summary_caption
from .training_figures import training_figure
from .training_section import (
    MEMORY_HEADERS,
    STEP_HEADERS,
    SUMMARY_HEADERS,
    assumptions,
    memory_rows,
    step_rows,
    summary_rows,
    training_sources,
)
from .figures import cost_figure, energy_caption, energy_figure, roofline_figure, tiling_figure

FIGURE_WIDTH = 700.0
CSS = """
body{font-family:-apple-system,"Segoe UI",Helvetica,Arial,sans-serif;color:#222;max-width:960px;margin:2em auto;
padding:0 1.2em;line-height:1.45;font-size:14px}
h1{color:#1F3A5F;font-size:26px;margin:0 0 .1em}h2{color:#1F3A5F;font-size:19px;margin:1.6em 0 .5em;
border-bottom:1px solid #B8C2CC;padding-bottom:.2em}h3{color:#1F3A5F;font-size:15px;margin:1.2em 0 .3em}
.subtitle{color:#44546A;font-size:17px;margin:0 0 .4em}.meta,.caption{color:#555;font-size:12.5px}
.box{background:#EAF1F8;border-left:4px solid #1F3A5F;padding:.6em .9em;margin:1em 0}
table{border-collapse:collapse;width:100%;font-size:12.5px;margin:.3em 0 .6em}
th{background:#1F3A5F;color:#fff;text-align:left;padding:4px 6px;vertical-align:bottom}
td{padding:3px 6px;vertical-align:top;border-bottom:1px solid #E3E7EC}tr:nth-child(even) td{background:#F3F5F8}
td.label{font-weight:600;white-space:nowrap}.pass{color:#1B7F3B;font-weight:700}.fail{color:#B00020;font-weight:700}
.na{color:#6B6B6B;font-weight:700}.unknown{color:#9A6700;font-weight:700}figure{margin:.6em 0 1.2em}
figure svg{max-width:100%;height:auto}a{color:#0B5CAD}
@media print{body{max-width:none;margin:0}h2{break-before:auto}figure,table{break-inside:avoid}}
"""


def svg(drawing, name: str) -> str:
    """The drawing as an inline ``<svg>`` element (the XML prologue stripped), scaling with the page; its ids get
    the prefix ``name`` so several figures on one page do not share a clip path."""
    text = renderSVG.drawToString(drawing)
    body = text[text.find("<svg"):]
    body = body.replace('id="clip"', f'id="{name}-clip"').replace("url(#clip)", f"url(#{name}-clip)")
    body = body.replace('id="group"', f'id="{name}-group"')
    return body.replace("<svg ", f'<svg viewBox="0 0 {drawing.width:g} {drawing.height:g}" ', 1)


def _table(head, rows, label_first=True) -> str:
    out = ["<table><thead><tr>", *(f"<th>{escape(h)}</th>" for h in head), "</tr></thead><tbody>"]
    for row in rows:
        out.append("<tr>")
        for i, cell in enumerate(row):
            cls = ' class="label"' if (i == 0 and label_first) else ""
            out.append(f"<td{cls}>{cell}</td>")
        out.append("</tr>")
    out.append("</tbody></table>")
    return "".join(out)


def _status(c, shards: int = 1) -> str:
    status, label = check_verdict(c, shards)  # the one reading: a split model reads SPLIT OVER N UNITS, not FAIL
    cls = {"n/a": "na", "split": "na"}.get(status, status)
    return f'<span class="{cls}">{label}</span> {escape(c.detail or "no " + c.missing)}'


def render_html(data: ReportData) -> str:
    e = escape
    p, cost = data.plan, data.cost
    parts = [f"<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>{e(data.title)}</title>",
             f"<meta name=\"generator\" content=\"{e(data.generator)}\"><style>{CSS}</style></head><body>",
             f"<h1>{e(data.title)}</h1><p class=\"subtitle\">{e(data.subtitle)}</p>",
             f"<p class=\"meta\">Prepared {e(data.created)} with {e(data.generator)}. Model: {e(model_statement(data.analysis))}. "
             f"Devices: {e(', '.join(data.device_names))}.</p>",
             f"<div class=\"box\"><b>Recommendation.</b> {e(data.recommendation)}</div>", "<h2>Summary</h2>"]
    parts.append(_table(["Metric", *data.device_names],
                        [[e(m.label), *(e(v) for v in m.display)] for m in data.summary]))
    parts.append(f"<p class=\"caption\">{e(summary_caption(data))}</p>")
    req = p.requirements
    parts.append("<h2>Procurement plan</h2>")
    target = f"{req.target:,.0f} {req.target_unit}" if req.target is not None else "none (one replica per device)"
    parts.append(f"<p>Target throughput: {e(target)}; latency limit: "
                 f"{e(format_si(req.latency, 's', 3)) if req.latency else 'none'}; budget: "
                 f"{e(format_usd(req.budget)) if req.budget else 'none'}; power cap: "
                 f"{e(format_si(req.power_cap, 'W', 3) + ' per ' + req.power_scope) if req.power_cap else 'none'}.</p>")
    rows = []
    for d in p.ranked:
        br = "\u2014"
        if d.buy_or_rent:
            br = (f"{d.buy_or_rent} ({d.break_even_months:.1f} months)" if math.isfinite(d.break_even_months)
                  else "rent (never pays off)")
        verdict = {True: '<span class="pass">feasible</span>', False: '<span class="fail">infeasible</span>',
                   None: '<span class="na">incomplete</span>'}[d.feasible]
        rows.append([str(d.rank), e(d.name), str(d.units) if d.units else "\u2014", e(format_usd(d.capital)),
                     e(format_usd(d.energy_cost)), e(format_usd(d.cloud_cost)), e(br), verdict, e(d.reason)])
    parts.append("<h3>Ranking</h3>")
    parts.append(_table(["#", "Device", "Units", "Capital (USD)", f"Electricity, {cost.years:g} y (USD)",
                         f"Rent, {cost.years:g} y (USD)", "Buy or rent", "Verdict", "Reason"], rows,
                        label_first=False))
    parts.append("<h3>Can you run it? The chapter's three checks</h3>")
    parts.append(_table(["Device", "Memory capacity", "Latency floor (bandwidth)", "Compute time"],
                        [[e(d.name), *(_status(c, d.shards) for c in d.checks)] for d in p.ranked]))
    if data.sensitivity is not None:
        from .sensitivity_section import break_even_table, sensitivity_table

        head, rows = sensitivity_table(data.sensitivity)
        parts.append("<h3>Sensitivity</h3>")
        parts.append(_table(head, [[e(c) for c in r] for r in rows]))
        head, rows = break_even_table(data.sensitivity)
        parts.append("<h3>Buy vs rent break-even</h3>")
        parts.append(_table(head, [[e(c) for c in r] for r in rows]))
        parts.append("<p class=\"caption\">Each scenario changes one input from the baseline and plans again; "
                     "owning is cheaper after price / (rent - electricity) per unit-hour.</p>")
    if data.systems:
        parts.extend(_systems_html(data))
    if data.training:
        parts.extend(_training_html(data))
    if data.serving:
        parts.extend(_serving_html(data))
    parts.append("<h2>Analysis</h2>")
    for k, (title, fig, caption) in enumerate((
            ("Roofline", roofline_figure, "Compute ceilings, main-memory slopes and ridge points (dots); circles are "
                                          "the model's operators, sized by their share of time."),
            (f"Energy per {data.energy.unit}", energy_figure, energy_caption(data)),
            ("Fringe tax (tiling)", tiling_figure, "Mapping efficiency of the worst-mapped GEMM on each device."),
            ("Cost", cost_figure, f"Fleet TCO of the plan's units over {cost.years:g} years and the Summary's cost per million {cost.unit}s."))):
        parts.append(f"<h3>{e(title)}</h3><figure>{svg(fig(data, FIGURE_WIDTH), f'fig{k + 1}')}"
                     f"<figcaption class=\"caption\">{e(caption)}</figcaption></figure>")
    parts.append("<h2>Assumptions</h2>")
    parts.append(_table(["Assumption", "Value"], [[e(k), e(v)] for k, v in data.assumptions]))
    parts.append("<h2>Method</h2>")
    parts.append(_table(["Quantity", "Formula"], [[e(k), e(v)] for k, v in data.method]))
    parts.append("<h2>Data sources</h2><p>Every device figure the numbers above use, as written in the catalog, "
                 "with its source. Defaults and figures entered for this plan are named as such.</p>")
    refs, numbers = references(data.sources)
    rows, device = [], None
    for s in data.sources:
        if s.device != device:
            device = s.device
            rows.append([f"<b>{e(device)}</b>", "", ""])
        rows.append([e(s.figure), e(s.value), f"[{numbers[(s.title, s.url, s.date)]}]"])
    parts.append(_table(["Figure", "Value as written", "Source"], rows, label_first=False))
    parts.append("<h3>References</h3><ol>")
    for n, s in refs:
        link = f' <a href="{e(s.url)}">{e(s.url)}</a>' if s.url else ""
        date = f" (accessed {e(s.date)})" if s.date else ""
        parts.append(f"<li value=\"{n}\">{e(s.title)}{link}{date}</li>")
    parts.append("</ol>")
    parts.append("</body></html>\n")
    return "".join(parts)


def _systems_html(data: ReportData) -> list[str]:
    e = escape
    sec = data.systems
    out = ["<h2>Systems</h2>", _table(list(LAYOUT_HEADERS), [[e(c) for c in r] for r in layout_rows(sec)]),
           f"<p class=\"caption\">{e(NOTE)}</p>"]
    ladder = ladder_rows(sec)
    if ladder:
        out += ["<h3>Bandwidth ladder: bytes one device moves per step</h3>",
                _table(list(LADDER_HEADERS), [[e(c) for c in r] for r in ladder])]
    if sec.plans:
        out += ["<h3>Fleet on each system</h3>",
                _table(list(PLAN_HEADERS), [[e(c) for c in r] for r in plan_rows(sec, data.plan.unit)]),
                f"<p class=\"caption\">replicas = ceil(target / replica rate); devices = replicas x tp x pp. "
                f"{e(NOT_PRICED)}.</p>"]
    sources = system_sources(sec)
    if sources:
        out += ["<h3>System figures and their sources</h3>",
                _table(["System", "Figure", "Value as written", "Source"],
                       [[e(a), e(b), e(c), (f'<a href="{e(u)}">{e(t)}</a>' if u else e(t)) + (f" ({e(d)})" if d else "")]
                        for a, b, c, t, u, d in sources])]
    return out


def _training_html(data: ReportData) -> list[str]:
    e = escape
    sec = data.training

    def table(head, rows):
        return _table(list(head), [[e(c) for c in r] for r in rows])

    out = ["<h2>Training</h2>", "<p>Time and cost to train on each system side by side, under its chosen layout.</p>",
           table(SUMMARY_HEADERS, summary_rows(sec))]
    steps = step_rows(sec)
    if steps:
        out += ["<h3>Step time and memory per device</h3>",
                (f"<figure>{svg(training_figure(sec, FIGURE_WIDTH), 'figtrain')}<figcaption class=\"caption\">"
                 "The chosen layout's step stacked part by part, and memory per device stacked against the device's "
                 "capacity (red tick).</figcaption></figure>"),
                "<h3>Step time of the chosen layout, part by part</h3>", table(STEP_HEADERS, steps),
                ("<p class=\"caption\">Forward and backward include their exposed tensor- and context-parallel "
                 "communication; data parallel is the exposed gradient reduction; per optimizer step.</p>"),
                "<h3>Memory per device</h3>", table(MEMORY_HEADERS, memory_rows(sec))]
    out += ["<h3>Training assumptions</h3>", _table(["Assumption", "Value"], [[e(k), e(v)] for k, v in
                                                                             assumptions(sec)])]
    sources = training_sources(sec)
    if sources:
        out += ["<h3>Device figures of the Training section and their sources</h3>",
                _table(["Device", "Figure", "Value as written", "Source"],
                       [[e(a), e(b), e(c), (f'<a href="{e(u)}">{e(t)}</a>' if u else e(t)) + (f" ({e(d)})" if d else "")]
                        for a, b, c, t, u, d in sources])]
    return out


def _serving_html(data: ReportData) -> list[str]:
    from .serving_section import (
        CAPACITY_HEADERS,
        LATENCY_HEADERS,
        NOTE,
        capacity_rows,
        latency_rows,
        times_text,
    )

    e, sec = escape, data.serving
    return ["<h2>Serving</h2>", f"<p>Workload: {e(sec.choice.describe())}.</p>",
            _table(list(CAPACITY_HEADERS), [[e(c) for c in r] for r in capacity_rows(sec)]),
            "<h3>Latency against the service levels</h3>",
            _table(list(LATENCY_HEADERS), [[e(c) for c in r] for r in latency_rows(sec)]),
            f"<p class=\"caption\">{e(times_text(sec))}</p>", f"<p class=\"caption\">{e(NOTE)}</p>"]
