"""Take systems-link-calibration.png from the real app window under an X server (Xvfb).

Run from the repository root with a display, e.g.:

    Xvfb :63 -screen 0 1600x1000x24 &
    DISPLAY=:63 .venv/bin/python docs/screenshots/make_link_calibration_shot.py

It builds the app's own main window over a fresh catalog database in a temporary folder (settings there too), then
does what a user does: the Llama-2-70B template, decode at batch 8 with a 4,096-token context, fp16, the calibrated
time model; the AMD Instinct MI300X Platform chosen in the Systems panel at TP 8; the panel's Links… button; and
Import nccl-tests… with the published rccl-tests all-reduce on 8 MI300X of ``tests/fixtures/nccl`` (its source is
that folder's README), fitted on the messages of 1 MiB and up (the window's default), named "MI300X rccl-tests
(published)". It prints the Systems panel's communication time per token before and after, and the window's line
about the fit. The picture is the whole X screen (``import -window root``, ImageMagick).
"""

from __future__ import annotations

import sys

import numpy as np
from _shots import OUT, ROOT, TMP, grab, settle
from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QDockWidget

from explorer.core.parallel.layout import Layout
from explorer.core.session.commands import SetSystem
from explorer.core.session.state import SystemChoice
from explorer.core.workload.templates import get_template
from explorer.ui.app import build_window, make_application
from explorer.ui.panels.systems import SystemsPanel

SYSTEM = "amd-instinct-mi300x-platform"
NCCL = ROOT / "tests" / "fixtures" / "nccl" / "mi300x-8gpu-all_reduce_perf.txt"


def comm_ms(ws) -> float:
    r = ws.results.systems[0]
    return float(np.asarray(r.analysis.comm_time)[r.chosen].sum()) * 1e3


def main() -> int:
    app = make_application(sys.argv)
    window = build_window(f"sqlite:///{TMP / 'catalog.db'}")
    ws = window.workspace
    ws.reset(get_template("llama2-70b").build(), ("amd-mi300x",), ws.assumptions)
    ws.set_assumptions(phase="decode", batch=8, seq_len=4096, precision="fp16", time_model="calibrated")
    ws.execute(SetSystem(SystemChoice(system_ids=(SYSTEM,), layout=Layout(tp=8))))
    window.show()
    window.move(0, 0)
    settle(app)
    window.findChild(QDockWidget, "panel_SystemsPanel").raise_()
    panel = window.findChild(SystemsPanel)
    settle(app)
    before = comm_ms(ws)
    dialog = panel.open_links()
    dialog.move(700, 380)
    assert dialog.import_file(NCCL, "MI300X rccl-tests (published)")
    settle(app)
    print(f"communication per step: stated {before:.3f} ms, calibrated link {comm_ms(ws):.3f} ms")
    print(dialog.note.text())
    print("undo:", ws.stack.undo_text)

    def shoot() -> None:
        settle(app)
        grab(OUT / "systems-link-calibration.png")
        app.quit()

    QTimer.singleShot(2500, shoot)
    app.exec()
    ws.mark_clean()
    window.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
