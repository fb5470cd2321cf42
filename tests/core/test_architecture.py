"""The floors of the house (pyproject.toml [tool.importlinter], docs/architecture.md) hold, and the contract
catches a cycle or an upward import when one is added back."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LINT = Path(sys.executable).with_name("lint-imports")


def lint(root: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(root)}
    return subprocess.run([str(LINT), "--config", str(root / "pyproject.toml"), "--no-cache"], cwd=root, env=env,
                          capture_output=True, text=True, timeout=300)


def test_the_import_contracts_are_kept():
    out = lint(ROOT)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "Contracts: 4 kept, 0 broken." in out.stdout


def append(path: Path, text: str) -> None:
    path.write_text(path.read_text(encoding="utf-8") + text, encoding="utf-8")


def test_a_cycle_or_an_upward_import_breaks_them(tmp_path):
    shutil.copytree(ROOT / "explorer", tmp_path / "explorer", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path)
    core = tmp_path / "explorer" / "core"
    # the three cycles of the old house, each hidden the way it was (inside a function, under TYPE_CHECKING)
    append(core / "hardware" / "device.py",
           "\n\ndef _eq():\n    from explorer.core.hardware.device_file import device_to_dict  # noqa\n")
    append(core / "session" / "commands.py",
           "\nfrom typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .workspace import Workspace  # noqa\n")
    # an upward import (the workload floor reaching the session) and Qt in the core
    append(core / "workload" / "templates.py", "\n\ndef _up():\n    from explorer.core.session import state  # noqa\n")
    append(core / "analysis" / "cost.py", "\n\ndef _qt():\n    import pyqtgraph  # noqa\n")
    append(tmp_path / "explorer" / "store" / "engine.py", "\n\ndef _report():\n    import explorer.report  # noqa\n")
    out = lint(tmp_path)
    text = " ".join(out.stdout.split())
    assert out.returncode != 0
    assert "Contracts: 0 kept, 4 broken." in text, text[-2000:]
    assert "explorer.core.analysis.cost -> pyqtgraph" in text
    assert "explorer.core.workload is not allowed to import explorer.core.session" in text
    assert "No cycles are allowed in explorer.core.hardware" in text and ".device -> .device_file" in text
    assert "No cycles are allowed in explorer.core.session" in text
    assert "explorer.store is not allowed to import explorer.report" in text
