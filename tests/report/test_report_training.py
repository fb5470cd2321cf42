"""The report's Training section: `report --train` writes the time and cost to train per system side by side, the
chosen layout, the step breakdown and memory per device (the training core's numbers), the assumptions (ideal-model
MFU said so) and the device figures' sources, in CSV, HTML and PDF; bad options exit 2 naming the option."""

from __future__ import annotations

import csv

import pytest
from pypdf import PdfReader

from explorer.__main__ import main
from explorer.core.analysis.cost import CostAssumptions
from explorer.core.hardware.catalog_files import load_shipped_devices, load_shipped_systems
from explorer.core.training.compare import train_on_system
from explorer.core.training.step import STEP_PARTS, TrainingSetup
from explorer.core.workload.templates import get_template

DGX, TPU = "nvidia-dgx-h100", "google-tpu-v5p-128-slice"
ARGS = ("report", "llama3-70b", "--train", DGX, "--train", TPU, "--train-devices", "64", "--train-tokens", "2e12",
        "--train-global-batch", "1024", "--train-seq-len", "4096")


@pytest.fixture(scope="module")
def expected():
    systems = {s.id: s for s in load_shipped_systems()}
    devices = {d.id: d for d in load_shipped_devices()}
    model = get_template("llama3-70b").build()
    setup = TrainingSetup(global_batch=1024, seq_len=4096, zero=1, recompute="selective")
    out = []
    for sid, nodes in ((DGX, 8), (TPU, 1)):  # 64 H100 in 8 DGX nodes; one 64-chip v5p-128 slice
        system = systems[sid].with_nodes(nodes) if nodes > 1 else systems[sid]
        out.append(train_on_system(model, system, devices[system.device_id], setup, 2e12,
                                   assumptions=CostAssumptions()))
    return out


def test_the_training_csv_carries_the_training_core_s_numbers(tmp_path, capsys, expected):
    out = tmp_path / "r.csv"
    assert main([*ARGS, "--out", str(out)]) == 0
    assert "r-training.csv" in capsys.readouterr().out
    rows = list(csv.DictReader((tmp_path / "r-training.csv").open()))
    assert [r["device_id"] for r in rows] == ["nvidia-h100-sxm5", "google-tpu-v5p"]
    for row, res in zip(rows, expected):
        a, c, k = res.analysis, res.cost, res.chosen
        assert row["devices"] == "64" and row["layout"] == res.layout.label()
        assert float(row["step [s]"]) == pytest.approx(a.step_time[k], rel=1e-12)
        for part, x in zip(STEP_PARTS, a.step_parts[k]):
            assert float(row[f"{part} [s]"]) == pytest.approx(x, rel=1e-12)
        assert float(row["memory per device [B]"]) == pytest.approx(a.memory_bytes[k], rel=1e-12)
        assert float(row["MFU [fraction]"]) == pytest.approx(a.mfu[k], rel=1e-12)
        # time to train = T / (B x s) steps x the step, by hand
        assert float(row["time to train [s]"]) == pytest.approx(2e12 / (1024 * 4096) * a.step_time[k], rel=1e-12)
        assert float(row["time to train [s]"]) == pytest.approx(c.time_s[k], rel=1e-12)
    h100, tpu = rows
    # energy = 64 devices x 700 W TDP x PUE 1.3 x time; electricity at 0.12 USD/kWh
    assert float(h100["energy to train [J]"]) == pytest.approx(64 * 700 * 1.3 * float(h100["time to train [s]"]))
    assert float(h100["electricity [USD]"]) == pytest.approx(float(h100["energy to train [J]"]) / 3.6e6 * 0.12)
    assert tpu["energy to train [J]"] == ""  # no TDP for the TPU v5p in the catalog: unknown
    # rent = device-hours x the catalog's Cloud TPU v5p on-demand price, 4.20 USD per chip-hour
    assert float(tpu["rent [USD]"]) == pytest.approx(float(tpu["device-hours [h]"]) * 4.20, rel=1e-12)


def test_html_and_pdf_have_the_section_side_by_side_with_its_sources(tmp_path, capsys, expected):
    html = tmp_path / "r.html"
    assert main([*ARGS, "--out", str(html)]) == 0
    text = html.read_text()
    assert "<h2>Training</h2>" in text and "Memory per device" in text and "Step time of the chosen layout" in text
    assert "MFU is ideal-model MFU" in text and "https://arxiv.org/abs/1910.02054" in text
    assert "figtrain" in text and "time per step (s)" in text and "memory per device (GB)" in text  # the figure
    assert "NVIDIA H100 Tensor Core GPU datasheet" in text and "989.5 TFLOP/s" in text  # as written, sourced
    days = expected[0].cost.time_s[expected[0].chosen] / 86400
    assert f"{days:,.4g} days" in text
    pdf = tmp_path / "r.pdf"
    assert main([*ARGS, "--out", str(pdf)]) == 0
    pages = " ".join(" ".join(p.extract_text() for p in PdfReader(str(pdf)).pages).split())
    assert "Training" in pages and expected[1].layout.label() in pages and "ideal-model MFU" in pages
    assert "Google Cloud TPU v5p-128 slice" in pages and f"{days:,.4g} days" in pages


def test_a_report_without_train_has_no_section(tmp_path, capsys):
    out = tmp_path / "r.csv"
    assert main(["report", "gpt2", "--device", "nvidia-h100-sxm5", "--out", str(out)]) == 0
    assert not (tmp_path / "r-training.csv").exists()
    html = tmp_path / "r.html"
    assert main(["report", "gpt2", "--device", "nvidia-h100-sxm5", "--out", str(html)]) == 0
    assert "<h2>Training</h2>" not in html.read_text()


def test_a_layout_by_hand_and_one_that_does_not_divide(tmp_path, capsys):
    out = tmp_path / "r.csv"
    assert main(["report", "llama3-8b", "--train", DGX, "--train-layout", "8x1x1", "--out", str(out)]) == 0
    (row,) = list(csv.DictReader((tmp_path / "r-training.csv").open()))
    assert row["layout"] == "TP8+SP PP1 DP1" and row["error"] == ""
    assert main(["report", "llama3-8b", "--train", DGX, "--train-layout", "8x1x2", "--out", str(out)]) == 0
    (row,) = list(csv.DictReader((tmp_path / "r-training.csv").open()))
    assert row["layout"] == "" and row["error"].startswith("dp: tp x cp x pp x dp = 8 x 1 x 1 x 2 = 16 devices")


@pytest.mark.parametrize("extra, message", [
    (("--train-zero", "4"), "--train-zero: expected a ZeRO stage 0, 1, 2 or 3, got 4"),
    (("--train-micro-batch", "3"), "--train-global-batch: 1024 sequences do not divide into micro-batches of 3"),
    (("--train-tokens", "lots"), "--train-tokens: expected a number such as 2e12"),
    (("--train-tokens", "-1"), "--train-tokens: must be a positive number"),
    (("--train-layout", "8x2"), "--train-layout: expected TPxPPxDP"),
    (("--train-recompute", "some"), "--train-recompute: expected one of none, selective, full"),
    (("--train-nodes", "0"), "--train-nodes: must be a positive whole number"),
])
def test_bad_training_options_exit_2_naming_the_option(extra, message, tmp_path, capsys):
    assert main(["report", "llama3-8b", "--train", DGX, *extra, "--out", str(tmp_path / "r.csv")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0] and not (tmp_path / "r.csv").exists()


def test_the_figure_s_bars_are_the_step_parts_and_a_system_without_layout_is_left_out(expected):
    from reportlab.graphics.shapes import Rect

    from explorer.report.training_figures import STEP_COLORS, training_figure
    from explorer.report.training_section import TrainingSection

    d = training_figure(TrainingSection(tuple(expected)), 480)
    rects = [r for r in d.contents[0].contents if isinstance(r, Rect) and r.height == 14]
    widths = {}
    for r in rects:  # the bars: 7 step parts and 4 memory parts per system, drawn where positive
        widths.setdefault(r.fillColor.hexval()[2:].lower(), []).append(r.width)
    a0, k0 = expected[0].analysis, expected[0].chosen
    a1, k1 = expected[1].analysis, expected[1].chosen
    backward = widths[STEP_COLORS[1][1:]]  # orange: the backward pass, and the gradients below
    ratio = a0.step_parts[k0][1] / a1.step_parts[k1][1]
    assert any(abs(x / y - ratio) < 1e-9 for x in backward for y in backward if x != y)
    empty = training_figure(TrainingSection((expected[0].__class__(expected[0].system, expected[0].device, None, None,
                                                                    expected[0].order[:0], "no valid layout"),)), 480)
    assert empty.height > 0
