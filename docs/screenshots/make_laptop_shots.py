"""Take laptop-systems.png, laptop-training.png and laptop-serving.png: the real app window filling a 1280 x 800
screen (the smallest the issue 24 users have) with the Systems, Training and Serving panels raised, to check that
their wrapped header rows, charts and tables fit.

Run from the repository root with a display of that size, e.g.:

    Xvfb :99 -screen 0 1280x800x24 &
    DISPLAY=:99 QT_QPA_PLATFORM=xcb .venv/bin/python docs/screenshots/make_laptop_shots.py

The workspace: the Llama-3-70B template, decode at batch 16 with a 4,096-token context, the NVIDIA H100 SXM5 and
L40S ticked, the NVIDIA DGX H100 and the 8x L40S PCIe server chosen in the Systems panel (the Training panel
trains on them); catalog, settings and data in a temporary folder. Each picture is the whole X screen
(``import -window root``, ImageMagick).
"""

from __future__ import annotations

import sys

from _shots import OUT, TMP, grab  # first: it gives the app private folders
from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QDockWidget

from explorer.core.session.commands import SetSystem
from explorer.core.session.state import SystemChoice
from explorer.core.workload.templates import get_template
from explorer.ui.app import build_window, make_application

SHOTS = (("panel_SystemsPanel", "laptop-systems.png"), ("panel_TrainingPanel", "laptop-training.png"),
         ("panel_ServingPanel", "laptop-serving.png"))


def main() -> int:
    app = make_application(sys.argv)
    window = build_window(f"sqlite:///{TMP / 'catalog.db'}")
    ws = window.workspace
    ws.reset(get_template("llama3-70b").build(), ("nvidia-h100-sxm5", "nvidia-l40s"), ws.assumptions)
    ws.set_assumptions(phase="decode", batch=16, seq_len=4096)
    ws.execute(SetSystem(SystemChoice(system_ids=("nvidia-dgx-h100", "pcie-server-8x-nvidia-l40s"))))
    window.show()
    window.setGeometry(app.primaryScreen().geometry())
    queue = list(SHOTS)

    def next_shot() -> None:
        if not queue:
            app.quit()
            return
        name, file = queue.pop(0)
        window.findChild(QDockWidget, name).raise_()
        QTimer.singleShot(3000, lambda: shoot(file))

    def shoot(file) -> None:
        grab(str(OUT / file))
        print(f"{file}: window {window.width()} x {window.height()}")
        next_shot()

    QTimer.singleShot(2500, next_shot)
    app.exec()
    window.workspace.mark_clean()
    window.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
