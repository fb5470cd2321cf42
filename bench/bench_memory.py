"""Resident memory after loading the Llama-2-7B template with 8 catalog devices. Budget: 300 MB.

Run by hand: .venv/bin/python bench/bench_memory.py [--runs N]   (or through bench/run_all.py)

Each measurement is a fresh interpreter (``--child core`` / ``--child window``) with its own empty config and
data folders, so the catalog database is created, migrated and seeded exactly as on a first start:

* core:   the headless path the app takes: open the catalog (SQLite), a Workspace with the catalog as its
          device lookup, the template as a new project (its default phase, decode), 8 devices selected, the
          shared analysis and the panels' computations (roofline per device, energy, cost);
* window: the same through ``explorer.ui.app.build_window`` (offscreen Qt): the main window with every dock
          and panel, shown, the template loaded through the window, 8 devices checked, events processed
          until the panels have drawn.

The number is VmRSS from /proc/self/status after the work (VmHWM, the peak, is printed alongside).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
TEMPLATE = "llama2-7b"
DEVICES = ("nvidia-h100-sxm5", "nvidia-a100-sxm4-80gb", "nvidia-h200-sxm", "nvidia-b200", "amd-mi300x",
           "aws-trainium2", "nvidia-l40s", "qualcomm-cloud-ai100-std")  # the 8 of packaging/smoke_test.sh
BUDGET_MB = 300.0
WINDOW_MISSING = 3  # exit code of a window child when the main window cannot be imported yet


def proc_status_mb(field: str) -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024  # kB -> MiB-sized "MB" as ps/top report it
    raise RuntimeError(f"/proc/self/status has no {field}")


def check_analysis(analysis) -> None:
    if analysis is None or len(analysis.devices.devices) != len(DEVICES):
        raise SystemExit(f"the analysis did not run on {len(DEVICES)} devices")


def child_core() -> dict:
    from explorer.core.analysis.panels import compute_cost, compute_energy_view, compute_roofline
    from explorer.core.session.workspace import Assumptions, Workspace
    from explorer.core.workload.templates import get_template
    from explorer.store.engine import open_catalog

    repository = open_catalog(os.environ["HWEXPLORER_DB"])
    ws = Workspace(lookup=lambda ids: list(repository.devices(list(ids))))
    template = get_template(TEMPLATE)
    ws.reset(template.build(), (), Assumptions(phase=template.phase_default))
    ws.select_devices(DEVICES)
    analysis = ws.analysis
    check_analysis(analysis)
    views = [compute_roofline(analysis, -1, d) for d in range(len(DEVICES))]
    views.append(compute_energy_view(analysis, 0))
    views.append(compute_cost(analysis, ws.assumptions))
    return {"rss_mb": proc_status_mb("VmRSS"), "hwm_mb": proc_status_mb("VmHWM"),
            "rows": len(analysis.table), "views": len(views)}


def child_window() -> dict:
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    try:
        from explorer.ui.app import build_window, make_application
    except ImportError as exc:
        print(f"no main window yet: {exc}", file=sys.stderr)
        sys.exit(WINDOW_MISSING)
    from PySide6.QtCore import QCoreApplication
    from PySide6.QtWidgets import QApplication

    app = make_application(["bench_memory"])
    QCoreApplication.setOrganizationName("hwexplorer-bench")  # QSettings in the child's own config folder
    try:
        window = build_window(os.environ["HWEXPLORER_DB"])
    except ImportError as exc:  # a module the window imports is not written yet
        print(f"no main window yet: {exc}", file=sys.stderr)
        sys.exit(WINDOW_MISSING)
    window.show()
    app.processEvents()
    window.new_from_template(TEMPLATE)
    window.workspace.select_devices(DEVICES)
    for _ in range(20):  # panels may redraw on timers; let them settle
        app.processEvents()
        QApplication.sendPostedEvents()
    check_analysis(window.workspace.analysis)
    result = {"rss_mb": proc_status_mb("VmRSS"), "hwm_mb": proc_status_mb("VmHWM"),
              "rows": len(window.workspace.analysis.table), "docks": len(window.docks)}
    window.controller.shutdown()
    return result


def run_child(mode: str) -> dict | None:
    with tempfile.TemporaryDirectory(prefix="hwx-bench-mem-") as tmp:
        env = dict(os.environ, HOME=tmp, XDG_CONFIG_HOME=f"{tmp}/config", XDG_DATA_HOME=f"{tmp}/data",
                   XDG_CACHE_HOME=f"{tmp}/cache", HWEXPLORER_DB=f"sqlite:///{tmp}/catalog.sqlite3",
                   QT_QPA_PLATFORM=os.environ.get("QT_QPA_PLATFORM", "offscreen"),
                   PYTHONPATH=os.pathsep.join(filter(None, [str(HERE.parent), os.environ.get("PYTHONPATH")])))
        proc = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--child", mode], check=False,
                              env=env, capture_output=True, text=True, cwd=tmp)
    if proc.returncode == WINDOW_MISSING and mode == "window":
        print(f"window: skipped ({proc.stderr.strip().splitlines()[-1]})", file=sys.stderr)
        return None
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    if proc.returncode != 0 or not lines:
        raise SystemExit(f"{mode} child failed (exit {proc.returncode}):\n{proc.stderr[-3000:]}")
    return json.loads(lines[-1][7:])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--child", choices=("core", "window"), help=argparse.SUPPRESS)
    parser.add_argument("--runs", type=int, default=3, help="fresh processes per measurement (default 3)")
    args = parser.parse_args()
    if args.child:
        result = child_core() if args.child == "core" else child_window()
        print("RESULT " + json.dumps(result), flush=True)
        return 0

    sys.path.insert(0, str(HERE))
    from _common import report

    for mode, label in (("core", "core only"), ("window", "main window, offscreen")):
        results = []
        for _ in range(args.runs):
            r = run_child(mode)
            if r is None:
                break
            results.append(r)
        if not results:
            continue
        rss = [r["rss_mb"] for r in results]
        peaks = ", ".join(f"{r['hwm_mb']:.0f}" for r in results)
        print(f"{label}: VmRSS " + ", ".join(f"{v:.0f}" for v in rss) + f" MB; peak VmHWM {peaks} MB "
              f"({results[0]['rows']} operator rows)", file=sys.stderr)
        report(f"memory: Llama-2-7B + 8 devices ({label})", rss, BUDGET_MB, unit="MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
