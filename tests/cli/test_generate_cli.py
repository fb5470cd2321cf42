"""``hwexplorer analyze MODEL --phase generate --input P --output T``: the JSON carries the core's numbers, the table
names its units, bad input is exit 2 with one line naming the option."""

import json

import numpy as np
import pytest

from explorer.__main__ import main
from explorer.core.analysis.generate import generate
from explorer.core.workload.templates import get_template
from explorer.store.engine import open_catalog

DEVICES = ("nvidia-h100-sxm5", "nvidia-a100-sxm4-80gb")


def run(capsys, *args):
    code = main([str(a) for a in args])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_json_equals_the_core(capsys):
    code, out, err = run(capsys, "analyze", "llama2-7b", "--phase", "generate", "--input", 512, "--output", 16,
                         "--batch", 2, *[a for d in DEVICES for a in ("--device", d)], "--json")
    assert code == 0, err
    data = json.loads(out)
    with open_catalog() as repo:
        devices = repo.devices(DEVICES)
    g = generate(get_template("llama2-7b").build(), devices, "fp16", batch=2, input_tokens=512, output_tokens=16)
    assert data["assumptions"] == {"precision": "fp16", "batch": 2, "input_tokens": 512, "output_tokens": 16,
                                   "attention": "naive", "phase": "generate"}
    for j, row in enumerate(data["devices"]):
        assert row["device"] == DEVICES[j]
        assert row["total_s"] == pytest.approx(float(g.total_s[j]), rel=1e-12)
        assert row["ttft_s"] == pytest.approx(float(g.ttft_s[j]), rel=1e-12)
        assert [s["kv_tokens"] for s in row["steps"]] == list(range(513, 528))
        np.testing.assert_allclose([s["time_s"] for s in row["steps"]], g.step_s[:, j], rtol=1e-12)
        assert row["throughput_tok_s"] == pytest.approx(2 * 16 / row["total_s"], rel=1e-12)


def test_table_has_units(capsys):
    code, out, _ = run(capsys, "analyze", "llama2-7b", "--phase", "generate", "--output", 8, "--device", DEVICES[0])
    assert code == 0
    assert "TTFT [s]" in out and "throughput [tokens/s]" in out and "7 decode steps at KV 4097..4103" in out


@pytest.mark.parametrize(("args", "option"), [
    (["--phase", "generate"], "--output"),
    (["--phase", "generate", "--output", "0"], "--output"),
    (["--phase", "generate", "--output", "4", "--input", "-3"], "--input"),
    (["--phase", "generate", "--output", "4", "--batch", "0"], "--batch"),
    (["--output", "4"], "--output"),
])
def test_bad_input_is_one_line_and_exit_2(capsys, args, option):
    code, out, err = run(capsys, "analyze", "llama2-7b", "--device", DEVICES[0], *args)
    assert code == 2 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and option in lines[0]


def test_a_model_without_tokens(capsys):
    code, _, err = run(capsys, "analyze", "resnet50", "--device", DEVICES[0], "--phase", "generate", "--output", 4)
    assert code == 2 and "generate" in err and len(err.strip().splitlines()) == 1
