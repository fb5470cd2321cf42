"""Take training-llama3-70b-h100-vs-tpuv5p.png from the real app window under an X server (Xvfb).

Run from the repository root with a display, e.g.:

    Xvfb :60 -screen 0 1600x1000x24 &
    DISPLAY=:60 .venv/bin/python docs/screenshots/make_training_shot.py

It builds the app's own main window over a fresh catalog database in a temporary folder (settings there too), then
does what a user does: the Llama-3-70B template; the NVIDIA DGX H100 and the Cloud TPU v5p-128 slice chosen in the
Systems panel; in the Training panel 2e12 tokens and each system as a cluster of 64 devices (8 DGX nodes against one
64-chip slice), the other settings at their defaults (global batch 1024 x 4096 tokens, ZeRO 1, selective
recomputation, 1F1B). The picture is the whole X screen (``import -window root``, ImageMagick).
"""

from __future__ import annotations

import subprocess
import sys

from _shots import OUT, TMP, settle  # first: it gives the app private folders
from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QDockWidget

from explorer.core.session.commands import SetSystem
from explorer.core.session.state import SystemChoice
from explorer.core.session.training import SetTraining
from explorer.core.session.training_choice import TrainingChoice
from explorer.core.workload.templates import get_template
from explorer.ui.app import build_window, make_application

SYSTEMS = ("nvidia-dgx-h100", "google-tpu-v5p-128-slice")



def main() -> int:
    app = make_application(sys.argv)
    window = build_window(f"sqlite:///{TMP / 'catalog.db'}")
    ws = window.workspace
    ws.reset(get_template("llama3-70b").build(), ("google-tpu-v5p",), ws.assumptions)
    ws.execute(SetSystem(SystemChoice(system_ids=SYSTEMS)))
    ws.execute(SetTraining(TrainingChoice(tokens=2e12, devices=64)))
    window.show()
    window.move(0, 0)
    settle(app)

    def shoot() -> None:
        window.findChild(QDockWidget, "panel_TrainingPanel").raise_()
        settle(app)
        QTimer.singleShot(1500, lambda: (subprocess.run(
            ["import", "-window", "root", str(OUT / "training-llama3-70b-h100-vs-tpuv5p.png")], check=True),
            app.quit()))

    QTimer.singleShot(2500, shoot)
    app.exec()
    window.workspace.mark_clean()
    window.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
