"""The tensors' formats as assumptions: checked, carried by projects only where set, and re-evaluated when edited."""

from __future__ import annotations

import json

import numpy as np
import pytest

from explorer.core.session.project import Project, load_project, save_project
from explorer.core.session.results import DEPENDS, Results
from explorer.core.session.state import Assumptions, State
from explorer.core.session.workspace import Workspace
from explorer.core.workload.templates import get_template


@pytest.fixture
def ws(h100, a100):
    known = {d.id: d for d in (h100, a100)}
    w = Workspace(get_template("gpt2").build(), lookup=lambda ids: [known[i] for i in ids if i in known])
    w.select_devices(["h100"])
    return w


def test_unset_formats_are_none_and_leave_the_analysis_as_it_was():
    a = Assumptions()
    assert (a.weights, a.activations, a.kv_cache) == (None, None, None) and a.tensor_formats is None
    assert Assumptions(weights="int4-g128").tensor_formats.compute == "fp16"


@pytest.mark.parametrize("values, message", [
    ({"weights": "int3"}, "weights: unknown format 'int3'"),
    ({"kv_cache": "mxfp5"}, "kv_cache: unknown format"),
    ({"activations": 8}, "activations: expected a format name"),
])
def test_bad_formats_are_refused_naming_the_field(values, message):
    with pytest.raises(ValueError, match=message):
        Assumptions(**values).checked()
    with pytest.raises(ValueError, match="assumptions." + message.split(":")[0]):
        Assumptions.from_dict(values)


def test_a_project_writes_the_formats_only_where_set(ws, tmp_path):
    path = tmp_path / "p.hwproj"
    save_project(Project.of(ws), path)
    assert not {"weights", "activations", "kv_cache"} & set(json.loads(path.read_text())["assumptions"])
    ws.set_assumptions(weights="int4-g128", kv_cache="fp8")
    save_project(Project.of(ws), path)
    written = json.loads(path.read_text())["assumptions"]
    assert written["weights"] == "int4-g128" and written["kv_cache"] == "fp8" and "activations" not in written
    assert load_project(path).assumptions == ws.assumptions


def test_an_old_project_without_formats_reads_with_none():
    data = {"kind": "hwexplorer-project", "format": 2, "devices": [],
            "model": get_template("gpt2").build().to_dict(),
            "assumptions": {"precision": "bf16", "batch": 4}, "trace": None, "requirements": {}}
    p = Project.from_dict(data, "old.hwproj")
    assert p.assumptions.precision == "bf16" and p.assumptions.tensor_formats is None


def test_editing_a_format_re_evaluates_and_undo_restores(ws):
    assert "assumptions.weights" in DEPENDS["arrays"] and "assumptions.kv_cache" in DEPENDS["arrays"]
    before = ws.analysis
    ws.set_assumptions(weights="int4-g128")
    after = ws.analysis
    assert after is not before and after.devices.formats.weights.name == "int4-g128"
    assert np.array_equal(after.weight_bytes, before.weight_bytes * 4.125 / 16)
    ws.undo()
    assert ws.assumptions.weights is None and ws.analysis.devices.formats is None


def test_the_report_bundle_of_an_analysis_keeps_its_formats(ws):
    ws.set_assumptions(weights="mxfp4", activations="fp8")
    bundle = Results.of_analysis(ws.analysis, ws.assumptions)
    a = bundle.state.assumptions
    assert (a.precision, a.weights, a.activations, a.kv_cache) == ("fp16", "mxfp4", "fp8", "fp16")
    assert bundle.analysis is ws.analysis and isinstance(bundle.state, State)
