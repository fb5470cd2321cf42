"""``hwexplorer analyze --phase train``: the training step's rows with their part, hand-checked totals, one-line
errors (docs/cli.md)."""

import json

import pytest

from explorer.__main__ import main

MLP = {"format": 1, "name": "tiny MLP", "input": {"features": 4},
       "layers": [{"kind": "dense", "name": "fc1", "in_features": 4, "out_features": 8},
                  {"kind": "relu", "name": "act"},
                  {"kind": "dense", "name": "fc2", "in_features": 8, "out_features": 2}]}


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.fixture
def mlp(tmp_path):
    path = tmp_path / "mlp.json"
    path.write_text(json.dumps(MLP))
    return path


def test_train_phase_json_parts_and_totals_by_hand(mlp, capsys):
    """Batch 2: forward 228 FLOPs, backward 456, Adam 12 x 58 = 696 (tests/core/training/test_train_phase.py)."""
    code, out, _ = run(capsys, "analyze", mlp, "-d", "nvidia-h100-sxm5", "--phase", "train", "--batch", "2",
                       "--json")
    assert code == 0
    data = json.loads(out)
    assert data["assumptions"]["phase"] == "train" and data["assumptions"]["lm_head"] == "all"
    (res,) = data["results"]
    by_part = {}
    for layer in res["layers"]:
        by_part[layer["part"]] = by_part.get(layer["part"], 0) + layer["flops"] * layer["count"]
    assert by_part == {"forward": 228, "backward": 456, "optimizer": 696}
    assert res["totals"]["flops"] == 1380 and res["totals"]["throughput_unit"] == "sequences/s"
    adam = next(x for x in res["layers"] if x["name"] == "fc1 (Adam)")
    assert adam["bytes"] == 28 * 40 and adam["kind"] == "optimizer"


def test_prefill_json_has_no_part(mlp, capsys):
    code, out, _ = run(capsys, "analyze", mlp, "-d", "nvidia-h100-sxm5", "--json")
    assert code == 0 and all("part" not in x for x in json.loads(out)["results"][0]["layers"])


def test_train_text_says_training_step(mlp, capsys):
    code, out, _ = run(capsys, "analyze", mlp, "-d", "nvidia-h100-sxm5", "--phase", "train")
    assert code == 0 and "per training step" in out and "fc2 (Adam)" in out and "hwexplorer train's" in out


def test_train_on_a_system_is_refused_in_one_line(capsys):
    code, _, err = run(capsys, "analyze", "llama3-8b", "--system", "nvidia-dgx-h100", "--phase", "train")
    assert code == 2 and err.count("\n") == 1 and "--phase" in err and "hwexplorer train" in err


def test_plan_does_not_offer_the_train_phase(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["plan", "llama3-8b", "-d", "nvidia-h100-sxm5", "--phase", "train"])
    assert exc.value.code == 2
