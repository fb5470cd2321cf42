"""Take docs/screenshots/serving-llama3-8b-l4-a100-h100.png from the running app under Xvfb.

Run from the repository root (Xvfb, ImageMagick's ``import`` needed):

    Xvfb :58 -screen 0 1600x1000x24 &
    DISPLAY=:58 .venv/bin/python docs/screenshots/make_serving_shot.py

The app is built as ``python -m explorer`` builds it (a fresh catalog in a scratch data folder), 1600 x 1000. The
workspace: the Llama-3-8B template at FP16 on the shipped catalog's NVIDIA L4, A100 SXM4 80GB and H100 SXM5; the
Serving panel's workload 0.8 requests/s (Poisson), 1024 input and 256 output tokens, TTFT P90 <= 500 ms and TPOT P90
<= 50 ms, the engine's defaults (max batch 256, 90 % of memory, blocks of 16 tokens, no chunked prefill). The
Simulate button is pressed and the shot taken once the histograms are drawn. With the arguments ``NAME.png planner``
the procurement planner is shown instead, its serving rows sizing the fleet for that workload at 40 requests/s.
"""

from __future__ import annotations

import sys
from dataclasses import replace

from _shots import ROOT, grab  # first: it gives the app private folders
from PySide6.QtCore import Qt, QTimer

from explorer.core.session.commands import SetModel, SetServing
from explorer.core.session.serving_choice import ServingChoice
from explorer.core.workload.templates import get_template
from explorer.ui.app import build_window, make_application
from explorer.ui.panels import ServingPanel

DEVICES = ("nvidia-l4", "nvidia-a100-sxm4-80gb", "nvidia-h100-sxm5")
CHOICE = ServingChoice(rate=0.8, input_tokens=1024, output_tokens=256, ttft=0.5, tpot=0.05)
OUT = ROOT / "docs" / "screenshots" / (sys.argv[1] if len(sys.argv) > 1 else "serving-llama3-8b-l4-a100-h100.png")


def main() -> int:
    app = make_application([])
    window = build_window()
    window.resize(1600, 1000)
    window.move(0, 0)
    window.show()
    ws = window.workspace
    ws.execute(SetModel(get_template("llama3-8b").build()))
    ws.select_devices(DEVICES)
    planner = len(sys.argv) > 2 and sys.argv[2] == "planner"  # the planner's serving rows instead, at 40 req/s
    ws.execute(SetServing(replace(CHOICE, rate=40.0) if planner else CHOICE))
    panel = next(d.widget() for d in window.panel_docks if isinstance(d.widget(), ServingPanel))
    dock = next(d for d in window.panel_docks if d.widget() is panel)
    # the catalog and layers above take most of the height: give the analysis docks most of it
    window.resizeDocks([dock], [880], Qt.Orientation.Vertical)
    dock.raise_()
    if planner:
        QTimer.singleShot(1000, lambda: window.planner.parentWidget().raise_())
        QTimer.singleShot(1500, lambda: window.planner.serving_fleet.refresh())
        QTimer.singleShot(6000, lambda: (grab(str(OUT)),
                                         app.quit()))
        return app.exec()

    def simulate():
        panel.flush()
        panel.simulate.click()

    def shoot():
        if panel.simulator.running or not panel.simulated:
            QTimer.singleShot(300, shoot)
            return
        panel.flush()
        app.processEvents()
        QTimer.singleShot(800, lambda: (grab(str(OUT)),
                                        app.quit()))

    QTimer.singleShot(1500, simulate)
    QTimer.singleShot(2500, shoot)
    return app.exec()


if __name__ == "__main__":
    sys.exit(main())
