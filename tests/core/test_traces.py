"""Importing profiler traces and placing measured kernels on the roofline.

Fixtures (tests/fixtures/traces/): ``torch_cpu_trace.json`` is a real torch.profiler capture made by
make_torch_trace.py; the Torq and Nsight files are synthetic, written to their documented columns by
make_torq_and_nsight.py with numbers chosen so the expected values below can be worked by hand.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from explorer.core.traces import (
    Trace,
    TraceError,
    TraceEvent,
    detect_format,
    kernel_events,
    layer_work,
    load_trace,
    overlap_summary,
    roofline_points,
    top_kernels,
)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "traces"
TORCH = FIXTURES / "torch_cpu_trace.json"
NCU = FIXTURES / "ncu_raw.csv"
TORQ = FIXTURES / "torq_trace.csv"
RUNTIME = FIXTURES / "runtime.csv"
ANNOTATED = FIXTURES / "annotated_runtime.csv"
CYCLE = 1 / 800e6  # seconds per cycle at the 800 MHz used below


# ---------------------------------------------------------------- format detection

@pytest.mark.parametrize("path, fmt", [(TORCH, "chrome"), (NCU, "nsight"), (TORQ, "torq_trace"),
                                       (RUNTIME, "torq_runtime"), (ANNOTATED, "torq_annotated")])
def test_format_is_detected_from_content(path, fmt):
    assert detect_format(path) == fmt


def test_fixture_scripts_are_committed_beside_their_output():
    assert (FIXTURES / "make_torch_trace.py").exists()
    assert (FIXTURES / "make_torq_and_nsight.py").exists()
    assert TORCH.stat().st_size < 300_000


# ---------------------------------------------------------------- PyTorch profiler (real capture)

def test_torch_trace_events_lanes_and_flops():
    trace = load_trace(TORCH)
    assert trace.source_format == "chrome"
    assert len(trace.events) == 150
    assert sum(e.category == "cpu_op" for e in trace.events) == 138
    assert sum(e.category == "annotation" for e in trace.events) == 12  # conv1/fc1/fc2/fc3 x 3 iterations
    assert len(trace.lanes) == 1 and trace.lanes[0].startswith("thread ")
    counted = [e for e in trace.events if e.flops is not None]
    # FLOPs of a batch-4 forward: conv 2*4*8*16*16*(3*3*3); linear 2*4*in*out
    assert [(e.name, e.location, e.flops) for e in counted[:4]] == [
        ("aten::conv2d", "conv1", 2 * 4 * 8 * 16 * 16 * 27),
        ("aten::addmm", "fc1", 2 * 4 * 2048 * 256),
        ("aten::addmm", "fc2", 2 * 4 * 256 * 128),
        ("aten::addmm", "fc3", 2 * 4 * 128 * 10),
    ]
    assert len(counted) == 12
    assert all(e.start_s >= 0 and e.duration_s > 0 for e in trace.events)
    assert min(e.start_s for e in trace.events) == 0.0


def test_torch_trace_points_use_measured_flops_and_modeled_intensity():
    trace = load_trace(TORCH)
    fc1_bytes = 4 * (4 * 2048 + 2048 * 256 + 256 + 4 * 256)  # fp32 input, weight, bias, output
    assert fc1_bytes == 2_135_040
    points = roofline_points(trace, peak_flops_per_s=100e9, bandwidth_bytes_per_s=20e9,
                             model={"fc1": (2 * 4 * 2048 * 256, fc1_bytes)})
    assert len(points) == 12  # the ops the profiler counted FLOPs for, not their nested parents/children
    assert points.names.count("aten::addmm") == 9
    first_fc1 = points.matched_layers.index("fc1")
    assert points.flops_source[first_fc1] == "measured"
    assert points.intensity_source[first_fc1] == "modeled"
    # committed capture: the first fc1 addmm took 218.578 us
    assert points.duration_s[first_fc1] == pytest.approx(218.578e-6)
    achieved = 4_194_304 / 218.578e-6
    intensity = 4_194_304 / 2_135_040
    roof = min(100e9, 20e9 * intensity)  # 39.29 GFLOP/s, memory bound
    assert points.achieved_flops_per_s[first_fc1] == pytest.approx(achieved)
    assert points.intensity[first_fc1] == pytest.approx(1.964508)
    assert points.efficiency[first_fc1] == pytest.approx(achieved / roof)
    assert points.efficiency[first_fc1] == pytest.approx(0.488393, rel=1e-5)
    assert points.bound[first_fc1] == "memory"
    # unmatched ops have FLOPs but no intensity: not drawable, bound unknown
    assert points.intensity_source[0] == "none" and points.bound[0] == "unknown"
    assert not points.plottable[0] and points.plottable[first_fc1]


def small_net_analysis():
    """The analytical model of the network make_torch_trace.py profiles (batch 4, fp32)."""
    from explorer.core.analysis.evaluate import evaluate
    from explorer.core.hardware.device_file import device_from_dict
    from explorer.core.workload.layers import Context
    from explorer.core.workload.model import load_model_file

    cpu = device_from_dict({"id": "cpu", "name": "one core", "vendor": "test", "kind": "cpu",
                            "peak": {"fp32": "100 GFLOP/s"},
                            "memory": [{"name": "DRAM", "role": "offchip", "capacity": "16 GB",
                                        "bandwidth": "20 GB/s"}]})
    model = load_model_file(FIXTURES / "smallnet.json")
    return evaluate(model, [cpu], "fp32", Context(batch=4))


def test_torch_points_matched_to_the_analytical_model():
    work = layer_work(small_net_analysis())
    assert work["fc1"] == (2 * 4 * 2048 * 256 + 4 * 256, 2_135_040)  # the model also counts the bias add
    points = roofline_points(load_trace(TORCH), 100e9, 20e9, model=work)
    assert points.matched_layers == ("conv1", "fc1", "fc2", "fc3") * 3
    assert points.plottable.all()
    fc1 = points.matched_layers.index("fc1")
    assert points.intensity[fc1] == pytest.approx(4_195_328 / 2_135_040)
    assert points.flops_source[fc1] == "measured"  # the profiler's count, not the model's
    assert points.bound[:4] == ("compute", "memory", "memory", "memory")  # conv1: 9.8 FLOP/B > ridge 5


def test_torch_top_kernels_by_name_and_by_layer():
    points = roofline_points(load_trace(TORCH), 100e9, 20e9)
    top = top_kernels(points)
    assert top.names == ("aten::addmm", "aten::conv2d")
    assert list(top.count) == [9, 3]
    assert top.share.sum() == pytest.approx(1.0)
    by_layer = top_kernels(points, by="location")
    assert set(by_layer.names) == {"conv1", "fc1", "fc2", "fc3"}
    assert list(by_layer.count) == [3, 3, 3, 3]


# ---------------------------------------------------------------- Chrome trace with GPU lanes

def _gpu_trace(tmp_path: Path) -> Path:
    events = [
        {"ph": "M", "name": "thread_name", "pid": 1, "tid": 11, "args": {"name": "python main"}},
        {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 11, "ts": 950, "dur": 30,
         "args": {"flops": 2e9}},
        {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD", "pid": 0, "tid": 7, "ts": 900, "dur": 50,
         "args": {"device": 0, "stream": 7, "bytes": 1_000_000}},
        {"ph": "X", "cat": "gpu_user_annotation", "name": "fc1", "pid": 0, "tid": 7, "ts": 990, "dur": 120,
         "args": {"device": 0, "stream": 7}},
        {"ph": "X", "cat": "kernel", "name": "sgemm_128x64", "pid": 0, "tid": 7, "ts": 1000, "dur": 100,
         "args": {"device": 0, "stream": 7}},
        {"ph": "X", "cat": "kernel", "name": "relu_kernel", "pid": 0, "tid": 8, "ts": 1040, "dur": 20,
         "args": {"device": 0, "stream": 8}},
        {"ph": "B", "name": "step", "pid": 1, "tid": 11, "ts": 880},
        {"ph": "E", "pid": 1, "tid": 11, "ts": 1120},
    ]
    path = tmp_path / "gpu.json"
    path.write_text(json.dumps({"traceEvents": events}), encoding="utf-8")
    return path


def test_chrome_gpu_lanes_locations_and_bytes(tmp_path):
    trace = load_trace(_gpu_trace(tmp_path))
    assert trace.lanes == ("GPU 0 stream 7", "GPU 0 stream 8", "python main")
    by_name = {e.name: e for e in trace.events}
    assert by_name["sgemm_128x64"].location == "fc1"
    assert by_name["sgemm_128x64"].start_s == pytest.approx(120e-6)  # ts 1000 - first ts 880
    assert by_name["Memcpy HtoD"].bytes == 1e6 and by_name["Memcpy HtoD"].category == "memcpy"
    assert by_name["step"].duration_s == pytest.approx(240e-6)  # a B/E pair
    assert [e.name for e in kernel_events(trace)] == ["sgemm_128x64", "relu_kernel"]
    points = roofline_points(trace, 1e14, 1e12, model={"fc1": (2e9, 1e8)})
    assert points.matched_layers == ("fc1", None)
    assert points.achieved_flops_per_s[0] == pytest.approx(2e9 / 100e-6)
    assert points.intensity[0] == pytest.approx(20.0)
    assert points.efficiency[0] == pytest.approx(2e13 / 2e13)
    summary = overlap_summary(trace)
    assert summary.dma_s == pytest.approx(50e-6)
    assert summary.compute_s == pytest.approx(100e-6)  # relu runs inside the sgemm's interval
    assert summary.overlap_s == 0.0


# ---------------------------------------------------------------- Nsight Compute raw CSV

def test_nsight_events_units_and_flops():
    trace = load_trace(NCU)
    assert trace.source_format == "nsight"
    assert trace.lanes == ("GPU 0 stream 7", "GPU 0 stream 13")
    assert [e.duration_s for e in trace.events] == pytest.approx([1e-3, 250e-6, 1.25e-3, 400e-6, 500e-6])
    assert [e.start_s for e in trace.events] == pytest.approx([0, 1e-3, 1.25e-3, 2.5e-3, 2.9e-3])
    assert [e.bytes for e in trace.events] == pytest.approx([200e6, 120e6, 200e6, 50e6, 10e6])  # Mbyte
    # FLOPs = add + mul + 2 fma per precision
    assert [e.flops for e in trace.events] == pytest.approx([2 * 2e9, 24e6, 2 * 2e9, 1e8 + 2 * 1e9,
                                                             1e6 + 1e6 + 2 * 1e8])
    assert any("no start times" in w for w in trace.warnings)


def test_nsight_roofline_points_hand_computed():
    points = roofline_points(load_trace(NCU), peak_flops_per_s=10e12, bandwidth_bytes_per_s=1e12)
    assert points.ridge_intensity == 10.0
    # sgemm: 4 GFLOP in 1 ms over 200 MB -> 4 TFLOP/s at 20 FLOP/B; roof 10 TFLOP/s
    assert points.intensity[0] == pytest.approx(20.0)
    assert points.achieved_flops_per_s[0] == pytest.approx(4e12)
    assert points.efficiency[0] == pytest.approx(0.4)
    assert points.gap_factor[0] == pytest.approx(2.5)
    assert points.bound[0] == "compute"
    # elementwise add: 24 MFLOP in 250 us over 120 MB -> 0.2 FLOP/B, roof 0.2 TFLOP/s, 96 GFLOP/s achieved
    assert points.intensity[1] == pytest.approx(0.2)
    assert points.attainable_flops_per_s[1] == pytest.approx(0.2e12)
    assert points.efficiency[1] == pytest.approx(0.48)
    assert points.bound[1] == "memory"
    assert points.intensity_source == ("measured",) * 5
    assert np.allclose(points.efficiency * points.gap_factor, 1.0)


def test_nsight_top_kernels_aggregate_by_name():
    top = top_kernels(roofline_points(load_trace(NCU), 10e12, 1e12), n=3)
    assert top.names == ("ampere_sgemm_128x64_nn", "dgemm_kernel", "ampere_hgemm_256x128_tn")
    assert list(top.count) == [2, 1, 1]
    assert top.total_s[0] == pytest.approx(2.25e-3)
    assert top.share[0] == pytest.approx(2.25 / 3.4)
    assert top.achieved_flops_per_s[0] == pytest.approx(8e9 / 2.25e-3)
    assert top.efficiency[0] == pytest.approx(8e9 / 2.25e-3 / 10e12)
    assert top.bound == ("compute", "compute", "compute")
    assert top.gap_factor[1] == pytest.approx(10e12 / (2.02e8 / 500e-6))


def test_nsight_bytes_from_read_plus_write_in_kbyte(tmp_path):
    lines = NCU.read_text(encoding="utf-8").splitlines()
    header_at = next(i for i, line in enumerate(lines) if "Kernel Name" in line)
    import csv
    rows = list(csv.reader(lines[header_at:header_at + 7]))
    drop = rows[0].index("dram__bytes.sum")
    rows = [r[:drop] + r[drop + 1:] for r in rows]
    path = tmp_path / "no_total.csv"
    with path.open("w", newline="", encoding="utf-8") as f:
        csv.writer(f, quoting=csv.QUOTE_ALL).writerows(rows)
    trace = load_trace(path)
    assert trace.events[0].bytes == pytest.approx(150_000e3 + 50_000e3)  # Kbyte is 1000 byte in ncu


# ---------------------------------------------------------------- Torq compile-time trace.csv

def test_torq_trace_lanes_and_cycle_conversion():
    trace = load_trace(TORQ, clock_hz=800e6)
    assert trace.clock_hz == 800e6
    assert trace.lanes == ("DMA in", "compute", "DMA out")
    assert len(trace.events) == 10
    assert [len(trace.events_on(lane)) for lane in trace.lanes] == [4, 3, 3]
    s0 = next(e for e in trace.events if e.name == "conv2d")
    assert s0.start_s == pytest.approx(1600 * CYCLE) and s0.duration_s == pytest.approx(4000 * CYCLE)
    assert s0.duration_s == pytest.approx(5e-6)
    assert s0.location == 'loc("conv1")'
    assert any("800 MHz" in w and "cycle" in w for w in trace.warnings)
    assert load_trace(TORQ, clock_hz="800 MHz").events == trace.events


def test_torq_dma_compute_overlap_hand_computed():
    summary = overlap_summary(load_trace(TORQ, clock_hz=800e6))
    # DMA busy [0,3600] [5600,7400] [9600,10400] [10800,11200]; compute busy [1600,10600]
    assert summary.dma_s == pytest.approx(6600 * CYCLE)
    assert summary.compute_s == pytest.approx(9000 * CYCLE)
    assert summary.overlap_s == pytest.approx(4600 * CYCLE)  # 2000 + 1800 + 800
    assert summary.dma_only_s == pytest.approx(2000 * CYCLE)
    assert summary.compute_only_s == pytest.approx(4400 * CYCLE)
    assert summary.span_s == pytest.approx(11200 * CYCLE)
    assert summary.idle_s == pytest.approx(200 * CYCLE)  # [10600, 10800]
    assert summary.hidden_dma_fraction == pytest.approx(4600 / 6600)


def test_torq_points_matched_to_model_layers_by_location():
    model = {"conv1": (4e6, 2e5), "fc1": (5e5, 2.5e5), "fc2": (1e5, 5e4)}
    points = roofline_points(load_trace(TORQ, clock_hz=800e6), peak_flops_per_s=1e12,
                             bandwidth_bytes_per_s=1e11, model=model)
    assert points.names == ("conv2d", "fully_connected", "fully_connected")  # DMA events are not kernels
    assert points.matched_layers == ("conv1", "fc1", "fc2")
    assert points.flops_source == ("modeled",) * 3
    # conv1: 4 MFLOP in 5 us = 0.8 TFLOP/s at 20 FLOP/B (compute bound, roof 1 TFLOP/s)
    # fc1: 0.5 MFLOP in 5 us = 0.1 TFLOP/s at 2 FLOP/B (roof 0.2 TFLOP/s); fc2: 0.1 MFLOP in 1.25 us
    assert points.achieved_flops_per_s == pytest.approx([8e11, 1e11, 8e10])
    assert points.intensity == pytest.approx([20.0, 2.0, 2.0])
    assert points.efficiency == pytest.approx([0.8, 0.5, 0.4])
    assert points.gap_factor == pytest.approx([1.25, 2.0, 2.5])
    assert points.bound == ("compute", "memory", "memory")
    top = top_kernels(points)
    assert top.names == ("fully_connected", "conv2d")
    assert top.total_s == pytest.approx([5e-6 + 1.25e-6, 5e-6])
    assert top.intensity[0] == pytest.approx(6e5 / 3e5)
    assert top.achieved_flops_per_s[0] == pytest.approx(6e5 / 6.25e-6)


def test_torq_trace_semicolon_and_unquoted_location_commas(tmp_path):
    path = tmp_path / "trace.csv"
    path.write_text('ID;Start;End;Location;Op Type\nDI0;0;100;loc("a.mlir":3:7);DMA_IN\n'
                    "S0;100;300;loc(\"a.mlir\":4:1);add\n", encoding="utf-8")
    assert [e.duration_s for e in load_trace(path, clock_hz=1e9).events] == pytest.approx([1e-7, 2e-7])
    comma = tmp_path / "comma.csv"
    comma.write_text('ID,Start,End,Location,Op Type\nS0,0,50,loc(fused[a, b]),add\n', encoding="utf-8")
    assert load_trace(comma, clock_hz=1e9).events[0].location == "loc(fused[a, b])"


# ---------------------------------------------------------------- Torq runtime CSVs

def test_torq_runtime_blocks():
    trace = load_trace(RUNTIME)
    assert trace.lanes == ("NPU",)
    assert [e.duration_s for e in trace.events] == pytest.approx([1250e-6, 12.5e-6, 17.5e-6, 5e-6])
    assert [e.start_s for e in trace.events] == pytest.approx([0, 1250e-6, 1262.5e-6, 1280e-6])
    assert trace.events[2].location == 'loc("fc1")'
    points = roofline_points(trace, 1e12, 1e11, model={"fc1": (3.5e6, 1e6)})
    fc1 = points.matched_layers.index("fc1")
    assert points.achieved_flops_per_s[fc1] == pytest.approx(3.5e6 / 17.5e-6)
    assert points.efficiency[fc1] == pytest.approx(2e11 / 3.5e11)


def test_torq_annotated_runtime_lanes_and_overlap():
    trace = load_trace(ANNOTATED)
    assert trace.lanes == ("NSS program", "DMA in", "Slice 0", "Slice 1", "DMA out")
    assert len(trace.events) == 8
    conv = trace.events_on("Slice 0")
    assert [(e.name, e.start_s, e.duration_s) for e in conv] == [("conv1", pytest.approx(12.5e-6),
                                                                   pytest.approx(17.5e-6))]
    assert trace.events_on("Slice 1")[0].location == "fc1"
    summary = overlap_summary(trace)
    assert summary.dma_s == pytest.approx(35e-6)
    assert summary.compute_s == pytest.approx(22.5e-6)
    assert summary.overlap_s == pytest.approx(22.5e-6)


def test_torq_annotated_snake_case_columns(tmp_path):
    path = tmp_path / "annotated.csv"
    path.write_text("nss_program_index;operation;slice_id;invocation_name;nss_program_timestamp_start;"
                    "nss_program_timestamp_end;nss_program_timestamp_total;slice_used_0_in_program;"
                    "slice_used_1_in_program;dma_in_used_in_program;dma_out_used_in_program\n"
                    "0;torq_hw.slice_start;1;mm;2;6;4;False;True;True;False\n", encoding="utf-8")
    trace = load_trace(path)
    assert trace.source_format == "torq_annotated"
    assert {e.lane for e in trace.events} == {"NSS program", "Slice 1", "DMA in"}


# ---------------------------------------------------------------- malformed, truncated, mislabelled

def _raises(path, match, **kwargs) -> TraceError:
    with pytest.raises(TraceError, match=match) as info:
        load_trace(path, **kwargs)
    return info.value


def test_truncated_json_names_line_and_column(tmp_path):
    lines = TORCH.read_text(encoding="utf-8").splitlines(keepends=True)
    path = tmp_path / "cut.json"
    path.write_text("".join(lines[:20]) + lines[20][:40], encoding="utf-8")
    error = _raises(path, r"line 21: ends early \(truncated file\?\) at column")
    assert error.line == 21 and str(path) in str(error)
    path.write_text("".join(lines[:20]) + '{"ph":"X","cat":"cpu_op","name":"aten::con', encoding="utf-8")
    assert _raises(path, r"ends early \(truncated file\?\) at column 33: Unterminated string").line == 21


def test_invalid_json_in_the_middle_names_the_line(tmp_path):
    lines = TORCH.read_text(encoding="utf-8").splitlines(keepends=True)
    lines[9] = lines[9].replace('"ph":"X"', '"ph" "X"', 1)
    path = tmp_path / "bad.json"
    path.write_text("".join(lines), encoding="utf-8")
    error = _raises(path, r"line 10: is not valid JSON")
    assert error.line == 10


def test_array_form_without_closing_bracket_is_accepted(tmp_path):
    path = tmp_path / "array.json"
    path.write_text('[{"ph":"X","name":"k","ts":0,"dur":5,"pid":1,"tid":1},\n', encoding="utf-8")
    trace = load_trace(path)
    assert len(trace.events) == 1 and "closing" in trace.warnings[0]


@pytest.mark.parametrize("event, field", [
    ({"ph": "X", "name": "k", "ts": 0, "dur": "abc"}, "traceEvents[0].dur"),
    ({"ph": "X", "name": "k", "ts": 0}, "traceEvents[0].dur"),
    ({"ph": "X", "name": "k", "ts": "soon", "dur": 1}, "traceEvents[0].ts"),
    ({"ph": "X", "name": "k", "ts": 0, "dur": 1, "args": {"flops": "many"}}, "traceEvents[0].args.flops"),
])
def test_bad_chrome_event_field_is_named(tmp_path, event, field):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({"traceEvents": [event]}), encoding="utf-8")
    error = _raises(path, "field")
    assert error.field == field


def test_json_without_trace_events(tmp_path):
    path = tmp_path / "other.json"
    path.write_text('{"events": []}', encoding="utf-8")
    assert _raises(path, "traceEvents").field == "traceEvents"


def test_torq_trace_missing_column_is_named(tmp_path):
    path = tmp_path / "trace.csv"
    path.write_text("ID,Start,Location,Op Type\nS0,0,loc(x),add\n", encoding="utf-8")
    error = _raises(path, r"required column 'End' is missing", fmt="torq_trace", clock_hz=1e9)
    assert error.field == "End" and error.line == 1


def test_torq_trace_non_number_names_line_and_field(tmp_path):
    text = TORQ.read_text(encoding="utf-8").replace("S1,5600,", "S1,56OO,")
    path = tmp_path / "trace.csv"
    path.write_text(text, encoding="utf-8")
    error = _raises(path, r"line 7, field 'Start': '56OO' is not a number", clock_hz=800e6)
    assert error.line == 7 and error.field == "Start"


def test_torq_trace_end_before_start(tmp_path):
    path = tmp_path / "trace.csv"
    path.write_text("ID,Start,End,Location,Op Type\nS0,500,100,x,add\n", encoding="utf-8")
    assert _raises(path, "before Start", clock_hz=1e9).field == "End"


def test_torq_trace_mislabelled_dma_is_named(tmp_path):
    text = TORQ.read_text(encoding="utf-8").replace('DI3,6400,7400,"loc(""fc2"")",DMA_IN',
                                                    'DI3,6400,7400,"loc(""fc2"")",DMA_OUT')
    path = tmp_path / "trace.csv"
    path.write_text(text, encoding="utf-8")
    error = _raises(path, r"ID 'DI3' marks a DMA_IN operation but Op Type is 'DMA_OUT'", clock_hz=800e6)
    assert error.line == 8 and error.field == "Op Type"


def test_torq_trace_needs_a_clock():
    assert _raises(TORQ, "clock cycles").field == "clock_hz"
    assert _raises(TORQ, "frequency", clock_hz="800 MB").field == "clock_hz"


def test_runtime_going_back_in_time(tmp_path):
    path = tmp_path / "runtime.csv"
    path.write_text("ID,time_since_open,time_since_start,Location\n0,10,10,a\n1,8,1,b\n", encoding="utf-8")
    error = _raises(path, "goes back in time")
    assert error.line == 3 and error.field == "time_since_open"


def test_annotated_bad_flag_is_named(tmp_path):
    text = ANNOTATED.read_text(encoding="utf-8").splitlines()
    text[3] = text[3].replace(";False;False;True;False", ";maybe;False;True;False")
    path = tmp_path / "annotated.csv"
    path.write_text("\n".join(text), encoding="utf-8")
    error = _raises(path, "'maybe' is not a yes/no flag")
    assert error.line == 4 and error.field == "Slice 0 Used in NSS Program"


def test_nsight_missing_duration_column(tmp_path):
    text = NCU.read_text(encoding="utf-8").replace('"gpu__time_duration.sum"', '"gpu__time_duration.avg"')
    path = tmp_path / "ncu.csv"
    path.write_text(text, encoding="utf-8")
    error = _raises(path, "required column 'gpu__time_duration.sum' is missing")
    assert error.field == "gpu__time_duration.sum"


def test_nsight_without_units_row(tmp_path):
    lines = NCU.read_text(encoding="utf-8").splitlines()
    del lines[2]  # line 1 is ==PROF==, 2 the header, 3 the units row
    path = tmp_path / "ncu.csv"
    path.write_text("\n".join(lines), encoding="utf-8")
    error = _raises(path, "expected the units row")
    assert error.line == 3


def test_nsight_unknown_unit_and_bad_number(tmp_path):
    text = NCU.read_text(encoding="utf-8")
    path = tmp_path / "ncu.csv"
    path.write_text(text.replace('"Mbyte"', '"furlong"'), encoding="utf-8")
    assert _raises(path, "unit 'furlong'").field == "dram__bytes.sum"
    path.write_text(text.replace('"1,250"', '"1.2.50"'), encoding="utf-8")
    error = _raises(path, "'1.2.50' is not a number")
    assert error.line == 6 and error.field == "gpu__time_duration.sum"


def test_wrong_format_forced_names_the_missing_column():
    assert _raises(TORQ, "Kernel Name", fmt="nsight").field == "Kernel Name"
    assert _raises(TORQ, "required column 'time_since_open'", fmt="torq_runtime").field == "time_since_open"


def test_unknown_format_and_missing_file(tmp_path):
    path = tmp_path / "x.csv"
    path.write_text("a,b,c\n1,2,3\n", encoding="utf-8")
    _raises(path, "cannot tell the trace format")
    _raises(tmp_path / "absent.json", "cannot be read")
    empty = tmp_path / "empty.csv"
    empty.write_text("\n", encoding="utf-8")
    _raises(empty, "is empty")
    with pytest.raises(TraceError, match="unknown format"):
        load_trace(TORQ, fmt="perfetto")


def test_device_numbers_must_be_positive():
    trace = load_trace(NCU)
    with pytest.raises(ValueError, match="peak_flops_per_s"):
        roofline_points(trace, 0.0, 1e12)
    with pytest.raises(ValueError, match="bandwidth_bytes_per_s"):
        roofline_points(trace, 1e12, math.nan)


# ---------------------------------------------------------------- invariants

_interval = st.tuples(st.floats(0, 100), st.floats(0, 20))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(_interval, st.sampled_from(["compute", "dma_in", "dma_out"])), min_size=1,
                max_size=25))
def test_overlap_is_bounded_by_its_parts(spans):
    events = tuple(TraceEvent(f"e{i}", cat, s, d, cat) for i, ((s, d), cat) in enumerate(spans))
    trace = Trace("torq_trace", events, tuple(dict.fromkeys(e.lane for e in events)))
    summary = overlap_summary(trace)
    assert 0 <= summary.overlap_s <= min(summary.dma_s, summary.compute_s) + 1e-9
    assert summary.busy_s <= summary.span_s + 1e-9
    assert summary.busy_s == pytest.approx(summary.dma_only_s + summary.compute_only_s + summary.overlap_s)
    assert summary.dma_s <= sum(e.duration_s for e in events if e.category != "compute") + 1e-9


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.floats(1e3, 1e12), st.floats(1e2, 1e10), st.floats(1e-7, 1e-1)), min_size=1,
                max_size=10), st.floats(1e9, 1e15), st.floats(1e8, 1e13))
def test_points_never_exceed_attainable_definition(kernels, peak, bandwidth):
    events = tuple(TraceEvent(f"k{i}", "GPU", 0.0, t, "compute", flops=f, bytes=b)
                   for i, (f, b, t) in enumerate(kernels))
    points = roofline_points(Trace("nsight", events, ("GPU",)), peak, bandwidth)
    assert np.all(points.attainable_flops_per_s <= peak * (1 + 1e-12))
    assert np.allclose(points.attainable_flops_per_s, np.minimum(peak, bandwidth * points.intensity))
    assert np.allclose(points.efficiency * points.gap_factor, 1.0)
    assert all((b == "memory") == (i < peak / bandwidth) for b, i in zip(points.bound, points.intensity))
