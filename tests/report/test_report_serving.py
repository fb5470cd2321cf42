"""The report's Serving section: `report --serving ...` writes per device the capacity, the percentiles against the
service levels and the cost and energy at the knee, in the PDF, the HTML and FILE-serving.csv; the numbers are the
serving core's; bad options exit 2 with one line naming the option."""

import csv

import pytest
from pypdf import PdfReader

from explorer.__main__ import main
from explorer.core.hardware.catalog_files import load_shipped_devices
from explorer.core.serving.analytic import estimate
from explorer.core.serving.serve import answer, device_setup
from explorer.core.session.serving_choice import ServingChoice
from explorer.core.workload.templates import get_template

H100 = "nvidia-h100-sxm5"
ARGS = ("report", "llama3-8b", "--device", H100, "--phase", "decode", "--serving", "--rate", "4/s", "--input", "512",
        "--output", "128", "--ttft-p90", "300ms", "--tpot-p90", "40ms", "--serving-requests", "300")
CHOICE = ServingChoice(rate=4.0, input_tokens=512, output_tokens=128, ttft=0.3, tpot=0.04)


@pytest.fixture(scope="module")
def expected():
    device = {d.id: d for d in load_shipped_devices()}[H100]
    w = CHOICE.workload
    return device, answer(w, device_setup(get_template("llama3-8b").build(), device, w, CHOICE.policy), CHOICE.slo)


def test_csv_serving_table_carries_the_cores_numbers(tmp_path, capsys, expected):
    device, core = expected
    out = tmp_path / "r.csv"
    assert main([*ARGS, "--out", str(out)]) == 0
    assert "r-serving.csv" in capsys.readouterr().out
    rows = list(csv.reader((tmp_path / "r-serving.csv").open()))
    col = {name: i for i, name in enumerate(rows[0])}
    assert "TTFT P90 [s]" in col and "cost per million tokens [USD]" in col and "energy per token [J]" in col
    by = {r[col["method"]]: r for r in rows[1:]}
    assert set(by) == {"analytic", "simulation", "analytic at knee"}
    a = by["analytic"]
    assert float(a[col["capacity [requests/s]"]]) == pytest.approx(core.curve.capacity, rel=1e-9)
    assert float(a[col["TTFT P90 [s]"]]) == pytest.approx(core.estimate.ttft.p90, rel=1e-9)
    knee_rate = float(core.curve.rates[core.curve.knee])
    k = by["analytic at knee"]
    assert float(k[col["rate [requests/s]"]]) == pytest.approx(knee_rate, rel=1e-9)
    # hand-computed: USD per million tokens = the device's price per second / its tokens per second x 1e6, and
    # the tokens per second at a stable rate are rate x output tokens
    at_knee = estimate(CHOICE.workload, core.setup, CHOICE.slo, [knee_rate])[0]
    assert at_knee.throughput_per_device == pytest.approx(knee_rate * 128, rel=1e-9)
    price = device.cloud_price.value  # USD per second (the catalog's cloud price)
    assert float(k[col["cost per million tokens [USD]"]]) == pytest.approx(price / (knee_rate * 128) * 1e6,
                                                                              rel=1e-6)
    # energy per token: the device at its TDP for the busy share of each second, over the tokens of that second
    watts = device.tdp.value * at_knee.busy_share
    assert float(k[col["energy per token [J]"]]) == pytest.approx(watts / (knee_rate * 128), rel=1e-6)
    s = by["simulation"]
    assert s[col["service levels met"]] == "True" and 0.75 * 4 < float(s[col["goodput [requests/s]"]]) <= 4.4  # P90: up to 10 % may miss


def test_html_and_pdf_have_the_section(tmp_path, capsys, expected):
    html = tmp_path / "r.html"
    assert main([*ARGS, "--out", str(html)]) == 0
    text = html.read_text()
    assert "<h2>Serving</h2>" in text and "Latency against the service levels" in text
    assert "4 requests/s (poisson), 512 input and 128 output tokens" in text and "TTFT P90" in text
    pdf = tmp_path / "r.pdf"
    assert main([*ARGS, "--out", str(pdf)]) == 0
    pages = "".join(page.extract_text() for page in PdfReader(str(pdf)).pages)
    assert "Serving" in pages and "Latency against the service levels" in pages
    assert f"{expected[1].curve.capacity:,.4g} req/s" in pages  # the capacity column
    assert "512 input and 128 output tokens" in pages


def test_a_report_without_serving_options_has_no_section(tmp_path, capsys):
    out = tmp_path / "r.csv"
    assert main(["report", "llama3-8b", "--device", H100, "--out", str(out)]) == 0
    assert not (tmp_path / "r-serving.csv").exists()


@pytest.mark.parametrize("bad, option", [
    (("--rate", "0/s"), "--rate"), (("--rate", "-3"), "--rate"), (("--ttft-p90", "5GB"), "--ttft-p90"),
    (("--input", "100-200"), "--input"), (("--memory-utilization", "1.5"), "--memory-utilization"),
    (("--block-size", "0"), "--block-size"),
])
def test_bad_serving_options_exit_2_with_one_line(tmp_path, capsys, bad, option):
    assert main(["report", "llama3-8b", "--device", H100, *bad, "--out", str(tmp_path / "r.html")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and option in err and not (tmp_path / "r.html").exists()
