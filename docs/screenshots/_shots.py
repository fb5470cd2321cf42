"""What the screenshot scripts share. Importing it (before anything of ``explorer``) puts the repository on the path
and gives the app private data and config folders (a fresh catalog database seeded with the shipped catalog, no
recovery offers; the user's own catalog and settings untouched). ``grab`` takes the whole X screen
(``import -window root``, ImageMagick), so run the scripts under an X server, e.g.::

    Xvfb :55 -screen 0 1600x1000x24 &
    DISPLAY=:55 .venv/bin/python docs/screenshots/make_sysui_shots.py
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OUT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))
TMP = Path(tempfile.mkdtemp(prefix="hwexplorer-shots-"))
os.environ["XDG_DATA_HOME"] = str(TMP / "data")
os.environ["XDG_CONFIG_HOME"] = str(TMP / "config")


def settle(app, rounds: int = 30) -> None:
    """Let the app handle what is queued (layout, repaint) ``rounds`` times."""
    for _ in range(rounds):
        app.processEvents()


def grab(path: str | Path) -> None:
    """The whole X screen into ``path`` (PNG), named relative to the repository."""
    subprocess.run(["import", "-window", "root", str(path)], check=True)
    print(Path(path).resolve().relative_to(ROOT))
