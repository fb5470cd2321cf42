"""The report's Serving section follows the time model (``report --time-model calibrated --serving ...``, the app's
Times switch): its numbers are the serving core's under that model, and every format says where its times come
from: a "Times" column and a "Step times" line in the PDF and HTML, "time model" and "time source" columns in
FILE-serving.csv and the XLSX "Serving" sheet; the Times row no longer calls the section ideal."""

import csv

import pytest
from openpyxl import load_workbook
from pypdf import PdfReader

from explorer.__main__ import main
from explorer.core.hardware.catalog_files import load_shipped_devices
from explorer.core.serving.serve import answer, device_setup
from explorer.core.session.serving_choice import ServingChoice
from explorer.core.workload.templates import get_template

H100, L4 = "nvidia-h100-sxm5", "nvidia-l4"
ARGS = ("report", "llama3-8b", "--device", H100, "--device", L4, "--phase", "decode", "--serving", "--rate", "4/s",
        "--input", "512", "--output", "128", "--ttft-p90", "300ms", "--tpot-p90", "60ms", "--serving-requests", "0")
CHOICE = ServingChoice(rate=4.0, input_tokens=512, output_tokens=128, ttft=0.3, tpot=0.06)


def _core(device_id: str, time_model: str):
    device = {d.id: d for d in load_shipped_devices()}[device_id]
    w = CHOICE.workload
    return answer(w, device_setup(get_template("llama3-8b").build(), device, w, CHOICE.policy,
                                  time_model=time_model), CHOICE.slo)


def _csv(tmp_path, *extra) -> dict:
    out = tmp_path / "r.csv"
    assert main([*ARGS, *extra, "--out", str(out), "--xlsx"]) == 0
    rows = list(csv.reader((tmp_path / "r-serving.csv").open()))
    col = {name: i for i, name in enumerate(rows[0])}
    return {(r[col["device"]], r[col["method"]]): {k: r[i] for k, i in col.items()} for r in rows[1:]}


def test_the_csv_and_xlsx_carry_the_model_and_each_device_s_source(tmp_path, capsys):
    ideal = _csv(tmp_path)
    cal = _csv(tmp_path, "--time-model", "calibrated")
    h100, l4 = cal[("NVIDIA H100 SXM5 80GB", "analytic")], cal[("NVIDIA L4 24GB", "analytic")]
    assert (h100["time model"], h100["time source"]) == ("calibrated", "calibrated")
    assert (l4["time model"], l4["time source"]) == ("calibrated", "spec")  # no calibration: the ideal times
    assert {r["time source"] for r in ideal.values()} == {"spec"}
    core = _core(H100, "calibrated")
    assert float(h100["TPOT mean [s]"]) == pytest.approx(core.estimate.tpot.mean, rel=1e-9)
    assert float(h100["capacity [requests/s]"]) == pytest.approx(core.curve.capacity, rel=1e-9)
    assert float(h100["TPOT mean [s]"]) > float(ideal[("NVIDIA H100 SXM5 80GB", "analytic")]["TPOT mean [s]"])
    assert l4["TPOT mean [s]"] == ideal[("NVIDIA L4 24GB", "analytic")]["TPOT mean [s]"]
    rows = list(load_workbook(tmp_path / "r.xlsx")["Serving"].iter_rows(values_only=True))
    col = {n: i for i, n in enumerate(rows[0])}
    assert [(r[col["device"]], r[col["time source"]]) for r in rows[1:] if r[col["method"]] == "analytic"] == \
        [("NVIDIA H100 SXM5 80GB", "calibrated"), ("NVIDIA L4 24GB", "spec")]


def test_html_and_pdf_say_where_the_step_times_come_from(tmp_path, capsys):
    html = tmp_path / "r.html"
    assert main([*ARGS, "--time-model", "calibrated", "--out", str(html)]) == 0
    text = html.read_text()
    assert "Step times: the calibrated model. NVIDIA H100 SXM5 80GB: calibrated (matrix: measured at bf16, 49 " \
           "kernels" in text
    assert ("NVIDIA L4 24GB: spec (no calibration for this device and precision: the ideal model).") in text
    assert "serving section uses the ideal model" not in text
    pdf = tmp_path / "r.pdf"
    assert main([*ARGS, "--time-model", "calibrated", "--out", str(pdf)]) == 0
    pages = " ".join(" ".join(page.extract_text().split()) for page in PdfReader(str(pdf)).pages)
    assert "Step times: the calibrated model." in pages and "Times" in pages
    assert main([*ARGS, "--out", str(html)]) == 0
    assert "Step times: the ideal model (spec: datasheet figures)." in html.read_text()
