"""Take docs/screenshots/serving-systems-llama3-8b-l4-server-dgx-h100.png from the running app under Xvfb: the Serving
panel with two devices and two systems chosen in the Systems panel, each system serving with its chosen layout.

Run from the repository root (Xvfb, ImageMagick's ``import`` needed):

    Xvfb :58 -screen 0 1600x1000x24 &
    DISPLAY=:58 .venv/bin/python docs/screenshots/make_serving_systems_shot.py

The app is built as ``python -m explorer`` builds it (a fresh catalog in a scratch data folder), 1600 x 1000. The
workspace: the Llama-3-8B template at FP16 on the shipped catalog's NVIDIA L4 and H100 SXM5, and the systems
``pcie-server-4x-nvidia-l4`` and ``nvidia-dgx-h100`` (one node each); the Serving panel's workload 10 requests/s
(Poisson), 1024 input and 256 output tokens, TTFT P90 <= 500 ms and TPOT P90 <= 50 ms, the engine's defaults. The shot
is taken once the worker has sized every layout of both systems. With the arguments ``NAME.png planner`` the
procurement planner is shown instead, its serving rows for the same workload.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
os.environ["XDG_DATA_HOME"] = tempfile.mkdtemp(prefix="hwx-shot-")  # a fresh catalog, no recovery offers
os.environ["XDG_CONFIG_HOME"] = os.environ["XDG_DATA_HOME"]

from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import QScrollArea

from explorer.core.session.commands import SetModel, SetServing, SetSystem
from explorer.core.session.serving_choice import ServingChoice
from explorer.core.session.state import SystemChoice
from explorer.core.workload.templates import get_template
from explorer.ui.app import build_window, make_application
from explorer.ui.panels import ServingPanel

DEVICES = ("nvidia-l4", "nvidia-h100-sxm5")
SYSTEMS = ("pcie-server-4x-nvidia-l4", "nvidia-dgx-h100")
CHOICE = ServingChoice(rate=10.0, input_tokens=1024, output_tokens=256, ttft=0.5, tpot=0.05)
NAME = sys.argv[1] if len(sys.argv) > 1 else "serving-systems-llama3-8b-l4-server-dgx-h100.png"
OUT = ROOT / "docs" / "screenshots" / NAME


def main() -> int:
    app = make_application([])
    window = build_window()
    window.resize(1600, 1000)
    window.move(0, 0)
    window.show()
    ws = window.workspace
    ws.execute(SetModel(get_template("llama3-8b").build()))
    ws.select_devices(DEVICES)
    ws.execute(SetServing(CHOICE))
    ws.execute(SetSystem(SystemChoice(system_ids=SYSTEMS)))
    planner = len(sys.argv) > 2 and sys.argv[2] == "planner"
    panel = next(d.widget() for d in window.panel_docks if isinstance(d.widget(), ServingPanel))
    dock = next(d for d in window.panel_docks if d.widget() is panel)
    window.resizeDocks([dock], [880], Qt.Orientation.Vertical)
    dock.raise_()
    box = window.planner.serving_fleet

    def done() -> bool:
        if planner:
            return box.isVisible() and box.table.rowCount() == 4 and not (box.estimator.busy
                                                                           or box.system_estimator.busy)
        return not panel.pending and len(panel.answers) == 4

    def shoot():
        if planner:
            box.refresh()
            area = box.parentWidget()
            while area is not None and not isinstance(area, QScrollArea):
                area = area.parentWidget()
            if area is not None:  # the planner scrolls: bring its serving rows into view
                area.ensureWidgetVisible(box.table, 0, 0)
        else:
            panel.flush()
        if not done():
            QTimer.singleShot(500, shoot)
            return
        app.processEvents()
        QTimer.singleShot(800, lambda: (subprocess.run(["import", "-window", "root", str(OUT)], check=True),
                                        print(f"wrote {OUT}"), app.quit()))

    if planner:
        QTimer.singleShot(1000, lambda: window.planner.parentWidget().raise_())
    QTimer.singleShot(2000, shoot)
    return app.exec()


if __name__ == "__main__":
    sys.exit(main())
