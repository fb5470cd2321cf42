"""Menus, toolbar actions and their shortcuts. Undo/Redo are bound to the workspace's command stack."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QObject, Qt
from PySide6.QtGui import QAction, QIcon, QKeySequence
from PySide6.QtWidgets import QApplication, QMainWindow, QMenu, QStyle, QToolBar

from explorer.core.workload.templates import TEMPLATES

from .binding import bind
from .help import DOCS, docs_dir, open_doc, show_quick_start

Key = QKeySequence.StandardKey


def _icon(theme: str, fallback: QStyle.StandardPixmap) -> QIcon:
    return QIcon.fromTheme(theme, QApplication.style().standardIcon(fallback))


class MainActions(QObject):
    """Creates every action of the main window and fills its menu bar and toolbar."""

    def __init__(self, window: QMainWindow):
        super().__init__(window)
        self.window = window
        self.ws = window.workspace
        self.controller = window.controller
        view = window.layer_view
        sp = QStyle.StandardPixmap
        self.new = self._action("&New", window.new_project, Key.New, _icon("document-new", sp.SP_FileIcon),
                                "Start a new, empty project (keeps the selected devices)")
        self.open = self._action("&Open\u2026", window.open_project, Key.Open,
                                 _icon("document-open", sp.SP_DialogOpenButton), "Open a project file")
        self.save = self._action("&Save", self.controller.save, Key.Save,
                                 _icon("document-save", sp.SP_DialogSaveButton), "Save the project")
        self.save_as = self._action("Save &As\u2026", self.controller.save_as, Key.SaveAs, None,
                                    "Save the project under a new name")
        self.export_report = self._action("&Export Report\u2026", window.export_report, QKeySequence("Ctrl+E"), None,
                                          "Write the analysis as a PDF, HTML or CSV report")
        importer = window.importer
        self.import_model = self._action("Import &Model\u2026", importer.import_model, QKeySequence("Ctrl+I"), None,
                                         "Replace the model by an ONNX model's layers (Undo restores it)")
        self.import_trace = self._action("Import &Trace\u2026", importer.import_trace, QKeySequence("Ctrl+Shift+I"),
                                         None, "Load a profiler trace: timeline, top kernels, measured points on "
                                               "the roofline")
        self.import_catalog = self._action("Import &Catalog\u2026", importer.import_catalog, None, None,
                                           "Add devices to the catalog from a YAML, JSON or CSV file")
        self.export_catalog = self._action("Export Catal&og\u2026", importer.export_catalog, None, None,
                                           "Write the devices the catalog shows to a YAML, JSON or CSV file")
        for action in (self.import_catalog, self.export_catalog):
            action.setEnabled(window.catalog_dock is not None)
        self.preferences = self._action("&Preferences\u2026", window.edit_preferences, Key.Preferences, None,
                                        "Defaults for new projects: precision, electricity price, PUE, years")
        self.preferences.setMenuRole(QAction.MenuRole.PreferencesRole)
        if self.preferences.shortcut().isEmpty():
            self.preferences.setShortcut(QKeySequence("Ctrl+,"))
        self.quit = self._action("&Quit", window.close, Key.Quit, None, "Close the window")
        self.quit.setMenuRole(QAction.MenuRole.QuitRole)
        if self.quit.shortcut().isEmpty():
            self.quit.setShortcut(QKeySequence("Ctrl+Q"))
        self.undo = self._action("&Undo", self.ws.undo, Key.Undo, _icon("edit-undo", sp.SP_ArrowBack), "Undo")
        self.redo = self._action("&Redo", self.ws.redo, Key.Redo, _icon("edit-redo", sp.SP_ArrowForward), "Redo")
        redo_keys = QKeySequence.keyBindings(Key.Redo) + [QKeySequence("Ctrl+Y"), QKeySequence("Ctrl+Shift+Z")]
        unique = dict.fromkeys(k.toString() for k in redo_keys if not k.isEmpty())  # a repeat is "ambiguous"
        self.redo.setShortcuts([QKeySequence(k) for k in unique])
        self.delete = self._action("&Delete Layers", view.delete_selected, Key.Delete,
                                   _icon("edit-delete", sp.SP_TrashIcon), "Delete the selected layers")
        self.delete.setShortcutContext(Qt.ShortcutContext.WidgetWithChildrenShortcut)
        view.addAction(self.delete)
        self.duplicate = self._action("D&uplicate Layers", view.duplicate_selected, QKeySequence("Ctrl+D"),
                                      _icon("edit-copy", sp.SP_FileDialogNewFolder), "Duplicate the selected layers")
        self.select_all = self._action("Select &All Layers", view.selectAll, Key.SelectAll, None, "")
        self.select_all.setShortcutContext(Qt.ShortcutContext.WidgetWithChildrenShortcut)
        view.addAction(self.select_all)
        self.expand = self._action("&Expand Blocks", view.expandAll, None, None, "Show the operators of every block")
        self.collapse = self._action("&Collapse Blocks", view.collapseAll, None, None, "Hide the block operators")
        self.reset_layout = self._action("&Reset Layout", window.reset_layout, None, None,
                                         "Put every dock back where it started")
        self.quick_start = self._action("&Quick Start", lambda: show_quick_start(window), Key.HelpContents, None,
                                        "What to do first and what each panel answers")
        self.docs = [self._action(text, lambda checked=False, name=name: open_doc(name), None, None,
                                  f"Open docs/{name}") for text, name in DOCS]
        if docs_dir() is None:
            for action in self.docs:
                action.setEnabled(False)
                action.setStatusTip("The documentation is not installed beside this copy of the application")
        self.about = self._action("&About Hardware Explorer", window.show_about, None, None,
                                  "Version and data sources")
        self.about.setMenuRole(QAction.MenuRole.AboutRole)
        self.about_qt = self._action("About &Qt", QApplication.aboutQt, None, None, "")
        self.templates = {tid: self._action(t.title, lambda checked=False, tid=tid: window.new_from_template(tid),
                                            None, None, t.description) for tid, t in TEMPLATES.items()}
        self._build_menus()
        self._build_toolbar()
        bind(self, self.ws.changed, self._update_undo)
        self._update_undo()

    def _action(self, text, slot, shortcut, icon, tip) -> QAction:
        action = QAction(text, self.window)
        if shortcut is not None:
            action.setShortcut(QKeySequence(shortcut))
        if icon is not None:
            action.setIcon(icon)
        if tip:
            action.setStatusTip(tip)
            action.setToolTip(tip)
        action.triggered.connect(lambda checked=False: slot())
        return action

    def _build_menus(self) -> None:
        bar = self.window.menuBar()
        file = bar.addMenu("&File")
        file.addAction(self.new)
        self.template_menu = file.addMenu("New from &Template")
        self.template_menu.setObjectName("template_menu")
        for action in self.templates.values():
            self.template_menu.addAction(action)
        file.addAction(self.open)
        self.recent_menu = file.addMenu("Open &Recent")
        self.recent_menu.setObjectName("recent_menu")
        self.recent_menu.aboutToShow.connect(self.fill_recent)
        self.fill_recent()
        file.addSeparator()
        file.addAction(self.save)
        file.addAction(self.save_as)
        file.addAction(self.export_report)
        file.addSeparator()
        for action in (self.import_model, self.import_trace, self.import_catalog, self.export_catalog):
            file.addAction(action)
        file.addSeparator()
        file.addAction(self.preferences)
        file.addSeparator()
        file.addAction(self.quit)
        edit = bar.addMenu("&Edit")
        for action in (self.undo, self.redo, None, self.delete, self.duplicate, self.select_all):
            edit.addSeparator() if action is None else edit.addAction(action)
        self.view_menu = bar.addMenu("&View")
        self.view_menu.addAction(self.expand)
        self.view_menu.addAction(self.collapse)
        self.view_menu.addSeparator()
        self.docks_menu = self.view_menu.addMenu("&Docks")
        self.view_menu.addAction(self.reset_layout)
        help_menu = bar.addMenu("&Help")
        help_menu.addAction(self.quick_start)
        docs_menu = help_menu.addMenu("&Documentation")
        for action in self.docs:
            docs_menu.addAction(action)
        help_menu.addSeparator()
        help_menu.addAction(self.about)
        help_menu.addAction(self.about_qt)

    def add_dock_toggle(self, dock) -> None:
        self.docks_menu.addAction(dock.toggleViewAction())

    def _build_toolbar(self) -> None:
        bar = QToolBar("Main toolbar", self.window)
        bar.setObjectName("main_toolbar")
        bar.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        for action, short in ((self.undo, "Undo"), (self.redo, "Redo"), (self.delete, "Delete"),
                              (self.duplicate, "Duplicate")):
            action.setIconText(short)
        for action in (self.new, self.open, self.save, None, self.undo, self.redo, None, self.delete, self.duplicate):
            bar.addSeparator() if action is None else bar.addAction(action)
        self.window.addToolBar(Qt.ToolBarArea.TopToolBarArea, bar)
        self.toolbar = bar
        self.view_menu.insertAction(self.reset_layout, bar.toggleViewAction())

    def fill_recent(self) -> None:
        menu: QMenu = self.recent_menu
        menu.clear()
        recent = self.controller.recent_files()
        for i, path in enumerate(recent):
            label = f"&{i + 1} {Path(path).name}" if i < 9 else Path(path).name
            action = menu.addAction(label)
            action.setToolTip(path)
            action.setStatusTip(path)
            action.triggered.connect(lambda checked=False, p=path: self.window.open_project(p))
        if not recent:
            menu.addAction("(no recent projects)").setEnabled(False)
        menu.addSeparator()
        clear = menu.addAction("&Clear Recent Projects")
        clear.setEnabled(bool(recent))
        clear.triggered.connect(self.controller.clear_recent)

    def _update_undo(self, *_args) -> None:
        stack = self.ws.stack
        self.undo.setEnabled(stack.can_undo)
        self.redo.setEnabled(stack.can_redo)
        self.undo.setText(f"&Undo {stack.undo_text}" if stack.can_undo else "&Undo")
        self.redo.setText(f"&Redo {stack.redo_text}" if stack.can_redo else "&Redo")
