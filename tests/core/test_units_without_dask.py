"""Dask is an optional extra (``[cluster]``, for ``sweep --cluster``); installed, it costs nothing at start-up: pint
probes for it when imported (``pint.compat``) and would import ``dask.base`` (80-180 ms measured here), so
explorer.core.units imports pint with dask hidden from that probe, and no module imports pint before it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("module", ["explorer.core.units", "explorer.core.money", "explorer.core.traces.nsight",
                                    "explorer.cli.sweep_cmd"])
def test_importing_pint_through_the_core_imports_no_dask(module):
    code = (f"import sys\nimport {module}\nfrom explorer.core.units import Q_\n"
            "assert Q_('3 GB').to('byte').magnitude == 3e9\n"
            "print(' '.join(m for m in sys.modules if m.split('.')[0] in ('dask', 'distributed')))\n"
            "import importlib.util\nprint(importlib.util.find_spec('dask') is not None)")
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True, cwd=ROOT,
                         env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}, timeout=120)
    loaded, findable = out.stdout.splitlines()
    assert loaded == ""
    # the probe is hidden only while pint is imported: dask stays importable (when installed) afterwards
    try:
        import dask  # noqa: F401
    except ImportError:
        return
    assert findable == "True"
