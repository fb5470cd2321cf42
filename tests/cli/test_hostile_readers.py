"""Hostile input for the other readers (issue 24): Hugging Face configs, ONNX files (mutated protobuf fields,
attributes, dimensions, truncated bytes) and the catalog import (YAML, JSON, CSV). Each gives its own one-line
error (exit 2 in the CLI) or a finite result, never a traceback; a rejected catalog import is a report of
one-line problems that writes nothing. Shares the mutation helpers of ``test_hostile_input``; the counts of
inputs tried and rejected are printed with ``-s``."""

from __future__ import annotations

import csv
import io
import json
import math
import time
from pathlib import Path

import numpy as np
import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st
from onnx import AttributeProto, ModelProto
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper as nh
from test_hostile_input import COUNTS, DEVICE_DOC, FUZZ, JSON, ROOT, _fuzz, _mutate, one_line

from explorer.__main__ import main
from explorer.core.importers.hf_config import HFConfigError, load_hf_config
from explorer.core.importers.onnx.convert import OnnxImportError, import_onnx
from explorer.core.workload.layers import Context
from explorer.core.workload.model import build_table
from explorer.store.engine import open_catalog
from explorer.store.io import ImportFileError, export_text, import_file

HF = ROOT / "tests" / "fixtures" / "hf_configs"
HF_DOCS = [json.loads((HF / name).read_text()) for name in ("llama-3-8b.json", "gemma-2-9b.json",
                                                               "deepseek-r1-0528.json")]


def _finite(model) -> None:
    table = build_table(model, Context())
    assert math.isfinite(table.total("macs")) and math.isfinite(table.total("params"))


# ------------------------------------------------------------------------------------------ HF config
@FUZZ
@given(data=st.data(), which=st.sampled_from(range(len(HF_DOCS))))
def test_fuzz_hf_configs(tmp_path, data, which):
    imported = _fuzz(tmp_path, data, "hf config", HF_DOCS[which], "config.json", load_hf_config, HFConfigError)
    if imported is not None:
        _finite(imported.value)


@pytest.mark.parametrize("field, value", [("vocab_size", 1e999), ("hidden_size", 4096.5), ("intermediate_size", [4096]),
                                          ("model_type", {"a": 1}), ("num_hidden_layers", -1)])
def test_hf_config_wrong_types_are_one_line(tmp_path, capsys, field, value):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**HF_DOCS[0], field: value}))
    with pytest.raises(HFConfigError, match=field):
        load_hf_config(path)
    assert field in one_line(capsys, "analyze", path, "--device", "x.yaml")


def test_a_huge_layer_count_is_counted_not_walked(tmp_path):
    """Found by the fuzz test: build_table checked a repeated block's shape once per repeat, so 2**64 layers in a
    config (or ``repeat`` in a model file) never finished. The work is bounded by the layers the file describes."""
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**HF_DOCS[0], "num_hidden_layers": 2**64}))
    start = time.perf_counter()
    table = build_table(load_hf_config(path).value, Context())
    assert time.perf_counter() - start < 1.0
    one = build_table(load_hf_config(HF / "llama-3-8b.json").value, Context())
    blocks = sum(m * c for m, c in zip(one.macs, one.count) if c == 32)  # the 32 decoder layers of Llama 3 8B
    assert table.total("macs") == pytest.approx(one.total("macs") + blocks * (2**64 - 32) / 32, rel=1e-9)


# ------------------------------------------------------------------------------------------------ ONNX
def _onnx_model() -> bytes:
    rng = np.random.default_rng(0)

    def init(name, *shape):
        return nh.from_array(rng.standard_normal(shape).astype(np.float32), name)

    inits = [init("W1", 8, 3, 3, 3), init("B1", 8), init("Wf", 10, 8 * 4 * 4), init("Bf", 10),
             nh.from_array(np.array([1, -1], dtype=np.int64), "shape")]
    nodes = [h.make_node("Conv", ["x", "W1", "B1"], ["c"], pads=[1, 1, 1, 1], strides=[1, 1], dilations=[1, 1],
                         name="conv"),
             h.make_node("Relu", ["c"], ["r"], name="relu"),
             h.make_node("MaxPool", ["r"], ["p"], kernel_shape=[2, 2], strides=[2, 2], name="pool"),
             h.make_node("Reshape", ["p", "shape"], ["f"], name="flat"),
             h.make_node("Gemm", ["f", "Wf", "Bf"], ["g"], transB=1, name="fc"),
             h.make_node("Softmax", ["g"], ["y"], axis=-1, name="softmax")]
    graph = h.make_graph(nodes, "g", [h.make_tensor_value_info("x", T.FLOAT, ["N", 3, 8, 8])],
                         [h.make_tensor_value_info("y", T.FLOAT, None)], inits)
    return h.make_model(graph, opset_imports=[h.make_opsetid("", 17)]).SerializeToString()


ONNX_BYTES = _onnx_model()
INT64 = st.one_of(st.sampled_from([-2**63, -7, -1, 0, 1, 2, 3, 2**24, 2**31, 2**40, 2**62, 2**63 - 1]),
                  st.integers(-2**63, 2**63 - 1))
OPS = ("Conv", "Gemm", "MatMul", "MaxPool", "AveragePool", "Relu", "Reshape", "Softmax", "Transpose", "Add",
       "ConvTranspose", "Flatten", "Concat", "Split", "Slice", "Gather", "LayerNormalization", "Einsum", "Foo")


def _mutate_onnx(data) -> bytes:
    """One hostile change to the small model: truncated or flipped bytes, or a field, attribute, dimension,
    initializer shape, operator or tensor name changed in the protobuf."""
    how = data.draw(st.sampled_from(["truncate", "flip", "input dim", "attribute", "initializer dims", "op_type",
                                     "tensor name", "opset"]))
    if how == "truncate":
        return ONNX_BYTES[:data.draw(st.integers(1, len(ONNX_BYTES) - 1))]
    if how == "flip":
        at, byte = data.draw(st.integers(0, len(ONNX_BYTES) - 1)), data.draw(st.integers(0, 255))
        return ONNX_BYTES[:at] + bytes([byte]) + ONNX_BYTES[at + 1:]
    model = ModelProto.FromString(ONNX_BYTES)
    g = model.graph
    node = g.node[data.draw(st.integers(0, len(g.node) - 1))]
    if how == "input dim":
        dims = g.input[0].type.tensor_type.shape.dim
        d = dims[data.draw(st.integers(0, len(dims) - 1))]
        if data.draw(st.booleans()):
            d.dim_value = data.draw(INT64)
        else:
            d.dim_param = data.draw(st.text(max_size=6))
    elif how == "attribute":
        if not node.attribute:
            node.attribute.add(name="axis", type=AttributeProto.INT, i=0)
        a = node.attribute[data.draw(st.integers(0, len(node.attribute) - 1))]
        kind = data.draw(st.sampled_from(["ints", "int", "float", "string", "type"]))
        if kind == "ints":
            del a.ints[:]
            a.ints.extend(data.draw(st.lists(INT64, max_size=6)))
        elif kind == "int":
            a.i = data.draw(INT64)
        elif kind == "float":
            a.f = data.draw(st.floats(width=32))
        elif kind == "string":
            a.s = data.draw(st.binary(max_size=6))
        else:
            a.type = data.draw(st.sampled_from(list(AttributeProto.AttributeType.values())))
    elif how == "initializer dims":
        t = g.initializer[data.draw(st.integers(0, len(g.initializer) - 1))]
        del t.dims[:]
        t.dims.extend(data.draw(st.lists(INT64, max_size=4)))
    elif how == "op_type":
        node.op_type = data.draw(st.sampled_from(OPS))
    elif how == "tensor name":
        names = node.input if data.draw(st.booleans()) and node.input else node.output
        names[data.draw(st.integers(0, len(names) - 1))] = data.draw(st.sampled_from(["", "x", "y", "c", "zz"]))
    else:
        model.opset_import[0].version = data.draw(st.integers(-5, 30))
    return model.SerializeToString()


@FUZZ
@given(data=st.data())
def test_fuzz_onnx_files(tmp_path, data):
    path = tmp_path / "m.onnx"
    path.write_bytes(_mutate_onnx(data))
    result = _fuzz_load("onnx", path, import_onnx, OnnxImportError)
    if result is not None:
        _finite(result.model)


def _fuzz_load(kind: str, path: Path, load, error):
    COUNTS[f"{kind} tried"] += 1
    try:
        return load(path)
    except error as exc:
        assert "\n" not in str(exc), exc
        COUNTS[f"{kind} rejected"] += 1
        return None


def test_a_truncated_onnx_file_is_one_line_in_the_cli(tmp_path, capsys):
    path = tmp_path / "m.onnx"
    path.write_bytes(ONNX_BYTES[:len(ONNX_BYTES) // 2])
    assert "truncated or corrupt ONNX file" in one_line(capsys, "analyze", path, "--device", "x.yaml")


# ---------------------------------------------------------------------------------------- catalog import
REPO = None


def _repo():
    global REPO
    if REPO is None:
        REPO = open_catalog("sqlite://", seed=False)
    return REPO


def _import(path: Path):
    """The import into an empty catalog (replacing what an earlier example added): a report, or the file's own
    one-line error. A rejected import lists one-line problems and adds nothing."""
    repo = _repo()
    before = {d.id: d for d in repo.devices()}
    report = import_file(repo, path, replace=True)
    if not report.ok:
        assert all("\n" not in line for line in report.lines()) and not report.committed
        assert {d.id: d for d in repo.devices()} == before
        raise ImportFileError(report.summary())
    return report


EXPORT = {"format": 1, "devices": [{k: v for k, v in DEVICE_DOC.items() if k != "format"}], "count": 1}


@FUZZ
@given(data=st.data(), fmt=st.sampled_from(["json", "yaml"]), whole=st.booleans())
def test_fuzz_catalog_import_yaml_json(tmp_path, data, fmt, whole):
    doc = _mutate(EXPORT if whole else DEVICE_DOC, data)
    path = tmp_path / f"c.{fmt}"
    path.write_text(json.dumps(doc, allow_nan=True) if fmt == "json" else yaml.safe_dump(doc))
    _fuzz_load(f"catalog {fmt}", path, _import, ImportFileError)


def _csv_text() -> list[list[str]]:
    from explorer.core.hardware.device_file import device_from_dict

    text = export_text([device_from_dict(DEVICE_DOC)], "csv")
    return list(csv.reader(io.StringIO(text)))


CSV = _csv_text()
CELL = st.one_of(st.sampled_from(["", " ", "nan", "inf", "-1", "1e999", "0", "=1+1", "1 kg", "3 TB/s", '"', "\n",
                                  "a,b", "x" * 300]), st.text(max_size=10))


@FUZZ
@given(data=st.data())
def test_fuzz_catalog_import_csv(tmp_path, data):
    rows = [list(r) for r in CSV]
    how = data.draw(st.sampled_from(["cell", "header", "truncate", "extra"]))
    if how in ("cell", "header"):
        r = 0 if how == "header" else data.draw(st.integers(1, len(rows) - 1))
        rows[r][data.draw(st.integers(0, len(rows[r]) - 1))] = data.draw(CELL)
    elif how == "extra":
        rows[1].append(data.draw(CELL))
    out = io.StringIO()
    csv.writer(out).writerows(rows)
    text = out.getvalue()
    if how == "truncate":
        text = text[:data.draw(st.integers(0, len(text)))]
    path = tmp_path / "c.csv"
    path.write_text(text)
    _fuzz_load("catalog csv", path, _import, ImportFileError)


def test_zz_print_reader_counts():
    print("\nfuzz counts:", dict(sorted(COUNTS.items())))


# --------------------------------------------------------------------------- defects the fuzz tests found
@pytest.mark.parametrize("dims, message", [([], r"its data do not fit its dimensions \[\]"),
                                           ([8, -1], r"dimensions \[8, -1\] are not sizes")])
def test_an_onnx_initializer_whose_data_do_not_fit_its_dims(tmp_path, capsys, dims, message):
    """Found by the fuzz test: numpy's 'cannot reshape array of size 8 into shape ()' escaped the reader."""
    model = ModelProto.FromString(ONNX_BYTES)
    t = next(t for t in model.graph.initializer if t.name == "B1")
    del t.dims[:]
    t.dims.extend(dims)
    path = tmp_path / "m.onnx"
    path.write_bytes(model.SerializeToString())
    with pytest.raises(OnnxImportError, match=rf"m.onnx: initializer 'B1': {message}"):
        import_onnx(path)
    assert "initializer 'B1'" in one_line(capsys, "analyze", path, "--device", "x.yaml")


def test_a_figure_note_that_is_not_text_is_a_rejected_row(tmp_path, capsys):
    """Found by the fuzz test: a list as a figure's note passed the checks and the database write raised
    (sqlite3.ProgrammingError: type 'list' is not supported)."""
    doc = json.loads(json.dumps(EXPORT))
    doc["devices"][0]["tdp"] = {"value": "72 W", "note": ["a", "b"]}
    doc["devices"][0]["notes"] = {"x": 1}
    path = tmp_path / "c.json"
    path.write_text(json.dumps(doc))
    db = f"sqlite:///{tmp_path / 'c.db'}"
    assert main(["catalog", "import", str(path), "--db", db]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "devices[0]: nvidia-l4: tdp.note: expected text, got list"
    assert out[1] == "devices[0]: nvidia-l4: notes: expected text, got dict"
    assert out[2] == "c.json: nothing imported: 2 problem(s) in 1 of 1 row(s)"


def test_a_csv_header_with_a_line_break_keeps_each_problem_on_one_line(tmp_path, capsys):
    """Found by the fuzz test: a column named '\\r' was quoted as is, breaking the problem across lines."""
    rows = [list(r) for r in CSV]
    rows[0][0] = "id\r\n=cmd"
    out = io.StringIO()
    csv.writer(out).writerows(rows)
    path = tmp_path / "c.csv"
    path.write_text(out.getvalue())
    assert main(["catalog", "import", str(path), "--db", f"sqlite:///{tmp_path / 'c.db'}"]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("header: ?: id\\n=cmd: unknown column") and lines[-1].startswith("c.csv: nothing imported")


@pytest.mark.parametrize("op, inputs", [("Gemm", ["f"]), ("Conv", ["x"]), ("Gather", ["f"])])
def test_an_onnx_node_of_the_wrong_form_is_named(tmp_path, capsys, op, inputs):
    """Found by the fuzz test: a node missing the inputs its operator reads raised IndexError, ValueError or
    AttributeError from the mapper, the MAC count or the shape folding."""
    model = ModelProto.FromString(ONNX_BYTES)
    node = next(n for n in model.graph.node if n.op_type == "Gemm")
    node.op_type = op
    del node.input[:]
    node.input.extend(inputs)
    path = tmp_path / "m.onnx"
    path.write_bytes(model.SerializeToString())
    with pytest.raises(OnnxImportError, match=rf"m.onnx: node 4 'fc' \({op}\): does not have the inputs"):
        import_onnx(path)
    one_line(capsys, "analyze", path, "--device", "x.yaml")


def test_an_onnx_name_with_a_line_break_stays_on_one_line(tmp_path, capsys):
    model = ModelProto.FromString(ONNX_BYTES)
    model.graph.input[0].type.tensor_type.shape.dim[1].dim_param = "a\nb"
    path = tmp_path / "m.onnx"
    path.write_bytes(model.SerializeToString())
    assert "('a\\nb')" in one_line(capsys, "analyze", path, "--device", "x.yaml")


def test_a_reshape_without_its_data_input_is_not_folded():
    """Found by the fuzz test: the shape folding evaluated a Reshape whose data input is '' (AttributeError)."""
    model = ModelProto.FromString(ONNX_BYTES)
    model.graph.node[3].input[0] = ""
    result = import_onnx(model.SerializeToString())  # nothing reads the input past the pooling: finite, no crash
    assert [layer.name for layer in result.model.layers] == ["conv", "relu", "pool"]
