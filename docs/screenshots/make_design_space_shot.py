"""Take docs/screenshots/design-space-llama2-7b-l4-a100-h100-mi300x.png from the running app under Xvfb.

Run from the repository root (Xvfb, ImageMagick's ``import`` needed):

    Xvfb :58 -screen 0 1600x1000x24 &
    DISPLAY=:58 .venv/bin/python docs/screenshots/make_design_space_shot.py [--calibrated] [NAME.png [X_COLUMN Y_COLUMN]]

The app is built as ``python -m explorer`` builds it (a fresh catalog in a scratch data folder), 1600 x 1000. The
workspace: the Llama-2-7B template on the shipped catalog's NVIDIA L4, A100 SXM4 80GB, H100 SXM5 and AMD MI300X; the
Design-space panel's grid set to decode; batch 1, 2, 4 ... 256; sequence length 512 ... 32768; FP16 and FP8
(126 points per device; the panel's default grid is smaller), its default axes (latency against throughput per device) unless two columns are given
(e.g. ``latency_s cost_per_million_tokens_usd``). A point on the front (the H100 at FP8, batch 64, 2048 tokens) is
clicked, so the red ring shows the app's configuration; the shot is taken once the sweep is drawn. ``--calibrated``:
the toolbar's Times switch on calibrated first (the points' latencies under the calibrated model).
"""

from __future__ import annotations

import sys

import numpy as np
from _shots import ROOT, grab  # first: it gives the app private folders
from PySide6.QtCore import Qt, QTimer

from explorer.core.session.commands import SetModel
from explorer.core.workload.templates import get_template
from explorer.ui.app import build_window, make_application
from explorer.ui.panels import DesignSpacePanel
from explorer.ui.panels.design_space import AXES

CALIBRATED = "--calibrated" in sys.argv
if CALIBRATED:
    sys.argv.remove("--calibrated")
DEVICES = ("nvidia-l4", "nvidia-a100-sxm4-80gb", "nvidia-h100-sxm5", "amd-mi300x")
OUT = ROOT / "docs" / "screenshots" / (sys.argv[1] if len(sys.argv) > 1 else
                                       "design-space-llama2-7b-l4-a100-h100-mi300x.png")
AXIS_NAMES = tuple(sys.argv[2:4]) if len(sys.argv) > 3 else ()


def main() -> int:
    app = make_application([])
    window = build_window()
    window.resize(1600, 1000)
    window.move(0, 0)
    window.show()
    ws = window.workspace
    ws.execute(SetModel(get_template("llama2-7b").build()))
    ws.select_devices(DEVICES)
    if CALIBRATED:
        ws.set_assumptions(time_model="calibrated")
    panel = next(d.widget() for d in window.panel_docks if isinstance(d.widget(), DesignSpacePanel))
    dock = next(d for d in window.panel_docks if d.widget() is panel)
    window.resizeDocks([dock], [880], Qt.Orientation.Vertical)
    dock.raise_()
    for key, text in (("batch", "1,2,4..256"), ("seq_len", "512..32768"), ("precision", "fp16,fp8")):
        panel.fields[key].setText(text)
    panel._grid_edited()
    for combo, name in zip(panel.axis_combos, AXIS_NAMES):
        combo.setCurrentIndex(list(AXES).index(name))

    def pick():
        if panel.result is None or panel.worker.busy:
            QTimer.singleShot(300, pick)
            return
        c = panel.result.columns
        j = np.flatnonzero((c["device"] == "nvidia-h100-sxm5") & (c["precision"] == "fp8") & (c["batch"] == 64)
                           & (c["seq_len"] == 2048))
        panel.apply(int(j[0]))
        QTimer.singleShot(1500, shoot)

    def shoot():
        if panel.worker.busy or panel.pending:
            QTimer.singleShot(300, shoot)
            return
        app.processEvents()
        QTimer.singleShot(800, lambda: (grab(str(OUT)),
                                        app.quit()))

    QTimer.singleShot(2000, pick)
    return app.exec()


if __name__ == "__main__":
    sys.exit(main())
