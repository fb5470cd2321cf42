"""Take catalog-systems.png and planner-systems.png from the real app window under an X server (Xvfb).

Run from the repository root with a display, e.g.:

    Xvfb :55 -screen 0 1600x1000x24 &
    DISPLAY=:55 .venv/bin/python docs/screenshots/make_sysui_shots.py

It builds the app's own main window (``explorer.ui.app.build_window``) over a fresh catalog database in a temporary
folder (seeded with the shipped catalog; settings there too, so the user's are untouched), then does what a user
does: the Llama-3-70B template, decode at batch 16 with a 4,096-token context, the NVIDIA DGX H100 and the
8x L40S PCIe server chosen in the Systems panel, their two devices ticked, a target of 20,000 tokens/s under a
50 ms latency limit typed into the planner, and the catalog dock's Systems tab on the DGX H100. Prices are the
catalog's: the H100's sourced street price ($25,000); the L40S has none, so its capital stays "—". Each picture is
the whole X screen (``import -window root``, ImageMagick).
"""

from __future__ import annotations

import sys

from _shots import OUT, TMP, grab, settle
from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QDockWidget

from explorer.core.session.commands import SetSystem
from explorer.core.session.state import SystemChoice
from explorer.core.workload.templates import get_template
from explorer.ui.app import build_window, make_application

SYSTEMS = ("nvidia-dgx-h100", "pcie-server-8x-nvidia-l40s")
DEVICES = ("nvidia-h100-sxm5", "nvidia-l40s")


def shoot(name: str) -> None:
    grab(OUT / name)


def main() -> int:
    app = make_application(sys.argv)
    window = build_window(f"sqlite:///{TMP / 'catalog.db'}")
    ws = window.workspace
    ws.reset(get_template("llama3-70b").build(), DEVICES, ws.assumptions)
    ws.set_assumptions(phase="decode", batch=16, seq_len=4096)
    ws.execute(SetSystem(SystemChoice(system_ids=SYSTEMS)))
    window.show()
    window.move(0, 0)  # centred for its 1600-pixel width, it would grow past the screen's right edge
    settle(app)
    dock = window.catalog_dock
    dock.tabs.setCurrentWidget(dock.systems)
    dock.systems.select_system("nvidia-dgx-h100")
    planner = window.planner
    planner.target.setText("20000 tokens/s")
    planner.latency.setText("50 ms")
    planner.replan()
    planner_dock = window.findChild(QDockWidget, "planner_dock")

    def first() -> None:
        systems_dock = window.findChild(QDockWidget, "panel_SystemsPanel")
        systems_dock.raise_()
        dock.systems.detail.scrollToAnchor("figures")  # the link figures, per direction, with their sources
        settle(app)
        QTimer.singleShot(1500, lambda: (shoot("catalog-systems.png"), second()))

    def second() -> None:
        planner_dock.raise_()
        planner.replan()
        settle(app)
        QTimer.singleShot(1500, lambda: (shoot("planner-systems.png"), app.quit()))

    QTimer.singleShot(2500, first)
    app.exec()
    window.workspace.mark_clean()  # nothing to offer to recover or save
    window.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
