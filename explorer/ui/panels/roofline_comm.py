"""The roofline's communication layer: the chosen system's links as roofs and its layout's collectives as points.

Maps :class:`explorer.core.parallel.comm_roof.CommRoofView` (``Results.comm_roof``): one dashed roof
``P = I x B`` per domain (its bandwidth per device and direction) up to its ridge, labelled at its end, and one
triangle per collective at (FLOPs per byte sent over its link, min(peak, I x B)), in its link's colour. Off by
default (the panel's "communication roof" toggle). Hovering a triangle names the collective, its link, the FLOPs
and bytes it is placed by, and whether the link or the compute bounds it.
"""

from __future__ import annotations

import math

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QPointF

from ..plot_items.dots import Dots
from ..plot_items.pinned_text import PinnedText
from .plotting import si

LINK_COLORS = {"scale_up": (0, 128, 128), "scale_out": (140, 81, 10)}
OPS = {"all_reduce": "all-reduce", "all_gather": "all-gather", "all_to_all": "all-to-all", "send_recv": "send"}


class CommLayer:
    """Roofs (one curve per domain, log10 coordinates) and collective points on the roofline plot."""

    def __init__(self, plot: pg.PlotItem):
        self.plot = plot
        self.view = None
        self.visible = False
        self.curves: list[pg.PlotCurveItem] = []
        self.labels: list[PinnedText] = []
        self.points = Dots(symbol="t", size=12, pen=pg.mkPen(255, 255, 255, 220, width=0.8))
        self.points.setZValue(12)
        plot.addItem(self.points)

    def draw(self, view, visible: bool) -> None:
        """Draw ``view`` (a :class:`CommRoofView`, or None) when ``visible``; hide everything otherwise."""
        self.view, self.visible = view, visible
        r = view.roofline if (visible and view is not None) else None
        roofs = [x for x in r.roofs if len(x.x)] if r is not None else []
        while len(self.curves) < len(roofs):
            curve = pg.PlotCurveItem()
            curve.setZValue(5)
            self.plot.addItem(curve, ignoreBounds=True)
            self.curves.append(curve)
            label = PinnedText(anchor=(0, 0))
            self.plot.addItem(label, ignoreBounds=True)
            self.labels.append(label)
        for i, (curve, label) in enumerate(zip(self.curves, self.labels)):
            shown = i < len(roofs)
            curve.setVisible(shown)
            label.setVisible(shown)
            if shown:
                roof = roofs[i]
                color = LINK_COLORS.get(roof.scope, (90, 90, 90))
                curve.setData(x=np.log10(roof.x), y=np.log10(roof.y), pen=pg.mkPen(*color, width=2, dash=[6, 4]))
                label.setText(f"{roof.name}: {si(roof.bandwidth, 'B/s')} per direction", color=pg.mkColor(*color))
                lx, ly = np.log10(roof.x), np.log10(roof.y)  # at 60 % of the roof, under the line
                label.setPos(float(lx[0] + 0.6 * (lx[-1] - lx[0])), float(ly[0] + 0.6 * (ly[-1] - ly[0])))
        if r is None:
            if len(self.points.x):
                self.points.setData(x=[], y=[])
            return
        p = r.points
        ok = np.flatnonzero(np.isfinite(p.intensity) & (p.intensity > 0) & np.isfinite(p.attainable))
        scopes = [r.roofs[d].scope if d >= 0 else "" for d in p.domain[ok]]
        colors = [pg.mkColor(*LINK_COLORS.get(s, (90, 90, 90))).getRgb() for s in scopes]
        self.points.setData(x=np.log10(p.intensity[ok]), y=np.log10(p.attainable[ok]), data=ok, colors=colors)

    def legend_row(self, text_color) -> list:
        """The legend's runs for the layer (empty when hidden or nothing is drawn)."""
        v = self.view
        if not self.visible or v is None or v.roofline is None:
            return []
        return [("\u25bc - - ", pg.mkColor(*LINK_COLORS["scale_up"]), False),
                (f"collectives of {v.layout_label} on {v.system_name} under its links", text_color, False)]

    def message(self) -> str:
        v = self.view
        if not self.visible:
            return ""
        if v is None:
            return "Communication roof: no analysis."
        if v.note:
            return f"Communication roof: {v.note}."
        return (f"Communication roof: {v.system_name}, {v.layout_label}; each triangle is a collective at the FLOPs "
                "the device computes for it per byte it sends over the link.")

    def hover_key(self, x: float, y: float):
        if not self.visible or self.view is None or self.view.roofline is None or not len(self.points.x):
            return None
        found = self.points.pointsAt(QPointF(x, y))
        return ("comm", int(self.points.values[found[-1]])) if found else None

    def tip(self, j: int) -> str:
        r = self.view.roofline
        p = r.points
        d = int(p.domain[j])
        roof = r.roofs[d] if d >= 0 else None
        link = f"{roof.name} ({si(roof.bandwidth, 'B/s')} per device and direction)" if roof else "no link"
        bound = ("the link bounds it: its bytes take longer than its FLOPs at the peak" if p.link_bound[j]
                 else "the compute bounds it: its FLOPs take longer at the peak than its bytes on the link")
        ridge = f"{roof.ridge:.3g} FLOP/byte" if roof and math.isfinite(roof.ridge) else "unknown"
        return (f"{OPS.get(p.ops[j], p.ops[j])} after {p.names[j]} over {int(p.group[j])} devices, "
                f"x{int(p.repeats[j])} per pass\non {link}\n"
                f"{si(p.flops[j], 'FLOP')} computed per {si(p.nbytes[j], 'B')} sent: "
                f"{p.intensity[j]:.4g} FLOP/byte (the link's ridge {ridge})\n"
                f"attainable {si(p.attainable[j], 'FLOP/s')}; link {si(p.link_time[j], 's')}, compute at peak "
                f"{si(p.compute_time[j], 's')}: {bound}")
