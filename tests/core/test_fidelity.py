"""The Fidelity view's numbers (explorer/core/analysis/fidelity.py): predicted against measured per kernel."""

from pathlib import Path

import numpy as np
import pytest

from explorer.core.analysis.evaluate import evaluate
from explorer.core.analysis.fidelity import (
    fidelity_of_kernels,
    measurement_fidelity,
    row_shapes,
    trace_fidelity,
)
from explorer.core.calibration.measurements import read_measurements, select
from explorer.core.hardware.device_file import load_device_file
from explorer.core.traces import load_trace
from explorer.core.workload.model import load_model_file

ROOT = Path(__file__).resolve().parents[2]
TRACES = ROOT / "tests" / "fixtures" / "traces"


def test_errors_mape_and_worst_by_hand():
    f = fidelity_of_kernels("d", "D", ("a", "b", "c", "z"), ("la", "lb", "lc", "lz"), ("s",) * 4,
                            [1.0, 2.0, 4.0, 0.0], [0.5, 2.0, 5.0, 1.0], [1.0, 2.2, 3.0, 1.0],
                            [True, True, False, True])
    assert len(f) == 3 and f.kernels == 4 and "1 kernels have no positive measured" in f.note
    np.testing.assert_allclose(f.error("ideal"), [-0.5, 0.0, 0.25])
    np.testing.assert_allclose(f.error("calibrated"), [0.0, 0.1, -0.25])
    assert f.mape("ideal") == pytest.approx(0.25) and f.mape("calibrated") == pytest.approx(0.35 / 3)
    assert f.worst("ideal").tolist() == [0, 2, 1] and f.worst("calibrated", 2).tolist() == [2, 1]
    assert f.range == (0.5, 5.0)
    with pytest.raises(ValueError, match="model: expected one of ideal, calibrated"):
        f.error("measured")


def test_a_trace_is_compared_kernel_by_kernel_with_the_operator_it_matches():
    trace = load_trace(TRACES / "torch_cpu_trace.json")
    model = load_model_file(TRACES / "smallnet.json")
    device = load_device_file(ROOT / "catalog" / "nvidia-h100-sxm5.yaml")  # calibrated: matrix and vector
    a = evaluate(model, [device], "bf16")
    f = trace_fidelity(trace, a, 0)
    assert f.kernels == 12 and len(f) == 12 and f.note == ""
    rows = [a.table.names.index(layer) for layer in f.layers]
    np.testing.assert_array_equal(f.ideal, a.time[rows, 0])
    np.testing.assert_array_equal(f.calibrated, a.calibrated_time[rows, 0])
    assert f.layers[:4] == ("conv1", "fc1", "fc2", "fc3")
    assert f.measured[1] == pytest.approx(2.18578e-4)  # the trace's second kernel: aten::addmm (fc1), 218.578 us
    shapes = row_shapes(a)
    assert shapes[:5] == ("conv2d 256x8x27", "relu, 8.19 kB moved", "flatten, 0 B moved", "dense 1x256x2048",
                          "relu, 1.02 kB moved")  # relu1: 8 x 16 x 16 bf16 read and written, 2 x 4,096 B
    assert f.shapes[1] == "dense 1x256x2048"
    assert f.is_calibrated.all()
    empty = trace_fidelity(trace, None)
    assert len(empty) == 0 and "select a device" in empty.note


def test_the_held_out_measurements_reproduce_the_calibration_error():
    """The H100 held-out GEMMs of catalog/measurements: the same MAPEs as issue 21's table (ideal 57.7 %,
    calibrated 6.0 %), through the same pass."""
    rows = select(read_measurements(ROOT / "catalog" / "measurements" / "kernels.csv"), "nvidia-h100-sxm5", "gemm",
                  "held_out")
    device = load_device_file(ROOT / "catalog" / "nvidia-h100-sxm5.yaml")
    f = measurement_fidelity(rows, device, "bf16")
    assert len(f) == 24
    assert f.mape("ideal") == pytest.approx(0.577, abs=0.001) and f.mape("calibrated") == pytest.approx(0.060, abs=0.001)
    assert (f.error("ideal") < 0).all()  # the ideal model is always too fast
    worst = f.worst("calibrated", 1)[0]
    assert f.shapes[worst].startswith("gemm ") and abs(f.error("calibrated")[worst]) > f.mape("calibrated")


def test_the_session_computes_it_from_the_evaluation_whatever_the_switch():
    from explorer.core.session.state import State
    from explorer.core.session.results import Results

    trace = load_trace(TRACES / "torch_cpu_trace.json")
    device = load_device_file(ROOT / "catalog" / "nvidia-h100-sxm5.yaml")
    state = State(model=load_model_file(TRACES / "smallnet.json"), device_ids=(device.id,))
    from dataclasses import replace

    state = replace(state, assumptions=replace(state.assumptions, precision="bf16"))
    r = Results(state, [device])
    assert r.fidelity(0) is None
    r = r.successor(replace(state, trace=trace), [device])
    f = r.fidelity(0)
    assert len(f) == 12
    switched = replace(state, trace=trace, assumptions=replace(state.assumptions, time_model="calibrated"))
    r2 = r.successor(switched, [device])
    assert r2.fidelity(0) is f and "fidelity" not in r2.computed
