"""CSV exports neutralize spreadsheet formulas (issue 24: a layer named "=cmd|' /C calc'!A0" was written as is into
the report's CSV, where a spreadsheet runs it): text starting with = + - @ gets a leading apostrophe, numbers stay."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from explorer.core.analysis.evaluate import evaluate
from explorer.core.files import spreadsheet_safe, spreadsheet_unsafe
from explorer.core.hardware.device_file import device_to_dict, load_device_file
from explorer.core.session.workspace import Assumptions
from explorer.core.workload.model import LayerSpec, Model
from explorer.report import build_report
from explorer.report.csv_export import layers_csv, summary_csv
from explorer.store.csv_columns import devices_to_csv, read_csv

CATALOG = Path(__file__).resolve().parents[2] / "catalog"
EVIL = "=cmd|' /C calc'!A0"


@pytest.mark.parametrize("value, expected", [
    (EVIL, "'" + EVIL), ("+SUM(A1:A2)", "'+SUM(A1:A2)"), ("-x", "'-x"), ("@A1", "'@A1"), ("\t=1", "'\t=1"),
    ("-1.5", "-1.5"), ("+3", "+3"), ("1e-3", "1e-3"), (-2.0, -2.0), (7, 7), ("plain", "plain"), ("", ""),
    ("'-", "''-"), ("''=x", "'" * 3 + "=x"), ("'plain", "'plain"),  # text that looks escaped stays exact
])
def test_cells(value, expected):
    assert spreadsheet_safe(value) == expected
    if isinstance(value, str):
        assert spreadsheet_unsafe(spreadsheet_safe(value)) == value


def test_report_csv_neutralizes_names_and_keeps_numbers():
    model = Model.make(EVIL, {"features": 64}, [LayerSpec.make("dense", EVIL, in_features=64, out_features=64, bias=False),
                                                LayerSpec.make("dense", "@down", in_features=64, out_features=8)])
    device = load_device_file(CATALOG / "nvidia-h100-sxm5.yaml")
    data = build_report(evaluate(model, [device], "fp16"), Assumptions())
    rows = list(csv.reader(io.StringIO(layers_csv(data))))
    names = [r[1] for r in rows[1:]]
    assert names == ["'" + EVIL, "'@down"]
    assert float(rows[1][4]) == 2 * 64 * 64  # FLOPs of the 64 x 64 dense without bias, unchanged
    summary = list(csv.reader(io.StringIO(summary_csv(data))))
    assert not any(cell.startswith(("=", "+", "@")) for row in summary for cell in row)


def test_catalog_csv_round_trips_a_formula_like_name():
    data = device_to_dict(load_device_file(CATALOG / "nvidia-l4.yaml"))
    data["name"] = "=HYPERLINK(\"http://x\")"
    text = devices_to_csv([data])
    assert "'=HYPERLINK" in text
    (entry,), header_problems = read_csv(text)
    assert header_problems == [] and entry[1]["name"] == data["name"] and entry[2] == []


@given(st.text(max_size=12))
def test_any_text_reads_back_exactly(text):
    cell = spreadsheet_safe(text)
    assert spreadsheet_unsafe(cell) == text
    if cell.startswith(("=", "+", "-", "@", "\t", "\r")):  # only a number may start so
        float(cell)
