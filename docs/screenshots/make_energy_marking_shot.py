"""Take docs/screenshots/energy-default-marking.png: the energy panel with its default-energy bars hatched (issue 23).

Run under a display, e.g. Xvfb, from the repository root:
    Xvfb :59 -screen 0 1600x1000x24 &
    DISPLAY=:59 QT_QPA_PLATFORM=xcb .venv/bin/python docs/screenshots/make_energy_marking_shot.py

The workspace: the Llama-2-7B template, decode at batch 8, FP16, on the shipped catalog's NVIDIA A100 SXM4 80GB,
H100 SXM5, L4 and GeForce RTX 4090, the A100 in focus. The A100, H100 and L4 files state no energies, so all their
segments are hatched ("default energies (Horowitz 45 nm)"); the RTX 4090's GDDR6X segment uses its own
7.25 pJ/bit and is drawn plain. The window fills the 1600 x 1000 screen, which is grabbed from the X server.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication

from explorer.core.hardware.catalog_files import load_shipped_devices
from explorer.core.session.workspace import Assumptions, Workspace
from explorer.core.workload.templates import get_template
from explorer.ui.panels import EnergyPanel

DEVICES = ("nvidia-a100-sxm4-80gb", "nvidia-h100-sxm5", "nvidia-l4", "nvidia-rtx-4090")
OUT = ROOT / "docs" / "screenshots" / "energy-default-marking.png"


def main() -> int:
    app = QApplication.instance() or QApplication(sys.argv)
    catalog = {d.id: d for d in load_shipped_devices()}
    template = get_template("llama2-7b")
    ws = Workspace(template.build(), lookup=lambda ids: [catalog[i] for i in ids],
                   assumptions=Assumptions(precision="fp16", phase="decode", batch=8))
    ws.select_devices(DEVICES)
    panel = EnergyPanel(ws)
    panel.setWindowTitle("Hardware Explorer: memory-hierarchy energy")
    panel.setGeometry(0, 0, 1600, 1000)
    panel.show()

    def shoot():
        if panel.pending:
            QTimer.singleShot(200, shoot)
            return
        app.processEvents()
        image = app.primaryScreen().grabWindow(0, 0, 0, 1600, 1000)
        image.save(str(OUT))
        print(f"wrote {OUT}: hatched segments per device {panel.total_hatch.marks.tolist()}")
        app.quit()

    QTimer.singleShot(1500, shoot)
    return app.exec()


if __name__ == "__main__":
    raise SystemExit(main())
