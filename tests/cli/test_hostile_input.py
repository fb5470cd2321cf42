"""Every reader turns hostile input into its own one-line error (exit 2 in the CLI), never a traceback (issue 24):
deep nesting, wrong types where a name or a number belongs, and random JSON values mutated into valid documents
(hypothesis). The counts of inputs tried and rejected are printed with ``-s``."""

from __future__ import annotations

import copy
import json
import math
from collections import Counter
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from explorer.__main__ import main
from explorer.core.hardware.device_file import DeviceFileError, load_device_file
from explorer.core.hardware.system_file import SystemFileError, load_system_file
from explorer.core.session.project import Project, ProjectError, load_project
from explorer.core.session.state import State
from explorer.core.traces import TraceError, load_trace
from explorer.core.workload.model import ModelError, load_model_file
from explorer.core.workload.templates import get_template
from explorer.store.io import ImportFileError
from explorer.store.io import _entries as parse_import

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "traces"
DEEP = "[" * 100_000 + "]" * 100_000
NESTED_70 = {"layers": json.loads("[" * 70 + "]" * 70)}
COUNTS: Counter = Counter()


def one_line(capsys, *args) -> str:
    code = main([str(a) for a in args])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1 and err.startswith("hwexplorer: error: "), err
    return err


@pytest.mark.parametrize("text", [DEEP, json.dumps(NESTED_70)], ids=["100000 levels", "70 levels"])
def test_deep_nesting_is_one_line_in_every_reader(tmp_path, capsys, text):
    path = tmp_path / "deep.json"
    path.write_text(text)
    with pytest.raises(ModelError, match="nested"):
        load_model_file(path)
    assert "nested" in one_line(capsys, "analyze", path, "--device", "x.yaml")
    with pytest.raises(ProjectError, match="nested"):
        load_project(path)
    with pytest.raises(TraceError, match="nested"):
        load_trace(path)
    with pytest.raises(DeviceFileError, match="nested"):
        load_device_file(path)
    with pytest.raises(SystemFileError, match="nested"):
        load_system_file(path)
    with pytest.raises(ImportFileError, match="nested"):
        parse_import(text, "json", "deep.json")


@pytest.mark.parametrize("key, value", [("pid", [1, 2]), ("tid", {"a": 1})])
def test_a_chrome_thread_id_that_is_a_list_or_an_object(tmp_path, key, value):
    events = [{"name": "k", "ph": "X", "ts": 0, "dur": 5, "pid": 1, "tid": 2, "cat": "kernel"}]
    events[0][key] = value
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"traceEvents": events}))
    with pytest.raises(TraceError, match=rf"traceEvents\[0\]\.{key}'?: must be a number or text"):
        load_trace(path)


JSON = st.recursive(st.none() | st.booleans() | st.integers(-2**70, 2**70) | st.floats() | st.text(max_size=8),
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner,
                                                                                 max_size=3), max_leaves=8)


def _paths(node, prefix=()):
    yield prefix
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _paths(v, prefix + (k,))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _paths(v, prefix + (i,))


def _mutate(doc, data):
    doc = copy.deepcopy(doc)
    paths = [p for p in _paths(doc) if p]
    path = data.draw(st.sampled_from(paths))
    node = doc
    for step in path[:-1]:
        node = node[step]
    node[path[-1]] = data.draw(JSON)
    return doc


def _write(tmp_path, name, doc) -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(doc, allow_nan=True))
    return path


MODEL_DOC = get_template("gpt2").build().to_dict()
FUZZ = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def _fuzz(tmp_path, data, kind: str, doc, name: str, load, error):
    """Load a mutated copy of ``doc``: the reader's value, or None after its own one-line ``error``."""
    path = _write(tmp_path, name, _mutate(doc, data))
    COUNTS[f"{kind} tried"] += 1
    try:
        return load(path)
    except error as exc:
        lines = str(exc).splitlines()  # one line; a device file's several problems follow a first line naming it
        assert len(lines) == 1 or (error is DeviceFileError and lines[0].startswith(f"{path}: ")
                                   and lines[1:] == [f"  {p}" for p in exc.problems]), exc
        COUNTS[f"{kind} rejected"] += 1
        return None


PROJECT_DOC = Project.of_state(State(model=get_template("gpt2").build(), device_ids=("a",))).to_dict()
TRACE_DOC = json.loads((FIXTURES / "torch_cpu_trace.json").read_text())
TRACE_DOC["traceEvents"] = TRACE_DOC["traceEvents"][:12]
DEVICE_DOC = json.loads(json.dumps(yaml.safe_load((ROOT / "catalog" / "nvidia-l4.yaml").read_text()), default=str))
SYSTEM_DOC = json.loads(json.dumps(yaml.safe_load((ROOT / "catalog" / "systems" / "nvidia-dgx-h100.yaml").read_text()),
                                   default=str))


@FUZZ
@given(data=st.data())
def test_fuzz_model_files(tmp_path, data):
    _fuzz(tmp_path, data, "model", MODEL_DOC, "m.json", load_model_file, ModelError)


@FUZZ
@given(data=st.data())
def test_fuzz_project_files(tmp_path, data):
    _fuzz(tmp_path, data, "project", PROJECT_DOC, "p.hwproj", load_project, ProjectError)


@FUZZ
@given(data=st.data())
def test_fuzz_chrome_traces(tmp_path, data):
    trace = _fuzz(tmp_path, data, "trace", TRACE_DOC, "t.json", load_trace, TraceError)
    assert trace is None or all(math.isfinite(e.start_s) and math.isfinite(e.duration_s) for e in trace.events)


@FUZZ
@given(data=st.data())
def test_fuzz_device_files(tmp_path, data):
    _fuzz(tmp_path, data, "device", DEVICE_DOC, "d.json", load_device_file, DeviceFileError)


@FUZZ
@given(data=st.data())
def test_fuzz_system_files(tmp_path, data):
    system = _fuzz(tmp_path, data, "system", SYSTEM_DOC, "s.json", load_system_file, SystemFileError)
    assert system is None or all(d.size >= 1 and system.devices % d.size == 0 for d in system.domains)


@pytest.mark.parametrize("part", ["calibrations", "device_overrides"])
@pytest.mark.parametrize("key", ["\x1e", "a\nb", "\u2028"])
def test_a_project_key_with_a_line_break_is_one_line(tmp_path, part, key):
    """Found by test_fuzz_project_files: a key holding a character str.splitlines breaks at (U+001E) split the
    message of a project's calibrations or device overrides over two lines."""
    doc = copy.deepcopy(PROJECT_DOC)
    doc[part] = {key: 1}
    path = tmp_path / "p.hwproj"
    path.write_text(json.dumps(doc), encoding="utf-8")
    with pytest.raises(ProjectError) as err:
        load_project(path)
    assert len(str(err.value).splitlines()) == 1 and part in str(err.value)


@pytest.mark.parametrize("value", [1e20, 1e300, 2**53 + 2])
def test_a_dimension_beyond_2_53_is_one_line(tmp_path, capsys, value):
    """Found by the project fuzz: a whole-number dimension too large for a float (1e300) crashed the work table
    (OverflowError converting it); every whole-number parameter is now at most 2^53 (exact in a float)."""
    doc = copy.deepcopy(PROJECT_DOC)
    layer = next(x for x in doc["model"]["layers"] if x["kind"] == "embedding")
    layer["embedding_dim"] = value
    path = tmp_path / "p.hwproj"
    path.write_text(json.dumps(doc), encoding="utf-8")
    assert main(["analyze", str(path), "--device", "nvidia-h100-sxm5", "--json"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "embedding_dim: must be at most 2^53" in err[0]


def test_zz_print_counts():
    print("\nfuzz counts:", dict(sorted(COUNTS.items())))


@pytest.mark.parametrize("value", ["Infinity", "1e999", "-Infinity", "NaN"])
def test_a_dimension_that_is_not_finite(tmp_path, capsys, value):
    """Issue 24: the whole-number check ran before the finite one (OverflowError, ValueError)."""
    path = tmp_path / "m.json"
    path.write_text('{"format": 1, "name": "m", "input": {"features": 4}, '
                    f'"layers": [{{"kind": "dense", "in_features": 4, "out_features": {value}}}]}}')
    with pytest.raises(ModelError, match=r"layers\[0\]\.out_features: expected a finite number"):
        load_model_file(path)
    assert "expected a finite number" in one_line(capsys, "analyze", path, "--device", "x.yaml")
