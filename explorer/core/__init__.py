"""The Qt-free analytical core: units, devices, layers and models, analyses, workspace, commands.

Nothing under this package may import PySide6, pyqtgraph or ``explorer.ui`` (a test enforces it).
"""
