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


def test_the_roofline_sweep_refuses_the_calibrated_model_in_one_line(capsys, tmp_path):
    code, out, err = run(capsys, "sweep", "llama3-8b", "--device", "nvidia-h100-sxm5", "--time-model", "calibrated",
                         "--out", tmp_path / "r.csv")
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and "--time-model" in err


def test_each_row_says_its_time_source_and_the_file_keeps_it(capsys, tmp_path):
    from explorer.core.sweep import table_io

    code, out, err = run(capsys, "sweep", "llama3-8b", "--device", "nvidia-h100-sxm5", "--device", "nvidia-l4",
                         "--rate", "4/s", "--time-model", "calibrated", "--out", tmp_path / "r.parquet", "--json")
    assert code == 0, err
    rows = {r["device"]: r["time_source"] for r in json.loads(out)["rows"]}
    assert rows == {"nvidia-h100-sxm5": "calibrated", "nvidia-l4": "spec"}  # the L4 has no catalog calibration
    back = table_io.read(tmp_path / "r.parquet")
    assert list(back["time_source"]) == ["calibrated", "spec"]
