"""A device without matrix-engine data has an unknown mapping efficiency, never a measured-looking 1.00 (issue 24:
the H200 showed 1.00 against the H100's 0.27 on the same GH100 silicon)."""

import json
import math
from pathlib import Path

import pytest

from explorer.__main__ import main
from explorer.core.analysis.device_arrays import NO_ENGINE
from explorer.core.analysis.evaluate import evaluate
from explorer.core.analysis.procurement import Requirements, plan
from explorer.core.hardware.device_file import load_device_file
from explorer.core.workload.templates import get_template

CATALOG = Path(__file__).resolve().parents[2] / "catalog"
H100, H200 = CATALOG / "nvidia-h100-sxm5.yaml", CATALOG / "nvidia-h200-sxm.yaml"


@pytest.fixture(scope="module")
def analysis():
    devices = [load_device_file(H100), load_device_file(H200)]
    assert devices[0].matrix_engine is not None and devices[1].matrix_engine is None
    return evaluate(get_template("gpt2").build(), devices, "fp16")


def test_the_mapping_efficiency_of_a_device_without_an_engine_is_unknown(analysis):
    gemm = analysis.table.gemm_count > 0
    assert analysis.mapping_known[gemm, 0].all() and not analysis.mapping_known[gemm, 1].any()
    assert analysis.mapping_known[~gemm].all()  # rows that map onto no engine have nothing unknown
    assert list(analysis.total_mapping_known) == [True, False]
    # H100: 132 SMs, 128x128 tiles; GPT-2 prefill with the LM head on the last position (the default: its
    # 1 x 50257 x 768 GEMM fills few tiles, hence below the 0.8874 of the every-position head)
    assert analysis.totals.mapping_efficiency[0] == pytest.approx(0.8445, abs=1e-4)
    assert NO_ENGINE in analysis.devices.defaults_used[1] and NO_ENGINE not in analysis.devices.defaults_used[0]


def test_the_command_line_says_unknown(analysis, capsys):
    assert main(["analyze", "gpt2", "--device", str(H100), "--device", str(H200), "--json"]) == 0
    h100, h200 = json.loads(capsys.readouterr().out)["results"]
    qkv = [i for i, layer in enumerate(h100["layers"]) if layer["name"] == "h.attn.qkv"][0]
    assert h100["layers"][qkv]["mapping_efficiency"] == pytest.approx(analysis.mapping_efficiency[qkv, 0])
    assert 0.5 < h100["layers"][qkv]["mapping_efficiency"] < 1  # the H100's figure: a real loss, shown
    assert h200["layers"][qkv]["mapping_efficiency"] is None and h200["layers"][qkv]["fringe_tax"] is None
    assert NO_ENGINE in h200["defaults_used"]
    assert main(["analyze", "gpt2", "--device", str(H200)]) == 0
    row = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("h.attn.qkv"))
    assert " unknown " in row


def test_the_plan_and_the_report_say_unknown(analysis):
    from explorer.core.analysis.cost import CostAssumptions, compute_cost
    from explorer.core.analysis.energy_view import compute_energy_view
    from explorer.report.build import summary_metrics

    result = plan(analysis, Requirements(latency=0.05), CostAssumptions())
    compute = {d.id: next(c for c in d.checks if c.name == "compute").detail for d in result.devices}
    assert "mapping efficiency unknown" in compute["nvidia-h200-sxm"]
    assert "\u00d7 0.84" in compute["nvidia-h100-sxm5"] and "unknown" not in compute["nvidia-h100-sxm5"]
    cost = compute_cost(analysis, CostAssumptions())
    fringe = next(m for m in summary_metrics(analysis, cost, compute_energy_view(analysis, 0)) if m.key == "fringe_tax")
    assert fringe.display[0] == "15.5%" and fringe.display[1] == "unknown (no matrix-engine data)"  # 1 - 0.8445
    assert math.isnan(fringe.values[1])
