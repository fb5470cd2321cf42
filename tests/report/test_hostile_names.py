"""Issue 24 bullets that had no test of their own: a layer ``kind`` that is a list or an object is one line
naming the field (it was ``TypeError: unhashable type``), and a hostile layer or model name is escaped in the
HTML report (never markup that runs)."""

from __future__ import annotations

import json

import pytest
from test_spreadsheet_safe import CATALOG

from explorer.__main__ import main
from explorer.core.analysis.evaluate import evaluate
from explorer.core.hardware.device_file import load_device_file
from explorer.core.session.workspace import Assumptions
from explorer.core.workload.model import LayerSpec, Model, ModelError, load_model_file
from explorer.report import build_report, write_report

MODEL = {"format": 1, "name": "m", "input": {"features": 16},
         "layers": [{"kind": "dense", "name": "fc", "in_features": 16, "out_features": 8}]}


@pytest.mark.parametrize("kind", [["dense"], {"a": 1}, 7, None])
def test_a_layer_kind_that_is_not_text_is_one_line(tmp_path, capsys, kind):
    doc = json.loads(json.dumps(MODEL))
    doc["layers"][0]["kind"] = kind
    path = tmp_path / "m.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(ModelError, match=r"layers\[0\]\.kind") as err:
        load_model_file(path)
    assert "\n" not in str(err.value)
    code = main(["analyze", str(path), "--device", "nvidia-h100-sxm5"])
    out = capsys.readouterr().err
    assert code == 2 and out.count("\n") == 1 and "layers[0].kind" in out, out


def test_a_hostile_name_is_escaped_in_the_html_report(tmp_path):
    evil = "<script>alert(1)</script>"
    model = Model.make(evil, {"features": 64}, [LayerSpec.make("dense", f"<img src=x onerror=alert(1)>{evil}",
                                                               in_features=64, out_features=64)])
    data = build_report(evaluate(model, [load_device_file(CATALOG / "nvidia-h100-sxm5.yaml")], "fp16"),
                        Assumptions())
    path = tmp_path / "r.html"
    write_report(data, path)
    html = path.read_text(encoding="utf-8")
    assert "<script>alert" not in html and "<img src=x" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
