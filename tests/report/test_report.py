"""Comparison reports: PDF, HTML and CSV carry the core's numbers; atomic writes; clear errors for bad paths."""

import csv
import io
import json
import os
from pathlib import Path

import numpy as np
import pytest

from explorer.__main__ import main
from explorer.core.analysis.evaluate import evaluate
from explorer.core.analysis.procurement import Requirements, plan
from explorer.core.hardware.device_file import load_device_file
from explorer.core.session.workspace import Assumptions
from explorer.core.units import format_si
from explorer.core.workload.templates import get_template
from explorer.report import ReportError, build_report, export_report, write_report
from explorer.report.csv_export import layers_path

CATALOG = Path(__file__).resolve().parents[2] / "catalog"
IDS = ("nvidia-a100-sxm4-80gb", "nvidia-h100-sxm5", "nvidia-l4")
QUOTES = {"nvidia-a100-sxm4-80gb": 15_000.0, "nvidia-h100-sxm5": 30_000.0, "nvidia-l4": 2_500.0}
REQ = Requirements(20_000.0, "tokens/s", latency=0.050, budget=500_000.0, price=QUOTES,
                   cloud_price={"nvidia-h100-sxm5": 4.0 / 3600})
ASSUME = Assumptions()


@pytest.fixture(scope="module")
def analysis():
    template = get_template("gpt2")
    devices = [load_device_file(CATALOG / f"{i}.yaml") for i in IDS]
    return evaluate(template.build(), devices, "fp16", template.context(batch=8, phase="decode"))


@pytest.fixture(scope="module")
def data(analysis):
    return build_report(analysis, ASSUME, REQ)


@pytest.fixture(scope="module")
def expected(analysis):
    """The core's own results, computed without the report package."""
    return plan(analysis, REQ, ASSUME)


def read_csv(path):
    return list(csv.DictReader(io.StringIO(Path(path).read_text(encoding="utf-8"))))


# ------------------------------------------------------------------------------------------------ CSV
def test_csv_summary_numbers_equal_the_core(tmp_path, data, expected):
    written = write_report(data, tmp_path / "r.csv")
    assert written == [tmp_path / "r.csv", tmp_path / "r-layers.csv"]
    rows = read_csv(tmp_path / "r.csv")
    a, cost = expected.analysis, expected.cost
    assert [r["device_id"] for r in rows] == list(IDS)
    for d, row in enumerate(rows):
        assert float(row["Latency per decode step (one unit) [s]"]) == a.totals.time[d]
        assert float(row["Throughput (one unit) [tokens/s]"]) == a.totals.throughput[d]
        assert float(row["Energy per token (one unit) [J]"]) == pytest.approx(a.totals.energy[d] / 8, rel=1e-12)
        assert float(row["Utilization of peak [fraction]"]) == a.totals.utilization[d]
        assert float(row["Fringe tax (mapping loss) [fraction]"]) == 1 - a.totals.mapping_efficiency[d]
        assert float(row["Memory needed [B]"]) == a.totals.memory_bytes
        assert row["Fits in one unit's memory"] == "yes"
        assert float(row["Price per unit [USD]"]) == QUOTES[IDS[d]]
        assert float(row["Price per peak TFLOP/s (fp16) [USD/(TFLOP/s)]"]) == pytest.approx(
            QUOTES[IDS[d]] / (a.devices.peak[d] / 1e12))
        assert float(row["TCO per unit (3 years) [USD]"]) == cost.tco[d]
        p = expected.by_id(IDS[d])
        # the one cost per million of the report: the plan's (issue 23), equal to the planner's
        assert float(row["Plan: cost per million tokens [USD]"]) == p.rank_cost_per_million == p.cost_per_million
        assert float(row["Plan: fleet cost, 3 years [USD]"]) == p.rank_cost == p.tco
        assert float(row["Plan: latency per decode step [s]"]) == p.latency
        assert not any("per million" in k for k in row if not k.startswith("Plan: "))
        assert int(row["rank"]) == p.rank and int(row["units"]) == p.units
        assert float(row["fleet TCO [USD]"]) == p.tco
        assert row["latency floor check"] == "pass" and float(row["latency floor [s]"]) == p.checks[1].value
    h100 = rows[1]
    assert h100["buy or rent"] == "buy" and float(h100["break-even [months]"]) == pytest.approx(
        expected.by_id("nvidia-h100-sxm5").break_even_months)


def test_csv_layers_hold_every_operator_on_every_device(tmp_path, data, analysis):
    write_report(data, tmp_path / "r.csv")
    rows = read_csv(layers_path(tmp_path / "r.csv"))
    n = len(analysis.table)
    assert len(rows) == n * len(IDS)
    for j in range(len(IDS)):
        block = rows[j * n:(j + 1) * n]
        assert {r["device_id"] for r in block} == {IDS[j]}
        times = np.array([float(r["time per execution [s]"]) for r in block])
        assert np.array_equal(times, analysis.time[:, j])
        repeat = np.array([int(r["repeat"]) for r in block])
        assert float(repeat @ times) == pytest.approx(analysis.totals.time[j], rel=1e-12)


# ----------------------------------------------------------------------------------------------- HTML
def test_html_is_self_contained_and_shows_the_core_numbers(tmp_path, data, expected):
    write_report(data, tmp_path / "r.html")
    html = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert html.count("<svg") == 4  # the four panels, inline
    for external in ("<link", "<script", "<img", "src=", "@import", "url(http", "href=\"//"):
        assert external not in html
    for k in range(1, 5):  # each figure's clip path has its own id
        assert html.count(f'id="fig{k}-clip"') == 1
    a = expected.analysis
    for d in range(len(IDS)):
        assert format_si(a.totals.time[d], "s", 3) in html
        assert f"{a.totals.throughput[d]:,.0f} tokens/s" in html
        assert f"{100 * a.totals.utilization[d]:.1f}%" in html
    best = expected.ranked[0]
    assert best.reason in html
    for heading in ("Summary", "Procurement plan", "Roofline", "Energy per token", "Fringe tax (tiling)", "Cost",
                    "Assumptions", "Method", "Data sources"):
        assert f">{heading}<" in html
    urls = {s.url for s in data.sources if s.url}
    assert urls and all(f'href="{u}"' in html for u in urls)
    assert "quote entered for this plan" in html


# ------------------------------------------------------------------------------------------------ PDF
def test_pdf_pages_headings_and_numbers(tmp_path, data, expected):
    pypdf = pytest.importorskip("pypdf", reason="pypdf (a test dependency) extracts the PDF's text")
    write_report(data, tmp_path / "r.pdf")
    reader = pypdf.PdfReader(tmp_path / "r.pdf")
    pages = [p.extract_text() for p in reader.pages]
    n = len(pages)
    assert 5 <= n <= 9
    for i, text in enumerate(pages, start=1):
        assert f"Page {i} of {n}" in text
        assert "GPT-2 (124M)" in text and f"Prepared {data.created}" in text  # the header on every page
    first = pages[0]
    assert "GPT-2 (124M) on 3 accelerators" in first and "Recommendation." in first and "Summary" in first
    a = expected.analysis
    for d in range(len(IDS)):
        assert format_si(a.totals.time[d], "s", 3) in first
        assert f"{a.totals.throughput[d]:,.0f} tokens/s" in first
    everything = "\n".join(pages)
    lines = [line.strip() for line in everything.splitlines()]
    headings = ("Summary", "Procurement plan", "Ranking", "Can you run it? The chapter's three checks", "Analysis",
                "Roofline", "Energy per token", "Fringe tax (tiling)", "Cost", "Assumptions", "Method",
                "Data sources", "References")
    at = 0
    for h in headings:  # each a line of its own, in this order
        at = lines.index(h, at) + 1
    assert "cheapest feasible option" in everything
    links = [annot.get_object().get("/A", {}).get("/URI") for page in reader.pages
             for annot in (page.get("/Annots") or [])]
    assert {s.url for s in data.sources if s.url} <= set(links)  # the source URLs are clickable


def test_report_without_requirements_and_with_missing_figures(tmp_path):
    template = get_template("gpt2")
    devices = [load_device_file(CATALOG / f"{i}.yaml") for i in ("nvidia-l4", "google-tpu-v5e")]
    a = evaluate(template.build(), devices, "fp16", template.context())
    out = export_report(a, ASSUME, tmp_path / "r.html")
    html = out[0].read_text(encoding="utf-8")
    assert "none (one replica per device)" in html
    # which device lacks which price, stated once in the assumptions (issue 23)
    assert "NVIDIA L4 24GB: no purchase price; Google Cloud TPU v5e: no purchase price" in html
    assert "Google Cloud TPU v5e has no fp16 peak: computes at bf16, the other 16-bit float" in html
    assert export_report(a, ASSUME, tmp_path / "r.pdf")[0].stat().st_size > 10_000


# ------------------------------------------------------------------------------------ atomic and errors
def test_a_crash_mid_write_keeps_the_previous_report(tmp_path, data, monkeypatch):
    target = tmp_path / "r.pdf"
    target.write_bytes(b"previous report")

    def crash(fd):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr("explorer.core.files.os.fsync", crash)
    with pytest.raises(ReportError, match="cannot write the report to .*No space left on device"):
        write_report(data, target)
    assert target.read_bytes() == b"previous report"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.pdf"]  # no temporary file left behind


def test_a_failure_while_rendering_writes_nothing(tmp_path, data, monkeypatch):
    target = tmp_path / "r.html"
    target.write_text("previous")

    def broken(_data):
        raise RuntimeError("renderer failed")

    monkeypatch.setattr("explorer.report.html.render_html", broken)
    with pytest.raises(RuntimeError):
        write_report(data, target)
    assert target.read_text() == "previous" and len(list(tmp_path.iterdir())) == 1


def test_unwritable_paths_get_clear_messages(tmp_path, data):
    with pytest.raises(ReportError, match=r"the folder .*missing does not exist"):
        write_report(data, tmp_path / "missing" / "r.pdf")
    (tmp_path / "dir.pdf").mkdir()
    with pytest.raises(ReportError, match="it is a folder"):
        write_report(data, tmp_path / "dir.pdf")
    (tmp_path / "file").write_text("x")
    with pytest.raises(ReportError, match="is not a folder"):
        write_report(data, tmp_path / "file" / "r.pdf")
    with pytest.raises(ReportError, match="unknown report format '.docx'"):
        write_report(data, tmp_path / "r.docx")


def test_read_only_folder(tmp_path, data):
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        pytest.skip("running as root: permission bits do not stop root from writing")
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o500)
    try:
        with pytest.raises(ReportError, match="no permission to write"):
            write_report(data, folder / "r.pdf")
    finally:
        folder.chmod(0o700)


# -------------------------------------------------------------------------------------------------- CLI
def device_args():
    return [x for i in IDS for x in ("--device", str(CATALOG / f"{i}.yaml"))]


def quote_args():
    return [x for i, v in QUOTES.items() for x in ("--price", f"{i}={v} USD")]


def test_cli_report_csv_and_pdf(tmp_path, capsys, expected):
    code = main(["report", "gpt2", *device_args(), "--batch", "8", "--target", "20000 tokens/s", "--latency",
                 "50 ms", *quote_args(), "--cloud-price", "nvidia-h100-sxm5=4 USD/h", "--out", str(tmp_path / "r.csv")])
    out = capsys.readouterr()
    assert code == 0 and out.err == "" and "r-layers.csv" in out.out
    rows = read_csv(tmp_path / "r.csv")
    for d, row in enumerate(rows):
        assert float(row["fleet TCO [USD]"]) == pytest.approx(expected.devices[d].tco, rel=1e-12)
    assert main(["report", "gpt2", *device_args(), "--out", str(tmp_path / "r.pdf")]) == 0
    assert (tmp_path / "r.pdf").read_bytes().startswith(b"%PDF")


def test_cli_report_unwritable_path_is_one_line(tmp_path, capsys):
    code = main(["report", "gpt2", *device_args(), "--out", str(tmp_path / "nope" / "r.pdf")])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1
    assert err.startswith("hwexplorer: error: cannot write the report to") and "does not exist" in err


def test_cli_plan_json_matches_the_planner(capsys, expected):
    code = main(["plan", "gpt2", *device_args(), "--batch", "8", "--target", "20000 tokens/s", "--latency", "50 ms",
                 "--budget", "500000 USD", *quote_args(), "--cloud-price", "nvidia-h100-sxm5=4 USD/h", "--json"])
    out = capsys.readouterr()
    assert code == 0, out.err
    data = json.loads(out.out)
    assert data["requirements"]["target_unit"] == "tokens/s"  # tokens/s picked the decode phase
    assert [d["id"] for d in data["devices"]] == [d.id for d in expected.ranked]
    for got, want in zip(data["devices"], expected.ranked):
        assert got["units"] == want.units and got["tco_usd"] == pytest.approx(want.tco, rel=1e-12)
        assert [c["status"] for c in got["checks"]] == [c.status for c in want.checks]
        assert got["reason"] == want.reason
    h100 = next(d for d in data["devices"] if d["id"] == "nvidia-h100-sxm5")
    assert h100["breaks_even"] is True and h100["buy_or_rent"] == "buy"


@pytest.mark.parametrize("args, message", [
    (["--target", "2000"], "--target: cannot read '2000'"),
    (["--target", "20 tokens/s", "--price", "nvidia-l4"], "--quote: expected DEV=VALUE"),
    (["--target", "20 tokens/s", "--price", "nope=5 USD"], "--quote: nope is not one of the devices"),
    (["--target", "20 tokens/s", "--cloud-price", "nvidia-l4=4 USD"], "--rent nvidia-l4"),
    (["--target", "20 tokens/s", "--pue", "0.8"], "pue: must be at least 1"),
    (["--target", "20 tokens/s", "--phase", "prefill"], "target: given in tokens/s"),
])
def test_cli_plan_bad_input_is_one_line(capsys, args, message):
    code = main(["plan", "gpt2", "--device", str(CATALOG / "nvidia-l4.yaml"), *args])
    err = capsys.readouterr().err
    assert code == 2 and message in err and err.count("\n") == 1


def test_cli_plan_text(capsys):
    code = main(["plan", "gpt2", *device_args(), "--target", "2000 tokens/s", "--latency", "30 FPS"])
    out = capsys.readouterr().out
    assert code == 0 and "33.3 ms" in out and "#1 " in out and "not costed" in out


def test_report_and_its_commands_import_no_qt():
    import subprocess
    import sys

    code = ("import importlib, sys\n"
            "for name in ('explorer.report', 'explorer.report.build', 'explorer.report.figures', 'explorer.report.pdf',"
            " 'explorer.report.html', 'explorer.report.csv_export', 'explorer.cli.plan_cmd', 'explorer.cli.report_cmd',"
            " 'explorer.core.analysis.procurement'):\n"
            "    importlib.import_module(name)\n"
            "print(','.join(sorted(m for m in sys.modules if m.split('.')[0] in ('PySide6', 'pyqtgraph', 'shiboken6')"
            " or m.startswith('explorer.ui'))))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_a_killed_save_leaves_no_temporary_behind_the_next_save(tmp_path):
    """Issue 24: killed saves kept their temporary files beside the project forever (14 files, 23 MB)."""
    import os
    import time

    from explorer.core.files import atomic_write_text

    target = tmp_path / "study.hwproj"
    stale = tmp_path / ".study.hwproj.abc123.tmp"
    stale.write_text("half a project")
    old = time.time() - 3600
    os.utime(stale, (old, old))
    fresh = tmp_path / ".study.hwproj.live99.tmp"  # another write in progress: left alone
    fresh.write_text("")
    other = tmp_path / ".other.hwproj.x.tmp"
    other.write_text("")
    os.utime(other, (old, old))
    atomic_write_text(target, "{}")
    assert target.read_text() == "{}" and not stale.exists() and fresh.exists() and other.exists()


def test_the_report_names_total_and_active_parameters():
    """Mixtral-8x7B: 46,702,792,704 parameters, 12,879,925,248 active per token (tests/core/test_moe_templates.py);
    a dense model shows its total alone."""
    template = get_template("mixtral-8x7b")
    device = load_device_file(CATALOG / "nvidia-h100-sxm5.yaml")
    data = build_report(evaluate(template.build(), [device], "fp16", template.context(phase="decode")), ASSUME)
    assert dict(data.assumptions)["Parameters"] == "46.7 Gparams, 12.88 Gparams active per token"
    dense = get_template("gpt2")
    data = build_report(evaluate(dense.build(), [device], "fp16", dense.context(phase="decode")), ASSUME)
    assert dict(data.assumptions)["Parameters"] == "124.4 Mparams"
