"""``hwexplorer sweep``: the file round-trips to the API's points, the front is printed with units, bad input is
exit 2 with one line naming the option and leaves no file."""

import json
import sys

import numpy as np
import pytest

from explorer.__main__ import main
from explorer.core.sweep import table_io
from explorer.core.sweep.grid import Grid
from explorer.core.sweep.run import NAMES, sweep
from explorer.core.workload.templates import get_template
from explorer.store.engine import open_catalog

DEVICES = ("nvidia-h100-sxm5", "amd-mi250x", "google-tpu-v5p", "intel-xeon-8480plus")
ARGS = ["sweep", "llama2-7b", *[a for d in DEVICES for a in ("--device", d)], "--batch", "1,4..16",
        "--seq-len", "512..2048", "--precision", "fp16,fp8"]


def run(capsys, *args):
    code = main([str(a) for a in args])
    out = capsys.readouterr()
    return code, out.out, out.err


def expected():
    with open_catalog() as repo:
        devices = repo.devices(DEVICES)
    return sweep(get_template("llama2-7b").build(), devices,
                 Grid(batches=(1, 4, 8, 16), seq_lens=(512, 1024, 2048), phases=("decode",),
                      precisions=("fp16", "fp8")))


def _same(read, api):
    for name in NAMES:
        a, b = read[name], np.asarray(api.columns[name])
        if b.dtype.kind == "f":
            np.testing.assert_allclose(a.astype(float), b, rtol=1e-15, equal_nan=True, err_msg=name)
        else:
            assert a.tolist() == b.tolist(), name


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_round_trip(tmp_path, capsys, suffix):
    if suffix == ".parquet":
        pytest.importorskip("pyarrow")
    out = tmp_path / f"results{suffix}"
    code, text, err = run(capsys, *ARGS, "--out", out)
    assert code == 0, err
    api = expected()
    assert len(api) == 4 * 3 * 2 * len(DEVICES)
    read = table_io.read(out)
    _same(read, api)
    assert f"sweep: {len(api)}/{len(api)} points written" in err
    # the front, printed with units, is the API's front
    assert "latency [ms]" in text and "cost [USD/1M tokens]" in text and "energy [mJ/token]" in text
    front_lines = text.split("Pareto front", 1)[1].splitlines()[2:]
    assert len([ln for ln in front_lines if ln.strip()]) == int(api.columns["pareto"].sum()) > 0
    assert "cost unknown" in text and "amd-mi250x" in text  # the unpriced device is said, not hidden
    assert not list(tmp_path.glob(".*.tmp"))


def test_csv_header_and_empty_unknowns(tmp_path, capsys):
    out = tmp_path / "r.csv"
    assert run(capsys, *ARGS, "--out", out)[0] == 0
    lines = out.read_text().splitlines()
    assert lines[0] == ",".join(NAMES)
    xeon = [ln for ln in lines if ln.startswith("intel-xeon-8480plus,,fp16,")]
    assert xeon and all(",," in ln for ln in xeon)  # no fp16 peak: latency unknown is an empty cell, not 0


def test_json_front(tmp_path, capsys):
    code, text, err = run(capsys, *ARGS, "--out", tmp_path / "r.csv", "--json")
    assert code == 0 and err == ""
    data = json.loads(text)
    api = expected()
    assert data["points"] == len(api) and data["passes"] == 2
    assert [c["name"] for c in data["columns"]] == list(NAMES)
    assert {c["name"]: c["unit"] for c in data["columns"]}["latency_s"] == "s"
    assert [p["latency_s"] for p in data["pareto"]] == pytest.approx(api.columns["latency_s"][api.front].tolist())


@pytest.mark.parametrize("extra, option", [
    (["--batch", "0"], "--batch"), (["--batch", "1..x"], "--batch"), (["--seq-len", "64..8"], "--seq-len"),
    (["--precision", "fp17"], "--precision"), (["--phase", "train"], "--phase"),
    (["--out", "{tmp}/r.xlsx"], "--out"), (["--out", "{tmp}/missing/r.csv"], "--out"),
    (["--device", "no-such-device"], "--device"),
])
def test_bad_input_exit_2_one_line(tmp_path, capsys, extra, option):
    extra = [e.replace("{tmp}", str(tmp_path)) for e in extra]
    args = ARGS + ["--out", tmp_path / "r.csv"] + extra
    code, out, err = run(capsys, *args)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith(f"hwexplorer: error: {option}")
    assert not list(tmp_path.iterdir())  # nothing written


def test_parquet_without_pyarrow(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # import pyarrow now raises ImportError
    code, _, err = run(capsys, *ARGS, "--out", tmp_path / "r.parquet")
    assert code == 2 and err.count("\n") == 1
    assert "--out: writing .parquet needs pyarrow (pip install 'hwexplorer[sweep]')" in err


def test_systems_and_devices_in_one_sweep(tmp_path, capsys):
    out = tmp_path / "r.csv"
    code, text, err = run(capsys, "sweep", "llama2-7b", "--system", "nvidia-dgx-h100", "--device", "nvidia-h100-sxm5",
                          "--batch", "1,64", "--seq-len", "1024", "--precision", "fp8", "--out", out)
    assert code == 0, err
    read = table_io.read(out)
    assert sorted(set(read["device"].tolist())) == ["nvidia-dgx-h100", "nvidia-h100-sxm5"]
    assert all(read["layout"][read["device"] == "nvidia-dgx-h100"]) and not any(
        read["layout"][read["device"] == "nvidia-h100-sxm5"])
    assert "TP" in text.split("Pareto front", 1)[1]
    code, _, err = run(capsys, "sweep", "llama2-7b", "--system", "no-such-system", "--out", tmp_path / "x.csv")
    assert code == 2 and err.startswith("hwexplorer: error: --system") and err.count("\n") == 1
    code, _, err = run(capsys, "sweep", "llama2-7b", "--out", tmp_path / "x.csv")
    assert code == 2 and err.startswith("hwexplorer: error: --device")
