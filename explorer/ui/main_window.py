"""The main window. It only assembles: the layer stack in the centre, the palette, model settings, inspector,
device catalog and every analysis panel of ``explorer.ui.panels.PANEL_SPECS`` as docks, with the procurement planner,
the calculators and the trace (``extras.py``) in the analysis panels' tabs, the menus (``actions.py``) and the
File menu's imports (``import_actions.py``; files dropped on the window take the same way, through the importer
registry), the project controller and the status bar totals. Window geometry and the dock layout persist in
QSettings."""

from __future__ import annotations

from PySide6.QtCore import QByteArray, QSettings, Qt, QTimer
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import (
    QDockWidget,
    QMainWindow,
    QMessageBox,
    QScrollArea,
    QStyle,
    QTabWidget,
    QToolBar,
    QWidget,
)

from explorer.core.session.commands import SetAssumptions
from explorer.core.session.workspace import Workspace
from explorer.core.settings import Preferences, save_preferences

from .actions import MainActions
from .binding import bind
from .builder import LayerInspector, LayerPalette, LayerStackView, ModelSettings
from .dialogs import PreferencesDialog, show_about
from .extras import add_extra_docks
from .icons import app_icon
from .import_actions import Importer
from .panel_docks import panel_dock, panel_name
from .project_controller import AUTOSAVE_DELAY_MS, ProjectController
from .status_bar import ModelTotalsLabel
from .widgets.on_screen import OnScreenUpdate

STATE_VERSION = 2  # 2: planner, calculators and trace docks
Area = Qt.DockWidgetArea


def _panel_specs():
    from .panels import PANEL_SPECS

    return PANEL_SPECS


def _analysis_controls(workspace: Workspace) -> QWidget:
    from .panels import AnalysisControls

    return AnalysisControls(workspace)


class MainWindow(QMainWindow):
    def __init__(self, workspace: Workspace, repository=None, preferences: Preferences | None = None,
                 parent: QWidget | None = None, autosave_ms: int = AUTOSAVE_DELAY_MS, panels=None):
        super().__init__(parent)
        self.workspace = workspace
        self.repository = repository
        self.preferences = preferences or Preferences()
        self.setObjectName("MainWindow")
        self.setWindowIcon(app_icon())
        self.setDockNestingEnabled(True)
        self._size_to_screen()

        self.layer_view = LayerStackView(workspace, self)
        self.setCentralWidget(self.layer_view)
        self.palette = LayerPalette()
        self.model_settings = ModelSettings(workspace)
        self.inspector = LayerInspector(workspace)
        self.docks: list[QDockWidget] = []
        palette_dock = self._add_dock("Layer palette", "palette_dock", self.palette, Area.LeftDockWidgetArea)
        # one dock with tabs: Qt 6 leaves a stale duplicate tab bar when two groups of docks are tabified,
        # and the analysis panels are the group of tabified docks
        self.properties = QTabWidget()
        self.properties.setDocumentMode(True)
        self.properties.addTab(_scrolling(self.model_settings), "Model settings")
        self.properties.addTab(_scrolling(self.inspector), "Layer inspector")
        # never narrower than its tabs and the model settings' form: a wider analysis tab (the planner while one
        # types) took the width from the left column until the tabs hid behind scroll arrows and fields were cut
        scrollbar = self.style().pixelMetric(QStyle.PixelMetric.PM_ScrollBarExtent)
        self.properties.setMinimumWidth(max(self.properties.tabBar().sizeHint().width(),
                                            self.model_settings.minimumSizeHint().width() + scrollbar))
        self._add_dock("Properties", "properties_dock", self.properties, Area.LeftDockWidgetArea)
        self.catalog_dock = None
        if repository is not None:
            from .catalog.dock import CatalogDock

            self.catalog_dock = CatalogDock(workspace, repository, self)
            self._add_dock(None, "CatalogDock", self.catalog_dock, Area.RightDockWidgetArea)
        self.panel_docks: list[QDockWidget] = []
        # each built (and its module imported) when its tab is first shown; ``panels``: classes or PanelSpecs
        for panel in (panels if panels is not None else _panel_specs()):
            dock = self._add_dock(None, f"panel_{panel_name(panel)}",
                                  panel_dock(panel, workspace, self), Area.BottomDockWidgetArea)
            if self.panel_docks:
                self.tabifyDockWidget(self.panel_docks[0], dock)
            self.panel_docks.append(dock)
        self.extra_docks = add_extra_docks(self, Area.BottomDockWidgetArea)
        if self.panel_docks:
            self.panel_docks[0].raise_()
        self._place_docks(palette_dock)

        self.controller = ProjectController(workspace, self, lambda: self.preferences, autosave_ms)
        self.importer = Importer(self)
        self.setAcceptDrops(True)
        self.actions = MainActions(self)
        self.analysis_toolbar = QToolBar("Analysis", self)
        self.analysis_toolbar.setObjectName("analysis_toolbar")
        self.analysis_toolbar.addWidget(_analysis_controls(workspace))
        self.addToolBar(Qt.ToolBarArea.TopToolBarArea, self.analysis_toolbar)
        self.actions.view_menu.insertAction(self.actions.reset_layout, self.analysis_toolbar.toggleViewAction())
        for dock in self.docks:
            self.actions.add_dock_toggle(dock)
        self.totals = ModelTotalsLabel(workspace, self)
        self.statusBar().addPermanentWidget(self.totals)
        self.controller.title_changed.connect(self.setWindowTitle)
        self.controller.message.connect(lambda text: self.statusBar().showMessage(text, 8000))
        self.palette.kind_activated.connect(self.layer_view.add_kind)
        bind(self, workspace.layer_focused, self._on_layer_focused)
        self.setWindowTitle(self.controller.title())
        self._initial_layout = self.saveState(STATE_VERSION)
        self._layout_restored = self.restore_layout()

    def panel(self, cls):
        """The analysis panel of class ``cls`` (built now if its tab has not been shown yet), or None."""
        dock = next((d for d in self.panel_docks if d.panel_class() is cls), None)
        return None if dock is None else dock.widget()

    # the planner, calculators and trace (extras.py), built when first shown or asked for
    def _extra(self, name: str) -> QWidget:
        return self.findChild(QDockWidget, name).widget()

    @property
    def planner(self):
        """The procurement planner (``PlannerPanel``)."""
        return self._extra("planner_dock")

    @property
    def calculators(self):
        """The calculators (``CalculatorsPanel``, in a scroll area)."""
        return self._extra("calculators_dock").widget()

    @property
    def trace_panel(self):
        """The trace (``TracePanel``)."""
        return self._extra("trace_dock")

    def _size_to_screen(self) -> None:
        """1600 x 1000, or the screen's available area when it is smaller."""
        screen = self.screen() or QGuiApplication.primaryScreen()
        area = screen.availableGeometry() if screen is not None else None
        width, height = (1600, 1000) if area is None else (min(1600, area.width()), min(1000, area.height()))
        self.resize(width, height)
        if area is not None:
            self.move(area.x() + (area.width() - width) // 2, area.y() + (area.height() - height) // 2)

    def _place_docks(self, palette_dock: QDockWidget) -> None:
        """Left column: the palette above the properties (model settings, inspector); centre: the layer
        stack above the analysis panels (tabs); right column: the device catalog."""
        self.setCorner(Qt.Corner.BottomLeftCorner, Area.LeftDockWidgetArea)
        self.setCorner(Qt.Corner.BottomRightCorner, Area.RightDockWidgetArea)
        if self.panel_docks:
            self.panel_docks[0].raise_()
        self._size_docks()

    def _size_docks(self) -> None:
        """Starting sizes in proportion to the window (the left column fits the properties' forms)."""
        w, h = max(self.width(), 800), max(self.height(), 600)
        palette = self.findChild(QDockWidget, "palette_dock")
        properties = self.findChild(QDockWidget, "properties_dock")
        self.resizeDocks([palette, properties], [h * 35 // 100, h * 65 // 100], Qt.Orientation.Vertical)
        self.resizeDocks([palette], [max(260, w * 17 // 100)], Qt.Orientation.Horizontal)
        if self.catalog_dock is not None:
            self.resizeDocks([self.catalog_dock], [w * 29 // 100], Qt.Orientation.Horizontal)
        if self.panel_docks:
            self.resizeDocks([self.panel_docks[0]], [h * 70 // 100], Qt.Orientation.Vertical)

    def showEvent(self, event) -> None:
        super().showEvent(event)
        if not self._layout_restored and not getattr(self, "_docks_sized", False):
            self._docks_sized = True  # once the window has its real size: the first start has no saved layout
            QTimer.singleShot(0, self._size_docks)

    def _add_dock(self, title: str | None, name: str, widget: QWidget, area: Area) -> QDockWidget:
        if isinstance(widget, QDockWidget):
            dock = widget
        else:
            dock = QDockWidget(title, self)
            dock.setWidget(widget)
        dock.setObjectName(name)
        updates = getattr(widget, "updates", None)
        if isinstance(updates, OnScreenUpdate):  # views that update while on screen: a chosen tab comes on screen
            dock.visibilityChanged.connect(updates.wake)
        self.addDockWidget(area, dock)
        self.docks.append(dock)
        return dock

    # -- layout persistence
    def restore_layout(self) -> bool:
        """Geometry and dock layout saved by the last session; False when there is none."""
        settings = QSettings()
        geometry = settings.value("window/geometry")
        state = settings.value("window/state")
        if isinstance(geometry, QByteArray):
            self.restoreGeometry(geometry)
        return isinstance(state, QByteArray) and self.restoreState(state, STATE_VERSION)

    def save_layout(self) -> None:
        settings = QSettings()
        settings.setValue("window/geometry", self.saveGeometry())
        settings.setValue("window/state", self.saveState(STATE_VERSION))

    def reset_layout(self) -> None:
        self.restoreState(self._initial_layout, STATE_VERSION)
        for dock in self.docks:
            dock.show()
            dock.setFloating(False)
        self._size_docks()

    # -- project commands (menus and toolbar)
    def new_project(self) -> bool:
        return self.controller.new_project()

    def new_from_template(self, template_id: str) -> bool:
        if not self.controller.new_from_template(template_id):
            return False
        self.layer_view.collapseAll()
        return True

    def open_project(self, path=None) -> bool:
        return self.controller.open_project(path)

    def _on_layer_focused(self, layer: int) -> None:
        if layer >= 0:
            self.properties.setCurrentIndex(1)

    def edit_preferences(self) -> bool:
        dialog = PreferencesDialog(self.preferences, self)
        if not dialog.exec():
            return False
        return self.apply_preferences(dialog.preferences(), dialog.apply_to_project.isChecked())

    def apply_preferences(self, prefs: Preferences, to_project: bool = False) -> bool:
        try:
            save_preferences(prefs)
        except (OSError, ValueError) as exc:
            QMessageBox.critical(self, "Cannot save preferences", str(exc))
            return False
        self.preferences = prefs
        if to_project:
            self.workspace.execute(SetAssumptions(prefs.assumption_defaults(), text="apply preferences"))
        self.statusBar().showMessage("Preferences saved", 5000)
        return True

    def export_report(self):
        from .report_export import (
            export_report,  # imported on use: the report libraries are not needed to start
        )

        dock = self.findChild(QDockWidget, "planner_dock")
        # a planner never shown (not built) has no fields of its own: the session's requirements are the plan's
        planner = dock.widget() if dock is not None and dock.built else None
        if planner is not None:
            planner.commit()  # a field edited this instant becomes the session's first
        requirements = self.workspace.requirements
        if planner is not None and planner.requirements() is None:  # a planner field is invalid (it shows why)
            requirements = None
            self.statusBar().showMessage("The procurement planner has an invalid field: the report leaves out the "
                                         "plan", 8000)
        return export_report(self, self.workspace, requirements=requirements)

    def show_about(self) -> None:
        show_about(self, self.repository)

    # -- drag and drop: a model or a trace file, imported as File -> Import Model / Import Trace would
    def dragEnterEvent(self, event) -> None:
        if any(url.isLocalFile() for url in event.mimeData().urls()):
            event.acceptProposedAction()
        else:
            event.ignore()

    def dragMoveEvent(self, event) -> None:
        self.dragEnterEvent(event)

    def dropEvent(self, event) -> None:
        paths = [url.toLocalFile() for url in event.mimeData().urls() if url.isLocalFile()]
        if not paths:
            event.ignore()
            return
        event.acceptProposedAction()
        for path in paths:
            self.import_file(path)

    def import_file(self, path) -> bool:
        """Import ``path`` with the importer that recognizes it: a model becomes the workspace's model (one
        undoable edit), a trace goes to the Trace dock. A file no importer reads is reported in a message box."""
        from explorer.core.importers import (  # not needed to start
            ImporterError,
            accepted_formats,
            find_importer,
        )

        try:
            kind = find_importer(path).kind
        except ImporterError as exc:
            QMessageBox.warning(self, "Import", f"The file was not imported.\n\n{exc}")
            return False
        if kind == "model":
            return self.importer.import_model(path)
        if kind == "trace":
            return self.importer.import_trace(path) is not None
        QMessageBox.warning(self, "Import", f"The file was not imported: {kind} files are not opened here.\n\n"
                            f"Accepted formats: {accepted_formats()}")
        return False

    def closeEvent(self, event) -> None:
        if not self.controller.maybe_save():
            event.ignore()
            return
        self.controller.shutdown()
        self.save_layout()
        event.accept()


def _scrolling(widget: QWidget) -> QScrollArea:
    area = QScrollArea()
    area.setWidget(widget)
    area.setWidgetResizable(True)
    area.setFrameShape(QScrollArea.Shape.NoFrame)
    area.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
    return area
