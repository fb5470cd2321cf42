"""Take hover-energy.png, hover-tiling.png and hover-cost.png: the real app window on a 1280 x 800 screen with
the mouse on a bar of the energy, tiling and cost charts and the bar's tooltip showing (issue 24).

Run from the repository root with a display of that size, e.g.:

    Xvfb :99 -screen 0 1280x800x24 &
    DISPLAY=:99 QT_QPA_PLATFORM=xcb .venv/bin/python docs/screenshots/make_hover_shots.py

It builds the app's own main window (``explorer.ui.app.build_window``) over a fresh catalog database in a temporary
folder (seeded with the shipped catalog; settings there too, so the user's are untouched), loads the GPT-2 (124M)
template (prefill of 1,024 tokens, batch 1) at BF16 on the NVIDIA A100 SXM4 80GB, H100 SXM5 and Google TPU v4 with
the transformer block selected, and makes the window fill the 1280 x 800 screen (the smallest the issue's users
have). For each chart it raises the panel's tab, moves the X pointer onto a bar with ``xdotool`` (real mouse
events, through X, Qt and pyqtgraph), waits for Qt's own tooltip, and grabs the whole screen with ImageMagick's
``import -window root``. Prices are the catalog's: a device without a sourced price shows "—" in the cost chart.
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np
from _shots import OUT, TMP, grab, settle  # first: it gives the app private folders
from PySide6.QtCore import QPointF, QTimer
from PySide6.QtWidgets import QDockWidget

from explorer.core.workload.templates import get_template
from explorer.ui.app import build_window, make_application

DEVICES = ("nvidia-a100-sxm4-80gb", "nvidia-h100-sxm5", "google-tpu-v4")



def on_screen(panel, plot, x: float, y: float) -> tuple[int, int]:
    """The screen pixel of data point (x, y) of ``plot``."""
    view = panel.graphics.mapFromScene(plot.vb.mapViewToScene(QPointF(x, y)))
    glob = panel.graphics.viewport().mapToGlobal(view)
    return glob.x(), glob.y()


def energy_bar(panel):
    """The widest per-layer energy bar, at a third of its length."""
    totals = np.nansum(panel._bars()[1], axis=1)
    i = int(np.nanargmax(totals))
    (y_lo, y_hi) = panel.per_layer.vb.viewRange()[1]
    y = next(y for y in np.linspace(y_lo, y_hi, 800) if panel._locate_bar(totals[i] / 3, y) == i)
    return panel.per_layer, totals[i] / 3, y, panel._describe_bar(i)


def tiling_bar(panel):
    """The first GEMM row's bar, a tenth of the way along the axis."""
    plot = panel.bars.getViewBox().parentItem()
    (x_lo, x_hi), _ = plot.vb.viewRange()
    x = x_lo + 0.1 * (x_hi - x_lo)
    row = next(r for r in range(len(panel.view.gemm_rows)) if panel._locate_bar(x, r) == r)
    return plot, x, row, panel._describe_bar(row)


def cost_bar(panel):
    """Half-way along the bar of the first priced device in the cost-per-TFLOP/s chart."""
    plot, c = panel.per_tflops, panel.result
    priced = [i for i in range(len(c.ids)) if np.isfinite(c.price_per_peak[i])]
    if not priced:
        raise SystemExit("the cost chart has no bar (no device with a price)")
    i = priced[0]
    (x_lo, x_hi), _ = plot.vb.viewRange()
    x = x_lo + 0.5 * (min(c.price_per_peak[i] * 1e12, x_hi) - x_lo)
    y = next(y for y in np.linspace(i - 0.45, i + 0.45, 40) if panel._locate(x, y) == i)
    return plot, x, y, panel._describe(i, "per_tflops")


SHOTS = (("panel_EnergyPanel", energy_bar, "hover-energy.png"),
         ("panel_TilingPanel", tiling_bar, "hover-tiling.png"),
         ("panel_CostPanel", cost_bar, "hover-cost.png"))


def main() -> int:
    app = make_application(sys.argv)
    window = build_window(f"sqlite:///{TMP / 'catalog.db'}")
    ws = window.workspace
    gpt2 = get_template("gpt2")
    ws.reset(gpt2.build(), DEVICES, ws.assumptions)
    ws.set_assumptions(precision="bf16", phase=gpt2.phase_default, batch=1, seq_len=1024)
    ws.focus_layer(1)  # the transformer block
    screen = app.primaryScreen().geometry()
    window.show()
    window.setGeometry(screen)  # the whole 1280 x 800 screen (no window manager: no frame)
    window.activateWindow()  # Qt shows tooltips for the active window only; with no window manager, ask for focus
    settle(app)
    print(f"screen {screen.width()} x {screen.height()}, window {window.width()} x {window.height()}, "
          f"minimum {window.minimumSizeHint().width()} x {window.minimumSizeHint().height()}")
    queue = list(SHOTS)

    def next_shot() -> None:
        if not queue:
            app.quit()
            return
        name, where, file = queue.pop(0)
        dock = window.findChild(QDockWidget, name)
        dock.raise_()
        window.activateWindow()
        subprocess.run(["xdotool", "mousemove", "5", "5"], check=True)  # away first: a fresh hover each time
        QTimer.singleShot(2500, lambda: hover(dock.widget(), where, file))

    def hover(panel, where, file) -> None:
        if panel.pending:
            QTimer.singleShot(300, lambda: hover(panel, where, file))
            return
        plot, x, y, tip = where(panel)
        gx, gy = on_screen(panel, plot, x, y)
        subprocess.run(["xdotool", "mousemove", str(gx - 4), str(gy - 4)], check=True)
        subprocess.run(["xdotool", "mousemove", str(gx), str(gy)], check=True)
        QTimer.singleShot(2000, lambda: shoot(plot, tip, file))

    def shoot(plot, tip, file) -> None:
        shown = plot.vb.toolTip()
        grab(str(OUT / file))
        print(f"{file}: tooltip {'as described' if shown == tip else 'DIFFERS'}: {shown.splitlines()[:1]}")
        next_shot()

    QTimer.singleShot(2500, next_shot)
    app.exec()
    window.workspace.mark_clean()  # nothing to offer to recover or save
    window.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
