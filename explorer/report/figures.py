"""The four analysis panels as reportlab drawings: one code path for the PDF (a flowable) and the HTML (inline SVG).

Every figure is drawn from the panels' own results (``compute_roofline``, ``compute_energy_view``,
``compute_tiling_view``, ``compute_cost``); axes, ticks and log scales are computed here. Qt-free.
"""

from __future__ import annotations

import math

import numpy as np
from reportlab.graphics.shapes import Circle, Drawing, Group, Line, PolyLine, Rect, String
from reportlab.lib import colors
from reportlab.pdfbase.pdfmetrics import stringWidth

from ..core.units import format_si
from .build import ReportData, pdf_text

PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#D55E00", "#56B4E9", "#7F7F7F", "#332288")
INK, GRID, MUTED = colors.HexColor("#222222"), colors.HexColor("#D9D9D9"), colors.HexColor("#666666")
FONT, BOLD = "Helvetica", "Helvetica-Bold"


def device_color(i: int) -> colors.Color:
    return colors.HexColor(PALETTE[i % len(PALETTE)])


def tint(c: colors.Color, amount: float) -> colors.Color:
    """Blend ``c`` towards white (``amount`` 0 = c, 1 = white): a light fill without transparency."""
    return colors.Color(c.red + (1 - c.red) * amount, c.green + (1 - c.green) * amount,
                        c.blue + (1 - c.blue) * amount)


def text(x, y, s, size=7.5, anchor="start", color=INK, bold=False) -> String:
    return String(x, y, pdf_text(s), fontName=BOLD if bold else FONT, fontSize=size, fillColor=color,
                  textAnchor=anchor)


def _nice_step(span: float, n: int = 5) -> float:
    raw = span / max(n, 1)
    mag = 10 ** math.floor(math.log10(raw))
    return next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)


class Axes:
    """A plot rectangle with linear or log10 scales; ``x(v)``/``y(v)`` map data to drawing coordinates."""

    def __init__(self, x0, y0, w, h, xlim, ylim, xlog=False, ylog=False):
        self.x0, self.y0, self.w, self.h = x0, y0, w, h
        self.xlim, self.ylim, self.xlog, self.ylog = xlim, ylim, xlog, ylog

    @staticmethod
    def _t(v, lim, log):
        if log:
            return (math.log10(v) - math.log10(lim[0])) / (math.log10(lim[1]) - math.log10(lim[0]))
        return (v - lim[0]) / (lim[1] - lim[0])

    def x(self, v):
        return self.x0 + self.w * self._t(v, self.xlim, self.xlog)

    def y(self, v):
        return self.y0 + self.h * self._t(v, self.ylim, self.ylog)

    def clip_y(self, v):
        return min(max(v, self.ylim[0]), self.ylim[1])

    def ticks(self, lim, log):
        if log:
            return [10.0 ** k for k in range(math.ceil(math.log10(lim[0]) - 1e-9), math.floor(math.log10(lim[1]) + 1e-9) + 1)]
        step = _nice_step(lim[1] - lim[0])
        start = math.ceil(lim[0] / step - 1e-9) * step
        return list(np.arange(start, lim[1] + step * 1e-6, step))

    def frame(self, g: Group, xlabel: str, ylabel: str, xfmt, yfmt, grid=True, yticks=True) -> None:
        for v in self.ticks(self.xlim, self.xlog):
            px = self.x(v)
            if grid:
                g.add(Line(px, self.y0, px, self.y0 + self.h, strokeColor=GRID, strokeWidth=0.4))
            g.add(Line(px, self.y0, px, self.y0 - 3, strokeColor=INK, strokeWidth=0.6))
            g.add(text(px, self.y0 - 11, xfmt(v), 7, "middle"))
        for v in (self.ticks(self.ylim, self.ylog) if yticks else ()):
            py = self.y(v)
            if grid:
                g.add(Line(self.x0, py, self.x0 + self.w, py, strokeColor=GRID, strokeWidth=0.4))
            g.add(Line(self.x0 - 3, py, self.x0, py, strokeColor=INK, strokeWidth=0.6))
            g.add(text(self.x0 - 5, py - 2.5, yfmt(v), 7, "end"))
        g.add(Rect(self.x0, self.y0, self.w, self.h, fillColor=None, strokeColor=INK, strokeWidth=0.7))
        g.add(text(self.x0 + self.w / 2, self.y0 - 23, xlabel, 7.5, "middle"))
        if not ylabel:
            return
        label = text(0, 0, ylabel, 7.5, "middle")
        rotated = Group(label)
        rotated.rotate(90)
        rotated.translate(self.y0 + self.h / 2, -(self.x0 - 34))
        g.add(rotated)


def _si_tick(unit=""):
    return lambda v: format_si(v, unit, 3).strip()


def _entry_width(label: str) -> float:
    return 22 + stringWidth(pdf_text(label), FONT, 7)


def legend_rows(entries, width) -> int:
    rows, cx = 1, 0.0
    for label, _ in entries:
        w = _entry_width(label)
        if cx + w > width and cx > 0:
            rows, cx = rows + 1, 0.0
        cx += w
    return rows


def _legend(g: Group, x, y, entries, width, swatch="line"):
    """Entries (label, color) in rows that wrap at ``width``."""
    cx, cy = x, y
    for label, color in entries:
        w = _entry_width(label)
        if cx + w > x + width and cx > x:
            cx, cy = x, cy - 11
        if swatch == "line":
            g.add(Line(cx, cy + 2.5, cx + 10, cy + 2.5, strokeColor=color, strokeWidth=2))
        else:
            g.add(Rect(cx, cy - 0.5, 8, 7, fillColor=color, strokeColor=None))
        g.add(text(cx + 13, cy, label, 7))
        cx += w
    return cy


# ---------------------------------------------------------------------------------------------- roofline
def _roofline_y_range(data: ReportData) -> tuple[float, float]:
    peaks = [d.peak for d in data.roofline[0].devices if math.isfinite(d.peak) and d.peak > 0]
    points = [float(v) for r in data.roofline for v in r.points.attainable if math.isfinite(v) and v > 0]
    hi = max(peaks + points + [1e9])
    lo = min(points + [p / 1e4 for p in peaks] + [hi / 1e4])
    y_hi = 10.0 ** math.ceil(math.log10(hi * 1.5))
    y_lo = max(10.0 ** math.floor(math.log10(lo / 1.5)), y_hi / 1e9)
    return y_lo, y_hi


def roofline_figure(data: ReportData, width: float) -> Drawing:
    r = data.roofline[0]
    entries = [(f"{dev.name}: peak {format_si(dev.peak, 'FLOP/s', 3)}, ridge {dev.ridge:.0f} FLOP/B"
                if math.isfinite(dev.ridge) else f"{dev.name}: {dev.missing}", device_color(i))
               for i, dev in enumerate(r.devices)]
    legend_h = 11 * legend_rows(entries, width - 56)
    height = 250 + legend_h
    d = Drawing(width, height)
    g = Group()
    y_range = _roofline_y_range(data)
    ax = Axes(46, 40, width - 56, height - 52 - legend_h, r.x_range, y_range, True, True)
    shades = (tint(colors.HexColor("#B0B0B0"), 0.80), tint(colors.HexColor("#B0B0B0"), 0.93))
    for i, band in enumerate(r.bands):
        x0, x1 = ax.x(max(band.lo, r.x_range[0])), ax.x(min(band.hi, r.x_range[1]))
        g.add(Rect(x0, ax.y0, x1 - x0, ax.h, fillColor=shades[i % 2], strokeColor=None))
    ax.frame(g, "Arithmetic intensity I [FLOP/byte]", "Performance [FLOP/s]", _si_tick(), _si_tick())
    for i, band in enumerate(r.bands):  # regime names over the grid, on their band's shade
        xc = (ax.x(max(band.lo, r.x_range[0])) + ax.x(min(band.hi, r.x_range[1]))) / 2
        lw = stringWidth(band.name, FONT, 6.5)
        g.add(Rect(xc - lw / 2 - 2, ax.y0 + ax.h - 12, lw + 4, 9, fillColor=shades[i % 2], strokeColor=None))
        g.add(text(xc, ax.y0 + ax.h - 10, band.name, 6.5, "middle", MUTED))
    for i, (dev, res) in enumerate(zip(r.devices, data.roofline)):
        color = device_color(i)
        if dev.slopes:
            s = dev.slopes[0]
            lo = max(s.x[0], y_range[0] / s.bandwidth, r.x_range[0])
            hi = min(s.x[-1], y_range[1] / s.bandwidth, r.x_range[1])
            if hi > lo:
                g.add(Line(ax.x(lo), ax.y(lo * s.bandwidth), ax.x(hi), ax.y(hi * s.bandwidth), strokeColor=color,
                           strokeWidth=1.4))
        if dev.ceiling is not None and y_range[0] <= dev.peak <= y_range[1]:
            c = dev.ceiling
            g.add(Line(ax.x(c.x[0]), ax.y(c.flops), ax.x(c.x[-1]), ax.y(c.flops), strokeColor=color, strokeWidth=1.4))
            if math.isfinite(dev.ridge):
                g.add(Circle(ax.x(dev.ridge), ax.y(dev.peak), 2.6, fillColor=color, strokeColor=colors.white,
                             strokeWidth=0.6))
        p = res.points
        for xi, yi, si in zip(p.intensity, p.attainable, p.size):
            if r.x_range[0] <= xi <= r.x_range[1] and y_range[0] <= yi <= y_range[1]:
                g.add(Circle(ax.x(xi), ax.y(yi), 1.4 + 3.2 * float(si), fillColor=tint(color, 0.55),
                             strokeColor=color, strokeWidth=0.5))
    _legend(g, ax.x0, height - 10, entries, ax.w)
    d.add(g)
    return d


# ------------------------------------------------------------------------------------------------ energy
ENERGY_PARTS = (("off-chip memory", "#0072B2"), ("on-chip memory", "#56B4E9"), ("compute (MACs)", "#E69F00"))


def energy_parts(data: ReportData) -> np.ndarray:
    """(D, 3) J per unit: off-chip levels, on-chip levels, compute (from the energy view)."""
    ev = data.energy
    out = np.zeros((len(ev.device_ids), 3))
    for i, device in enumerate(data.analysis.devices.devices):
        roles = [lv.role for lv in device.memory if lv.role != "registers"]
        for j, role in enumerate(roles):
            v = float(np.nan_to_num(ev.device_levels[i, j]))
            out[i, 0 if role == "offchip" else 1] += v
        out[i, 2] = float(np.nan_to_num(ev.device_compute[i]))
    return out


def _bar_axes(n, width, height, left, vmax, top=30):
    bottom = 34
    return Axes(left, bottom, width - left - 14, height - top - bottom, (0.0, vmax), (0.0, float(n)))


def _scale(vmax: float, unit: str) -> tuple[float, str]:
    for factor, prefix in ((1e-12, "p"), (1e-9, "n"), (1e-6, "\u00b5"), (1e-3, "m"), (1.0, ""), (1e3, "k"),
                           (1e6, "M")):
        if vmax < 1000 * factor:
            return factor, prefix + unit
    return 1e6, "M" + unit


def _hbars(g, ax, names, stacks, part_colors, labels, fmt):
    """Horizontal stacked bars, top to bottom in ``names`` order; ``labels`` at the bar ends."""
    n = len(names)
    bar = min(16.0, ax.h / max(n, 1) * 0.6)
    for i, name in enumerate(names):
        yc = ax.y0 + ax.h * (n - i - 0.5) / n
        g.add(text(ax.x0 - 6, yc - 2.5, _short(name, 24), 7, "end"))
        x = 0.0
        for v, c in zip(stacks[i], part_colors):
            if v > 0 and math.isfinite(v):
                g.add(Rect(ax.x(x), yc - bar / 2, ax.x(x + v) - ax.x(x), bar, fillColor=c, strokeColor=None))
                x += v
        g.add(text(ax.x(x) + 4, yc - 2.5, labels[i], 7, "start", INK if x > 0 else MUTED))


def _short(s: str, n: int) -> str:
    return s if len(s) <= n else s[: n - 1] + "\u2026"


def energy_caption(data: ReportData) -> str:
    out = ("Energy of data movement across off-chip and on-chip memory and of arithmetic, per "
           f"{data.energy.unit}.")
    if any(data.analysis.devices.defaults_used):
        out += (" Figures a device file lacks use Horowitz's 45 nm energies (listed under Assumptions); devices "
                "that share those defaults differ only through the bytes they move.")
    return out


def energy_figure(data: ReportData, width: float) -> Drawing:
    parts = energy_parts(data)
    names = data.device_names
    n = len(names)
    height = 76 + 24 * n
    d = Drawing(width, height)
    g = Group()
    total = parts.sum(axis=1)
    factor, unit = _scale(max(float(total.max(initial=0.0)), 1e-15), "J")
    ax = _bar_axes(n, width, height, 128, max(float(total.max(initial=0.0)) / factor * 1.15, 1e-12))
    ax.frame(g, f"Energy per {data.energy.unit} [{unit}]", "", lambda v: f"{v:g}", None, yticks=False)
    labels = [f"{format_si(t, 'J', 3)}" for t in total]
    _hbars(g, ax, names, parts / factor, [colors.HexColor(c) for _, c in ENERGY_PARTS], labels, None)
    _legend(g, ax.x0, height - 14, [(label, colors.HexColor(c)) for label, c in ENERGY_PARTS], ax.w, "box")
    d.add(g)
    return d


# ------------------------------------------------------------------------------------------------ tiling
def tiling_figure(data: ReportData, width: float) -> Drawing:
    views = data.tiling
    cols = min(3, max(len(views), 1))
    rows = math.ceil(len(views) / cols) if views else 1
    cell_w, cell_h = width / cols, 150
    d = Drawing(width, rows * cell_h + 6)
    for k, v in enumerate(views):
        r, c = divmod(k, cols)
        g = Group()
        x0, y0 = c * cell_w, (rows - r - 1) * cell_h
        color = device_color(k)
        g.add(text(x0 + 40, y0 + cell_h - 12, _short(v.device_name, 34), 7.5, bold=True))
        if v.missing or not len(v.sweep_values):
            g.add(text(x0 + 40, y0 + cell_h - 26, _short(v.missing or "no GEMM to map", 46), 7, color=MUTED))
            d.add(g)
            continue
        g.add(text(x0 + 40, y0 + cell_h - 22, _short(f"{v.row_name}: M,N,K = {v.gemm[0]},{v.gemm[1]},{v.gemm[2]}",
                                                     44), 6.5, color=MUTED))
        g.add(text(x0 + 40, y0 + cell_h - 31, f"now {v.sweep_dim} = {v.current_value}: "
                   f"{v.current_efficiency:.0%} mapped", 6.5, color=MUTED))
        ax = Axes(x0 + 40, y0 + 34, cell_w - 52, cell_h - 76, (float(v.sweep_values[0]), float(v.sweep_values[-1])),
                  (0.0, 100.0))
        ax.frame(g, f"{v.sweep_dim} (multiple of {v.multiple})", "Mapping eff. [%]", lambda x: f"{x:.0f}",
                 lambda y: f"{y:.0f}")
        for cliff in v.cliffs:
            if ax.xlim[0] <= cliff <= ax.xlim[1]:
                g.add(Line(ax.x(cliff), ax.y0, ax.x(cliff), ax.y0 + ax.h, strokeColor=MUTED, strokeWidth=0.5,
                           strokeDashArray=[2, 2]))
        pts = []
        for xv, ev in zip(v.sweep_values, v.sweep_efficiency):
            pts += [ax.x(float(xv)), ax.y(100 * float(ev))]
        g.add(PolyLine(pts, strokeColor=color, strokeWidth=1.1))
        cx, cy = ax.x(v.current_value), ax.y(100 * v.current_efficiency)
        g.add(Circle(cx, cy, 3, fillColor=colors.white, strokeColor=INK, strokeWidth=1))
        d.add(g)
    if not views:
        d.add(text(4, 40, "No device with a matrix engine was selected.", 8, color=MUTED))
    return d


# -------------------------------------------------------------------------------------------------- cost
COST_PARTS = (("capital (purchase)", "#0072B2"), ("electricity over the horizon", "#E69F00"))


def cost_figure(data: ReportData, width: float) -> Drawing:
    cost = data.cost
    names = data.device_names
    n = len(names)
    height = 80 + 24 * n
    d = Drawing(width, height)
    half = width / 2
    # (a) the plan's fleet TCO: capital + electricity for all its units (the ranking table's figures)
    plans = [data.plan.by_id(i) for i in data.device_ids]
    tco = np.array([p.tco for p in plans], dtype=float)
    g = Group()
    stacks = np.column_stack([[p.capital for p in plans], [p.energy_cost for p in plans]])
    known = np.isfinite(tco)
    vmax = float(np.nanmax(np.where(known, tco, np.nan))) if known.any() else 1.0
    ax = _bar_axes(n, half - 8, height, 112, vmax * 1.3)
    ax.frame(g, f"Fleet TCO over {cost.years:g} years (the plan's units) [USD]", "", _usd_tick, None, yticks=False)
    labels = [_usd(t) if k else _missing(("no " + " or ".join(p.lacks)) if p.lacks else cost.reason("tco", i))
              for i, (t, k, p) in enumerate(zip(tco, known, plans))]
    _hbars(g, ax, names, np.where(known[:, None], stacks, 0.0), [colors.HexColor(c) for _, c in COST_PARTS],
           labels, None)
    _legend(g, ax.x0 - 100, height - 14, [(label, colors.HexColor(c)) for label, c in COST_PARTS], half, "box")
    d.add(g)
    # (b) cost per million inferences or tokens: the plan's one definition (its ranked cost over the units served)
    g2 = Group()
    cpm = np.array([p.rank_cost_per_million for p in plans], dtype=float)
    known2 = np.isfinite(cpm)
    vmax2 = float(np.nanmax(np.where(known2, cpm, np.nan))) if known2.any() else 1.0
    ax2 = _bar_axes(n, half, height, 24, vmax2 * 1.7)  # room for the label "(rent, infeasible)"
    ax2.x0 += half
    ax2.frame(g2, f"Cost per million {cost.unit}s (the plan's basis) [USD]", "", lambda v: f"{v:g}", None,
              yticks=False)
    bar = min(16.0, ax2.h / max(n, 1) * 0.6)
    for i in range(n):
        yc = ax2.y0 + ax2.h * (n - i - 0.5) / n
        if known2[i]:
            g2.add(Rect(ax2.x0, yc - bar / 2, ax2.x(float(cpm[i])) - ax2.x0, bar, fillColor=device_color(i),
                        strokeColor=None))
            note = plans[i].rank_basis + (", infeasible" if plans[i].feasible is False else "")
            g2.add(text(ax2.x(float(cpm[i])) + 4, yc - 2.5, f"${float(cpm[i]):.3g} ({note})", 7))
        else:
            g2.add(text(ax2.x0 + 4, yc - 2.5, _missing(", ".join(plans[i].missing) or "not feasible"), 7,
                        color=MUTED))
    d.add(g2)
    return d


def _missing(reason: str) -> str:
    return "\u2014 " + _short(reason.split(";")[0], 30) if reason else "\u2014"


def _usd(x: float) -> str:
    from ..core.analysis.procurement import format_usd

    return format_usd(x)


def _usd_tick(v: float) -> str:
    return "0" if v == 0 else _usd(v)
