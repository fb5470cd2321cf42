"""Link energy in system files and in ``analyze --system``: the optional ``energy`` key, its JSON fields, bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from explorer.__main__ import main
from explorer.core.hardware.system_file import SystemFileError, load_system_file, save_system_file

ROOT = Path(__file__).resolve().parents[2]
H100 = ROOT / "catalog" / "systems" / "nvidia-dgx-h100.yaml"
ARGS = ["analyze", "llama3-70b", "--phase", "decode", "--batch", "16", "--seq-len", "4096"]


def _write(tmp_path, edit) -> Path:
    data = yaml.safe_load(H100.read_text())
    edit(data)
    path = tmp_path / "sys.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def test_energy_round_trips_with_its_text_source_and_note(tmp_path):
    system = load_system_file(H100)
    out = tmp_path / "copy.yaml"
    save_system_file(system, out)
    again = load_system_file(out)
    assert again == system
    written = yaml.safe_load(out.read_text())
    assert written["domains"][0]["energy"]["value"] == "1.3 pJ/bit"
    assert written["host_link"]["energy"]["source"] == "nvlink_blog"
    # a file without the key reads as before: the energy is unknown, not 0
    path = _write(tmp_path, lambda d: d["domains"][0].pop("energy"))
    assert load_system_file(path).domains[0].link.energy is None


@pytest.mark.parametrize("value, words", [
    ("1.3 pJ", "domains[0].energy"),  # an energy, not per bit or byte
    ("1.3 GB/s", "domains[0].energy"),
    ("-1 pJ/bit", "domains[0].energy"),
])
def test_an_energy_in_the_wrong_unit_is_one_line_naming_the_field(tmp_path, value, words):
    path = _write(tmp_path, lambda d: d["domains"][0].__setitem__("energy", value))
    with pytest.raises(SystemFileError) as exc:
        load_system_file(path)
    assert words in str(exc.value) and "\n" not in str(exc.value)


def test_cli_bad_energy_exits_2_with_one_line(tmp_path, capsys):
    path = _write(tmp_path, lambda d: d["host_link"].__setitem__("energy", {"value": "6.5 W", "source": "ds"}))
    assert main(ARGS + ["--system", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "host_link.energy" in err


def test_analyze_json_counts_link_joules(capsys):
    """DGX H100, TP 8 chosen by hand: the NVLink bytes at 1.3 pJ/bit; the network carries nothing (0 J)."""
    assert main(ARGS + ["--system", "nvidia-dgx-h100", "--tp", "8", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    nvlink, ib = out["system"]["domains"]
    assert nvlink["energy_per_bit_J"] == pytest.approx(1.3e-12) and "COVERS" in nvlink["energy_note"]
    assert out["system"]["host_link"]["energy_per_bit_J"] == pytest.approx(6.5e-12)
    (lay,) = out["layouts"]
    e = lay["energy"]
    sent = lay["level_bytes"][nvlink["name"]]
    assert e["links_J"][nvlink["name"]] == pytest.approx(sent * 8 * 1.3e-12, rel=1e-12)
    assert e["links_J"][ib["name"]] == 0.0 and e["links_unknown"] == []
    assert e["total_J"] == pytest.approx(e["device_J"] + e["links_total_J"], rel=1e-12)
    assert e["per_unit_J"] == pytest.approx(e["total_J"] * 8 / 16, rel=1e-12)  # 8 GPUs, 16 tokens a step


def test_analyze_says_when_a_links_energy_is_unknown(capsys):
    assert main(ARGS + ["--system", "pcie-server-8x-nvidia-l40s", "--tp", "8"]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("-- energy"))
    assert "energy not stated" in line and "total unknown" in line and "at least" in line
    assert main(ARGS + ["--system", "pcie-server-8x-nvidia-l40s", "--tp", "8", "--json"]) == 0
    e = json.loads(capsys.readouterr().out)["layouts"][0]["energy"]
    assert e["total_J"] is None and e["links_known_J"] == 0.0 and len(e["links_unknown"]) == 1
    assert e["device_J"] > 0


def test_catalog_list_systems_json_gives_each_links_energy(capsys):
    assert main(["catalog", "list", "--systems", "dgx-h100", "--json"]) == 0
    (dgx,) = json.loads(capsys.readouterr().out)
    assert dgx["scale_up"]["energy_J_per_bit"] == pytest.approx(1.3e-12)
    assert dgx["scale_out"]["energy_J_per_bit"] == pytest.approx(37.5e-12)
    assert dgx["host_link_energy_J_per_bit"] == pytest.approx(6.5e-12)
    assert main(["catalog", "list", "--systems", "l40s", "--json"]) == 0
    (l40s,) = json.loads(capsys.readouterr().out)
    assert l40s["scale_up"]["energy_J_per_bit"] is None  # not stated: unknown, not 0
