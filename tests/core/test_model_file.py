import json

import pytest

from explorer.core.workload.layers import Context
from explorer.core.workload.model import (
    LayerSpec,
    Model,
    ModelError,
    build_table,
    dumps_model,
    load_model_file,
    save_model_file,
)

GOOD = {"format": 1, "name": "tiny", "input": {"channels": 3, "height": 32, "width": 32},
        "layers": [{"kind": "conv2d", "name": "c1", "out_channels": 16, "kernel_size": 3, "padding": 1},
                   {"kind": "bottleneck", "name": "b", "repeat": 2, "mid_channels": 4},
                   {"kind": "global_avgpool"}, {"kind": "dense", "in_features": 16, "out_features": 10}]}


def test_load_save_round_trips_exactly(tmp_path):
    path = tmp_path / "m.json"
    path.write_text(json.dumps(GOOD, indent=2) + "\n")
    model = load_model_file(path)
    save_model_file(model, tmp_path / "again.json")
    assert (tmp_path / "again.json").read_text() == path.read_text()
    assert json.loads(dumps_model(model)) == GOOD


@pytest.mark.parametrize("patch, fragment", [
    ({"format": 7}, "format: this version reads format 1"),
    ({"input": {"channels": 3}}, "input: expected one of"),
    ({"input": {"features": -4}}, "input.features: expected a whole number >= 1"),
    ({"layers": [{"kind": "conv2d", "out_channels": -16, "kernel_size": 3}]}, "layers[0].out_channels: must be at least 1"),
    ({"layers": [{"kind": "dense", "in_features": 3}]}, "layers[0].out_features: is required"),
    ({"layers": [{"kind": "warp"}]}, "layers[0].kind: unknown layer kind 'warp'"),
    ({"layers": [{"kind": "dense", "in_features": 3, "out_features": 2, "colour": 1}]}, "unknown parameter(s) colour"),
    ({"layers": [{"kind": "bottleneck", "mid_channels": 4, "repeat": 0}]}, "layers[0].repeat: expected a whole number"),
])
def test_malformed_models_name_the_field(patch, fragment):
    with pytest.raises(ModelError) as err:
        Model.from_dict({**GOOD, **patch}, "m.json")
    assert fragment in str(err.value)


def test_truncated_file(tmp_path):
    path = tmp_path / "t.json"
    path.write_text(json.dumps(GOOD)[:60])
    with pytest.raises(ModelError, match=r"t.json: line 1: invalid JSON"):
        load_model_file(path)


def test_shape_mismatch_is_flagged_not_dropped():
    model = Model.from_dict({**GOOD, "layers": GOOD["layers"] + [{"kind": "dense", "in_features": 99, "out_features": 5},
                                                                  {"kind": "relu"}]})
    table = build_table(model, Context())
    assert table.errors == [(4, "'dense' expects 99 input features, got a tensor of shape (10)")]
    assert table.status[4].n_rows == 0 and table.status[5].out_shape == (10,)  # analysis continues after it


def test_repeated_block_counts_and_shapes():
    table = build_table(Model.from_dict(GOOD), Context(batch=2))
    status = table.status[1]
    assert status.in_shape == (16, 32, 32) and status.out_shape == (16, 32, 32)
    rows = [i for i, li in enumerate(table.layer_index) if li == 1]
    assert set(table.count[rows]) == {2}
    # bottleneck 16 -> 4 -> 4 -> 16 with no projection: 3 convs (1x1, 3x3, 1x1) + 3 BN
    assert table.total("params") == (3 * 3 * 3 * 16) + 2 * (16 * 4 + 9 * 4 * 4 + 4 * 16 + 2 * (4 + 4 + 16)) + 16 * 10 + 10


def test_depthwise_conv_gemm_view():
    model = Model.make("dw", {"channels": 32, "height": 10, "width": 10},
                       [LayerSpec.make("conv2d", out_channels=32, kernel_size=3, padding=1, groups=32)])
    t = build_table(model, Context(batch=4))
    assert tuple(t.gemm[0]) == (4 * 100, 1, 9) and t.gemm_count[0] == 32
    assert t.macs[0] == 4 * 32 * 100 * 9


def test_attention_decode_reads_the_kv_cache():
    model = Model.make("t", {"tokens": 1024, "hidden": 768}, [LayerSpec.make("attention", heads=12)])
    t = build_table(model, Context(batch=1, seq_len=1024, phase="decode"))
    scores = t.names.index("attention0.scores")
    assert t.out_shapes[scores] == (12, 1, 1024)
    assert t.kv_cache_elems[scores] == 2 * 1024 * 768
    assert t.kv_read_elems[scores] == 1023 * 768  # the cached keys (values are read by the context GEMM)
    gqa = Model.make("g", {"tokens": 128, "hidden": 4096}, [LayerSpec.make("attention", heads=32, kv_heads=8, bias=False)])
    tg = build_table(gqa, Context())
    assert tg.params[0] == 4096 * (4096 + 2 * 1024)  # fused QKV with 8 KV heads of 128


def test_every_layer_kind_is_documented():
    from pathlib import Path

    from explorer.core.workload.layers import REGISTRY

    doc = (Path(__file__).resolve().parents[2] / "docs" / "model-file.md").read_text()
    assert [k for k in REGISTRY if f"| `{k}` |" not in doc] == []


def test_explicit_input_shapes_survive_a_save(tmp_path):
    model = Model.make("branch", {"features": 8}, [
        LayerSpec.make("dense", "a", in_features=8, out_features=4),
        LayerSpec.make("dense", "b", in_features=8, out_features=2, input_shape=(8,)),
    ])
    save_model_file(model, tmp_path / "m.json")
    again = load_model_file(tmp_path / "m.json")
    assert again == model and json.loads((tmp_path / "m.json").read_text())["layers"][1]["input_shape"] == [8]
    assert build_table(again, Context()).status[1].in_shape == (8,)
