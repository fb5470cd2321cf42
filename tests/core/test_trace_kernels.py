"""Measured kernels from profiler exports (explorer/core/analysis/trace_kernels.py): shapes and bytes by hand, the
median of repeats, what is left out and why, and bad input in one line. The fixtures and how they were made:
tests/fixtures/traces/make_calibration_traces.py."""

import json
from pathlib import Path

import pytest

from explorer.core.analysis.trace_kernels import detect_format, read_nsight_kernels, read_torch_trace

TRACES = Path(__file__).parents[1] / "fixtures" / "traces"
TORCH = TRACES / "torch_cuda_calibration_trace.json"
NCU = TRACES / "ncu_calibration_raw.csv"


def test_torch_trace_gives_gemm_shapes_and_elementwise_bytes_by_hand():
    found = read_torch_trace(TORCH, "dev", "fit-x", "fp16")
    assert found.kernels == 55 and found.format == "torch"  # 3 x (16 operators + 1 extra split-K kernel) + NCCL
    gemms = {(r.op, r.batch, r.m, r.n, r.k) for r in found.rows if r.kind == "gemm"}
    assert ("aten::addmm", 1, 512, 1024, 512) in gemms  # bias [1024], (512 x 512) @ (512 x 1024)
    assert ("aten::bmm", 8, 512, 512, 128) in gemms  # (8, 512, 128) @ (8, 128, 512)
    assert ("aten::mm", 1, 64, 64, 16384) in gemms and len(gemms) == 8
    ew = {(r.op, r.bytes) for r in found.rows if r.kind == "elementwise"}
    # fp16, 2 B per element: add reads two tensors and writes one (6 B per element), relu 4, add_ (in place)
    # reads two and writes the first: 6, copy_ reads the source and writes the destination: 4
    assert ew == {("aten::add", 6 * 2**14), ("aten::mul", 6 * 2**16), ("aten::add", 6 * 2**18),
                  ("aten::relu", 4 * 2**20), ("aten::add_", 6 * 2**22), ("aten::copy_", 4 * 2**24),
                  ("aten::mul", 6 * 2**26)}
    assert all(r.published == "median of 3 kernels" and r.source == "fit-x" for r in found.rows)
    assert found.skipped == {"kernel with no External id (no operator to take its shape from)": 1,
                             "GEMM at float, not fp16": 3,
                             "operator neither a GEMM nor element-wise (aten::_softmax)": 3}


def test_median_of_repeats_and_split_k_kernels_add_up():
    """The fixture runs each operator at x0.98, x1.00 and x1.03 of one time: the median is the x1.00 run; the
    split-K GEMM's two kernels (80 % and 20 %) add up to it."""
    events = json.loads(TORCH.read_text())["traceEvents"]
    ops = {e["args"]["External id"]: e for e in events if e.get("cat") == "cpu_op"}
    per_op: dict = {}
    for e in events:
        if e.get("cat") == "kernel" and "External id" in e["args"]:
            per_op[e["args"]["External id"]] = per_op.get(e["args"]["External id"], 0.0) + e["dur"]
    big = sorted(t for x, t in per_op.items() if ops[x]["args"]["Input Dims"] == [[8192, 8192], [8192, 8192]])
    row = next(r for r in read_torch_trace(TORCH, "d", "s", "fp16").rows if r.m == 8192)
    assert row.time_s == pytest.approx(big[1] * 1e-6, rel=1e-12) and big[0] < big[1] < big[2]
    split = sorted(t for x, t in per_op.items() if ops[x]["args"]["Input Dims"] == [[64, 16384], [16384, 64]])
    row = next(r for r in read_torch_trace(TORCH, "d", "s", "fp16").rows if r.k == 16384)
    assert row.time_s == pytest.approx(split[1] * 1e-6, rel=1e-12)


def test_the_precision_picks_the_gemms():
    found = read_torch_trace(TORCH, "d", "s", "fp32")
    assert {(r.m, r.n, r.k) for r in found.rows if r.kind == "gemm"} == {(1024, 1024, 1024)}  # the sgemm
    assert found.skipped["GEMM at c10::Half, not fp32"] == 24


def test_nsight_gives_elementwise_kernels_with_measured_dram_bytes():
    found = read_nsight_kernels(NCU, "d", "s", "fp16")
    assert found.kernels == 24 and [r.bytes for r in found.rows] == [2.0**e for e in range(15, 29, 2)]
    assert all(r.kind == "elementwise" for r in found.rows)
    assert found.skipped == {"GEMM (Nsight Compute records no GEMM shape)": 2,
                             "more than 1 FLOP per DRAM byte: not element-wise": 1}
    assert detect_format(NCU) == "nsight" and detect_format(TORCH) == "torch"
    assert detect_format(TRACES / "runtime.csv") == "csv"


@pytest.mark.parametrize("text, message", [
    ("{", "line 1: not JSON"),
    ('{"traceEvents": 3}', "traceEvents: expected a PyTorch profiler (Chrome) trace"),
    ('{"traceEvents": []}', "no GPU kernels"),
    ('{"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "ts": 0, "dur": -1, "args": {"External id": 1}}]}',
     "traceEvents[0] ('k'): dur: expected microseconds >= 0"),
    ('{"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 0, "dur": 1, "args": {"External id": 1,'
     ' "Input Dims": [[4, 8], [9, 4]], "Input type": ["c10::Half", "c10::Half"]}},'
     ' {"ph": "X", "cat": "kernel", "name": "k", "ts": 0, "dur": 1, "args": {"External id": 1}}]}',
     "traceEvents[0] (aten::mm): Input Dims: [[4, 8], [9, 4]] are not the operands of aten::mm"),
    ('{"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "aten::add", "ts": 0, "dur": 1, "args": {"External id": 1'
     '}}, {"ph": "X", "cat": "kernel", "name": "k", "ts": 0, "dur": 1, "args": {"External id": 1}}]}',
     "Input Dims: expected a list of shapes (profile with record_shapes=True)"),
    ('{"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "aten::add", "ts": 0, "dur": 1, "args": {"External id": 1,'
     ' "Input Dims": [[4], [4]], "Input type": ["c10::ComplexHalf", "c10::ComplexHalf"]}},'
     ' {"ph": "X", "cat": "kernel", "name": "k", "ts": 0, "dur": 1, "args": {"External id": 1}}]}',
     "Input type: no element size for ['c10::ComplexHalf']"),
])
def test_a_bad_trace_is_one_line_naming_the_file_and_event(tmp_path, text, message):
    path = tmp_path / "t.json"
    path.write_text(text)
    with pytest.raises(ValueError) as exc:
        read_torch_trace(path, "d", "s", "fp16")
    assert message in str(exc.value) and str(path) in str(exc.value) and "\n" not in str(exc.value)


def test_a_bad_nsight_file_is_one_line(tmp_path):
    path = tmp_path / "n.csv"
    path.write_text('"ID","Kernel Name","gpu__time_duration.sum"\n"","","usecond"\n"0","k","-3"\n')
    with pytest.raises(ValueError) as exc:
        read_nsight_kernels(path, "d", "s", "fp16")
    assert "negative" in str(exc.value) and "\n" not in str(exc.value)
