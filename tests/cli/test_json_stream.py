"""`analyze --json` streams each device's layers (print_json's Rows) and must write exactly the bytes
``json.dumps(indent=2)`` writes for the whole document; the rows it streams equal the plain analysis_json."""

from __future__ import annotations

import io
import json
import math

import pytest

from explorer.__main__ import main
from explorer.cli.analyze_cmd import analysis_json
from explorer.cli.common import Rows, print_json, to_plain
from explorer.core.analysis.evaluate import evaluate
from explorer.core.hardware.catalog_files import load_shipped_devices
from explorer.core.workload.layers import Context
from explorer.core.workload.templates import get_template


@pytest.mark.parametrize("doc", [
    {"a": Rows(lambda: iter([{"x": 1, "y": [1, 2]}, {"x": None}])), "b": 2},
    {"a": Rows(lambda: iter([])), "b": [Rows(lambda: iter([{"k": "v"}]))]},
    {"list": [{"deep": {"rows": Rows(lambda: iter([1, 2.5, "s"]))}}]},
])
def test_streamed_json_is_byte_for_byte_json_dumps(doc, monkeypatch):
    out = io.StringIO()
    monkeypatch.setattr("sys.stdout", out)
    print_json(doc)
    assert out.getvalue() == json.dumps(to_plain(doc), indent=2) + "\n"


def test_analyze_json_streamed_equals_the_plain_document(capsys):
    """GPT-2 decode on an H200 (no matrix-engine data: null mapping efficiencies) and a TPU v5p (bf16 for fp16):
    the command's output parses to analysis_json's plain document, and null stands where a value is unknown."""
    devices = ("nvidia-h200-sxm", "google-tpu-v5p")
    assert main(["analyze", "gpt2", "-d", devices[0], "-d", devices[1], "--phase", "decode", "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    shipped = {d.id: d for d in load_shipped_devices()}
    r = evaluate(get_template("gpt2").build(), [shipped[i] for i in devices], "fp16", Context(phase="decode"))
    plain = json.loads(json.dumps(analysis_json(r)))
    assert printed["results"][0]["layers"] == plain["results"][0]["layers"]
    h200 = printed["results"][0]["layers"]
    gemm_rows = [row for row in h200 if row["gemm"]["m"] > 0]
    assert gemm_rows and all(row["mapping_efficiency"] is None and row["fringe_tax"] is None for row in gemm_rows)
    assert all(row["time_s"] is not None and math.isfinite(row["time_s"]) for row in h200)
