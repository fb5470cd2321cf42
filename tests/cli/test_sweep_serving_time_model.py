"""``hwexplorer sweep --rate ... --time-model calibrated``: the serving sweep's step times follow the time model as
``serve --time-model`` does (docs/calibration.md), its output says where they come from, and the roofline sweep,
which runs the ideal model, refuses the calibrated one in one line."""

from __future__ import annotations

import json

from explorer.__main__ import main

ARGS = ["llama3-8b", "--device", "nvidia-h100-sxm5", "--input", "512", "--output", "64", "--tpot-p90", "20ms"]


def run(capsys, *args):
    try:
        code = main([str(a) for a in args])
    except SystemExit as exc:
        code = exc.code
    out = capsys.readouterr()
    return code, out.out, out.err


def _sweep(capsys, tmp_path, model):
    code, out, err = run(capsys, "sweep", *ARGS, "--rate", "4/s", "--batch", "256", "--time-model", model,
                         "--out", tmp_path / f"{model}.csv", "--json")
    assert code == 0, err
    return json.loads(out)


def _serve(capsys, model):
    code, out, err = run(capsys, "serve", *ARGS, "--rate", "4/s", "--max-batch", "256", "--time-model", model,
                         "--json")
    assert code == 0, err
    return json.loads(out)


def test_the_serving_sweep_follows_the_time_model_as_serve_does(capsys, tmp_path):
    for model in ("ideal", "calibrated"):
        swept, served = _sweep(capsys, tmp_path, model), _serve(capsys, model)
        row, est = swept["rows"][0], served["estimate"]
        assert row["tpot_p90_ms"] == est["tpot"]["p90_s"] * 1e3
        assert row["ttft_p50_ms"] == est["ttft"]["p50_s"] * 1e3
        assert (swept["time_model"], swept["time_source"]) == (served["time_model"], served["time_source"])
    ideal, calibrated = _sweep(capsys, tmp_path, "ideal"), _sweep(capsys, tmp_path, "calibrated")
    assert ideal["time_source"] == "spec" and calibrated["time_source"] == "calibrated"
    # the H100's catalog calibration: measured kernels are slower than the datasheet (docs/calibration.md)
    assert calibrated["rows"][0]["tpot_p90_ms"] > 1.2 * ideal["rows"][0]["tpot_p90_ms"]


def test_the_text_says_where_the_times_come_from(capsys, tmp_path):
    code, out, err = run(capsys, "sweep", *ARGS, "--rate", "4/s", "--time-model", "calibrated",
                         "--out", tmp_path / "r.csv")
    assert code == 0, err
    assert "-- times: " in out and "calibrated model: " in out




def test_each_row_says_its_time_source_and_the_file_keeps_it(capsys, tmp_path):
    from explorer.core.sweep import table_io

    code, out, err = run(capsys, "sweep", "llama3-8b", "--device", "nvidia-h100-sxm5", "--device", "nvidia-l4",
                         "--rate", "4/s", "--time-model", "calibrated", "--out", tmp_path / "r.parquet", "--json")
    assert code == 0, err
    rows = {r["device"]: r["time_source"] for r in json.loads(out)["rows"]}
    assert rows == {"nvidia-h100-sxm5": "calibrated", "nvidia-l4": "spec"}  # the L4 has no catalog calibration
    back = table_io.read(tmp_path / "r.parquet")
    assert list(back["time_source"]) == ["calibrated", "spec"]


# --- the roofline sweep under the calibrated model ------------------------------------------------------------------

def test_the_roofline_sweep_under_the_calibrated_model_equals_analyze_point_by_point(capsys, tmp_path):
    """Each point's latency is analyze --time-model calibrated's step time for its context, and its time_source the
    label analyze gives that device (H100: calibrated; A100 40GB: partly, vector curve only; L4: spec)."""
    from explorer.core.sweep import table_io

    devices = ("nvidia-h100-sxm5", "nvidia-a100-sxm4-40gb", "nvidia-l4")
    code, out, err = run(capsys, "sweep", "llama2-7b", *[a for d in devices for a in ("--device", d)],
                         "--batch", "1,8", "--seq-len", "512,4096", "--time-model", "calibrated",
                         "--out", tmp_path / "c.csv", "--json")
    assert code == 0, err
    assert json.loads(out)["time_model"] == "calibrated"
    c = table_io.read(tmp_path / "c.csv")
    assert set(c["time_source"]) == {"calibrated", "partly calibrated", "spec"}
    for i in range(len(c["device"])):
        code, out, err = run(capsys, "analyze", "llama2-7b", "--device", c["device"][i], "--phase", c["phase"][i],
                             "--batch", int(c["batch"][i]), "--seq-len", int(c["seq_len"][i]),
                             "--time-model", "calibrated", "--json")
        assert code == 0, err
        r = json.loads(out)["results"][0]
        t = r["totals"]["calibrated_time_s"]  # analyze's JSON carries both models' times (time_s is the ideal)
        assert abs(c["latency_s"][i] - t) <= 1e-9 * t
        assert c["time_source"][i] == r["time_source"]
        if r["time_source"] != "spec":
            assert t > r["totals"]["time_s"]


def test_the_roofline_sweep_is_spec_under_the_ideal_model_and_reads_old_files(capsys, tmp_path):
    import csv

    from explorer.core.sweep import table_io
    from explorer.core.sweep.run import NAMES_V1

    code, out, err = run(capsys, "sweep", "llama2-7b", "--device", "nvidia-h100-sxm5", "--batch", "1,8",
                         "--out", tmp_path / "i.csv")
    assert code == 0, err
    assert "-- times: ideal model; time_source of the points: spec 2" in out
    new = table_io.read(tmp_path / "i.csv")
    # a file of the version before time_source: the same columns less that one, read as spec
    with open(tmp_path / "i.csv", newline="") as f:
        rows = list(csv.reader(f))
    k = rows[0].index("time_source")
    with open(tmp_path / "old.csv", "w", newline="") as f:
        csv.writer(f).writerows([r[:k] + r[k + 1:] for r in rows])
    assert tuple(rows[0][:k] + rows[0][k + 1:]) == NAMES_V1
    old = table_io.read(tmp_path / "old.csv")
    assert list(old) == list(new) and list(old["time_source"]) == ["spec", "spec"]
    assert list(old["latency_s"]) == list(new["latency_s"])
