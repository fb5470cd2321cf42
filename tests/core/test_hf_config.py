"""The Hugging Face config.json importer (explorer/core/importers/hf_config.py, docs/hf-config.md) on real configs of
published checkpoints (tests/fixtures/hf_configs, sources in SOURCES.md): the counts are the published ones or worked
out by hand from the file's sizes, a config gives the same model as its template, every field is used or reported,
and bad input fails with the field named."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from explorer.core.importers import ImporterError, find_importer, load
from explorer.core.importers.hf_config import FAMILIES, USED, HFConfigError
from explorer.core.workload.layers import Context
from explorer.core.workload.model import Model, build_table, load_model_file, save_model_file
from explorer.core.workload.templates import get_template

HF = Path(__file__).resolve().parents[1] / "fixtures" / "hf_configs"


def params(model: Model) -> int:
    return int(build_table(model, Context()).total("params"))


def config(name: str) -> dict:
    return json.loads((HF / name).read_text(encoding="utf-8"))


def write(tmp_path: Path, data: dict, name: str = "config.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


# ------------------------------------------------------------------------------------ the config round trip
ROUND_TRIP = [("llama-2-70b.json", "llama2-70b"), ("llama-3-8b.json", "llama3-8b"), ("llama-3-70b.json", "llama3-70b"),
              ("llama-3.1-405b-instruct.json", "llama3.1-405b"), ("mistral-7b-v0.1.json", "mistral-7b"),
              ("qwen2.5-7b-instruct.json", "qwen2.5-7b")]


@pytest.mark.parametrize("fixture, template_id", ROUND_TRIP)
def test_a_checkpoint_config_gives_its_template(fixture, template_id):
    """Importing the checkpoint's config.json gives the template's published parameter count, and the same layers."""
    result = load(HF / fixture)
    assert result.importer == "hf_config" and result.kind == "model"
    template = get_template(template_id)
    (published,) = template.published
    assert params(result.value) == params(template.build()) == published.value
    assert result.value.layers == template.build().layers and result.value.input == template.build().input


def test_llama2_7b_config_gives_the_existing_template_count():
    """Llama-2-7B (Touvron et al. 2023; meta-llama/Llama-2-7b-hf): 6,738,415,616, the llama2-7b template's count."""
    assert params(load(HF / "llama-2-7b.json").value) == params(get_template("llama2-7b").build()) == 6_738_415_616


@pytest.mark.parametrize("fixture, count", [
    # gemma-2b: V 256000 x H 2048 once (tied) + 18 x (q 2048x2048 + k, v 2048x256 (one KV head of 256) + o 2048x2048
    # + 3 x 2048 x 16384 GeGLU + 2 x 2048 norms) + 2048 = 524,288,000 + 18 x 110,104,576 + 2048
    ("gemma-2b.json", 2_506_172_416),
    # gemma-2-9b: 256000 x 3584 (tied) + 42 x (q 3584x4096 + k, v 3584x2048 + o 4096x3584 + 3 x 3584 x 14336
    # + 4 x 3584 norms) + 3584 = 917,504,000 + 42 x 198,195,200 + 3584
    ("gemma-2-9b.json", 9_241_705_984),
    # Phi-3-mini-4k: 2 x 32064 x 3072 (untied) + 32 x (4 x 3072^2 + 3 x 3072 x 8192 + 2 x 3072) + 3072
    ("phi-3-mini-4k-instruct.json", 3_821_079_552),
    # Llama-3.2-1B: 128256 x 2048 (tied) + 16 x (2 x 2048^2 + 2 x 2048 x 512 + 3 x 2048 x 8192 + 2 x 2048) + 2048
    ("llama-3.2-1b.json", 1_235_814_400),
])
def test_other_families_count_what_their_config_says(fixture, count):
    assert params(load(HF / fixture).value) == count


def test_gemma2_alternates_sliding_and_global_layers_with_four_norms():
    model = load(HF / "gemma-2-9b.json").value
    local, glob = model.layers[1], model.layers[2]
    assert (local.name, local.repeat, local.params["window"]) == ("layers.local", 21, 4096)
    assert (glob.name, glob.repeat, "window" in glob.params) == ("layers.global", 21, False)
    assert local.params["ffn"] == "geglu" and local.params["post_norms"] is True and local.params["kv_heads"] == 8
    assert local.params["head_dim"] == 256  # 16 heads of 256 = 4096, wider than hidden 3584
    assert model.layers[-1].params["tied"] is True
    tab = build_table(model, Context(seq_len=8192, phase="decode"))
    scores = [tab.out_shapes[i] for i in range(len(tab)) if tab.kinds[i] == "attention_scores"]
    assert scores == [(16, 1, 4096), (16, 1, 8192)]  # local layers read 4096 keys, global ones the whole cache


def test_gemma_is_mqa_with_a_geglu_and_tied_head():
    model = load(HF / "gemma-2b.json").value
    block = model.layers[1].params
    assert block["kv_heads"] == 1 and block["ffn"] == "geglu" and "head_dim" not in block  # 8 x 256 = 2048
    assert model.layers[-1].params["tied"] is True


def test_mistral_and_phi3_use_their_sliding_window():
    assert load(HF / "mistral-7b-v0.1.json").value.layers[1].params["window"] == 4096
    assert load(HF / "phi-3-mini-4k-instruct.json").value.layers[1].params["window"] == 2047


def test_qwen2_sliding_window_applies_only_when_switched_on(tmp_path):
    off = load(HF / "qwen2.5-7b-instruct.json")
    assert "window" not in off.value.layers[1].params and off.value.layers[1].params["qkv_bias"] is True
    assert "sliding_window" in off.details["no_effect"] and "max_window_layers" in off.details["no_effect"]
    on = config("qwen2.5-7b-instruct.json") | {"use_sliding_window": True, "max_window_layers": 20}
    model = load(write(tmp_path, on)).value
    assert [(b.name, b.repeat, b.params.get("window", 0)) for b in model.layers[1:3]] == [
        ("layers", 20, 0), ("layers.sliding", 8, 32768)]
    assert params(model) == 7_615_616_512


# ---------------------------------------------------------------------------------- recorded, never silent
@pytest.mark.parametrize("fixture", sorted(p.name for p in HF.glob("*.json")))
def test_every_field_is_used_or_reported(fixture):
    data, result = config(fixture), load(HF / fixture)
    used = USED | FAMILIES[data["model_type"]].used
    reported = set(result.details["no_effect"]) | set(result.details["ignored"])
    assert all(k in used or k in reported for k in data)
    listed = " ".join(result.warnings)
    assert all(k in listed for k in reported)


def test_the_warnings_list_the_no_effect_and_the_unknown_fields(tmp_path):
    result = load(HF / "llama-3.1-405b-instruct.json")
    assert ("ignored (no effect on the counts): architectures, attention_dropout, bos_token_id, eos_token_id, "
            "initializer_range, pretraining_tp, rms_norm_eps, rope_scaling, rope_theta, transformers_version, "
            "use_cache") in result.warnings
    assert result.details["ignored"] == ()
    odd = config("llama-3-8b.json") | {"quantization_config": {"bits": 4}, "num_experts": 8}
    warned = load(write(tmp_path, odd)).warnings
    assert ("ignored (not part of the llama mapping; check that they do not change the architecture): "
            "num_experts, quantization_config") in warned


def test_dtype_and_token_count_defaults(tmp_path):
    result = load(HF / "llama-3.2-1b.json")
    assert result.value.name == "llama-3.2-1b (bfloat16)"
    assert result.details["torch_dtype"] == "bfloat16" and result.details["precision"] == "bf16"
    assert result.value.input_dict == {"tokens": 4096}  # max_position_embeddings 131072, capped at 4096
    assert "input: 4096 tokens (max_position_embeddings 131072, capped at 4096)" in result.warnings[0]
    short = load(write(tmp_path, config("llama-3-8b.json") | {"max_position_embeddings": 2048}))
    assert short.value.input_dict == {"tokens": 2048}
    bare = {k: v for k, v in config("llama-3-8b.json").items() if k not in ("max_position_embeddings", "torch_dtype")}
    none = load(write(tmp_path, bare, "bare.json"))
    assert none.value.input_dict == {"tokens": 4096} and none.value.name == "bare" and none.details["precision"] is None
    assert load(HF / "llama-2-70b.json").value.name == "meta-llama/Llama-2-70b-hf (float16)"  # the Hub id


def test_the_import_is_an_ordinary_editable_model_file(tmp_path):
    model = load(HF / "qwen2.5-7b-instruct.json").value
    save_model_file(model, tmp_path / "qwen.json")
    assert load_model_file(tmp_path / "qwen.json") == model
    assert find_importer(tmp_path / "qwen.json").name == "model_file"  # saved, it is our own format


# ----------------------------------------------------------------------------------------------- folders
def test_a_folder_is_imported_through_its_config_json(tmp_path):
    folder = tmp_path / "Meta-Llama-3-8B"
    folder.mkdir()
    shutil.copyfile(HF / "llama-3-8b.json", folder / "config.json")
    (folder / "tokenizer.json").write_text("{}", encoding="utf-8")
    assert find_importer(folder).name == "hf_config"
    result = load(folder, kind="model")
    assert result.value.name == "Meta-Llama-3-8B (bfloat16)" and result.path == folder / "config.json"
    assert params(result.value) == 8_030_261_248
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ImporterError, match="it is a folder without a config.json"):
        find_importer(empty)
    other = tmp_path / "other"
    other.mkdir()
    write(other, {"foo": 1})
    with pytest.raises(ImporterError, match="its config.json is not a format the app reads"):
        load(other)


# ------------------------------------------------------------------------------------------------- errors
@pytest.mark.parametrize("model_type, needs", [  # mixtral, deepseek_v2 and deepseek_v3: test_hf_moe_config
    ("qwen2_moe", "mixture-of-experts layers with a gated shared expert"),
    ("qwen3_moe", "mixture-of-experts layers with per-head query and key norms"),
])
def test_moe_families_without_a_mapping_are_refused_by_name(tmp_path, model_type, needs):
    path = write(tmp_path, config("mistral-7b-v0.1.json") | {"model_type": model_type, "num_local_experts": 8})
    assert find_importer(path).name == "hf_config"  # recognized, then refused with the reason
    with pytest.raises(HFConfigError) as info:
        load(path)
    assert str(info.value) == f"{path}: model_type '{model_type}' needs {needs}, not supported yet"


@pytest.mark.parametrize("change, message", [
    ({"model_type": "falcon"}, ("model_type 'falcon' is not supported; supported: llama, mistral, qwen2, phi3, "
                                "gemma, gemma2")),
    ({"intermediate_size": None}, "intermediate_size: is required for model_type 'llama'"),
    ({"num_attention_heads": 48, "head_dim": None}, "num_attention_heads: 48 heads do not divide hidden_size 4096"),
    ({"num_key_value_heads": 5}, "num_key_value_heads: 5 does not divide num_attention_heads 32"),
    ({"hidden_size": "4096"}, "hidden_size: expected a positive whole number, got '4096'"),
    ({"hidden_act": "gelu"}, "hidden_act: 'gelu' is not the silu of model_type 'llama'"),
    ({"attention_bias": True}, "attention_bias: biases on the attention but not the feed-forward"),
    ({"tie_word_embeddings": "no"}, "tie_word_embeddings: expected true or false"),
])
def test_bad_configs_name_the_field(tmp_path, change, message):
    data = {k: v for k, v in (config("llama-3-8b.json") | change).items() if v is not None}
    path = write(tmp_path, data)
    with pytest.raises(HFConfigError, match="^" + str(path).replace("\\", "\\\\") + ": ") as info:
        load(path, kind="model")
    assert message in str(info.value) and "\n" not in str(info.value)


def test_a_head_dim_lets_heads_not_divide_the_hidden_size(tmp_path):
    data = config("gemma-2b.json") | {"num_attention_heads": 6}  # 6 x 256 = 1536 != 2048: fine with a head_dim
    model = load(write(tmp_path, data)).value
    assert model.layers[1].params["head_dim"] == 256 and not build_table(model, Context()).errors


def test_a_json_that_is_not_an_object_is_refused(tmp_path):
    path = tmp_path / "list.json"
    path.write_text("[1, 2]", encoding="utf-8")
    with pytest.raises(HFConfigError, match="expected a JSON object"):
        load(path, name="hf_config")
