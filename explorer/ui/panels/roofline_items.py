"""The plot items of one device on the roofline and the panel's CSV table (split from ``roofline.py``)."""

from __future__ import annotations

import math

import numpy as np
import pyqtgraph as pg

from .plotting import DASH, cached, changed, device_color, opaque


class LogCurve(pg.PlotCurveItem):
    """A polyline (or, with ``connect='pairs'``, separate segments) given in linear units and drawn in the
    log-log view's log10 coordinates: a bare curve updates several times faster than a PlotDataItem in log
    mode."""

    def __init__(self, connect: str = "all"):
        super().__init__(connect=connect)
        self._linear = (np.empty(0), np.empty(0))

    def set_linear(self, x: np.ndarray, y: np.ndarray, pen) -> None:
        self._linear = (x, y)
        self.setData(x=np.log10(x), y=np.log10(y), pen=pen)

    def getOriginalDataset(self) -> tuple[np.ndarray, np.ndarray]:
        """The segments' end points in linear units (as PlotDataItem.getOriginalDataset)."""
        return self._linear


class DeviceItems:
    """The plot items of one device slot, created once and reused: the roof (main-memory slope and the ceiling
    at the precision), the on-chip slopes and the other precisions' ceilings (as segment pairs), the ridge
    label."""

    def __init__(self, plot: pg.PlotItem):
        self.roof = LogCurve()
        self.levels = LogCurve(connect="pairs")
        self.others = LogCurve(connect="pairs")
        self.ridge_label = cached(pg.TextItem(anchor=(1.05, -0.1)))  # below and left of the ridge point
        for item in (self.roof, self.levels, self.others, self.ridge_label):
            plot.addItem(item)

    def hide(self) -> None:
        for item in (self.roof, self.levels, self.others, self.ridge_label):
            item.setVisible(False)


def segments(pieces) -> tuple[np.ndarray, np.ndarray]:
    """Concatenate 2-point segments for a ``connect='pairs'`` curve."""
    if not pieces:
        return np.empty(0), np.empty(0)
    return (
        np.concatenate([np.asarray(x, float)[[0, -1]] for x, _ in pieces]),
        np.concatenate([np.asarray(y, float)[[0, -1]] for _, y in pieces]),
    )


def draw_device(items: DeviceItems, dr, index: int, focused: bool) -> None:
    """Draw one device's roof, on-chip slopes, other precisions' ceilings and ridge label."""
    color = device_color(index)
    width = 2.5 if focused else 1.5
    main = dr.slopes[0] if dr.slopes else None
    if dr.ceiling is not None and main is not None:
        x = np.array([main.x[0], dr.ridge, dr.ceiling.x[-1]]) if np.isfinite(dr.ridge) else main.x
        y = np.array([main.y[0], dr.peak, dr.peak]) if np.isfinite(dr.ridge) else main.y
    elif dr.ceiling is not None:
        x, y = dr.ceiling.x, dr.ceiling.y
    elif main is not None:
        x, y = main.x, main.y
    else:
        x, y = np.empty(0), np.empty(0)
    if changed(items.roof, "data", (x, y, color, width)):
        items.roof.set_linear(x, y, pg.mkPen(color, width=width))
    items.roof.setVisible(len(x) > 0)
    lx, ly = segments([(sl.x, sl.y) for sl in dr.slopes[1:]])
    if changed(items.levels, "data", (lx, ly, color)):
        pen = pg.mkPen(color, width=1.0)
        pen.setDashPattern([8, 6])  # long dashes: cheap to paint
        items.levels.set_linear(lx, ly, pen)
    items.levels.setVisible(len(lx) > 0)
    ox, oy = segments([(c.x, c.y) for c in dr.other_ceilings])
    if changed(items.others, "data", (ox, oy, color)):
        rgb = pg.mkColor(color).getRgb()[:3]
        items.others.set_linear(ox, oy, pg.mkPen(opaque(rgb, 0.4), width=1))  # faint: solid, pale
    items.others.setVisible(len(ox) > 0)
    # only the device in focus labels its ridge (every ridge is in the legend and the hover): the others' labels
    # are not typeset until their device comes into focus
    shown = focused and math.isfinite(dr.ridge) and math.isfinite(dr.peak)
    if shown and changed(items.ridge_label, "text", (dr.ridge, dr.peak, color)):
        items.ridge_label.setText(f"ridge {dr.ridge:.3g} FLOP/B", color=color)
        items.ridge_label.setPos(math.log10(dr.ridge), math.log10(dr.peak))
    items.ridge_label.setVisible(shown)


def roofline_csv(r):
    """The CSV header and rows of a roofline result (None: the header only)."""
    header = [
        "operator",
        "kind",
        "layer",
        "intensity (FLOP/byte)",
        "attainable (FLOP/s)",
        "modelled (FLOP/s)",
        "time (s)",
        "time share",
        "bound",
        "regime",
        "device",
        "precision",
    ]
    if r is None:
        return header, []
    p, dev = r.points, r.devices[r.device_index]
    rows = [
        [
            p.names[i],
            p.kinds[i],
            int(p.layer[i]) + 1,
            float(p.intensity[i]),
            float(p.attainable[i]),
            float(p.achieved[i]),
            float(p.time[i]),
            float(p.time_share[i]),
            p.bound[i],
            p.regime[i],
            dev.name,
            r.precision,
        ]
        for i in range(len(p.rows))
    ]
    rows.append([])
    rows.append(
        ["device", "peak (FLOP/s)", "main memory bandwidth (B/s)", "ridge (FLOP/byte)", "missing"]
    )
    rows.extend([[x.name, x.peak, x.bandwidth, x.ridge, x.missing or DASH] for x in r.devices])
    return header, rows
