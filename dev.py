#!/usr/bin/env python3
"""Set up and run Hardware Explorer from a fresh checkout, with only Python 3.11+ and pip.

    python3 dev.py app [ARGS...]    create .venv if needed, install the app, and launch it (ARGS go to hwexplorer)
    python3 dev.py test [ARGS...]   create .venv if needed, install the app and test tools, run the whole suite

The environment is reinstalled only when pyproject.toml changes.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
BIN = VENV / ("Scripts" if os.name == "nt" else "bin")
PYTHON = BIN / ("python.exe" if os.name == "nt" else "python")


def ensure_env(extras: str) -> None:
    if sys.version_info < (3, 11):
        sys.exit(f"Hardware Explorer needs Python 3.11 or newer (this is {sys.version.split()[0]})")
    if not PYTHON.exists():
        print(f"creating {VENV} ...", flush=True)
        venv.EnvBuilder(with_pip=True).create(VENV)
    digest = hashlib.sha256((ROOT / "pyproject.toml").read_bytes() + extras.encode()).hexdigest()
    stamp = VENV / f".installed-{extras or 'app'}"
    if stamp.exists() and stamp.read_text() == digest:
        return
    target = f".[{extras}]" if extras else "."
    print(f"installing Hardware Explorer ({target}) into {VENV} ...", flush=True)
    subprocess.run([str(PYTHON), "-m", "pip", "install", "--quiet", "--upgrade", "pip"], check=True, cwd=ROOT)
    subprocess.run([str(PYTHON), "-m", "pip", "install", "--quiet", "-e", target], check=True, cwd=ROOT)
    stamp.write_text(digest)


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in ("app", "test"):
        print(__doc__)
        return 2
    command, rest = argv[0], argv[1:]
    if command == "app":
        ensure_env("")
        return subprocess.call([str(PYTHON), "-m", "explorer", *rest], cwd=ROOT)
    ensure_env("test")
    return subprocess.call([str(PYTHON), "-m", "pytest", *rest], cwd=ROOT)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
