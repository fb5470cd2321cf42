"""``hwexplorer analyze`` on mixtures of experts (docs/cli.md): total and active parameters in the text and the JSON,
the routing assumption behind the weights a step reads, and the weight bytes that follow from it."""

import json
from pathlib import Path

import pytest

from explorer.__main__ import main

HF = Path(__file__).resolve().parents[1] / "fixtures" / "hf_configs"
ROUTING = "uniform independent routing: expected experts touched = E (1 - (1 - top_k/E)^T)"


def run(capsys, *args):
    code = main([str(a) for a in args])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_text_shows_total_and_active_parameters(capsys):
    code, out, err = run(capsys, "analyze", "mixtral-8x7b", "-d", "nvidia-h100-sxm5")
    assert code == 0 and err == ""
    first, second = out.splitlines()[:2]
    assert first.startswith("Mixtral-8x7B-v0.1: 46.7 Gparams (12.88 Gparams active per token), ")
    assert second == f"experts' weights read per step: {ROUTING}, T the tokens of the step"
    code, out, _ = run(capsys, "analyze", "llama2-7b", "-d", "nvidia-h100-sxm5")
    assert "active" not in out.splitlines()[0] and "experts" not in out  # dense models print as before


@pytest.mark.parametrize("batch, touched", [(1, 2.0), (4, 5.46875)])
def test_json_has_active_params_the_routing_and_the_weights_read(capsys, batch, touched):
    """Mixtral decode at fp16: each expert projection reads touched x 4096 x 14336 weights of 2 bytes."""
    code, out, _ = run(capsys, "analyze", "mixtral-8x7b", "-d", "nvidia-h100-sxm5", "--batch", batch, "--json")
    assert code == 0
    data = json.loads(out)
    assert data["model"]["params"] == 46_702_792_704 and data["model"]["active_params"] == 12_879_925_248
    assert data["assumptions"]["moe_routing"] == ROUTING
    layers = {x["name"]: x for x in data["results"][0]["layers"]}
    up = layers["layers.moe.experts_up"]
    assert up["weight_bytes"] == touched * 4096 * 14336 * 2 and up["count"] == 32
    assert up["params"] == 8 * 4096 * 14336 and up["active_params"] == 2 * 4096 * 14336


def test_a_deepseek_config_analyzes_with_its_latent_cache(capsys):
    """DeepSeek-R1-0528's config (the V3 architecture) at fp8, decode of 4096 tokens: the KV cache is 61 layers x
    4096 positions x 576 numbers of 1 byte."""
    code, out, _ = run(capsys, "analyze", HF / "deepseek-r1-0528.json", "-d", "nvidia-h100-sxm5", "--precision", "fp8",
                       "--phase", "decode", "--json")
    data = json.loads(out)
    assert code == 0 and data["model"]["params"] == 671_026_419_200
    assert data["results"][0]["totals"]["kv_cache_bytes"] == 61 * 4096 * 576
    _, dense, _ = run(capsys, "analyze", "gpt2", "-d", "nvidia-h100-sxm5", "--json")
    assert json.loads(dense)["assumptions"]["moe_routing"] is None
