"""The device plan's cold path (``plan._device_plan``: a tensor-core device set's block tiles for M and N in one
floor, the precision's formats made once per precision) gives the plan it gave before, field by field (values with
NaN in place, dtypes, shapes, read-only flags), on random subsets of the catalog at every precision and with mixed
tensor formats. The plan as it was is kept below, verbatim, as the reference."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from explorer.core.analysis import plan
from explorer.core.analysis.calibrated import calibration_status, device_curves
from explorer.core.analysis.device_arrays import DeviceArrays, device_arrays
from explorer.core.analysis.plan import _BLOCK_SCALES, DevicePlan, EngineGroup, _frozen, _unknown_as_zero
from explorer.core.analysis.tensor_bytes import formats_of
from explorer.core.formats import TensorFormats
from explorer.core.hardware.catalog_files import load_shipped_devices
from explorer.core.precision import PRECISIONS

CATALOG = load_shipped_devices()


def _device_plan_before(dev: DeviceArrays) -> DevicePlan:
    n_dev, n_levels = len(dev), dev.level_bw.shape[1]
    bpe = dev.bytes_per_element
    present = np.arange(n_levels) < np.array([len(names) for names in dev.level_names], dtype=int)[:, None]
    is_sa, is_tc = dev.engine == 1, dev.engine == 2  # systolic array, tensor core
    engine_m = np.where(is_sa, dev.rows, np.where(is_tc, dev.block_m, np.inf))
    engine_n = np.where(is_sa, dev.cols, np.where(is_tc, dev.block_n, np.inf))
    with np.errstate(invalid="ignore", divide="ignore"):
        # every level at once: the square tile of the next inner level's capacity; where unknown, the off-chip level
        # (feeding the first on-chip one, capacity unknown) reuses ideally, the others feed the matrix engine's tile
        square = np.maximum(np.floor(np.sqrt(dev.level_tile / (3.0 * bpe))), 1.0)
        known = np.isfinite(square)
        fill = np.empty((2, n_dev, n_levels))
        fill[0], fill[1] = engine_m[:, None], engine_n[:, None]
        fill[:, :, :1] = np.inf
        tiles = np.where(known, square, fill)  # (2, D, V): the tile's M, N
        level_bw_eta = dev.level_bw * dev.eta_m[:, None]
    groups = []
    for code, members in ((1, is_sa), (2, is_tc)):
        cols = np.flatnonzero(members)
        if not len(cols):
            groups.append(None)
            continue
        if code == 1:
            df = dev.dataflow[cols]
            params = (df == "os", df == "is", dev.rows[cols], dev.cols[cols], dev.rows[cols] * dev.cols[cols],
                      dev.units[cols])
        else:  # both block tiles (the device's and its half) side by side: (2 x D_tc,)
            bm = np.maximum(np.floor(dev.block_m[cols] * _BLOCK_SCALES), 1).ravel()
            bn = np.maximum(np.floor(dev.block_n[cols] * _BLOCK_SCALES), 1).ravel()
            params = (bm, bn, np.tile(dev.sm_count[cols], 2), max(1.0, 16.0 / bpe))
        _frozen(cols, *params)
        groups.append(EngineGroup(cols=cols, whole=len(cols) == n_dev, params=params))
    curves = device_curves(dev)
    plan = DevicePlan(
        n_dev=n_dev, n_levels=n_levels, peak=dev.peak[None, :], bw=dev.bandwidth[None, :],
        eta_c=dev.eta_c[None, :], eta_m=dev.eta_m[None, :], peak_eta_c=(dev.peak * dev.eta_c)[None, :],
        ridge=(dev.peak[None, :] / dev.bandwidth[None, :]) if n_dev else np.zeros((1, 0)),
        mac_energy=dev.mac_energy[None, :], tiles4=np.ascontiguousarray(tiles[::-1].transpose(0, 2, 1))[:, :, None, :],
        present=present.T.astype(float)[:, None, :], level_energy=_unknown_as_zero(dev.level_energy).T[:, None, :],
        level_bw_eta=level_bw_eta.T[:, None, :], systolic=groups[0], tensor_core=groups[1], curves=curves,
        calibrated_any=bool((curves[0].present | curves[1].present).any()), status=calibration_status(dev),
        row_key=(formats_of(dev), dev.computes, len(dev) if dev.computes else 0),
        tiles_ok=bool(((tiles >= 1) | (tiles == np.inf)).all()),
        every_device_timed=bool((present & np.isfinite(level_bw_eta) & (level_bw_eta > 0)).any(axis=1).all()))
    _frozen(plan.peak, plan.bw, plan.eta_c, plan.eta_m, plan.peak_eta_c, plan.ridge, plan.mac_energy, plan.tiles4,
            plan.present, plan.level_energy, plan.level_bw_eta)
    return plan


def _same(a, b, where: str) -> None:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        a, b = np.asarray(a), np.asarray(b)
        assert a.dtype == b.dtype and a.shape == b.shape, where
        assert np.array_equal(a, b, equal_nan=a.dtype.kind in "fc"), where
        assert a.flags.writeable == b.flags.writeable, where
    elif dataclasses.is_dataclass(a) and not isinstance(a, type):
        assert type(a) is type(b), where
        for f in dataclasses.fields(a):
            _same(getattr(a, f.name), getattr(b, f.name), f"{where}.{f.name}")
    elif isinstance(a, tuple):
        assert isinstance(b, tuple) and len(a) == len(b), where
        for k, (x, y) in enumerate(zip(a, b)):
            _same(x, y, f"{where}[{k}]")
    else:
        assert type(a) is type(b) and a == b, where


def _check(dev) -> None:
    with np.errstate(invalid="ignore", divide="ignore"):
        _same(plan._device_plan(dev), _device_plan_before(dev), "plan")


@pytest.mark.parametrize("precision", PRECISIONS)
def test_the_whole_catalog_at_every_precision(precision):
    _check(device_arrays(CATALOG, precision))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from(range(len(CATALOG))), min_size=1, max_size=8),
       st.sampled_from(["fp16", "bf16", "fp8", "int8", "fp32"]),
       st.sampled_from([None, ("int4-g128", None, None), ("nvfp4", "fp8", "fp8"), (None, None, "int8")]))
def test_random_device_sets_and_formats(picks, precision, formats):
    tensors = None if formats is None else TensorFormats.of(precision, *formats)
    _check(device_arrays([CATALOG[i] for i in picks], precision, tensors))


def test_the_formats_of_a_precision_are_made_once_and_equal_a_fresh_parse():
    dev = device_arrays(CATALOG[:3], "fp8")
    made = plan._formats_of(dev)
    assert made is plan._formats_of(device_arrays(CATALOG[3:5], "fp8")) and made == TensorFormats.of("fp8")
    mixed = TensorFormats.of("fp16", "int4-g128")
    assert plan._formats_of(device_arrays(CATALOG[:2], "fp16", mixed)) == mixed
