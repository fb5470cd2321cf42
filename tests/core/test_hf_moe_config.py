"""The Hugging Face config import of the mixtures of experts (mixtral, deepseek_v2, deepseek_v3 in
explorer/core/importers/hf_config.py, docs/hf-config.md) on real configs (tests/fixtures/hf_configs, SOURCES.md): a
checkpoint's config gives its template's model, total and active parameters; DeepSeek's fields are used or reported;
inconsistent sizes fail naming the field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from explorer.core.importers import load
from explorer.core.importers.hf_config import HFConfigError
from explorer.core.workload.layers import Context
from explorer.core.workload.model import Model, build_table
from explorer.core.workload.templates import get_template

HF = Path(__file__).resolve().parents[1] / "fixtures" / "hf_configs"
MIXTRAL, DEEPSEEK = "mixtral-8x7b-v0.1.json", "deepseek-r1-0528.json"


def counts(model: Model) -> tuple[int, int]:
    table = build_table(model, Context())
    return int(table.total("params")), int(table.total("active_params"))


def config(name: str) -> dict:
    return json.loads((HF / name).read_text(encoding="utf-8"))


def write(tmp_path: Path, data: dict) -> Path:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


@pytest.mark.parametrize("fixture, template_id, total, active", [
    # Mixtral-8x7B-v0.1: 46,702,792,704 (KerasHub's mixtral_8_7b_en), 12.9B per token (Mistral); by hand in
    # test_moe_templates
    (MIXTRAL, "mixtral-8x7b", 46_702_792_704, 12_879_925_248),
    # DeepSeek-R1-0528, the DeepSeek-V3 architecture: 671B total, 37B activated (36.6B without the input embedding)
    (DEEPSEEK, "deepseek-v3", 671_026_419_200, 37_552_297_472),
])
def test_a_checkpoint_config_gives_its_template(fixture, template_id, total, active):
    result = load(HF / fixture)
    assert result.importer == "hf_config" and result.kind == "model" and not build_table(result.value).errors
    template = get_template(template_id).build()
    assert result.value.layers == template.layers and result.value.input == template.input
    assert counts(result.value) == counts(template) == (total, active)


def test_mixtral_is_mistral_with_experts():
    result = load(HF / MIXTRAL)
    block = result.value.layers[1].params
    assert (block["experts"], block["top_k"], block["ffn_hidden"], block["kv_heads"]) == (8, 2, 14336, 8)
    assert "window" not in block  # sliding_window null: full attention
    assert {"router_aux_loss_coef", "output_router_logits"} <= set(result.details["no_effect"])
    assert result.details["ignored"] == ()


def test_deepseek_fields_are_used_or_listed_without_effect():
    result = load(HF / DEEPSEEK)
    assert result.value.name == "deepseek-r1-0528 (fp8)" and result.details["precision"] == "fp8"
    assert {"routed_scaling_factor", "n_group", "topk_group", "scoring_func", "norm_topk_prob", "ep_size",
            "num_nextn_predict_layers", "quantization_config", "num_key_value_heads"} <= set(result.details["no_effect"])
    assert result.details["ignored"] == ()
    text = " | ".join(result.warnings)
    assert "the first 3 layers keep a dense feed-forward" in text and "8 of 256 experts plus 1 shared" in text
    assert "multi-token-prediction module(s)" in text and "are not part of the model" in text
    assert "selection bias per expert" in text and "analyze at fp8" in text


def test_deepseek_v2_maps_the_same_without_the_selection_bias(tmp_path):
    """deepseek_v2 has the same fields; its greedy routers store no selection bias (58 x 256 numbers fewer here),
    and q_lora_rank null is a plain query projection: 7168 x 128 x 192 instead of 7168 x 1536 + 1536 (norm)
    + 1536 x 128 x 192 per layer."""
    v3 = counts(load(HF / DEEPSEEK).value)
    v2 = config(DEEPSEEK) | {"model_type": "deepseek_v2", "topk_method": "greedy"}
    assert counts(load(write(tmp_path, v2)).value) == (v3[0] - 58 * 256, v3[1] - 58 * 256)
    plain = load(write(tmp_path, v2 | {"q_lora_rank": None})).value
    q_lora, q_proj = 7168 * 1536 + 1536 + 1536 * 128 * 192, 7168 * 128 * 192
    assert counts(plain)[0] == v3[0] - 58 * 256 - 61 * (q_lora - q_proj)


def test_first_k_dense_replace_zero_makes_every_layer_moe(tmp_path):
    model = load(write(tmp_path, config(DEEPSEEK) | {"first_k_dense_replace": 0})).value
    assert [(b.name, b.repeat) for b in model.layers[1:-2]] == [("layers.moe", 61)]


@pytest.mark.parametrize("fixture, change, message", [
    (DEEPSEEK, {"q_lora_rank": "drop"}, "q_lora_rank: is required for model_type 'deepseek_v3' (null for no query"),
    (DEEPSEEK, {"num_experts_per_tok": 300}, "num_experts_per_tok: 300 is more than n_routed_experts 256"),
    (DEEPSEEK, {"moe_layer_freq": 2}, "moe_layer_freq: only 1"),
    (DEEPSEEK, {"attention_bias": True}, "attention_bias: biases on the attention but not the feed-forward"),
    (DEEPSEEK, {"kv_lora_rank": None}, "kv_lora_rank: is required for model_type 'deepseek_v3'"),
    (DEEPSEEK, {"first_k_dense_replace": -1}, "first_k_dense_replace: expected a whole number >= 0, got -1"),
    (MIXTRAL, {"num_local_experts": "drop"}, "num_local_experts: is required for model_type 'mixtral'"),
    (MIXTRAL, {"num_experts_per_tok": 9}, "num_experts_per_tok: 9 is more than num_local_experts 8"),
])
def test_bad_moe_configs_name_the_field(tmp_path, fixture, change, message):
    data = {k: v for k, v in (config(fixture) | change).items() if v != "drop"}
    with pytest.raises(HFConfigError) as info:
        load(write(tmp_path, data), kind="model")
    assert message in str(info.value) and "\n" not in str(info.value)
