"""Plot helpers shared by the analysis panels: colours, new plots, change-aware setters, hover for bars.

Software rendering (offscreen, VMs, remote desktops) makes painting the dominant cost of a live panel, so the
helpers here avoid needless work: ``changed`` lets a panel skip updates whose inputs did not change (unchanged
axes keep their cached pictures), ``set_range`` applies a new range before the paint, ``opaque`` replaces large
translucent fills, ``cached`` paints text items from pixmaps and ``name_axis`` fixes the width of category
axes, so that new names never re-lay out a panel. The drawing items themselves are in ``explorer.ui.plot_items``;
docs/benchmarks.md tells what each of these saved.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QObject, QPointF, Qt
from PySide6.QtWidgets import (
    QComboBox,
    QGraphicsItem,
    QGraphicsTextItem,
)

from explorer.core.units import format_si

from ..plot_items.axis import SiLogAxis
from ..plot_items.title import PlotTitle

DASH = "\u2014"
DEVICE_COLORS = (
    "#1f77b4",
    "#d62728",
    "#2ca02c",
    "#8c564b",
    "#e377c2",
    "#17becf",
    "#7f7f7f",
    "#bcbd22",
    "#393b79",
    "#637939",
)
FOCUS_PEN = pg.mkPen("#000000", width=2.5)
BAR_OUTLINE = pg.mkPen("k", width=2)  # the focused layer's bars
NO_PEN = pg.mkPen(None)


def opaque(rgb, alpha: float, background=(255, 255, 255)) -> tuple[int, int, int]:
    """``rgb`` at ``alpha`` over the white background, as an opaque colour: large translucent fills are the
    slowest thing to paint in software rendering, opaque ones among the fastest."""
    return tuple(round(b * (1 - alpha) + c * alpha) for c, b in zip(rgb, background))


def elide(text: str, n: int = 22) -> str:
    return text if len(text) <= n else text[: n - 1] + "\u2026"


def name_axis(plot: pg.PlotItem, width: int = 150) -> pg.AxisItem:
    """A left axis of category names with a fixed width: new names never re-lay out the plots. It has no
    SI prefix (pyqtgraph would otherwise re-typeset its empty label on every range change)."""
    axis = plot.getAxis("left")
    axis.setWidth(width)
    axis.enableAutoSIPrefix(False)
    return axis


def cached(item):
    """Paint ``item`` from a pixmap cache until it changes (axes, titles, labels, legends: text is slow to
    draw). pyqtgraph draws the text of a TextItem, a LabelItem or an axis label with a child text item, which
    a cache of its parent does not cover: those children get one too."""
    item.setCacheMode(QGraphicsItem.CacheMode.DeviceCoordinateCache)
    for child in item.childItems():
        if isinstance(child, QGraphicsTextItem):
            child.setCacheMode(QGraphicsItem.CacheMode.DeviceCoordinateCache)
    return item


CACHED_TYPES = (pg.AxisItem, pg.LabelItem, pg.TextItem, pg.LegendItem)


def device_color(index: int) -> str:
    return DEVICE_COLORS[index % len(DEVICE_COLORS)]


def si(value: float, unit: str, digits: int = 3) -> str:
    """``format_si`` with "—" for unknowns (NaN, None)."""
    if value is None or not math.isfinite(float(value)):
        return DASH
    return format_si(float(value), unit, digits)


def new_plot(title: str = "", log_x: bool = False, log_y: bool = False, grid: bool = False) -> pg.PlotItem:
    """A plot with SI log ticks. Grids are off unless asked: in software rendering they cost more to paint
    than everything else in a panel."""
    plot = pg.PlotItem(axisItems={"bottom": SiLogAxis("bottom"), "left": SiLogAxis("left")})
    for side in ("bottom", "left"):  # major and minor ticks; pyqtgraph's third level costs much of an axis' paint
        plot.getAxis(side).setStyle(maxTickLevel=1)
    for side in ("top", "right"):  # hidden, but they follow every range change: no label to re-typeset
        plot.getAxis(side).enableAutoSIPrefix(False)
    PlotTitle(plot).set(title)
    if grid:
        plot.showGrid(x=True, y=True, alpha=0.15)
    plot.setMenuEnabled(False)
    if log_x or log_y:
        plot.setLogMode(log_x, log_y)
    for name, is_log in (("bottom", log_x), ("left", log_y)):
        if is_log:  # the tick strings carry the prefix; no "(x1e+15)" in the label
            plot.getAxis(name).enableAutoSIPrefix(False)
    return plot


def changed(obj, name: str, key) -> bool:
    """True (and remember ``key``) when ``key`` differs from the last one stored under ``name`` on ``obj``.

    Panels skip updates whose inputs did not change, so that unchanged axes and lines keep their cached
    pictures: one edit repaints only what it changed."""
    store = obj.__dict__.setdefault("_last_keys", {})
    key = _frozen(key)
    if name in store and store[name] == key:
        return False
    store[name] = key
    return True


def forget(obj) -> None:
    """Forget the keys ``changed`` stored on ``obj``: its next update is applied whatever it is (after the
    item was cleared by other means)."""
    obj.__dict__.get("_last_keys", {}).clear()


_NAN = ("nan",)


def _frozen(key):
    """A comparable form of ``key``: arrays become (shape, dtype, bytes), so NaNs compare equal and fast.
    (Called for every key of every redraw: exact type tests first.)"""
    kind = type(key)
    if kind is str or kind is int or kind is bool or key is None:
        return key
    if kind is np.ndarray:
        return ("ndarray", key.shape, key.dtype.str, key.tobytes())
    if isinstance(key, (tuple, list)):
        return tuple(map(_frozen, key))
    if isinstance(key, float) and math.isnan(key):  # numpy floats too
        return _NAN
    if isinstance(key, np.ndarray):  # a subclass
        return _frozen(np.asarray(key))
    return key


def set_ticks(axis: pg.AxisItem, ticks) -> None:
    """``axis.setTicks`` unless the ticks (lists of (value, label)) are the ones already shown."""
    if axis.__dict__.get("_last_ticks") != ticks:
        axis._last_ticks = ticks
        axis.setTicks(ticks)


def set_range(plot: pg.PlotItem, x=None, y=None, padding: float = 0.0) -> None:
    """Set the view range if it changed, and apply it now: pyqtgraph otherwise applies a new range while
    painting, which moves every item after the paint has started and costs a second paint of the plot."""
    moved = False
    if x is not None and changed(plot, "xrange", (float(x[0]), float(x[1]), padding)):
        plot.setXRange(x[0], x[1], padding=padding)
        moved = True
    if y is not None and changed(plot, "yrange", (float(y[0]), float(y[1]), padding)):
        plot.setYRange(y[0], y[1], padding=padding)
        moved = True
    if moved:
        plot.vb.updateMatrix()


def set_title(plot: pg.PlotItem, title: str, key=()) -> None:
    """The plot's title (plain text) and its key: ``[(colour, name), ...]`` shown as coloured squares."""
    plot.plot_title.set(title, key)


EMPTY_AXIS = "nothing to plot (see each row)"


def empty_state(plot: pg.PlotItem, empty: bool, note: str = EMPTY_AXIS, label: str | None = None,
                sides=("bottom",)) -> None:
    """A chart with nothing to draw says so (``note``) on its bottom axis, and its ``sides`` show no numbers,
    instead of numbering an empty 0-1 range; with something to draw, the numbers come back and the bottom axis
    gets ``label`` (when given: a caller that labels the axis itself passes None)."""
    if not changed(plot, "empty", (empty, note, label, tuple(sides))):
        return
    for side in sides:
        plot.getAxis(side).setStyle(showValues=not empty)
    if empty:
        plot.getAxis("bottom").setLabel(note)
    elif label is not None:
        plot.getAxis("bottom").setLabel(label)


def nice_ceil(value: float) -> float:
    """The smallest of 1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10 x 10^k at or above ``value`` (stable axis
    ranges)."""
    if not (math.isfinite(value) and value > 0):
        return 1.0
    base = 10.0 ** math.floor(math.log10(value))
    for step in (1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10):
        if step * base >= value * (1 - 1e-12):
            return step * base
    return 10 * base


class DeviceCombo(QComboBox):
    """The device in focus for single-device views; choosing one calls ``workspace.focus_device``."""

    def __init__(self, workspace, parent=None):
        super().__init__(parent)
        self.workspace = workspace
        # a width that does not follow the names: checking a device never re-lays out the panel's header
        self.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.setMinimumContentsLength(24)
        self.setToolTip("Device in focus for this view (shared by every panel)")
        self.currentIndexChanged.connect(self._chosen)

    def sync(self) -> None:
        """Follow the workspace's devices, inserting and removing only the items that changed."""
        ws = self.workspace
        self.blockSignals(True)
        for i, device in enumerate(ws.devices):
            found = self.findData(device.id)
            if found > i:  # the items before it were deselected
                for _ in range(found - i):
                    self.removeItem(i)
            elif found < 0:
                self.insertItem(i, device.name, device.id)
            if self.itemText(i) != device.name:
                self.setItemText(i, device.name)
        while self.count() > len(ws.devices):
            self.removeItem(self.count() - 1)
        focus = ws.focused_device
        ids = [d.id for d in ws.devices]
        index = ids.index(focus) if focus in ids else -1
        if self.currentIndex() != index:
            self.setCurrentIndex(index)
        self.blockSignals(False)

    def _chosen(self, index: int) -> None:
        if index >= 0:
            self.workspace.focus_device(self.itemData(index))


class BarPicker(QObject):
    """Hover tooltips and click-to-select for bar charts (BarGraphItem has neither).

    ``locate(x, y)`` maps a point in data coordinates to a bar key or None; ``describe(key)`` gives the
    tooltip text; ``pick(key)`` is called on a left click. Create it after the plot is in a GraphicsLayout. The
    picker is a child of the plot, so it lives as long as the plot does (a plain object that nobody kept was
    garbage-collected, and with it every hover and click)."""

    def __init__(
        self,
        plot: pg.PlotItem,
        locate: Callable[[float, float], object],
        describe: Callable[[object], str],
        pick: Callable[[object], None] | None = None,
    ):
        scene = plot.scene()
        if scene is None:
            raise RuntimeError("BarPicker: add the plot to a GraphicsLayout first")
        super().__init__(plot)
        self.plot, self.locate, self.describe, self.pick = plot, locate, describe, pick
        self._last = None
        scene.sigMouseMoved.connect(self._moved)
        scene.sigMouseClicked.connect(self._clicked)

    def _key_at(self, scene_pos: QPointF):
        vb = self.plot.vb
        if not vb.sceneBoundingRect().contains(scene_pos):
            return None
        p = vb.mapSceneToView(scene_pos)
        return self.locate(p.x(), p.y())

    def _moved(self, scene_pos) -> None:
        key = self._key_at(scene_pos)
        if key == self._last:
            return
        self._last = key
        self.plot.vb.setToolTip(self.describe(key) if key is not None else "")

    def _clicked(self, ev) -> None:
        if self.pick is None or ev.button() != Qt.MouseButton.LeftButton:
            return
        key = self._key_at(ev.scenePos())
        if key is not None:
            self.pick(key)
