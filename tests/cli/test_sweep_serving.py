"""``hwexplorer sweep --rate``: a serving sweep's rows are ``serve``'s answers per configuration (same seed), the
same whichever executor simulates them (in process, local processes, a Dask LocalCluster), round-trip through
CSV and Parquet, and bad input is exit 2 with one line naming the option."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from explorer.__main__ import main
from explorer.cli import sweep_serving
from explorer.core import pmap
from explorer.core.sweep import table_io
from explorer.core.sweep.serving_columns import NAMES

ROOT = Path(__file__).resolve().parents[2]
DEVICES = ("nvidia-h100-sxm5", "nvidia-a100-sxm4-80gb")
REQUESTS = 150
ARGS = ["sweep", "llama3-8b", *[a for d in DEVICES for a in ("--device", d)], "--rate", "2,8/s",
        "--batch", "16,256", "--input", "512", "--output", "64", "--ttft-p90", "200ms", "--tpot-p90", "20ms"]
SIM = ["--simulate", "--requests", str(REQUESTS), "--seed", "3"]


def run(capsys, *args):
    try:
        code = main([str(a) for a in args])
    except SystemExit as exc:  # argparse's own one-line errors (an option's type)
        code = exc.code
    out = capsys.readouterr()
    return code, out.out, out.err


def sweep_json(capsys, tmp_path, *extra, name="r.csv"):
    code, out, err = run(capsys, *ARGS, *extra, "--out", tmp_path / name, "--json")
    assert code == 0, err
    return json.loads(out)


def _ms(x):
    return None if x is None else x * 1e3


def _serve_row(capsys, device, batch, rate, simulate: bool) -> dict:
    """What ``serve`` says for one configuration, in the sweep's columns."""
    code, out, err = run(capsys, "serve", "llama3-8b", "--device", device, "--max-batch", batch, "--rate", rate,
                         "--input", "512", "--output", "64", "--ttft-p90", "200ms", "--tpot-p90", "20ms", "--json",
                         *(SIM if simulate else []))
    assert code == 0, err
    r = json.loads(out)["simulation" if simulate else "estimate"]
    return {"ttft_p50_ms": _ms(r["ttft"]["p50_s"]), "ttft_p90_ms": _ms(r["ttft"]["p90_s"]),
            "ttft_p99_ms": _ms(r["ttft"]["p99_s"]), "tpot_p50_ms": _ms(r["tpot"]["p50_s"]),
            "tpot_p90_ms": _ms(r["tpot"]["p90_s"]), "tpot_p99_ms": _ms(r["tpot"]["p99_s"]),
            "e2e_p90_ms": _ms(r["e2e"]["p90_s"]),
            "throughput_per_device_tok_s": r["throughput_tokens_per_s_per_device"],
            "request_throughput_per_s": r["request_throughput_per_s"], "goodput_per_s": r["goodput_per_s"],
            "cost_per_million_tokens_usd": r["cost_per_million_tokens_usd"],
            "energy_per_token_j": r["energy_per_token_j"], "mean_batch": r["mean_batch"],
            "kv_utilization": r["kv_utilization"], "preemptions": r["preemptions"], "stable": r["stable"],
            "slo_met": r["slo_met"]}


@pytest.mark.parametrize("simulate", [True, False], ids=["simulation", "analytic"])
def test_rows_equal_serve_per_configuration(capsys, tmp_path, simulate):
    data = sweep_json(capsys, tmp_path, *(SIM + ["--workers", "1"] if simulate else []))
    rows = data["rows"]
    # grid order: device, precision, batch cap, rate (fastest)
    assert [(r["device"], r["max_batch"], r["rate_per_s"]) for r in rows] == [
        (d, b, r) for d in DEVICES for b in (16, 256) for r in (2.0, 8.0)]
    assert {r["method"] for r in rows} == {"simulation" if simulate else "analytic"}
    assert {r["requests"] for r in rows} == {REQUESTS if simulate else 0}
    for row in rows:
        want = _serve_row(capsys, row["device"], row["max_batch"], row["rate_per_s"], simulate)
        for name, value in want.items():
            got = row[name]
            if isinstance(value, float):
                assert got == pytest.approx(value, rel=1e-12), (row["device"], row["max_batch"], name)
            else:
                assert got == value, (row["device"], row["max_batch"], row["rate_per_s"], name)
        assert row["fits"] is True
    # the front: stable rows, none dominated by another stable row on the five objectives
    front = [r for r in rows if r["pareto"]]
    assert front and all(r["stable"] for r in front)


def _dask_cluster():
    distributed = pytest.importorskip("distributed", reason="dask.distributed not installed (the [cluster] extra)")
    return distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None)


def test_executors_give_the_same_rows(capsys, tmp_path):
    """In process == 2 local processes == a Dask LocalCluster (2 workers, started here), row for row and bit for
    bit, in grid order."""
    one = sweep_json(capsys, tmp_path, *SIM, "--workers", "1", name="one.csv")
    two = sweep_json(capsys, tmp_path, *SIM, "--workers", "2", name="two.csv")
    assert one["executor"] == {"kind": "in-process", "workers": 1}
    assert two["executor"] == {"kind": "processes", "workers": 2}
    with _dask_cluster() as cluster:
        dask = sweep_json(capsys, tmp_path, *SIM, "--cluster", cluster.scheduler_address, name="dask.csv")
    assert dask["executor"] == {"kind": "dask", "cluster": cluster.scheduler_address}
    assert one["rows"] == two["rows"] == dask["rows"]
    files = [(tmp_path / n).read_bytes() for n in ("one.csv", "two.csv", "dask.csv")]
    assert files[0] == files[1] == files[2]


def test_parallel_map_orders_and_ships_shared(tmp_path):
    items = list(range(7))
    seen = []
    want = [10 * i + 3 for i in items]
    assert pmap.parallel_map(_affine, (10, 3), items, workers=1, progress=lambda d, n: seen.append((d, n))) == want
    assert seen == [(k, 7) for k in range(1, 8)]
    assert pmap.parallel_map(_affine, (10, 3), items, workers=3) == want
    with _dask_cluster() as cluster:
        assert pmap.parallel_map(_affine, (10, 3), items, cluster=cluster.scheduler_address) == want
    assert pmap.parallel_map(_affine, (10, 3), [], workers=4) == []


def _affine(shared, x):
    a, b = shared
    return a * x + b


def test_without_dask_cluster_says_to_install_the_extra(capsys, tmp_path, monkeypatch):
    real = sweep_serving.importlib.util.find_spec
    monkeypatch.setattr(sweep_serving.importlib.util, "find_spec",
                        lambda name, *a: None if name == "distributed" else real(name, *a))
    out = tmp_path / "r.csv"
    code, text, err = run(capsys, *ARGS, *SIM, "--cluster", "tcp://127.0.0.1:8786", "--out", out)
    assert code == 2 and text == ""
    assert err.count("\n") == 1 and "--cluster" in err and "hardware-explorer[cluster]" in err
    assert not out.exists()
    monkeypatch.setitem(sys.modules, "distributed", None)  # the core's own guard: import fails -> PoolError
    with pytest.raises(pmap.PoolError, match=r"--cluster: .*\[cluster\]"):
        pmap.parallel_map(_affine, (1, 0), [1, 2], cluster="tcp://127.0.0.1:8786")


def test_unreachable_cluster_is_exit_2_with_one_line(capsys, tmp_path, monkeypatch):
    pytest.importorskip("distributed", reason="dask.distributed not installed (the [cluster] extra)")
    monkeypatch.setattr(pmap, "CONNECT_TIMEOUT_S", 1.0)
    out = tmp_path / "r.csv"
    code, text, err = run(capsys, *ARGS, *SIM, "--cluster", "tcp://127.0.0.1:9", "--out", out)
    assert code == 2 and text == ""
    assert err.count("\n") == 1 and "--cluster" in err and "tcp://127.0.0.1:9" in err
    assert "Traceback" not in err and not out.exists()


@pytest.mark.parametrize("extra, option", [
    (["--rate", "0"], "--rate"), (["--rate=-2,5/s"], "--rate"), (["--rate", "fast"], "--rate"),
    (["--rate", "2,,5"], "--rate"), (["--rate", "5 m"], "--rate"),
    (["--rate", "5", "--simulate", "--workers", "0"], "--workers"),
    (["--rate", "5", "--simulate", "--workers", "two"], "--workers"),
    (["--rate", "5", "--simulate", "--requests", "0"], "--requests"),
    (["--rate", "5", "--cluster", "tcp://h:8786"], "--cluster"),
    (["--rate", "5", "--seq-len", "512"], "--seq-len"),
    (["--rate", "5", "--batch", "0"], "--batch"),
    (["--rate", "5", "--hourly-price", "2 W"], "--hourly-price"),
    (["--simulate"], "--simulate"), (["--workers", "2"], "--workers"),
])
def test_bad_input_exit_2_naming_the_option(capsys, tmp_path, extra, option):
    out = tmp_path / "r.csv"
    code, text, err = run(capsys, "sweep", "llama3-8b", "--device", DEVICES[0], *extra, "--out", out)
    assert code == 2 and text == ""
    assert err.count("\n") == 1 and option in err, err
    assert not out.exists()


def test_rate_lists():
    assert sweep_serving.parse_rates("2,5,10/s") == (2.0, 5.0, 10.0)
    assert sweep_serving.parse_rates("10, 2") == (2.0, 10.0)
    assert sweep_serving.parse_rates("60,120/min") == pytest.approx((1.0, 2.0), rel=1e-12)
    assert sweep_serving.parse_rates("1/s,1") == (1.0,)


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_round_trip(capsys, tmp_path, suffix):
    if suffix == ".parquet":
        pytest.importorskip("pyarrow")
    data = sweep_json(capsys, tmp_path, *SIM, "--workers", "1", name=f"r{suffix}")
    back = table_io.read(tmp_path / f"r{suffix}")
    assert tuple(back) == NAMES
    for name in NAMES:
        want = [r[name] for r in data["rows"]]
        got = back[name].tolist()
        if isinstance(want[0], float) or name.endswith(("_ms", "_s", "_usd", "_j")) or name in (
                "mean_batch", "kv_utilization", "throughput_per_device_tok_s"):
            got = [None if isinstance(g, float) and math.isnan(g) else g for g in got]
            assert got == want, name  # floats written in their shortest round-trip form: equal, not close
        else:
            assert got == want, name


def test_a_device_without_room_for_the_kv_cache_is_a_row_not_an_error(capsys, tmp_path):
    code, out, err = run(capsys, "sweep", "llama3-70b", "--device", "nvidia-l4", "--device", DEVICES[0],
                         "--rate", "1", "--out", tmp_path / "r.csv", "--json")
    assert code == 0, err
    data = json.loads(out)
    l4 = [r for r in data["rows"] if r["device"] == "nvidia-l4"]
    assert l4 and not any(r["fits"] or r["pareto"] for r in l4) and l4[0]["ttft_p90_ms"] is None
    assert any("no room for the KV cache" in n and "nvidia-l4" in n for n in data["notes"])


def test_sweep_help_and_a_local_sweep_import_no_dask(tmp_path):
    """Dask is an optional extra: neither ``sweep --help`` nor a sweep without --cluster imports it."""
    code = ("import sys\nfrom explorer.__main__ import main\ntry:\n    main(sys.argv[1:])\nexcept SystemExit:\n"
            "    pass\nprint(' '.join(sorted(sys.modules)), file=sys.stderr)")
    for argv in (["sweep", "--help"],
                 [*ARGS, *SIM, "--workers", "2", "--requests", "20", "--out", str(tmp_path / "r.csv")]):
        out = subprocess.run([sys.executable, "-c", code, *argv], check=False, capture_output=True, text=True,
                             cwd=ROOT, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}, timeout=300)
        mods = set(out.stderr.split())
        assert "explorer.cli.sweep_cmd" in mods
        assert not {m for m in mods if m.split(".")[0] in ("dask", "distributed")}, argv


class _Terminal:
    """A stderr that says it is a terminal (the progress bar draws only on one)."""

    def __init__(self):
        self.text = ""

    def isatty(self):
        return True

    def write(self, s):
        self.text += s

    def flush(self):
        pass


def test_progress_bar_on_a_terminal_only(capsys, tmp_path, monkeypatch):
    term = _Terminal()
    monkeypatch.setattr(sys, "stderr", term)
    code = main([*ARGS, *SIM, "--workers", "1", "--out", str(tmp_path / "r.csv")])
    assert code == 0
    draws = [d for d in term.text.split("\r") if d.strip()]
    assert draws[0].startswith("simulating [") and draws[-1].startswith("simulating [" + "#" * 30 + "] 100% 8/8 "
                                                                            "configurations")
    assert term.text.endswith("\r")  # erased at the end
    term.text = ""
    capsys.readouterr()
    main([*ARGS, *SIM, "--workers", "1", "--out", str(tmp_path / "r.csv"), "--json"])
    assert term.text == ""  # never with --json
    json.loads(capsys.readouterr().out)


def test_a_precision_without_a_peak_is_not_served(capsys, tmp_path):
    """The A100 has no fp8 peak in the catalog: its fp8 step times are unknown, so its fp8 rows are empty (not a
    simulation of NaN steps) and a note says so; its fp16 rows are served."""
    code, out, err = run(capsys, "sweep", "llama3-8b", "--device", "nvidia-a100-sxm4-80gb", "--precision",
                         "fp16,fp8", "--rate", "2", "--simulate", "--requests", "50", "--workers", "1",
                         "--out", tmp_path / "r.csv", "--json")
    assert code == 0, err
    data = json.loads(out)
    fp16, fp8 = data["rows"]
    assert fp16["requests"] == 50 and fp16["ttft_p90_ms"] > 0 and fp16["stable"]
    assert fp8["requests"] == 0 and fp8["ttft_p90_ms"] is None and not fp8["stable"] and not fp8["pareto"]
    assert fp8["fits"]  # it fits; it is the time that is unknown
    assert data["notes"] == ["no fp8 peak (serving unknown at fp8, not served): nvidia-a100-sxm4-80gb"]


def test_a_cluster_of_worker_processes_from_another_process(tmp_path):
    """The deployment's shape: a LocalCluster of 2 worker processes (the task and the setups pickled across
    processes), driven by a separate ``hwexplorer`` process; its file is byte for byte the in-process one's."""
    distributed = pytest.importorskip("distributed", reason="dask.distributed not installed (the [cluster] extra)")
    env = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}

    def cli(*extra):
        out = subprocess.run([sys.executable, "-m", "explorer", *ARGS, *SIM, *extra], check=False,
                             capture_output=True, text=True, cwd=ROOT, env=env, timeout=300)
        assert out.returncode == 0, out.stderr[-2000:]
        return out.stdout

    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster:
        cli("--cluster", cluster.scheduler_address, "--out", str(tmp_path / "dask.csv"))
    cli("--workers", "1", "--out", str(tmp_path / "here.csv"))
    assert (tmp_path / "dask.csv").read_bytes() == (tmp_path / "here.csv").read_bytes()
