"""``analyze --system``: a layout by hand, --best, clusters, JSON fields, one-line errors naming the field."""

import json

import pytest

from explorer.__main__ import main


def run(capsys, *argv):
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


BASE = ("analyze", "llama2-70b", "--system", "nvidia-dgx-h100", "--phase", "decode", "--batch", "8",
        "--seq-len", "4096")


def test_tp8_json_per_device_memory_by_hand(capsys):
    code, out, _ = run(capsys, *BASE, "--tp", "8", "--json")
    assert code == 0
    data = json.loads(out)
    assert data["system"]["devices"] == 8 and data["system"]["device"] == "nvidia-h100-sxm5"
    nv = data["system"]["domains"][0]
    assert nv["scope"] == "scale_up" and nv["bandwidth_per_direction_Bps"] == 450e9  # 900 GB/s bidirectional
    (lay,) = data["layouts"]
    assert (lay["tp"], lay["pp"], lay["ep"], lay["dp"]) == (8, 1, 1, 1)
    norms = 161 * 8192  # replicated RMSNorm weights; every other weight split over 8 devices
    assert lay["weight_bytes"] == 2 * ((68_976_648_192 - norms) / 8 + norms)
    assert lay["kv_cache_bytes"] == 8 * 4096 * 80 * 2 * 128 * 2  # one of the 8 KV heads per device
    assert lay["comm_time_s"] > 0 and lay["fits"]
    assert lay["step_time_s"] == pytest.approx(lay["compute_time_s"] + lay["comm_time_s"])


def test_best_ranks_every_valid_layout_and_marks_the_choice(capsys):
    code, out, _ = run(capsys, *BASE, "--best", "--json")
    data = json.loads(out)
    labels = [x["label"] for x in data["layouts"]]
    assert len(labels) == 10 and data["objective"] == "throughput"
    fitting = [x for x in data["layouts"] if x["fits"]]
    assert data["chosen"] == {k: fitting[0][k] for k in ("tp", "pp", "ep", "dp", "microbatches")}
    per_device = [x["throughput_per_device"] for x in fitting]
    assert per_device == sorted(per_device, reverse=True)
    code, text, _ = run(capsys, *BASE)
    assert code == 0 and "* " in text and "TP8 PP1 DP1" in text and "tokens/s/device" in text


def test_cluster_of_nodes(capsys):
    code, out, _ = run(capsys, *BASE, "--nodes", "2", "--tp", "16", "--json")
    assert code == 0
    data = json.loads(out)
    assert data["system"]["devices"] == 16 and data["system"]["nodes"] == 2
    lay = data["layouts"][0]
    assert lay["level_bytes"][data["system"]["domains"][1]["name"]] > 0  # TP 16 crosses the network


@pytest.mark.parametrize("extra, field", [
    (("--tp", "3"), "--tp: tp 3 x pp 1 does not divide"),
    (("--tp", "8", "--ep", "2"), "--ep: 2 needs a mixture of experts"),
    (("--tp", "2", "--dp", "2"), "--tp x pp x dp: 2 x 1 x 2 = 4 devices"),
    (("--dp", "16", "--tp", "1", "--pp", "1"), "--tp x pp x dp"),
    (("--nodes", "0"), "--nodes: must be a positive whole number"),
    (("--tp", "8", "--best"), "--best: give either"),
    (("--skew", "-1"), "--skew"),
])
def test_bad_layouts_exit_2_with_one_line(capsys, extra, field):
    code, out, err = run(capsys, *BASE, *extra)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and field in err


def test_unknown_system_and_both_device_and_system(capsys):
    code, _, err = run(capsys, "analyze", "llama2-70b", "--system", "nope")
    assert code == 2 and "--system: unknown system 'nope'" in err
    code, _, err = run(capsys, "analyze", "llama2-70b", "--system", "nvidia-dgx-h100", "-d", "nvidia-h100-sxm5")
    assert code == 2 and "--system: give either --system or --device" in err
    code, _, err = run(capsys, "analyze", "llama2-70b")
    assert code == 2 and "--device: give at least one --device DEV (or --system SYS)" in err


def test_system_file_with_bandwidth_in_the_wrong_unit(capsys, tmp_path):
    from explorer.core.hardware.catalog_files import shipped_catalog_dir

    text = (shipped_catalog_dir() / "systems" / "nvidia-dgx-h100.yaml").read_text()
    bad = tmp_path / "bad.yaml"
    bad.write_text(text.replace("value: 900 GB/s", "value: 900 GB"))
    code, out, err = run(capsys, *BASE[:2], "--system", str(bad))
    assert code == 2 and out == "" and err.count("\n") == 1
    assert "domains[0].bandwidth" in err
