"""A dock whose content is built the first time it comes on screen (issue 22: cold start).

The main window holds nine analysis panels, the planner, the calculators and the trace as tabs of one dock area,
and only one of them is on screen at start. Building the others (about 25 pyqtgraph plots, the calculators' heat
map) took 0.8-1.0 s of a 2.8 s start for views nobody had looked at. A :class:`LazyDock` holds an empty placeholder
until its tab is first chosen (Qt says so with ``visibilityChanged(True)``, which a tab behind another does not
get), then builds its widget with ``factory`` and puts it in the placeholder's place; the widget catches up with
the workspace itself (a panel schedules a full redraw when constructed). Code that asks for the widget before
then (``widget()``: tests, exports, the report's planner) gets it built at once, hidden behind its tab as before.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QDockWidget, QWidget

from .on_screen import OnScreenUpdate


class LazyDock(QDockWidget):
    """``factory()`` makes the dock's widget the first time the dock is visible or :meth:`widget` is called.

    ``on_built(widget)`` (optional) runs once the widget is in place."""

    def __init__(self, title: str, factory: Callable[[], QWidget], parent: QWidget | None = None,
                 on_built: Callable[[QWidget], None] | None = None):
        super().__init__(title, parent)
        self._factory, self._on_built = factory, on_built
        self._content: QWidget | None = None
        self._building = False
        super().setWidget(QWidget())  # the placeholder: an empty page behind the tab
        self.visibilityChanged.connect(self._on_visibility)

    @property
    def built(self) -> bool:
        """The widget exists (it has been shown or asked for)."""
        return self._content is not None

    def widget(self) -> QWidget:
        """The dock's widget, built now if it was not yet."""
        if self._content is None:
            self._build()
        return self._content

    def setWidget(self, widget: QWidget) -> None:
        """Replace the content (the factory is not called again)."""
        self._content = widget
        super().setWidget(widget)

    def _on_visibility(self, visible: bool) -> None:
        if visible and self._content is None:
            self._build()

    def _build(self) -> None:
        if self._building:  # the factory itself asked for the widget
            raise RuntimeError(f"{self.objectName()}: the dock's widget was asked for while it was being built")
        self._building = True
        try:
            widget = self._factory()
        finally:
            self._building = False
        placeholder = super().widget()
        self.setWidget(widget)
        if placeholder is not None and placeholder is not widget:
            placeholder.deleteLater()
        updates = getattr(widget, "updates", None)
        if isinstance(updates, OnScreenUpdate):  # views that update while on screen: a chosen tab comes on screen
            self.visibilityChanged.connect(updates.wake)
        explicitly_hidden = widget.isHidden() and widget.testAttribute(Qt.WidgetAttribute.WA_WState_ExplicitShowHide)
        if self.isVisible() and not explicitly_hidden:
            widget.show()  # now, not at the next turn of the event loop (Qt's default): it is painted in this pass
        if self._on_built is not None:
            self._on_built(widget)
