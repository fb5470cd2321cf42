"""``hwexplorer train``: a layout by hand, --best, LoRA, JSON fields, one-line errors naming the option."""

import json

import pytest

from explorer.__main__ import main


def run(capsys, *argv):
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


BASE = ("train", "llama3-70b", "--system", "nvidia-dgx-h100", "--global-batch", "64", "--seq-len", "4096")


def test_layout_json_fields_and_hand_checks(capsys):
    code, out, _ = run(capsys, *BASE, "--nodes", "2", "--tp", "8", "--pp", "2", "--zero", "1", "--tokens", "1e9",
                       "--json")
    assert code == 0
    data = json.loads(out)
    assert data["system"]["devices"] == 16 and data["setup"]["tokens_per_step"] == 64 * 4096
    (lay,) = data["layouts"]
    assert (lay["tp"], lay["pp"], lay["dp"], lay["cp"]) == (8, 2, 1, 1)
    assert lay["microbatches"] == 64
    assert sum(lay["step_parts_s"].values()) == pytest.approx(lay["step_time_s"])
    # ZeRO 1 with dp 1: 2 + 2 + 12 bytes per parameter the device holds
    assert lay["gradient_bytes"] == lay["weight_bytes"] and lay["optimizer_bytes"] == 6 * lay["weight_bytes"]
    assert lay["memory_bytes"] == pytest.approx(8 * lay["weight_bytes"] + lay["activation_bytes"])
    assert lay["train"]["steps"] == pytest.approx(1e9 / (64 * 4096))
    assert lay["train"]["time_s"] == pytest.approx(lay["train"]["steps"] * lay["step_time_s"])
    assert lay["mfu"] == pytest.approx(data["work"]["model_flops"] / (lay["step_time_s"] * 16 * data["peak_flops"]))
    assert data["chosen"] == lay


def test_best_ranks_fitting_layouts_first(capsys):
    code, out, _ = run(capsys, *BASE, "--nodes", "8", "--json")
    assert code == 0
    data = json.loads(out)
    assert data["ranked"] and len(data["layouts"]) > 5
    fits = [x["fits"] for x in data["layouts"]]
    assert fits == sorted(fits, reverse=True)
    fitting = [x["step_time_s"] for x in data["layouts"] if x["fits"]]
    assert fitting == sorted(fitting)
    assert all(x["tp"] * x["pp"] * x["dp"] * x["cp"] == 64 for x in data["layouts"])


def test_text_output(capsys):
    code, out, _ = run(capsys, *BASE, "--tp", "8", "--lora", "16")
    assert code == 0
    assert "LoRA rank 16" in out and "MFU %" in out and "fits" in out


def test_lora_fits_where_full_does_not(capsys):
    _, full, _ = run(capsys, *BASE, "--tp", "8", "--json")
    _, lora, _ = run(capsys, *BASE, "--tp", "8", "--lora", "16", "--json")
    assert not json.loads(full)["chosen"]["fits"] and json.loads(lora)["chosen"]["fits"]


@pytest.mark.parametrize("extra,option", [
    (("--tp", "8", "--micro-batch", "3"), "--global-batch"),
    (("--zero", "4"), "--zero"),
    (("--tp", "3"), "--tp"),
    (("--nodes", "2", "--tp", "8", "--pp", "3"), "--pp"),
    (("--nodes", "2", "--tp", "8", "--pp", "2", "--schedule", "interleaved", "--virtual-stages", "3"),
     "--virtual-stages"),
    (("--tp", "8", "--virtual-stages", "2"), "--virtual-stages"),
    (("--tp", "8", "--schedule", "zb"), "--schedule"),
    (("--tp", "8", "--recompute", "most"), "--recompute"),
    (("--tokens", "-1"), "--tokens"),
    (("--tokens", "lots"), "--tokens"),
    (("--lora", "-2"), "--lora"),
    (("--lora", "8", "--lora-targets", "qq"), "--lora-targets"),
    (("--tp", "8", "--best"), "--best"),
    (("--tp", "8", "--cp", "3"), "--cp"),
    (("--micro-batch", "0"), "--micro-batch"),
    (("--tp", "8", "--ep", "2"), "--ep"),
    (("--seq-len", "0"), "--seq-len"),
    (("--global-batch", "-4"), "--global-batch"),
    (("--nodes", "0"), "--nodes"),
    (("--tp", "8", "--dp", "0"), "--dp"),
])


def test_bad_input_one_line(capsys, extra, option):
    code, out, err = run(capsys, *BASE, *extra)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith(f"hwexplorer: error: {option}")


def test_heads_not_divided(capsys):
    """A layout that does not divide the model: GPT-2's 12 heads over TP 8 is refused by name."""
    code, _, err = run(capsys, "train", "gpt2", "--system", "nvidia-dgx-h100", "--global-batch", "8", "--seq-len",
                       "1024", "--tp", "8")
    assert code == 2 and err.startswith("hwexplorer: error: --tp") and "12 attention heads" in err


def test_expert_parallel_layout(capsys):
    """Mixtral-8x7B at TP 8 with its 8 experts over EP 8: the all-to-alls run in the forward and the backward."""
    code, out, _ = run(capsys, "train", "mixtral-8x7b", "--system", "nvidia-dgx-h100", "--global-batch", "16",
                       "--seq-len", "4096", "--tp", "8", "--ep", "8", "--json")
    assert code == 0
    (lay,) = json.loads(out)["layouts"]
    assert lay["ep"] == 8 and lay["tp_comm_time_s"] > 0


def test_unknown_system_and_model(capsys):
    code, _, err = run(capsys, "train", "llama3-70b", "--system", "nope", "--global-batch", "8", "--seq-len", "64")
    assert code == 2 and err.startswith("hwexplorer: error: --system") and err.count("\n") == 1
    code, _, err = run(capsys, "train", "resnet50", "--system", "nvidia-dgx-h100", "--global-batch", "8",
                       "--seq-len", "64")
    assert code == 2 and err.startswith("hwexplorer: error: MODEL") and "transformer" in err


def test_unknown_tdp_prints_a_dash(capsys):
    """The TPU v5p's catalog entry states no TDP: its energy is unknown, printed as a dash, null in JSON."""
    argv = ("train", "llama3-70b", "--system", "google-tpu-v5p-128-slice", "--global-batch", "64", "--seq-len",
            "4096")
    code, out, _ = run(capsys, *argv)
    assert code == 0 and "nan" not in out and "electricity unknown (no TDP in the catalog)" in out
    code, out, _ = run(capsys, *argv, "--json")
    assert json.loads(out)["chosen"]["train"]["energy_j"] is None


def test_best_searches_expert_parallelism_on_a_mixture_of_experts(capsys):
    """Mixtral-8x7B (8 experts) on a DGX H100: --best ranks layouts with EP 2, 4 and 8 inside the TP group beside
    EP 1. EP inside TP leaves each device's weights as TP alone places them (8 experts / ep, each split tp / ep
    ways: 8 / tp experts' worth), so an EP layout and its EP-1 twin hold the same weights and differ in time (the
    experts' all-to-all against the all-reduce, and the GEMM shapes). A dense model gets EP 1 only."""
    code, out, _ = run(capsys, "train", "mixtral-8x7b", "--system", "nvidia-dgx-h100", "--global-batch", "64",
                       "--seq-len", "4096", "--best", "--json")
    assert code == 0
    layouts = json.loads(out)["layouts"]
    eps = {lay["ep"] for lay in layouts}
    assert eps == {1, 2, 4, 8}
    assert all(lay["tp"] % lay["ep"] == 0 for lay in layouts)
    twins = {(lay["tp"], lay["pp"], lay["dp"], lay["ep"]): lay for lay in layouts}
    compared = 0
    for (tp, pp, dp, ep), lay in twins.items():
        if ep > 1:
            base = twins[(tp, pp, dp, 1)]
            assert lay["weight_bytes"] == pytest.approx(base["weight_bytes"], rel=1e-9)
            assert lay["step_time_s"] != base["step_time_s"]
            compared += 1
    assert compared >= 6
    code, out, _ = run(capsys, *BASE, "--best", "--json")
    assert code == 0 and {lay["ep"] for lay in json.loads(out)["layouts"]} == {1}
