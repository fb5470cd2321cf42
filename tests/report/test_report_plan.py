"""The report describes the plan's configuration (issue 23): the plan's numbers equal the planner's and each cost
per million appears once; a split model reads "split over N units", not FAIL; the model and the missing prices are
stated; XLSX export."""

from __future__ import annotations

import io
import re
import sys
from pathlib import Path

import pytest
from pypdf import PdfReader

from explorer.core.analysis.cost import CostAssumptions
from explorer.core.analysis.evaluate import evaluate
from explorer.core.analysis.procurement import Requirements, plan
from explorer.report import build_report, write_report

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "core"))
from test_procurement import dense_model, device

COSTS = CostAssumptions(years=3.0, electricity_usd_per_kwh=0.10, pue=1.5, utilization=0.5)
# 70,000 x 100,000 FP16 weights = 14 GB: split over two 8 GB units; the 16 GB unit holds it alone
REQ = Requirements(20.0, "inferences/s", latency=0.05, price={"small": 4_000.0, "big": 9_000.0},
                   cloud_price={"small": 1.0 / 3600})


@pytest.fixture(scope="module")
def analysis():
    devices = [device("small", capacity="8 GB", bw="1 TB/s", tdp="300 W"),
               device("big", capacity="16 GB", bw="1 TB/s", tdp="500 W")]
    return evaluate(dense_model(70_000, 100_000, name="Dense-7B"), devices, "fp16")


@pytest.fixture(scope="module")
def data(analysis):
    return build_report(analysis, COSTS, REQ)


def _pdf_text(data, tmp_path) -> str:
    path = tmp_path / "r.pdf"
    write_report(data, path)
    return "\n".join(page.extract_text() for page in PdfReader(io.BytesIO(path.read_bytes())).pages)


def test_the_plan_rows_equal_the_planner(data, analysis):
    expected = plan(analysis, REQ, COSTS)
    rows = {m.key: m for m in data.summary}
    for j, dev_id in enumerate(data.device_ids):
        p = expected.by_id(dev_id)
        assert rows["plan_units"].values[j] == p.units
        assert rows["plan_latency"].values[j] == p.latency
        assert rows["plan_cost"].values[j] == p.rank_cost == p.tco
        assert rows["plan_cost_per_million"].values[j] == p.rank_cost_per_million
    small = expected.by_id("small")
    assert small.shards == 2 and small.units == 2
    assert rows["plan_units"].display[0] == "2 units (1 \u00d7 split over 2 units)"
    assert rows["fits"].display[0] == "no: split over 2 units" and rows["fits"].display[1] == "yes"
    assert "cost_per_million" not in rows  # the per-unit definition is gone: one definition in the report


def test_pdf_states_the_plan_once_and_never_fails_a_split(data, analysis, tmp_path):
    text = _pdf_text(data, tmp_path)
    flat = re.sub(r"\s+", " ", text)
    expected = plan(analysis, REQ, COSTS)
    # one definition: the Summary's plan row and the cost chart show the same numbers, the planner's
    row = re.search(r"Plan: cost per million inferences (\$\S+) (\$\S+)", flat)
    chart = re.findall(r"(\$[\d.]+) \((?:buy|rent)\)", flat)
    want = [f"${expected.by_id(i).rank_cost_per_million:.3g}" for i in data.device_ids]
    assert list(row.groups()) == want and chart == want
    for value in want:
        assert flat.count(value) == 2  # the row and its bar, nowhere else
    assert "SPLIT OVER 2 UNITS" in flat and "FAIL" not in flat
    assert "Dense-7B: 7 billion parameters; weights, activations and KV cache in FP16" in flat
    assert "BIG: no rent price" in flat
    assert "Cost per million: the plan's fleet cost" in flat and "the only cost per million this report shows" in flat
    assert "Plan: rank #1, feasible #2, feasible" in flat


def test_xlsx_one_sheet_per_table_with_the_plans_numbers(data, analysis, tmp_path):
    from openpyxl import load_workbook

    path = tmp_path / "r.xlsx"
    assert write_report(data, path) == [path]
    wb = load_workbook(path)
    assert wb.sheetnames == ["Summary", "Layers", "Sensitivity", "Break-even", "Assumptions", "Method", "Sources"]
    ws = wb["Summary"]
    header = [c.value for c in ws[1]]
    expected = plan(analysis, REQ, COSTS)
    col = header.index("Plan: cost per million inferences [USD]")
    for row in ws.iter_rows(min_row=2, values_only=True):
        # a number, equal to the planner's (XLSX stores 15 significant digits)
        assert row[col] == pytest.approx(expected.by_id(row[0]).rank_cost_per_million, rel=1e-14)
    sens = [r for r in wb["Sensitivity"].iter_rows(min_row=2, values_only=True)]
    assert sens[0][0] == "baseline" and sens[0][2] == pytest.approx(expected.ranked[0].rank_cost, rel=1e-14)
    be = {r[0]: r for r in wb["Break-even"].iter_rows(min_row=2, values_only=True)}
    small = expected.by_id("small")
    assert be["small"][4] == pytest.approx(small.break_even_months, rel=1e-12) and be["big"][5] == "no rent price"


def test_xlsx_cells_never_run_as_formulas(tmp_path):
    from openpyxl import load_workbook

    from explorer.core.workload.model import LayerSpec, Model

    evil = "=cmd|' /C calc'!A0"
    model = Model.make(evil, {"features": 64}, [LayerSpec.make("dense", evil, in_features=64, out_features=64,
                                                                  bias=False)])
    data = build_report(evaluate(model, [device("gpu", tdp="300 W")], "fp16"), COSTS)
    path = tmp_path / "r.xlsx"
    write_report(data, path)
    wb = load_workbook(path)
    cells = [c for ws in wb.worksheets for row in ws.iter_rows() for c in row]
    assert not any(c.data_type == "f" for c in cells)
    names = [r[1] for r in wb["Layers"].iter_rows(min_row=2, values_only=True)]
    assert names == ["'" + evil]
    assert any(c.value == 64 * 64 * 2 for c in cells)  # numbers stay numbers (FLOPs of the 64 x 64 dense)


def test_cli_report_xlsx(tmp_path, capsys):
    from explorer.__main__ import main

    out = tmp_path / "r.pdf"
    assert main(["report", "gpt2", "-d", "nvidia-l4", "--target", "200 tokens/s", "--out", str(out), "--xlsx"]) == 0
    assert out.exists() and (tmp_path / "r.xlsx").exists()
    assert f"wrote {tmp_path / 'r.xlsx'}" in capsys.readouterr().out


def test_every_output_reads_a_split_model_the_same(data, analysis):
    """One function (check_verdict) decides how the memory check of a split model reads: the CSV, the HTML and the
    CLI's JSON and text all say split, never fail, where the plan splits the model; the unit's own check stays fail."""
    import csv as csv_module
    import io as io_module

    from explorer.cli.plan_cmd import plan_json
    from explorer.core.analysis.procurement import check_verdict
    from explorer.report.csv_export import summary_csv
    from explorer.report.html import render_html

    expected = plan(analysis, REQ, COSTS)
    small, big = expected.by_id("small"), expected.by_id("big")
    assert small.checks[0].status == "fail" and small.shards == 2  # 14 GB on one 8 GB unit fails ...
    assert check_verdict(small.checks[0], small.shards) == ("split", "SPLIT OVER 2 UNITS")  # ... the plan splits it
    assert small.verdicts[0] == ("split", "SPLIT OVER 2 UNITS") and big.verdicts[0] == ("pass", "PASS")
    rows = {r["device_id"]: r for r in csv_module.DictReader(io_module.StringIO(summary_csv(data)))}
    assert rows["small"]["memory check"] == "split" and rows["big"]["memory check"] == "pass"
    html = render_html(data)
    assert '<span class="na">SPLIT OVER 2 UNITS</span>' in html and ">FAIL<" not in html
    js = {d["id"]: d for d in plan_json(expected)["devices"]}
    mem = js["small"]["checks"][0]
    assert (mem["status"], mem["verdict"], mem["label"]) == ("fail", "split", "SPLIT OVER 2 UNITS")
    assert js["big"]["checks"][0]["verdict"] == "pass"
