"""Calibrated kernel times: the curve, its fit, the device-file block, and the held-out error on public
measurements (catalog/measurements/README.md names every source)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from explorer.core.analysis.calibration_fit import error_report, fit_device, kernel_times
from explorer.core.analysis.evaluate import evaluate
from explorer.core.calibration.fit import fit_curve, mape
from explorer.core.calibration.measurements import Measurement, read_measurements, select
from explorer.core.calibration.model import (
    Curve,
    DeviceCalibration,
    Fit,
    efficiency,
    matrix_time,
    soft_max,
    vector_time,
)
from explorer.core.hardware.device_file import (
    DeviceFileError,
    device_from_dict,
    device_to_dict,
    load_device_file,
)
from explorer.core.workload.layers import Context
from explorer.core.workload.templates import get_template

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "catalog" / "measurements" / "kernels.csv"
H100, B200, A100_40 = "nvidia-h100-sxm5", "nvidia-b200", "nvidia-a100-sxm4-40gb"


def catalog(device_id):
    return load_device_file(ROOT / "catalog" / f"{device_id}.yaml", require_sources=True)


@pytest.fixture(scope="module")
def rows():
    return read_measurements(DATA)


# ----------------------------------------------------------------------------------------------- the curve
def test_soft_max_is_the_sum_at_p_1_and_tends_to_the_max():
    assert soft_max(2.0, 3.0, 1.0) == pytest.approx(5.0)
    assert soft_max(2.0, 3.0, 2.0) == pytest.approx(13 ** 0.5)
    assert soft_max(2.0, 3.0, 60.0) == pytest.approx(3.0, rel=1e-2)
    assert soft_max(0.0, 0.0, 1.5) == 0.0


def test_efficiency_saturates_with_size():
    work = np.array([1e-7, 1e-6, 1e-5, 1e-4, 1e-3])
    e = efficiency(work, 5e-6, 1.0)
    assert np.all(np.diff(e) > 0) and e[-1] == pytest.approx(1 / (1 + 5e-3))
    assert e[0] == pytest.approx(1e-7 / 5.1e-6)


def test_matrix_time_by_hand():
    # 1 TFLOP on a 1000 TFLOP/s part at 80 % and full mapping: 1.25 ms of work, plus 5 us latency (p = 1)
    t = matrix_time(1e12, 1e6, 1e15, 3e12, 1.0, 0.8, 5e-6, 1.0)
    assert t == pytest.approx(1.25e-3 + 5e-6)
    # memory-bound GEMM: 3 GB at 3 TB/s x 0.9 = 1.111 ms
    assert matrix_time(1e9, 3e9, 1e15, 3e12, 1.0, 0.8, 0.0, 1.0, 0.9) == pytest.approx(3e9 / 2.7e12)
    assert vector_time(0, 2e9, 1e15, 2e12, 0.5, 1e-6, 1.0) == pytest.approx(2e-3 + 1e-6)


def test_a_curve_rejects_impossible_parameters():
    with pytest.raises(ValueError, match="fraction"):
        Curve(1.2, 5e-6, 1.0)
    with pytest.raises(ValueError, match="fraction"):
        Curve(0.0, 5e-6, 1.0)
    with pytest.raises(ValueError, match="sharpness"):
        Curve(0.8, 5e-6, 0.0)


# ------------------------------------------------------------------------------------- fitting a known curve
def test_fit_recovers_the_curve_of_a_synthetic_trace():
    flops = np.logspace(7, 12.5, 40)
    nbytes = flops / 300  # compute-bound GEMMs
    mapping = np.where(np.arange(40) % 3 == 0, 0.75, 1.0)
    measured = matrix_time(flops, nbytes, 989.5e12, 3.35e12, mapping, 0.82, 6e-6, 1.3)
    res = fit_curve("matrix", flops, nbytes, measured, 989.5e12, 3.35e12, mapping)
    assert (res.curve.fraction, res.curve.latency, res.curve.sharpness) == pytest.approx((0.82, 6e-6, 1.3), rel=1e-6)
    assert res.mape < 1e-9 and res.at_bound == ()

    nbytes = np.logspace(4, 10, 30)
    measured = vector_time(0.0, nbytes, 989.5e12, 2e12, 0.9, 3e-6, 2.0)
    res = fit_curve("vector", 0.0, nbytes, measured, 989.5e12, 2e12)
    assert (res.curve.fraction, res.curve.latency, res.curve.sharpness) == pytest.approx((0.9, 3e-6, 2.0), rel=1e-6)


def test_fit_through_the_analysis_recovers_a_device_curve():
    """Synthetic GEMMs and copies timed by the analysis pass with a known calibration are fitted back to it."""
    known = DeviceCalibration({"bf16": Curve(0.75, 7e-6, 1.2)}, Curve(0.85, 3e-6, 1.5))
    device = replace(catalog(H100), calibration=known)
    shapes = [(b, m, n, k) for b in (1, 4) for m in (256, 1024, 4096) for n in (512, 4096) for k in (256, 2048)]
    rows = [Measurement(H100, "synthetic", "gemm", "matmul", "bf16", b, m, n, k, 0, 0, "", 1.0, "calibration")
            for b, m, n, k in shapes]
    rows += [Measurement(H100, "synthetic", "elementwise", "copy", "bf16", 1, 0, 0, 0, 0, 2.0 ** p, "", 1.0,
                         "calibration") for p in range(14, 31, 2)]
    t = kernel_times(rows, device, "bf16")
    assert t.is_calibrated.all()
    rows = [replace(r, time_s=float(s)) for r, s in zip(rows, t.calibrated)]
    fitted, results = fit_device(rows, replace(device, calibration=None), "bf16", Fit("synthetic", 0))
    for kind, curve in (("matrix", fitted.matrix["bf16"]), ("vector", fitted.vector)):
        want = known.curve(kind, "bf16")
        assert (curve.fraction, curve.latency, curve.sharpness) == pytest.approx(
            (want.fraction, want.latency, want.sharpness), rel=1e-5), kind
        assert results[kind].mape < 1e-8


# ------------------------------------------------------------------------------------------ the dataset
def test_measurements_are_split_as_the_readme_states(rows):
    counts = {}
    for r in rows:
        counts[(r.device, r.kind, r.split)] = counts.get((r.device, r.kind, r.split), 0) + 1
    assert counts == {
        (H100, "gemm", "calibration"): 49, (H100, "gemm", "held_out"): 24,
        (B200, "gemm", "calibration"): 49, (B200, "gemm", "held_out"): 25,
        (H100, "elementwise", "calibration"): 7, (H100, "elementwise", "held_out"): 4,
        (H100, "elementwise", "excluded"): 4,
        (A100_40, "elementwise", "calibration"): 7, (A100_40, "elementwise", "held_out"): 4,
        (A100_40, "elementwise", "excluded"): 4,
    }
    for r in rows:  # every source is cited by the device file it calibrates
        assert r.source in catalog(r.device).sources


def test_measurement_rows_are_the_published_figures(rows):
    # XLA sm_90 table, b=1 m=n=k=4096: 783328793548203 FLOP/s -> 2 * 4096^3 / that = 175.46 us
    r = next(r for r in rows if r.device == H100 and (r.batch, r.m, r.n, r.k) == (1, 4096, 4096, 4096))
    assert r.published == "783328793548203 FLOP/s" and r.time_s == pytest.approx(2 * 4096 ** 3 / 783328793548203)
    # XLA sm_100 table, b=2 m=256 n=k=4096: 993056022196531 FLOP/s
    r = next(r for r in rows if r.device == B200 and (r.batch, r.m, r.n, r.k) == (2, 256, 4096, 4096))
    assert r.time_s == pytest.approx(2 * 2 * 256 * 4096 ** 2 / 993056022196531)
    # A100 copy of 1 GiB read off the figure at 1393.2 GB/s: 2 GiB moved
    r = next(r for r in rows if r.device == A100_40 and r.bytes == 2 * 2 ** 30)
    assert r.published == "1393.2 GB/s" and r.time_s == pytest.approx(2 ** 31 / 1393.2e9)


# ------------------------------------------------------------------------------------ held-out accuracy
HELD_OUT = {  # device: (kind, ideal MAPE, calibrated MAPE) on the held-out rows, as fractions
    (H100, "gemm"): (0.577, 0.060),
    (B200, "gemm"): (0.674, 0.048),
    (H100, "elementwise"): (0.491, 0.049),
    (A100_40, "elementwise"): (0.463, 0.040),
}


@pytest.mark.parametrize("device_id", [H100, B200, A100_40])
def test_held_out_error_of_the_calibrated_model(rows, device_id):
    """The issue's bar: calibrated MAPE <= 10 % for GEMMs and <= 20 % for element-wise kernels, on rows the
    calibration never saw; the ideal model's error is reported beside it (and is what today's time_s gives)."""
    device = catalog(device_id)
    reports = error_report(select(rows, device_id, split="held_out"), device, "bf16")
    assert reports
    for rep in reports:
        assert rep.calibrated_mape <= (0.10 if rep.kind == "gemm" else 0.20)
        ideal, calibrated = HELD_OUT[(device_id, rep.kind)]
        assert (rep.ideal_mape, rep.calibrated_mape) == pytest.approx((ideal, calibrated), abs=5e-4)


def test_the_ideal_model_is_unchanged_by_a_calibration(rows):
    sel = select(rows, H100)
    with_cal = kernel_times(sel, catalog(H100), "bf16")
    without = kernel_times(sel, replace(catalog(H100), calibration=None), "bf16")
    np.testing.assert_array_equal(with_cal.ideal, without.ideal)
    np.testing.assert_array_equal(without.calibrated, without.ideal)
    assert not without.is_calibrated.any() and with_cal.is_calibrated.all()


@pytest.mark.parametrize("device_id", [H100, B200, A100_40])
def test_the_stored_calibration_is_the_fit_of_the_calibration_rows(rows, device_id):
    stored = catalog(device_id).calibration
    fitted, _ = fit_device(select(rows, device_id, split="calibration"),
                           replace(catalog(device_id), calibration=None), "bf16",
                           Fit("catalog/measurements/kernels.csv", 0, split="calibration"), ("fp16",))
    for kind in ("matrix", "vector"):
        a, b = stored.curve(kind, "bf16"), fitted.curve(kind, "bf16")
        assert (a is None) == (b is None)
        if a is not None:
            assert (a.fraction, a.latency, a.sharpness) == pytest.approx((b.fraction, b.latency, b.sharpness),
                                                                         rel=2e-3)
            assert a.fit.points == b.fit.points and a.fit.mape == pytest.approx(b.fit.mape, abs=2e-4)


# ----------------------------------------------------------------------------------------- in the analysis
def test_devices_without_a_curve_fall_back_to_the_ideal_model_and_say_so():
    model = get_template("gpt2").build()
    a100_80, h100, b200, a100_40 = (catalog(i) for i in ("nvidia-a100-sxm4-80gb", H100, B200, A100_40))
    r = evaluate(model, [a100_80, h100, b200, a100_40], "fp16")
    assert r.calibration_status[0].startswith("none")
    np.testing.assert_array_equal(r.calibrated_time[:, 0], r.time[:, 0])
    assert not r.calibrated[:, 0].any()
    assert r.calibration_status[1].startswith("calibrated (matrix: measured at bf16, 49 kernels")
    assert r.calibrated[:, 1].all()
    gemm = r.table.gemm_count > 0
    assert r.calibration_status[2].endswith("vector work at the ideal model")
    assert (r.calibrated[:, 2] == gemm).all() and (r.calibrated[:, 3] == ~gemm).all()
    assert r.calibration_status[3].endswith("matrix work at the ideal model")
    assert np.all(r.calibrated_time >= 0) and np.all(np.isfinite(r.totals.calibrated_time))
    np.testing.assert_allclose(r.totals.calibrated_time, r.count @ r.calibrated_time)
    with pytest.raises(ValueError, match="model"):
        r.model_time("measured")
    assert r.model_time("calibrated") is r.calibrated_time and r.model_time() is r.time


def test_a_row_without_work_takes_no_time():
    from explorer.core.analysis.calibrated import calibrated_times
    from explorer.core.analysis.device_arrays import device_arrays

    dev = device_arrays([catalog(H100)], "bf16")
    t, ok = calibrated_times(np.array([[0.0], [1e9]]), np.array([0.0, 1e6]), np.array([False, True]),
                             np.ones((2, 1)), np.ones((2, 1)), dev)
    assert t[0, 0] == 0.0 and ok.all() and t[1, 0] > 5e-6


def test_calibrated_decode_is_slower_than_the_roofline():
    """Llama-2-7B decode on the H100: small kernels pay their latency, so the calibrated step is slower."""
    r = evaluate(get_template("llama2-7b").build(), [catalog(H100)], "fp16", Context(phase="decode", seq_len=512))
    assert r.totals.calibrated_time[0] > r.totals.time[0]


# ---------------------------------------------------------------------------------------- the file block
def _h100_dict():
    return device_to_dict(catalog(H100))


def test_the_calibration_block_round_trips():
    data = _h100_dict()
    again = device_to_dict(device_from_dict(data))
    assert again["calibration"] == data["calibration"]
    assert data["calibration"]["matrix"]["bf16"]["also"] == ["fp16"]
    cal = device_from_dict(data).calibration
    assert cal.matrix["fp16"].measured_as == "bf16" and cal.matrix["bf16"].measured_as is None


@pytest.mark.parametrize("edit, message", [
    (lambda c: c["matrix"].update(fp17=c["matrix"]["bf16"]), "unknown precision"),
    (lambda c: c["vector"].pop("latency"), "latency: is required"),
    (lambda c: c["vector"].update(latency="5 GB"), "latency"),
    (lambda c: c["vector"].update(fraction=1.5), "fraction"),
    (lambda c: c["vector"].update(source="nowhere"), "'nowhere' is not a key of 'sources'"),
    (lambda c: c["vector"].update(also=["fp16"]), "'also' is for matrix"),
    (lambda c: c["matrix"]["bf16"].update(also=["bf16"]), "another precision"),
    (lambda c: c.update(scalar={}), "matrix and/or vector"),
])
def test_a_bad_calibration_block_is_reported(edit, message):
    data = _h100_dict()
    edit(data["calibration"])
    with pytest.raises(DeviceFileError, match=message):
        device_from_dict(data, "h100.yaml")


def test_mape_by_hand():
    assert mape([1.1, 0.9], [1.0, 1.0]) == pytest.approx(0.1)
