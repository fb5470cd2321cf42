"""The Qt-free analytical core, in floors (docs/architecture.md): session over the analyses over importers over
traces over workload/hardware over units, precision and files.

Nothing under this package may import PySide6, pyqtgraph or ``explorer.ui``; the import contracts in
``pyproject.toml`` enforce the floors and forbid cycles (tests/core/test_architecture.py).
"""
