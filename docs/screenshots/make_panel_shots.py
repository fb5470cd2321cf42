"""Render the four analysis panels offscreen to docs/screenshots/panel-<name>.png.

Run from the repository root:  .venv/bin/python docs/screenshots/make_panel_shots.py

(The committed panel-<name>.png are taken from the running app under Xvfb instead: the analysis dock of a
1600 x 1000 window with the same workspace and the prices typed into the cost table. This script renders the
panels alone at 1280 x 760, for a quick look without a display.)

The workspace: the GPT-2 (124M) template, prefill of 1024 tokens, batch 1, at BF16 (the one 16-bit format all
three devices list: the TPU v4 has no FP16 peak) on the shipped catalog's NVIDIA A100 SXM4 80GB, NVIDIA H100
SXM5 and Google TPU v4, with the transformer block ``h`` selected.

The catalog carries no list price for these devices (NVIDIA and Google publish none). For the cost panel the
chapter's approximate prices for the A100 (~$15,000) and H100 (~$25,000, Table 8) are entered as what-ifs, the
way a user would type them into the table; the TPU v4, which is not sold, keeps its "—" and the reason.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from PySide6.QtWidgets import QApplication

from explorer.core.analysis.cost import with_price
from explorer.core.hardware.catalog_files import load_shipped_devices
from explorer.core.session.workspace import Assumptions, Workspace
from explorer.core.workload.templates import get_template
from explorer.ui.panels import CostPanel, EnergyPanel, RooflinePanel, TilingPanel

SIZE = (1280, 760)
DEVICES = ("nvidia-a100-sxm4-80gb", "nvidia-h100-sxm5", "google-tpu-v4")
WHAT_IF_PRICES = {"nvidia-a100-sxm4-80gb": 15000.0, "nvidia-h100-sxm5": 25000.0}  # the chapter's Table 8
# panel -> (file name, device in focus)
SHOTS = (
    (RooflinePanel, "roofline", "nvidia-a100-sxm4-80gb"),
    (EnergyPanel, "energy", "nvidia-a100-sxm4-80gb"),
    (TilingPanel, "tiling", "google-tpu-v4"),
    (CostPanel, "cost", "nvidia-a100-sxm4-80gb"),
)


def workspace() -> Workspace:
    catalog = {d.id: d for d in load_shipped_devices()}
    missing = [i for i in DEVICES if i not in catalog]
    if missing:
        raise SystemExit(f"not in the shipped catalog: {', '.join(missing)}")
    gpt2 = get_template("gpt2")
    ws = Workspace(
        gpt2.build(),
        lookup=lambda ids: [catalog[i] for i in ids],
        assumptions=Assumptions(precision="bf16", phase=gpt2.phase_default),
    )
    ws.select_devices(DEVICES)
    ws.focus_layer(1)  # the transformer block
    return ws


def main() -> int:
    app = QApplication.instance() or QApplication(sys.argv)
    out = Path(__file__).resolve().parent
    for cls, name, device_id in SHOTS:
        ws = workspace()
        ws.focus_device(device_id)
        if cls is CostPanel:
            ws.put_devices(
                [
                    with_price(
                        d, WHAT_IF_PRICES[d.id], "the chapter's approximate price (Table 8), a what-if"
                    )
                    for d in ws.devices
                    if d.id in WHAT_IF_PRICES
                ]
            )
        panel = cls(ws)
        panel.resize(*SIZE)
        panel.show()
        panel.graphics.setFocus()  # no text cursor blinking in a header field
        for _ in range(5):
            app.processEvents()
        path = out / f"panel-{name}.png"
        if not panel.grab().save(str(path)):
            print(f"could not write {path}", file=sys.stderr)
            return 1
        print(path.relative_to(ROOT))
        panel.close()
        panel.deleteLater()
    app.processEvents()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
