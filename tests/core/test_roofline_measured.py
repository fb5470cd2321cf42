"""Measured kernels beside the modelled operators on one device's roofline, and the focus note for a device
without a peak at the precision (hand-computed from the committed trace fixtures)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from explorer.core.analysis.evaluate import evaluate
from explorer.core.analysis.roofline_measured import measured_roofline, measured_top_kernels
from explorer.core.analysis.roofline_view import compute_roofline, missing_peak_note
from explorer.core.hardware.device_file import device_from_dict
from explorer.core.traces import load_trace
from explorer.core.workload.layers import Context
from explorer.core.workload.model import LayerSpec, Model, load_model_file

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "traces"


def device(id_, peak, bandwidth="20 GB/s", name=None):
    return device_from_dict({"id": id_, "name": name or id_, "vendor": "test", "kind": "cpu", "peak": peak,
                             "memory": [{"name": "DRAM", "role": "offchip", "capacity": "16 GB",
                                         "bandwidth": bandwidth}]})


def smallnet() -> Model:
    """The network tests/fixtures/traces/make_torch_trace.py profiles (batch 4, fp32)."""
    return load_model_file(FIXTURES / "smallnet.json")


@pytest.fixture(scope="module")
def analysis():
    cpu = device("cpu", {"fp32": "100 GFLOP/s"}, name="one core")
    npu = device("npu", {"int8": "4 TOP/s"}, "10 GB/s", name="Test NPU")  # no fp32 peak
    return evaluate(smallnet(), [cpu, npu], "fp32", Context(batch=4))


def test_torch_kernels_on_the_cpu_roof(analysis):
    m = measured_roofline(load_trace(FIXTURES / "torch_cpu_trace.json"), analysis, 0)
    assert (m.device_id, m.device_name, m.precision) == ("cpu", "one core", "fp32")
    assert (m.peak, m.bandwidth) == (100e9, 20e9)
    assert m.kernels == len(m) == 12 and m.note == ""
    assert m.layers == ("conv1", "fc1", "fc2", "fc3") * 3
    fc1 = m.layers.index("fc1")
    # the profiler counted 4,194,304 FLOP for the first fc1 addmm, which took 218.578 us; it measured no
    # bytes, so the intensity is the model's fc1: (2*4*2048*256 + 4*256) FLOP / 2,135,040 B
    intensity = 4_195_328 / 2_135_040
    assert m.intensity_source[fc1] == "modeled"
    assert m.intensity[fc1] == pytest.approx(intensity) and m.modeled_intensity[fc1] == pytest.approx(intensity)
    assert m.achieved[fc1] == pytest.approx(4_194_304 / 218.578e-6)
    roof = min(100e9, 20e9 * intensity)  # 39.3 GFLOP/s: below the ridge of 5 FLOP/B, memory bound
    assert m.attainable[fc1] == pytest.approx(roof)
    assert m.efficiency[fc1] == pytest.approx(4_194_304 / 218.578e-6 / roof)
    assert m.bound[:4] == ("compute", "memory", "memory", "memory")  # conv1: 9.8 FLOP/B > ridge 5
    assert m.efficiency == pytest.approx(m.achieved / m.attainable)
    assert m.attainable == pytest.approx(np.minimum(100e9, 20e9 * m.intensity))


def test_nsight_kernels_keep_their_measured_intensity(analysis):
    m = measured_roofline(load_trace(FIXTURES / "ncu_raw.csv"), analysis, 0)
    assert len(m) == 5 and m.note == ""
    # ampere_sgemm: 4 GFLOP over 200 MB in 1 ms -> 20 FLOP/byte, 4 TFLOP/s; roof min(100 G, 20 G x 20) = 100 G
    assert m.intensity_source[0] == "measured" and m.intensity[0] == pytest.approx(20.0)
    assert m.achieved[0] == pytest.approx(4e12) and m.attainable[0] == pytest.approx(100e9)
    assert m.efficiency[0] == pytest.approx(40.0)  # a GPU kernel measured against a CPU core's roof
    assert all(math.isnan(v) for v in m.modeled_intensity)  # no model operator has these names
    top = measured_top_kernels(load_trace(FIXTURES / "ncu_raw.csv"), m)
    assert top.names[0] == "ampere_sgemm_128x64_nn" and top.count[0] == 2
    assert top.attainable_flops_per_s[0] == pytest.approx(100e9)


def test_device_without_the_precision_places_nothing_and_says_why(analysis):
    trace = load_trace(FIXTURES / "torch_cpu_trace.json")
    m = measured_roofline(trace, analysis, 1)
    assert len(m) == 0 and m.points is None and m.kernels == 12
    assert m.note == "Test NPU has no fp32 peak, so there is no roof to measure the kernels against"
    top = measured_top_kernels(trace, m, n=3)  # times and rates are still known, the roof is not
    assert top.names == ("aten::addmm", "aten::conv2d") and top.count.tolist() == [9, 3]
    assert np.isnan(top.attainable_flops_per_s).all() and top.bound == ("\u2014", "\u2014")
    none = measured_roofline(trace, None)
    assert len(none) == 0 and none.note == "select a device to place the measured kernels"
    with pytest.raises(ValueError, match="device_index"):
        measured_roofline(trace, analysis, 2)


def test_unmatched_kernels_are_counted_in_the_note():
    other = Model.make("other", {"channels": 3, "height": 16, "width": 16},
                       [LayerSpec.make("conv2d", name="conv1", out_channels=8, kernel_size=3, padding=1, bias=True)])
    a = evaluate(other, [device("cpu", {"fp32": "100 GFLOP/s"})], "fp32", Context(batch=4))
    m = measured_roofline(load_trace(FIXTURES / "torch_cpu_trace.json"), a, 0)
    assert len(m) == 3 and m.layers == ("conv1",) * 3
    assert m.note.startswith("9 of 12 kernels not placed: 9 have no intensity")


def test_focus_note_names_the_precisions_the_device_has(analysis):
    npu = analysis.devices.devices[1]
    assert missing_peak_note(npu, "fp32") == ("Test NPU has no fp32 peak in the catalog; it lists int8 \u2014 "
                                              "choose that precision")
    two = device("tpu", {"bf16": "275 TFLOP/s", "int8": "275 TOP/s"}, name="TPU")
    assert missing_peak_note(two, "fp16") == ("TPU has no fp16 peak in the catalog; it lists bf16, int8 \u2014 "
                                              "choose one of those precisions")
    assert missing_peak_note(two, "bf16") == ""
    assert compute_roofline(analysis, device_index=1).focus_note.startswith("Test NPU has no fp32 peak")
    assert compute_roofline(analysis, device_index=0).focus_note == ""


def test_the_roofline_range_widens_to_show_measured_kernels():
    """A CPU trace placed against an accelerator's roof: its kernels (tens of GFLOP/s) sit below the roof's range;
    the range grows by whole decades to 10**floor(log10(min/2)) and is left alone when every kernel shows."""
    from explorer.core.analysis.roofline_measured import cover_measured

    gpu = device("gpu", {"fp32": "1000 TFLOP/s"}, "3 TB/s", name="big accelerator")
    analysis = evaluate(smallnet(), [gpu], "fp32", Context(batch=4))
    trace = load_trace(FIXTURES / "torch_cpu_trace.json")
    m = measured_roofline(trace, analysis, 0)
    r = compute_roofline(analysis, device_index=0)
    low = min(m.achieved)
    assert low < r.y_range[0]  # hidden below the range before
    shown = cover_measured(r, m)
    assert shown.y_range[0] == 10.0 ** math.floor(math.log10(low / 2)) <= low
    assert shown.y_range[0] <= r.y_range[0] and shown.y_range[1] == r.y_range[1]
    assert cover_measured(shown, m) is shown and cover_measured(r, None) is r
