"""Take fidelity-named-calibration.png (and -list.png, the chooser open) from the real app window under an X server (Xvfb).

Run from the repository root with a display, e.g.:

    Xvfb :61 -screen 0 1280x800x24 &
    DISPLAY=:61 .venv/bin/python docs/screenshots/make_named_calibration_shot.py

It builds the app's own main window over a fresh catalog database in a temporary folder (settings there too), opens
the Fidelity demonstration project (``fidelity-demo/h100-kernels.hwproj``: published H100 SXM5 kernel times as a
trace, at bf16), and does what a user does in the Fidelity panel's header: Import... twice, each time a kernel CSV
(``kind, batch, m, n, k, bytes, time``) written from the H100 SXM5 rows of ``catalog/measurements/kernels.csv``
(published measurements, sources in that folder's README): first the GEMMs of the calibration split alone, named
"H100 GEMMs (published, calibration split)", then every kernel of the calibration split, named "H100 all kernels
(published, calibration split)", which stays in use; between them, the synthetic test trace of
``tests/fixtures/traces`` (kernel times made for a 312 TFLOP/s, 2039 GB/s device), as a calibration of the wrong
hardware. It prints the Fidelity MAPEs under each choice. The picture is the whole X screen (``import -window root``,
ImageMagick); the script prints the line that says which calibration is in use and the MAPEs.
"""

from __future__ import annotations

import csv
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
TMP = Path(tempfile.mkdtemp(prefix="hwexplorer-shots-"))
os.environ["XDG_DATA_HOME"] = str(TMP / "data")
os.environ["XDG_CONFIG_HOME"] = str(TMP / "config")

from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication, QDockWidget

from explorer.core.calibration.measurements import read_measurements
from explorer.ui.app import build_window, make_application
from explorer.ui.panels import FidelityPanel

OUT = Path(__file__).resolve().parent
DEVICE = "nvidia-h100-sxm5"


def write_csv(path: Path, kinds: tuple[str, ...]) -> int:
    rows = [r for r in read_measurements(ROOT / "catalog" / "measurements" / "kernels.csv")
            if r.device == DEVICE and r.split == "calibration" and r.kind in kinds]
    with path.open("w", newline="", encoding="utf-8") as fh:
        out = csv.writer(fh)
        out.writerow(["kind", "op", "batch", "m", "n", "k", "bytes", "time"])
        for r in rows:
            gemm = r.kind == "gemm"
            out.writerow([r.kind, r.op, r.batch if gemm else "", r.m if gemm else "", r.n if gemm else "",
                          r.k if gemm else "", "" if gemm else f"{r.bytes:.0f}", f"{r.time_s:.6e}"])
    return len(rows)


def settle(app: QApplication, rounds: int = 30) -> None:
    for _ in range(rounds):
        app.processEvents()


def main() -> int:
    gemms, every = TMP / "h100-gemms.csv", TMP / "h100-kernels.csv"
    print("rows:", write_csv(gemms, ("gemm",)), "GEMMs;", write_csv(every, ("gemm", "elementwise")), "kernels")
    app = make_application(sys.argv)
    window = build_window(f"sqlite:///{TMP / 'catalog.db'}")
    assert window.controller.open_project(OUT / "fidelity-demo" / "h100-kernels.hwproj")
    window.show()
    window.move(0, 0)
    settle(app)
    window.findChild(QDockWidget, "panel_FidelityPanel").raise_()
    panel = window.findChild(FidelityPanel)
    settle(app)
    assert panel.chooser.import_file(gemms, "H100 GEMMs (published, calibration split)")
    # a calibration of the wrong hardware: the synthetic A100-like test trace (312 TFLOP/s, 2039 GB/s curves)
    assert panel.chooser.import_file(ROOT / "tests" / "fixtures" / "traces" / "torch_cuda_calibration_trace.json",
                                     "synthetic A100-like test trace")
    assert panel.chooser.import_file(every, "H100 all kernels (published, calibration split)")
    settle(app)

    ws, dev = window.workspace, window.workspace.focused_device
    for name in (None, "H100 GEMMs (published, calibration split)", "synthetic A100-like test trace",
                 "H100 all kernels (published, calibration split)"):  # each choice's MAPEs, the last one kept
        ws.choose_calibration(dev, name)
        settle(app)
        f = ws.results.fidelity(0)
        print(f"{name or 'catalog'}: ideal {f.mape('ideal') * 100:.1f} %, calibrated {f.mape('calibrated') * 100:.2f} %")

    def shoot() -> None:
        settle(app)
        print(panel.in_use.text())
        print(panel.summary.text())
        print("undo:", window.workspace.stack.undo_text)
        QTimer.singleShot(1000, lambda: (subprocess.run(
            ["import", "-window", "root", str(OUT / "fidelity-named-calibration.png")], check=True),
            panel.chooser.combo.showPopup(), QTimer.singleShot(1000, list_shot)))

    def list_shot() -> None:  # the chooser open: the catalog's calibration and the three named ones
        settle(app)
        subprocess.run(["import", "-window", "root", str(OUT / "fidelity-named-calibration-list.png")], check=True)
        panel.chooser.combo.hidePopup()
        app.quit()

    QTimer.singleShot(2500, shoot)
    app.exec()
    window.workspace.mark_clean()
    window.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
