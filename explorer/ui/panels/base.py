"""What the four analysis panels share: workspace wiring, one coalesced redraw per edit, export and CSV copy.

A panel draws a frozen result computed from ``workspace.analysis`` (the one shared pass); it creates its plot
items once and updates them with ``setData``/``setOpts``. Bursts of ``analysis_updated`` (a command that
changes several things) are coalesced by a zero-interval single-shot timer: one edit, one redraw.
"""

from __future__ import annotations

import contextlib
import io
import math
import sys
from collections.abc import Sequence

import pyqtgraph as pg
from PySide6.QtCore import QBuffer, QByteArray, QIODevice, QRectF
from PySide6.QtGui import QImage, QPainter
from PySide6.QtWidgets import (
    QApplication,
    QDockWidget,
    QFileDialog,
    QGraphicsItem,
    QGraphicsView,
    QLabel,
    QPushButton,
    QScrollArea,
    QSizePolicy,
    QVBoxLayout,
    QWidget,
)

from explorer.core.analysis.time_model import model_title
from explorer.core.files import SafeCsvWriter, atomic_write_bytes

from ..binding import bind_many
from ..plot_items.note_label import NoteLabel
from ..status_bar import left_out_details, left_out_text
from ..widgets.flow_layout import FlowLayout
from ..widgets.on_screen import OnScreenUpdate
from .plotting import (
    CACHED_TYPES,
    DeviceCombo,
    cached,
    changed,
)


def _close_paths_explicitly(node) -> None:
    """Replace each SVG close-path command ``Z`` by a line back to the subpath's start.

    Qt 6 writes ``d="M0,0 L5,0 L5,5 Z"``; pyqtgraph's SVG exporter reads every token as an ``x,y`` pair and
    fails on the bare ``Z`` (pyqtgraph issue #3485). The shape drawn is the same."""
    for path in node.getElementsByTagName("path"):
        d = path.getAttribute("d")
        if "Z" not in d and "z" not in d:
            continue
        out, start = [], None
        for token in d.split():
            if token in ("Z", "z"):
                if start is not None:
                    out.append("L" + start)
                continue
            if token[0] in "Mm":
                start = token[1:]
            out.append(token)
        path.setAttribute("d", " ".join(out))


def time_caption(time_model: str, workspace, analysis=None) -> str:
    """The caption of a panel whose ``time_model`` is "follows", "ideal", "both" or "none" (``AnalysisPanel``)."""
    chosen = workspace.assumptions.time_model
    if time_model == "none":
        return ""  # no time shown (energy): the same in both models, so the title says nothing
    if time_model == "both":
        return "ideal vs calibrated"
    if time_model == "ideal":
        return "ideal model" if chosen == "ideal" else "ideal model (not calibrated here)"
    return model_title(chosen, analysis)


def titled(title: str, caption: str) -> str:
    """A dock's title: the panel's, and its caption after a dash when it has one."""
    return f"{title} \u2014 {caption}" if caption else title


class AnalysisPanel(QWidget):
    """Base of the analysis panels. Subclasses build items in ``build`` and draw in ``redraw(analysis)``."""

    title = ""
    #: which times the panel shows: "follows" the toolbar's time model (ideal or calibrated), always the "ideal"
    #: model, "both" side by side, or "none" (nothing in it depends on time); its dock's title says which
    #: (``model_caption``)
    time_model = "follows"
    has_device_combo = False
    chart_min_height = 260  # px: shorter than this, the panel scrolls (a 420 px panel left the energy chart 8 px)

    def __init__(self, workspace, parent=None):
        super().__init__(parent)
        self.workspace = workspace
        self.setObjectName(type(self).__name__)
        self._need_full = True
        self._need_focus = False
        self.updates = OnScreenUpdate(self, self.flush)
        self.redraws = 0  # full redraws done (tests and the benchmark read it)
        self.shown_title = self.title

        outer = QVBoxLayout(self)
        outer.setContentsMargins(4, 4, 4, 4)
        outer.setSpacing(4)
        # wraps onto a second line when the dock is narrow: a one-line row set the window's minimum width
        self.header = FlowLayout(spacing=6)
        outer.addLayout(self.header)
        self.device_combo = DeviceCombo(workspace) if self.has_device_combo else None
        if self.device_combo is not None:
            self.header.addWidget(QLabel("Device:"))
            self.header.addWidget(self.device_combo)
        self.build_header(self.header)
        self.left_out = QLabel()  # layers that do not fit are left out of this analysis: said, not hidden
        self.left_out.setObjectName("left_out")
        self.left_out.setStyleSheet("color: #b00020;")
        self.left_out.hide()
        self.header.addWidget(self.left_out)
        self.header.addStretch(1)
        buttons = []
        for text, tip, slot in (
            ("PNG\u2026", "Export the charts as a PNG image", self._ask_png),
            ("SVG\u2026", "Export the charts as an SVG drawing", self._ask_svg),
            ("Copy CSV", "Copy this panel's data as CSV (units in the header)", self.copy_csv),
        ):
            button = QPushButton(text)
            button.setToolTip(tip)
            button.clicked.connect(slot)
            buttons.append(button)
        self.header.addGroup(buttons)  # the three stay together, on the right
        self.graphics = pg.GraphicsLayoutWidget()
        self.graphics.setBackground("w")
        # a plain white background is filled faster than pyqtgraph's cached background pixmap is copied (the whole
        # canvas, on every repaint): 0.3-0.45 ms per precision change over the four panels
        self.graphics.setCacheMode(QGraphicsView.CacheModeFlag.CacheNone)
        self.graphics.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Expanding)
        self.graphics.setMinimumHeight(self.chart_min_height)
        # under the header, the charts, tables and notes scroll when the panel is shorter than they need: the
        # charts keep a readable height and the notes their whole text
        self.body = QWidget()
        body = QVBoxLayout(self.body)
        body.setContentsMargins(0, 0, 0, 0)
        body.setSpacing(4)
        body.addWidget(self.graphics, 1)
        self.message = NoteLabel(3)
        self.build(body)
        body.addWidget(self.message)
        self.scroll = QScrollArea()
        self.scroll.setWidget(self.body)
        self.scroll.setWidgetResizable(True)
        self.scroll.setFrameShape(QScrollArea.Shape.NoFrame)
        outer.addWidget(self.scroll, 1)
        for item in self.graphics.scene().items():
            if isinstance(item, CACHED_TYPES):
                cached(item)

        bind_many(self, [
            (workspace.analysis_updated, self._on_analysis),
            (workspace.layer_focused, self._on_focus),
            (workspace.device_focused, self._on_device),
        ])
        self.schedule(full=True)

    # -- to implement
    def build_header(self, header: FlowLayout) -> None:
        """Add panel-specific controls to the header row."""

    def build(self, layout: QVBoxLayout) -> None:
        raise NotImplementedError

    def redraw(self, analysis) -> None:
        raise NotImplementedError

    def redraw_focus(self, analysis) -> None:
        """Only the layer in focus changed: by default redraw everything."""
        self.redraw(analysis)

    def csv_table(self) -> tuple[Sequence[str], Sequence[Sequence[object]]]:
        raise NotImplementedError

    # -- scheduling: one redraw per burst of changes
    @property
    def pending(self) -> bool:
        return self.updates.pending

    def schedule(self, full: bool = True) -> None:
        """Redraw at the next turn of the event loop; a panel off screen (hidden, or a tab behind another) only
        when it comes on screen, so that an edit costs the drawing of the panels one can see."""
        self._need_full = self._need_full or full
        self._need_focus = True
        self.updates.request()

    def _up_to_date(self) -> None:
        """Draw now what a hidden panel left for later (before reading its data or exporting it)."""
        if self.updates.stale:
            self.flush()

    def _on_analysis(self, analysis) -> None:
        self._show_model(analysis)  # now, even off screen: a tab's title is seen before its panel
        self.schedule(full=True)

    def _on_focus(self, _index: int) -> None:
        self.schedule(full=False)

    def _on_device(self, _device_id: str) -> None:
        self.schedule(full=True)

    def flush(self) -> None:
        """Draw now what is pending (the timer calls this; tests may call it directly)."""
        self.updates.cancel()
        full, self._need_full, self._need_focus = self._need_full, False, False
        analysis = self.workspace.analysis
        if self.device_combo is not None:
            self.device_combo.sync()
        if full:
            self.redraws += 1
            self._show_left_out()
            self._show_model(analysis)
            self.redraw(analysis)
        else:
            self.redraw_focus(analysis)

    @classmethod
    def caption(cls, workspace, analysis=None) -> str:
        """Which time model a panel of this class shows for ``workspace``, for its title (a class method: the
        main window titles a tab whose panel is not built yet the same way)."""
        return time_caption(cls.time_model, workspace, analysis)

    @classmethod
    def dock_title(cls, workspace, analysis=None) -> str:
        """The dock's title: the panel's and the time model it shows."""
        return titled(cls.title, cls.caption(workspace, analysis))

    def model_caption(self, analysis=None) -> str:
        """Which time model the panel shows, for its title."""
        return self.caption(self.workspace, analysis)

    def _show_model(self, analysis) -> None:
        """The dock's title: the panel's and the time model it shows."""
        self.shown_title = titled(self.title, self.model_caption(analysis))
        dock = self.parentWidget()
        while dock is not None and not isinstance(dock, QDockWidget):
            dock = dock.parentWidget()
        if dock is not None and dock.windowTitle() != self.shown_title:
            dock.setWindowTitle(self.shown_title)

    # -- shared helpers
    def _show_left_out(self) -> None:
        text, details = left_out_text(self.workspace), left_out_details(self.workspace).strip()
        if changed(self.left_out, "text", (text, details)):
            self.left_out.setText(f"\u26a0 {text}" if text else "")
            self.left_out.setToolTip(details)
            self.left_out.setVisible(bool(text))

    def device_index(self, analysis) -> int:
        if analysis is None or not len(analysis.devices):
            return -1
        ids = analysis.devices.ids
        focus = self.workspace.focused_device
        return ids.index(focus) if focus in ids else 0

    def set_message(self, text: str) -> None:
        """The panel's note (what is drawn, what is missing and why). Its height is fixed so that a new message
        never resizes the plots: a resize re-lays out every axis and costs a full repaint."""
        if changed(self.message, "text", text):
            self.message.setText(text)
            self.message.setToolTip(text if len(text) > 200 else "")

    # -- export
    @contextlib.contextmanager
    def _uncached(self):
        """Draw every item afresh (not from screen-resolution pixmap caches) while exporting."""
        items = [i for i in self.graphics.scene().items() if i.cacheMode() != QGraphicsItem.CacheMode.NoCache]
        for item in items:
            item.setCacheMode(QGraphicsItem.CacheMode.NoCache)
        try:
            yield
        finally:
            for item in items:
                item.setCacheMode(QGraphicsItem.CacheMode.DeviceCoordinateCache)

    def export_png(self, path: str) -> None:
        """The charts at twice the on-screen resolution (at least 800 pixels wide), written atomically.

        Rendered into an image of device pixel ratio 2, as on a high-density screen, rather than with pyqtgraph's
        ImageExporter, which scales the painter: text drawn at screen size (titles, legend, labels) ignores the
        painter's scale and came out at half size."""
        import pyqtgraph.exporters  # noqa: F401 - ImageExporter; imported on the first export, not at start-up

        self._up_to_date()
        scene = self.graphics.scene()
        with self._uncached():
            exporter = pg.exporters.ImageExporter(scene)
            source = exporter.getSourceRect()
            ratio = max(2.0, 800 / max(source.width(), 1.0))
            image = QImage(round(source.width() * ratio), round(source.height() * ratio),
                           QImage.Format.Format_ARGB32)
            image.setDevicePixelRatio(ratio)
            image.fill(self.graphics.backgroundBrush().color())
            painter = QPainter(image)
            try:  # pyqtgraph's export mode (items draw vector symbols, no caches), at the screen's scale
                exporter.setExportMode(True, {"antialias": True, "background": self.graphics.backgroundBrush(),
                                              "painter": painter, "resolutionScale": 1.0})
                painter.setRenderHint(QPainter.RenderHint.Antialiasing, True)
                scene.render(painter, QRectF(0, 0, source.width(), source.height()), source)
            finally:
                exporter.setExportMode(False)
                painter.end()
        data = QByteArray()
        buffer = QBuffer(data)
        buffer.open(QIODevice.OpenModeFlag.WriteOnly)
        if not image.save(buffer, "PNG"):
            raise OSError(f"{path}: the image could not be encoded as PNG")
        atomic_write_bytes(path, bytes(data))

    def export_svg(self, path: str) -> None:
        """The charts as vector SVG (pyqtgraph's SVGExporter; Qt 6's closed paths made readable to it)."""
        import pyqtgraph.exporters  # noqa: F401 - SVGExporter; imported on the first export, not at start-up

        module = sys.modules["pyqtgraph.exporters.SVGExporter"]
        original = module.correctCoordinates

        def correct(node, defs, item, options):
            _close_paths_explicitly(node)
            return original(node, defs, item, options)

        module.correctCoordinates = correct
        self._up_to_date()
        try:
            with self._uncached():
                pg.exporters.SVGExporter(self.graphics.scene()).export(str(path))
        finally:
            module.correctCoordinates = original

    def csv_text(self) -> str:
        self._up_to_date()
        header, rows = self.csv_table()
        out = io.StringIO()
        writer = SafeCsvWriter(out)
        writer.writerow(header)
        for row in rows:
            writer.writerow(["" if (isinstance(v, float) and not math.isfinite(v)) else v for v in row])
        return out.getvalue()

    def copy_csv(self) -> None:
        QApplication.clipboard().setText(self.csv_text())

    def _ask_png(self) -> None:
        path, _ = QFileDialog.getSaveFileName(
            self, f"Export {self.title} as PNG", f"{self.title}.png", "PNG (*.png)"
        )
        if path:
            self.export_png(path)

    def _ask_svg(self) -> None:
        path, _ = QFileDialog.getSaveFileName(
            self, f"Export {self.title} as SVG", f"{self.title}.svg", "SVG (*.svg)"
        )
        if path:
            self.export_svg(path)
