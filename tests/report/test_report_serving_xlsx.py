"""The report's XLSX carries the Serving section (issue 19): a "Serving" sheet with the rows of FILE-serving.csv,
units in every numeric header, numbers as numbers equal to the CSV's (and so to the serving core's, which
test_report_serving.py checks), "service levels met" as a true/false cell, and no cell ever a formula."""

from __future__ import annotations

import csv
import dataclasses
import math

import pytest
from openpyxl import load_workbook

from explorer.__main__ import main
from explorer.core.analysis.cost import CostAssumptions
from explorer.core.analysis.evaluate import evaluate
from explorer.core.hardware.catalog_files import load_shipped_devices
from explorer.core.session.serving_choice import ServingChoice
from explorer.core.workload.templates import get_template
from explorer.report import build_report, write_report
from explorer.report.serving_section import build_serving_section

H100 = "nvidia-h100-sxm5"
ARGS = ("report", "llama3-8b", "--device", H100, "--phase", "decode", "--serving", "--rate", "4/s", "--input", "512",
        "--output", "128", "--ttft-p90", "300ms", "--tpot-p90", "40ms", "--serving-requests", "200")


def _sheet(wb, name):
    rows = list(wb[name].iter_rows(values_only=True))
    return list(rows[0]), [list(r) for r in rows[1:]]


def test_the_serving_sheet_is_the_csv_with_numbers(tmp_path, capsys):
    out = tmp_path / "r.csv"
    assert main([*ARGS, "--out", str(out), "--xlsx"]) == 0
    assert f"wrote {tmp_path / 'r.xlsx'}" in capsys.readouterr().out
    text = list(csv.reader((tmp_path / "r-serving.csv").open()))
    head, rows = _sheet(load_workbook(tmp_path / "r.xlsx"), "Serving")
    assert head == text[0]
    # every numeric column names its unit
    for name in ("rate [requests/s]", "capacity [requests/s]", "TTFT P90 [s]", "TPOT mean [s]", "TTFT target [s]",
                 "goodput [requests/s]", "throughput per device [tokens/s]", "cost per million tokens [USD]",
                 "energy per token [J]", "block size [tokens]"):
        assert name in head
    assert [r[1] for r in rows] == [r[1] for r in text[1:]] == ["analytic", "simulation", "analytic at knee"]
    col = {n: i for i, n in enumerate(head)}
    for got, want in zip(rows, text[1:]):
        for name in ("rate [requests/s]", "capacity [requests/s]", "TTFT P90 [s]", "TPOT mean [s]",
                     "cost per million tokens [USD]", "energy per token [J]", "KV blocks"):
            assert isinstance(got[col[name]], (int, float)) and got[col[name]] == pytest.approx(float(want[col[name]]),
                                                                                               rel=1e-12)
        assert got[col["service levels met"]] is (want[col["service levels met"]] == "True")
    assert rows[0][col["rate [requests/s]"]] == 4 and rows[0][col["TTFT target [s]"]] == pytest.approx(0.3)


def test_no_serving_sheet_without_the_section(tmp_path, capsys):
    out = tmp_path / "r.xlsx"
    assert main(["report", "llama3-8b", "--device", H100, "--out", str(out)]) == 0
    assert "Serving" not in load_workbook(out).sheetnames


def test_serving_cells_never_run_as_formulas(tmp_path):
    evil = "=cmd|' /C calc'!A0"
    device = dataclasses.replace({d.id: d for d in load_shipped_devices()}[H100], name=evil)
    model = get_template("llama3-8b").build()
    choice = ServingChoice(rate=2.0, input_tokens=256, output_tokens=64, ttft=0.3, tpot=0.04)
    section = build_serving_section(model, [device], choice, simulate_n=0)
    data = build_report(evaluate(model, [device], "fp16"), CostAssumptions(years=3.0, electricity_usd_per_kwh=0.1,
                                                                          pue=1.5, utilization=0.5), serving=section)
    path = tmp_path / "r.xlsx"
    write_report(data, path)
    wb = load_workbook(path)
    assert not any(c.data_type == "f" for ws in wb.worksheets for row in ws.iter_rows() for c in row)
    head, rows = _sheet(wb, "Serving")
    assert [r[0] for r in rows] == ["'" + evil] * 2  # the estimate and at the knee; no simulation asked
    capacity = rows[0][head.index("capacity [requests/s]")]
    assert isinstance(capacity, float) and capacity > 2 and math.isfinite(capacity)
