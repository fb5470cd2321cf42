"""Icons: the application icon and one icon per layer group, from ``resources/icons`` (SVG, PNG sizes).

The resources folder is found next to the package (source tree or editable install) or through
``$HWEXPLORER_RESOURCES`` (a packaged build points it at its data folder).
"""

from __future__ import annotations

import os
from functools import cache
from pathlib import Path

from PySide6.QtCore import QSize
from PySide6.QtGui import QIcon
from PySide6.QtWidgets import QApplication, QStyle

APP_ICON_SIZES = (16, 24, 32, 48, 64, 128, 256)


def resources_dir() -> Path:
    env = os.environ.get("HWEXPLORER_RESOURCES")
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[2] / "resources"


def group_icon_path(group: str) -> Path:
    return resources_dir() / "icons" / "groups" / f"{group.replace(' ', '-')}.svg"


@cache
def group_icon(group: str) -> QIcon:
    """The palette icon of a layer group ('linear algebra', 'convolution'...); 'other' for unknown groups."""
    path = group_icon_path(group)
    if not path.exists():
        path = group_icon_path("other")
    return QIcon(str(path))


@cache
def app_icon() -> QIcon:
    folder = resources_dir() / "icons"
    icon = QIcon()
    for size in APP_ICON_SIZES:
        png = folder / f"hwexplorer-{size}.png"
        if png.exists():
            icon.addFile(str(png), QSize(size, size))
    svg = folder / "hwexplorer.svg"
    if svg.exists():
        icon.addFile(str(svg))
    return icon


@cache
def warning_icon() -> QIcon:
    return QApplication.style().standardIcon(QStyle.StandardPixmap.SP_MessageBoxWarning)
