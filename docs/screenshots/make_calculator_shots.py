"""Render every calculator widget offscreen to docs/screenshots/calculator-<id>.png.

Run from the repository root:  .venv/bin/python docs/screenshots/make_calculator_shots.py
Each widget shows a chapter preset (the worked example it reproduces): the first one unless SHOWCASE
names another.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from PySide6.QtWidgets import QApplication  # noqa: E402

from explorer.core.calculators import CALCULATORS  # noqa: E402
from explorer.ui.calculators import WIDGET_CLASSES  # noqa: E402

SIZE = (1280, 760)
# calculator id -> preset index shown (default: the first preset)
SHOWCASE = {"batch-sweep": 2, "dataflow": 2}


def main() -> int:
    app = QApplication.instance() or QApplication(sys.argv)
    out = Path(__file__).resolve().parent
    for calc in CALCULATORS:
        widget = WIDGET_CLASSES[calc.id]()
        widget.apply_preset(SHOWCASE.get(calc.id, 0))
        widget.resize(*SIZE)
        widget.show()
        for _ in range(3):
            app.processEvents()
        path = out / f"calculator-{calc.id}.png"
        if not widget.grab().save(str(path)):
            print(f"could not write {path}", file=sys.stderr)
            return 1
        print(path.relative_to(ROOT))
        widget.close()
        widget.deleteLater()
    app.processEvents()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
