"""The measured-kernels layer of the roofline: an imported trace's kernels as crosses beside the operators.

Draws :func:`explorer.core.analysis.roofline_measured.measured_roofline` for the device in focus; the panel
owns one :class:`MeasuredLayer` and hands it the session's trace and its measured roofline. Hovering a cross names
the kernel, its achieved FLOP/s, its intensity, its efficiency against the roof, and the measured against the
modelled intensity of the operator it matches.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QPointF

from explorer.core.analysis.roofline_measured import MeasuredRoofline

from ..plot_items.dots import Dots
from .plotting import si

CROSS_COLOR = (20, 20, 20)
CROSS_SIZE = 12


class MeasuredLayer:
    """One scatter of crosses (log10 coordinates, like the operator points) on the roofline plot."""

    def __init__(self, plot: pg.PlotItem):
        self.trace = None
        self.result: MeasuredRoofline | None = None
        self.scatter = Dots(symbol="x", size=CROSS_SIZE, pen=pg.mkPen(255, 255, 255, 200, width=0.8),
                            color=pg.mkColor(*CROSS_COLOR).getRgb())
        self.scatter.setZValue(12)  # above the operator points and the focus ring
        plot.addItem(self.scatter)

    @property
    def active(self) -> bool:
        return self.trace is not None

    def draw(self, trace, result: MeasuredRoofline | None) -> None:
        """Draw ``result`` (the session's measured roofline of ``trace`` on the device in focus; None: none)."""
        self.trace = trace
        if trace is None or result is None:
            self.result = None
            if len(self.scatter.x):
                self.scatter.setData(x=[], y=[])
            return
        m = self.result = result
        with np.errstate(divide="ignore", invalid="ignore"):
            self.scatter.setData(x=np.log10(m.intensity), y=np.log10(m.achieved), data=np.arange(len(m)))

    def hover_key(self, x: float, y: float):
        if self.result is None or not len(self.result):
            return None
        found = self.scatter.pointsAt(QPointF(x, y))
        return ("measured", int(self.scatter.values[found[-1]])) if found else None

    def source(self) -> str:
        source = getattr(self.trace, "source", None)
        return Path(source).name if source else "trace"

    def legend_row(self, text_color) -> list:
        """The legend's runs for the crosses (none without a trace)."""
        if self.result is None:
            return []
        m = self.result
        return [("\u2716 ", pg.mkColor(*CROSS_COLOR), False),
                (f"measured kernels ({self.source()}): {len(m)} of {m.kernels} placed", text_color, False)]

    def message(self) -> str:
        if self.result is None:
            return ""
        m = self.result
        if m.points is not None and not len(m) and m.kernels:
            return (f"None of the {m.kernels} measured kernels from {self.source()} can be placed: "
                    f"{m.note.split(': ', 1)[-1]}.")
        if m.points is None:
            return f"Measured kernels from {self.source()} not placed: {m.note}."
        text = f"Crosses: {len(m)} measured kernels from {self.source()} against the {m.device_name} roof."
        return text + (f" {m.note[0].upper()}{m.note[1:]}." if m.note else "")

    def tip(self, i: int) -> str:
        m = self.result
        if m is None or not 0 <= i < len(m):
            return ""
        modeled = m.modeled_intensity[i]
        if m.intensity_source[i] == "measured":
            versus = (f"modelled intensity of '{m.layers[i]}' {modeled:.3g} FLOP/byte (measured "
                      f"{m.intensity[i] / modeled:.2f}\u00d7 the model)" if math.isfinite(modeled) else
                      "no model operator matches it")
            where = f"intensity {m.intensity[i]:.3g} FLOP/byte measured (FLOPs / bytes the trace counted)"
        else:
            where = (f"intensity {m.intensity[i]:.3g} FLOP/byte from the model's '{m.layers[i]}' (the trace "
                     "measured no bytes)")
            versus = "measured intensity: \u2014"
        return (f"{m.names[i]} (measured, {self.source()})\n"
                f"achieved {si(m.achieved[i], 'FLOP/s')} in {si(m.duration[i], 's')}\n"
                f"{where}\n{versus}\n"
                f"roof {si(m.attainable[i], 'FLOP/s')} on {m.device_name} at {m.precision} "
                f"({m.bound[i]}-bound): efficiency {m.efficiency[i]:.1%}")
