"""explorer.core and the command line never import Qt (run in a fresh interpreter)."""

import pkgutil
import subprocess
import sys

import explorer.core


def test_core_and_cli_import_no_qt():
    modules = sorted(m.name for m in pkgutil.walk_packages(explorer.core.__path__, "explorer.core."))
    code = (
        "import importlib, sys\n"
        f"for name in {modules!r} + ['explorer.cli.analyze_cmd', 'explorer.cli.tiling_cmd', 'explorer.cli.catalog_cmd', 'explorer.cli.plan_cmd', 'explorer.cli.report_cmd', 'explorer.report.pdf', 'explorer.report.html', 'explorer.store.repository', 'explorer.__main__']:\n"
        "    importlib.import_module(name)\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('PySide6', 'pyqtgraph', 'shiboken6')"
        " or m.startswith('explorer.ui'))\n"
        "print(','.join(bad))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert len(modules) > 10
    assert out.stdout.strip() == "", f"Qt imported by the core: {out.stdout}"
