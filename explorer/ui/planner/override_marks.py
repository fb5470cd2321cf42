"""How the planner shows a device whose figures the project overrides (issue 23): a pencil after its name, a
tooltip listing the figures, and a context-menu action that drops them (the catalog's figures apply again, one
undoable step). The overrides themselves are the session's (explorer.core.session.device_overrides)."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QMenu

from explorer.core.session.device_overrides import describe

OVERRIDDEN_MARK = " \u270e"  # after the name of a device whose figures the project overrides (a pencil)


def overridden_tip(values) -> str:
    return (f"Figures overridden by the project (they win over the catalog's): {describe(values)}. Right-click to "
            "use the catalog's figures again.")


def override_actions(workspace, item, parent) -> list[QAction]:
    """For the name cell ``item`` (its device id in the user role): "Use the catalog's figures for NAME", which
    drops the device's overrides; none for a device without overrides (or no cell)."""
    device_id = item.data(Qt.ItemDataRole.UserRole) if item is not None else None
    if device_id not in workspace.device_overrides:
        return []
    action = QAction(f"Use the catalog's figures for {item.text().removesuffix(OVERRIDDEN_MARK)}", parent)
    action.triggered.connect(lambda: workspace.clear_overrides(device_id))
    return [action]


def show_menu(actions: list[QAction], global_pos, parent) -> None:
    if actions:
        QMenu.exec(actions, global_pos, None, parent)
