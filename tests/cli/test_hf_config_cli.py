"""``hwexplorer analyze`` with a Hugging Face config.json or a model folder (docs/hf-config.md), in-process: the
model is built from the file alone, and bad or unsupported configs are exit code 2 with one line."""

import json
import shutil
from pathlib import Path

import pytest

from explorer.__main__ import main

HF = Path(__file__).resolve().parents[1] / "fixtures" / "hf_configs"


@pytest.fixture(autouse=True)
def catalog(tmp_path, monkeypatch):
    monkeypatch.setenv("HWEXPLORER_DB", f"sqlite:///{tmp_path / 'catalog.sqlite3'}")  # seeded with the shipped devices


def run(capsys, *args):
    code = main([str(a) for a in args])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_analyze_a_config_json_on_a_catalog_device(capsys):
    code, out, err = run(capsys, "analyze", HF / "llama-3-8b.json", "-d", "nvidia-h100-sxm5", "--json")
    assert code == 0 and err == ""
    data = json.loads(out)
    assert data["model"]["name"] == "llama-3-8b (bfloat16)"
    assert data["model"]["params"] == 8_030_261_248  # Meta-Llama-3-8B's published count
    assert [r["device"]["id"] for r in data["results"]] == ["nvidia-h100-sxm5"]


def test_analyze_a_model_folder(tmp_path, capsys):
    folder = tmp_path / "Mistral-7B-v0.1"
    folder.mkdir()
    shutil.copyfile(HF / "mistral-7b-v0.1.json", folder / "config.json")
    code, out, _ = run(capsys, "analyze", folder, "-d", "nvidia-h100-sxm5", "--json")
    assert code == 0
    assert json.loads(out)["model"] == json.loads(out)["model"] | {"name": "Mistral-7B-v0.1 (bfloat16)",
                                                                    "params": 7_241_732_096}


@pytest.mark.parametrize("change, message", [
    ({"model_type": "qwen2_moe", "num_experts": 60},  # mixtral and deepseek_v3 are mapped: test_hf_moe_config
     "model_type 'qwen2_moe' needs mixture-of-experts layers with a gated shared expert, not supported yet"),
    ({"model_type": "mixtral"}, "num_experts_per_tok: is required for model_type 'mixtral'"),
    ({"model_type": "falcon"}, "model_type 'falcon' is not supported"),
    ({"num_key_value_heads": 7}, "num_key_value_heads: 7 does not divide num_attention_heads 32"),
    ({"intermediate_size": None}, "intermediate_size: is required for model_type 'mistral'"),
])
def test_bad_or_unsupported_configs_exit_2_with_one_line(tmp_path, capsys, change, message):
    data = {k: v for k, v in (json.loads((HF / "mistral-7b-v0.1.json").read_text()) | change).items() if v is not None}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    code, out, err = run(capsys, "analyze", path, "-d", "nvidia-h100-sxm5")
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("hwexplorer: error: ") and message in err and str(path) in err
