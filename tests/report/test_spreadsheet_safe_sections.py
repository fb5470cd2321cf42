"""Formula injection in every spreadsheet export added since the first fix (issue 24): the report's Systems,
Training and Serving CSV files and its XLSX workbook (with the Serving sheet), and the sweep's CSV and Parquet.
Names a user controls (a device file's name, a system file's name, the report title) that start with = + - @ are
written with a leading apostrophe in CSV, as text cells in XLSX, and never change a number."""

from __future__ import annotations

import csv
import math

import pytest
import yaml
from test_spreadsheet_safe import CATALOG

from explorer.__main__ import main
from explorer.core.files import spreadsheet_unsafe
from explorer.core.hardware.device_file import device_to_dict, load_device_file
from explorer.core.hardware.system_file import load_system_file, system_to_dict

DEVICE_NAME = "=HYPERLINK(\"http://x\",\"H100\")"
SYSTEM_NAME = "+cmd|' /C calc'!A0"
TITLE = "@SUM(1+1)"
FORMULA = ("=", "+", "-", "@", "\t", "\r")


def _number(cell: str) -> bool:
    try:
        float(cell)
    except ValueError:
        return False
    return True


def _unsafe_cells(rows) -> list[str]:
    return [c for r in rows for c in r if c.startswith(FORMULA) and not _number(c)]


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    d = tmp_path_factory.mktemp("hostile")
    device = device_to_dict(load_device_file(CATALOG / "nvidia-h100-sxm5.yaml"))
    device["name"] = DEVICE_NAME
    (d / "evil.yaml").write_text(yaml.safe_dump(device))
    from explorer.core.hardware.catalog_files import load_shipped_systems

    dgx = next(s for s in load_shipped_systems() if s.id == "nvidia-dgx-h100")
    system = system_to_dict(dgx)
    system["name"] = SYSTEM_NAME
    (d / "evil-system.yaml").write_text(yaml.safe_dump(system))
    assert load_system_file(d / "evil-system.yaml").name == SYSTEM_NAME
    return d


@pytest.fixture(scope="module")
def report(hostile):
    out = hostile / "r.csv"
    code = main(["report", "llama3-8b", "--device", str(hostile / "evil.yaml"), "--phase", "decode",
                 "--system", str(hostile / "evil-system.yaml"), "--train", str(hostile / "evil-system.yaml"),
                 "--serving", "--rate", "4/s", "--input", "512", "--output", "128", "--serving-requests", "200",
                 "--title", TITLE, "--out", str(out), "--xlsx"])
    assert code == 0
    return hostile


@pytest.mark.parametrize("part, name", [("systems", SYSTEM_NAME), ("training", SYSTEM_NAME),
                                        ("serving", DEVICE_NAME)])
def test_each_section_csv_neutralizes_the_names_and_keeps_numbers(report, part, name):
    rows = list(csv.reader((report / f"r-{part}.csv").open(encoding="utf-8")))
    assert len(rows) >= 2
    assert not _unsafe_cells(rows), _unsafe_cells(rows)
    cells = [c for r in rows[1:] for c in r]
    assert "'" + name in cells or any(c.startswith("'" + name[:6]) for c in cells), cells[:12]
    assert any(_number(c) and math.isfinite(float(c)) and float(c) > 0 for c in cells)  # numbers stay numbers


def test_the_summary_and_layers_csv_carry_the_title_and_device_safely(report):
    for name in ("r.csv", "r-layers.csv"):
        rows = list(csv.reader((report / name).open(encoding="utf-8")))
        assert not _unsafe_cells(rows), (name, _unsafe_cells(rows))
    text = (report / "r.csv").read_text(encoding="utf-8")
    assert "'" + DEVICE_NAME.replace('"', '""') in text


def test_the_workbook_has_no_formula_and_a_sheet_per_section(report):
    from openpyxl import load_workbook

    wb = load_workbook(report / "r.xlsx")
    assert {"Systems", "Training", "Serving"} <= set(wb.sheetnames)
    cells = [c for ws in wb.worksheets for row in ws.iter_rows() for c in row]
    assert not any(c.data_type == "f" for c in cells)
    text = [c.value for c in cells if isinstance(c.value, str)]
    assert not [t for t in text if t.startswith(FORMULA) and not _number(t)]
    assert "'" + SYSTEM_NAME in text and any(t.startswith("'" + DEVICE_NAME[:6]) for t in text)
    serving = list(wb["Serving"].iter_rows(values_only=True))
    csv_rows = list(csv.reader((report / "r-serving.csv").open(encoding="utf-8")))
    assert [spreadsheet_unsafe(h) for h in csv_rows[0]] == list(serving[0])
    numbers = [v for r in serving[1:] for v in r if isinstance(v, float)]
    assert numbers and all(math.isfinite(v) for v in numbers)  # the sheet's numbers are numbers, not text


def test_the_sweep_text_columns_are_neutralized_in_csv_and_read_back_exactly(tmp_path):
    """The sweep's text columns (device, layout, precision, phase, cost source) go through the apostrophe rule in
    CSV, numbers-as-text such as "-1.5" unchanged, and its reader takes the apostrophe back off. (The device column
    holds the id, which a device file refuses to start with = + - @; Parquet is typed data a spreadsheet imports
    as text, never as formulas, so it stores the text exactly.)"""
    import numpy as np

    from explorer.core.sweep import table_io

    assert table_io._cells("device", np.array(["=x", "-1.5", "@a", "plain"], dtype=object)) == [
        "'=x", "-1.5", "'@a", "plain"]
    out = tmp_path / "s.csv"
    assert main(["sweep", "gpt2", "--device", "nvidia-h100-sxm5", "--batch", "1,2", "--out", str(out)]) == 0
    rows = list(csv.reader(out.open(encoding="utf-8")))
    assert not _unsafe_cells(rows)
    col = rows[0].index("cost_source")
    rows[1][col] = "'=HYPERLINK(1)"  # as the writer writes a formula-like text
    with out.open("w", encoding="utf-8", newline="") as f:
        csv.writer(f, lineterminator="\n").writerows(rows)
    back = table_io.read(out)
    assert back["cost_source"][0] == "=HYPERLINK(1)" and back["cost_source"][1] == rows[2][col]
    assert back["batch"].tolist() == [1, 2]
