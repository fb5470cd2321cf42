"""Roofline fixes: a device in focus without a peak at the precision says so in the plot (the others are still
drawn), and the ceiling labels overlap neither each other, the regime band names, the legend nor the ridge
label, at several panel sizes."""

from __future__ import annotations

import pytest

from explorer.core.hardware.catalog_files import load_shipped_devices
from explorer.core.session.workspace import Assumptions, Workspace
from explorer.core.workload.templates import get_template
from explorer.ui.panels import RooflinePanel

IDS = ("nvidia-a100-sxm4-80gb", "nvidia-h100-sxm5", "google-tpu-v4")


@pytest.fixture(scope="module")
def catalog():
    return {d.id: d for d in load_shipped_devices()}


def panel_for(qtbot, catalog, precision, focus, size):
    gpt2 = get_template("gpt2")
    ws = Workspace(gpt2.build(), lookup=lambda ids: [catalog[i] for i in ids],
                   assumptions=Assumptions(precision=precision, phase=gpt2.phase_default))
    ws.select_devices(IDS)
    ws.focus_device(focus)
    panel = RooflinePanel(ws)
    qtbot.addWidget(panel)
    panel.resize(*size)
    panel.show()
    qtbot.waitExposed(panel)
    panel.flush()
    return panel


def overlap(a, b, slack=2.0) -> bool:
    return a[0] < b[2] - slack and b[0] < a[2] - slack and a[1] < b[3] - slack and b[1] < a[3] - slack


def test_device_without_the_precision_says_so_in_the_plot(qtbot, catalog):
    panel = panel_for(qtbot, catalog, "fp32", "google-tpu-v4", (1000, 600))
    note = ("Google Cloud TPU v4 has no fp32 peak in the catalog; it lists bf16, int8 \u2014 choose one of those "
            "precisions")
    assert panel.focus_note.isVisible() and panel.focus_note.textItem.toPlainText() == note
    assert panel.message.text().startswith(note)
    assert "Google Cloud TPU v4: no fp16 peak" not in panel.message.text()  # said once
    assert len(panel.points.getData()[0]) == 0
    # the other devices are still drawn: A100 and H100 roofs with their fp32 ceilings
    assert panel.devices[0].roof.getOriginalDataset()[1][-1] == 19.5e12
    assert panel.devices[1].roof.getOriginalDataset()[1][-1] == pytest.approx(67e12)
    panel.workspace.set_assumptions(precision="fp16")  # only bf16 on the TPU: drawn at bf16, and it says so
    panel.flush()
    assert not panel.focus_note.isVisible() and len(panel.points.getData()[0]) > 0
    assert "Google Cloud TPU v4 has no fp16 peak: computes at bf16, the other 16-bit float" in panel.message.text()


@pytest.mark.parametrize("size", [(900, 520), (1280, 760), (700, 420)])
@pytest.mark.parametrize("precision, focus", [("bf16", "nvidia-h100-sxm5"), ("fp16", "nvidia-a100-sxm4-80gb")])
def test_ceiling_labels_overlap_nothing(qtbot, catalog, size, precision, focus):
    panel = panel_for(qtbot, catalog, precision, focus, size)
    vb = panel.plot.vb
    boxes = panel.ceiling_labels.boxes()
    shown = [text for text, _ in boxes]
    assert {"bf16": "bf16 990 TFLOP/s", "fp16": "fp16 312 TFLOP/s"}[precision] in shown  # the roof: always
    assert len(boxes) >= (2 if size[0] < 800 else 3)  # H100: fp8/int8, bf16, tf32, fp64/fp32; small plots drop some
    for i, (text, box) in enumerate(boxes):
        assert box[0] >= -1 and box[2] <= vb.width() + 1 and box[1] >= -1 and box[3] <= vb.height() + 1, text
        for other_text, other in boxes[i + 1:]:
            assert not overlap(box, other), (text, other_text)
        for other in panel._label_obstacles(vb.viewRange(), (vb.width(), vb.height())):
            assert not overlap(box, other), (text, other)
