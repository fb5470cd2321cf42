"""The report's Systems section: the CLI's `report --system` writes the chosen layouts, the fleet and the sources."""

import csv
import math

import pytest
from pypdf import PdfReader

from explorer.__main__ import main
from explorer.core.hardware.catalog_files import load_shipped_devices, load_shipped_systems
from explorer.core.parallel.compare import size_on_systems
from explorer.core.workload.layers import Context
from explorer.core.workload.templates import get_template

ARGS = ("report", "llama3-70b", "--system", "nvidia-dgx-h100", "--system", "pcie-server-8x-nvidia-l40s",
        "--target", "20000 tokens/s", "--batch", "16", "--seq-len", "4096")


@pytest.fixture(scope="module")
def expected():
    systems = {s.id: s for s in load_shipped_systems()}
    devices = {d.id: d for d in load_shipped_devices()}
    pairs = [(systems[i], devices[systems[i].device_id]) for i in ("nvidia-dgx-h100", "pcie-server-8x-nvidia-l40s")]
    return size_on_systems(get_template("llama3-70b").build(), pairs, "fp16",
                           Context(batch=16, seq_len=4096, phase="decode", lm_head="last"))


def test_csv_systems_table_carries_the_numbers_of_the_system_pass(tmp_path, capsys, expected):
    out = tmp_path / "r.csv"
    assert main([*ARGS, "--out", str(out)]) == 0
    assert "r-systems.csv" in capsys.readouterr().out
    rows = list(csv.reader((tmp_path / "r-systems.csv").open()))
    header, layouts = rows[0], [r for r in rows if r[0] == "layout"]
    col = {name: i for i, name in enumerate(header)}
    for row, res in zip(layouts, expected):
        r, k = res.analysis, res.chosen
        assert row[col["system_id"]] == res.system.id and row[col["layout"]] == r.layouts[k].label()
        assert float(row[col["step [s]"]]) == pytest.approx(r.step_time[k], rel=1e-12)
        assert float(row[col["communication [s]"]]) == pytest.approx(r.comm_time[k], rel=1e-12)
        assert float(row[col["memory per device [B]"]]) == r.memory_bytes[k]
    plans = [r for r in rows if r[0] == "plan"]
    assert len(plans) == 2
    for row, res in zip(plans, expected):  # the fleet: replicas x (tp x pp) devices
        replica_rate = float(row[6])
        assert int(row[8]) == math.ceil(20000 / replica_rate) and int(row[9]) == int(row[8]) * int(row[5])


def test_html_and_pdf_have_the_section_and_the_sources(tmp_path, capsys):
    html = tmp_path / "r.html"
    assert main([*ARGS, "--out", str(html)]) == 0
    text = html.read_text()
    assert "<h2>Systems</h2>" in text and "Fleet on each system" in text and "Bandwidth ladder" in text
    assert "NVLink 4 via four NVSwitch bandwidth" in text and "900 GB/s" in text  # as written, with its source
    pdf = tmp_path / "r.pdf"
    assert main([*ARGS, "--out", str(pdf)]) == 0
    pages = " ".join(" ".join(p.extract_text() for p in PdfReader(str(pdf)).pages).split())
    assert "Systems" in pages and "TP8 PP1 DP1" in pages and "not priced" in pages


def test_a_report_without_systems_has_no_section(tmp_path, capsys):
    out = tmp_path / "r.csv"
    assert main(["report", "gpt2", "--device", "nvidia-h100-sxm5", "--out", str(out)]) == 0
    assert not (tmp_path / "r-systems.csv").exists()
    html = tmp_path / "r.html"
    assert main(["report", "gpt2", "--device", "nvidia-h100-sxm5", "--out", str(html)]) == 0
    assert "<h2>Systems</h2>" not in html.read_text()

