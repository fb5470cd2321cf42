"""The report's energy figure hatches the bars resting on Horowitz's 45 nm defaults (issue 23), with the legend
entry "default energies (Horowitz 45 nm)" and a caption naming the devices; a device whose file states its own
figure (the RTX 4090's GDDR6X 7.25 pJ/bit) has that part drawn plain."""

from pathlib import Path

import numpy as np
import pytest
from reportlab.graphics.shapes import Line, Rect, String

from explorer.core.analysis.evaluate import evaluate
from explorer.core.hardware.device_file import load_device_file
from explorer.core.session.workspace import Assumptions
from explorer.core.workload.templates import get_template
from explorer.report import build_report
from explorer.report.energy_marks import HATCH, energy_part_marks, hatch_lines
from explorer.report.figures import energy_caption, energy_figure

CATALOG = Path(__file__).resolve().parents[2] / "catalog"
IDS = ("nvidia-a100-sxm4-80gb", "nvidia-rtx-4090")


@pytest.fixture(scope="module")
def data():
    template = get_template("gpt2")
    devices = [load_device_file(CATALOG / f"{i}.yaml") for i in IDS]
    analysis = evaluate(template.build(), devices, "fp16", template.context(batch=8, phase="decode"))
    return build_report(analysis, Assumptions())


def _flat(group):
    for item in getattr(group, "contents", []):
        yield item
        yield from _flat(item)


def test_the_marks_follow_the_device_files(data):
    marks = energy_part_marks(data)
    assert marks[0].tolist() == [True, True, True]  # A100: no energy figure in its file
    assert marks[1].tolist() == [False, True, True]  # RTX 4090: its own GDDR6X figure; on-chip and MACs default


def test_the_figure_hatches_only_the_marked_parts_and_names_them_in_the_legend(data):
    drawing = energy_figure(data, 480)
    items = list(_flat(drawing))
    hatch_lines_drawn = [i for i in items if isinstance(i, Line) and i.strokeColor == HATCH]
    outlines = [i for i in items if isinstance(i, Rect) and i.strokeColor == HATCH and i.fillColor is None]
    # 5 marked parts with energy (A100: 3, RTX 4090: 2) + the legend swatch
    assert len(outlines) == 5 + 1
    assert hatch_lines_drawn
    assert any(isinstance(i, String) and i.text == "default energies (Horowitz 45 nm)" for i in items)
    # the RTX 4090's off-chip part (the first coloured rectangle of its bar) carries no outline
    bars = [i for i in items if isinstance(i, Rect) and i.fillColor is not None and i.strokeColor is None
            and i.height > 8]
    rtx_offchip = min((b for b in bars if b.y == min(b.y for b in bars)), key=lambda b: b.x)
    assert not any(o.x == rtx_offchip.x and o.y == rtx_offchip.y for o in outlines)


def test_the_caption_says_which_bars_are_defaults(data):
    caption = energy_caption(data)
    assert "Hatched: default energies (Horowitz 45 nm)" in caption
    assert "NVIDIA A100 SXM4 80GB" in caption


def test_hatch_lines_stay_inside_their_rectangle():
    lines = hatch_lines(10.0, 20.0, 30.0, 8.0, spacing=3.0)
    assert len(lines) == len(np.arange(-5.0, 30.0, 3.0))  # c = -h gives a single point: left out
    for x1, y1, x2, y2 in lines:
        assert 10.0 <= x1 <= x2 <= 40.0 and 20.0 <= y1 <= y2 <= 28.0
        assert x2 - x1 == pytest.approx(y2 - y1)  # 45 degrees
    assert hatch_lines(0, 0, 0, 5) == []
