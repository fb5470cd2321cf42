"""What importing the unit registry costs at start-up (issue 22): pint without dask, which pint.compat would
import (0.2 s: dask, jinja2, yaml, psutil, toolz) whenever it is installed, for dask arrays this project never
puts in a Quantity. Each check runs in a new interpreter: the test process has imported everything already."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def fresh(code: str) -> str:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120,
                          check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.strip()


@pytest.mark.skipif(importlib.util.find_spec("dask") is None, reason="dask is not installed: nothing to keep out")
def test_the_unit_registry_leaves_dask_out_and_dask_still_imports_after_it():
    out = fresh("import sys\n"
                "import explorer.core.units as u, explorer.core.money, explorer.core.traces.nsight\n"
                "print(sorted(m for m in ('dask', 'jinja2', 'toolz') if m in sys.modules))\n"
                "print(round(u.ureg('3.35 TB/s').to('GB/s').magnitude, 6))\n"
                "import dask.array as da\n"
                "print(int(da.ones(4, chunks=2).sum().compute()), 'dask' in sys.modules and sys.modules['dask'] is not None)")
    assert out.splitlines() == ["[]", "3350.0", "4 True"]


@pytest.mark.skipif(importlib.util.find_spec("dask") is None, reason="dask is not installed")
def test_a_process_that_imported_dask_first_keeps_pints_dask_support():
    out = fresh("import dask, pint.compat\nimport explorer.core.units\nprint(pint.compat.HAS_DASK)")
    assert out == "True"


def test_the_version_is_read_when_asked_for():
    from explorer import __version__

    out = fresh("import sys, explorer, explorer.__main__\n"
                "print('importlib.metadata' in sys.modules)\n"
                "print(explorer.__version__)")
    assert out.splitlines() == ["False", __version__]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    done = subprocess.run([sys.executable, "-m", "explorer", "--version"], env=env, capture_output=True, text=True,
                          timeout=120, check=False)
    assert (done.returncode, done.stdout) == (0, f"hwexplorer {__version__}\n")


def test_the_unit_registry_is_made_on_first_use():
    """Formatting and naming kinds need no pint (the app's first window, issue 22); the first parse makes the one
    registry, which is also pint's application registry, and ureg/Q_/PintError asked of the module are it."""
    out = fresh("import sys\n"
                "import explorer.core.units as u\n"
                "print('pint' in sys.modules, u.format_si(3.1e14, 'FLOP/s'), u.KINDS['bytes'].si_unit)\n"
                "print(u.parse_si('3.35 TB/s', 'bandwidth', 'bw'), 'pint' in sys.modules)\n"
                "import pint\n"
                "reg = pint.get_application_registry()\n"
                "print((reg.get() if hasattr(reg, 'get') else reg) is u.ureg is u.registry(), u.Q_ is u.ureg.Quantity,\n"
                "      u.PintError is pint.errors.PintError, u.ureg('1 MAC').to('FLOP').magnitude)")
    assert out.splitlines() == ["False 310 TFLOP/s byte", "3350000000000.0 True", "True True True 2"]  # MAC = 2 FLOP
