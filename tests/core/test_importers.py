"""The importer registry (headless): sniffing picks the entry from the content whatever the suffix, the suffix
decides only when the content does not, errors name the file and list the formats, options pass through, and
importing the registry does not import onnx."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from test_onnx_import import cnn

from explorer.core import importers
from explorer.core.importers import Imported, ImporterError, file_filter, find_importer, load
from explorer.core.traces import TRACE_FORMATS, Trace, TraceError, detect_format
from explorer.core.workload.model import Model

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "traces"
BY_CONTENT = {"torch_cpu_trace.json": "chrome", "ncu_raw.csv": "nsight", "torq_trace.csv": "torq_trace",
              "runtime.csv": "torq_runtime", "annotated_runtime.csv": "torq_annotated", "smallnet.json": "model_file"}


@pytest.fixture
def onnx_path(tmp_path) -> Path:
    path = tmp_path / "cnn.onnx"
    path.write_bytes(cnn()[0])
    return path


def test_entries_have_stable_names_in_trial_order():
    assert [e.name for e in importers.importers()] == [
        "model_file", "onnx", "hf_config", "chrome", "nsight", "torq_runtime", "torq_annotated", "torq_trace",
        "nccl_tests"]
    assert [e.name for e in importers.importers("model")] == ["model_file", "onnx", "hf_config"]
    assert {e.kind for e in importers.importers("trace")} == {"trace"}
    with pytest.raises(ValueError, match="unknown kind"):
        importers.importers("device")


@pytest.mark.parametrize("fixture, name", sorted(BY_CONTENT.items()))
def test_sniff_picks_the_entry_whatever_the_suffix(tmp_path, fixture, name):
    for suffix in ("", ".dat", ".onnx", ".csv"):
        copy = tmp_path / f"renamed{suffix}"
        shutil.copyfile(FIXTURES / fixture, copy)
        assert find_importer(copy).name == name
    if name != "model_file":  # the registry and load_trace decide a trace's format in one place
        assert detect_format(FIXTURES / fixture) == name


def test_onnx_is_sniffed_from_its_protobuf_head(onnx_path, tmp_path):
    renamed = tmp_path / "model.bin"
    shutil.copyfile(onnx_path, renamed)
    assert find_importer(renamed).name == "onnx"
    result = load(renamed)
    assert isinstance(result, Imported) and result.kind == "model" and isinstance(result.value, Model)
    assert result.importer == "onnx" and result.path == renamed
    assert [layer.name for layer in result.value.layers] == ["conv1", "bn1", "relu1", "pool1", "flat", "fc"]
    assert result.details["unsupported"] == () and result.details["graph_macs"] > 0


def test_the_suffix_decides_only_when_the_content_does_not(tmp_path):
    broken = tmp_path / "broken.onnx"
    broken.write_bytes(b"this is not a protobuf")
    assert find_importer(broken).name == "onnx"  # the ONNX loader then says what is wrong with it
    with pytest.raises(ValueError, match="broken.onnx"):
        load(broken)
    odd = tmp_path / "notes.csv"
    odd.write_text("hello,world\n1,2\n", encoding="utf-8")
    with pytest.raises(ImporterError, match="cannot tell the trace format") as info:
        find_importer(odd, kind="trace")
    assert "notes.csv" in str(info.value) and "could be Nsight Compute raw CSV or" in str(info.value)


def test_an_unknown_file_names_the_file_and_lists_the_formats(tmp_path):
    path = tmp_path / "photo.png"
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(64))
    with pytest.raises(ImporterError) as info:
        load(path)
    message = str(info.value)
    assert str(path) in message and "cannot tell the file format" in message
    for entry in importers.importers():
        assert entry.label in message
    with pytest.raises(ImporterError, match=r"absent\.json: cannot be read \(no such file\)"):
        find_importer(tmp_path / "absent.json")


def test_kind_and_name_narrow_the_choice(tmp_path):
    torch = FIXTURES / "torch_cpu_trace.json"
    with pytest.raises(ImporterError, match=r"cannot tell the model format .*no importer claims the suffix '\.csv'"):
        find_importer(FIXTURES / "ncu_raw.csv", kind="model")
    assert find_importer(torch, kind="model").name == "model_file"  # the only model format claiming .json
    assert find_importer(torch, name="chrome").name == "chrome"
    with pytest.raises(ImporterError, match="unknown model importer 'chrome'; expected one of model_file, onnx"):
        find_importer(torch, kind="model", name="chrome")
    with pytest.raises(TraceError, match="Kernel Name"):  # an explicit name is obeyed
        load(FIXTURES / "torq_trace.csv", name="nsight")


def test_options_pass_through_and_unknown_ones_are_refused():
    torq = FIXTURES / "torq_trace.csv"
    with pytest.raises(TraceError) as info:
        load(torq)
    assert info.value.field == "clock_hz"
    result = load(torq, clock_hz="800 MHz")
    assert isinstance(result.value, Trace) and result.value.clock_hz == 800e6
    assert result.warnings == result.value.warnings and result.importer == "torq_trace"
    with pytest.raises(ImporterError, match="takes no option dims"):
        load(torq, dims={"seq": 4})


def test_file_filters_come_from_the_registry():
    assert file_filter("trace").startswith("Profiler traces (*.json *.csv *.txt);;Chrome / PyTorch trace JSON")
    assert file_filter("model") == ("Models (*.json *.onnx);;Hardware Explorer model (*.json);;"
                                    "ONNX model (*.onnx);;All files (*)")
    assert len(TRACE_FORMATS) == len(importers.importers("trace"))


def test_a_registered_importer_is_tried_and_can_be_removed(tmp_path):
    path = tmp_path / "layers.lst"
    path.write_text("TINY-MODEL\n", encoding="utf-8")
    importers.register("tiny", "Tiny text model", "model", (".tiny",),
                       lambda p: p.read_text(encoding="utf-8").startswith("TINY-MODEL"),
                       "explorer.core.workload.templates:get_template")
    try:
        assert find_importer(path).name == "tiny" and ".tiny" in importers.suffixes("model")
        with pytest.raises(ValueError, match="already registered"):
            importers.register("tiny", "again", "model", (), lambda p: False, "x:y")
    finally:
        importers.unregister("tiny")
    with pytest.raises(ImporterError):
        find_importer(path)


def test_importing_the_registry_does_not_import_onnx():
    code = ("import sys, explorer.core.importers as i; i.find_importer(i.__file__.replace('__init__.py', "
            "'registry.py'), name='onnx'); print(sorted(m for m in sys.modules if m.split('.')[0] == 'onnx'))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=Path(__file__).resolve().parents[2])
    assert out.stdout.strip() == "[]"


def test_the_cli_tells_paths_by_the_registry_suffixes():
    from explorer.cli.common import is_path

    assert all(is_path(f"model{s}") for s in importers.suffixes("model"))
    assert is_path("dev.yaml") and not is_path("nvidia-l4")
