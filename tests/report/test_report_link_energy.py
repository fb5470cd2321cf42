"""The report's Systems section carries the energy of each link's bytes (known, unknown, and its source)."""

import csv

import pytest

from explorer.__main__ import main
from explorer.core.hardware.catalog_files import load_shipped_devices, load_shipped_systems
from explorer.core.parallel.compare import size_on_systems
from explorer.core.parallel.link_energy import link_energy
from explorer.core.workload.layers import Context
from explorer.core.workload.templates import get_template

ARGS = ("report", "llama3-70b", "--system", "nvidia-dgx-h100", "--system", "pcie-server-8x-nvidia-l40s",
        "--batch", "16", "--seq-len", "4096")


@pytest.fixture(scope="module")
def expected():
    systems = {s.id: s for s in load_shipped_systems()}
    devices = {d.id: d for d in load_shipped_devices()}
    pairs = [(systems[i], devices[systems[i].device_id]) for i in ("nvidia-dgx-h100", "pcie-server-8x-nvidia-l40s")]
    return size_on_systems(get_template("llama3-70b").build(), pairs, "fp16",
                           Context(batch=16, seq_len=4096, phase="decode", lm_head="last"))


def test_csv_has_device_and_link_joules(tmp_path, capsys, expected):
    out = tmp_path / "r.csv"
    assert main([*ARGS, "--out", str(out)]) == 0
    rows = list(csv.reader((tmp_path / "r-systems.csv").open()))
    col = {name: i for i, name in enumerate(rows[0])}
    dgx, l40s = [r for r in rows if r[0] == "layout"]
    e = link_energy(expected[0].analysis)
    k = expected[0].chosen
    assert float(dgx[col["link energy per step [J]"]]) == pytest.approx(e.links[k], rel=1e-12) and e.links[k] > 0
    assert float(dgx[col["device energy per step [J]"]]) == pytest.approx(e.device[k], rel=1e-12)
    assert l40s[col["link energy per step [J]"]] == ""  # PCIe Gen4: no stated energy: empty (unknown), not 0


def test_html_ladder_shows_pj_per_bit_unknowns_and_the_energy_sources(tmp_path, capsys):
    html = tmp_path / "r.html"
    assert main([*ARGS, "--out", str(html)]) == 0
    text = html.read_text()
    assert "Energy per step" in text and "at 1.3 pJ/bit" in text
    assert "unknown (energy not stated)" in text and "energy: device + links = total" in text
    assert "NVLink 4 via four NVSwitch energy" in text and "blogs.nvidia.com/blog/what-is-nvidia-nvlink" in text
