"""The pure computations behind the roofline, energy and tiling panels (hand-computed cases)."""

import math

import numpy as np
import pytest

from explorer.core.analysis.device_arrays import DRAM_ENERGY_PER_BYTE
from explorer.core.analysis.evaluate import REGIME_ADVICE, evaluate
from explorer.core.analysis.panels import (
    compute_energy_view,
    compute_roofline,
    compute_tiling_view,
    default_row,
    energy_table,
    with_energy,
)
from explorer.core.hardware.device_file import device_from_dict
from explorer.core.workload.layers import Context
from explorer.core.workload.model import LayerSpec, Model


def gpu(id_="a100", extra_levels=(), **extra):
    data = {
        "id": id_,
        "name": id_.upper(),
        "vendor": "test",
        "kind": "gpu",
        "sources": {"ds": {"title": "test datasheet", "url": "https://example.com", "date": "2024-01-01"}},
        "peak": {"fp16": "312 TFLOP/s", "tf32": "156 TFLOP/s", "int8": "624 TOP/s"},
        "memory": [
            {"name": "HBM", "role": "offchip", "capacity": "80 GB", "bandwidth": "2039 GB/s"},
            *extra_levels,
        ],
    }
    data.update(extra)
    return device_from_dict(data)


def systolic(id_="npu", rows=128, cols=128, dataflow="ws", units=1, peak="100 TFLOP/s", bw="10 TB/s"):
    return device_from_dict(
        {
            "id": id_,
            "name": id_,
            "vendor": "test",
            "kind": "npu",
            "peak": {"fp16": peak},
            "memory": [{"name": "DRAM", "role": "offchip", "capacity": "16 GB", "bandwidth": bw}],
            "matrix_engine": {
                "type": "systolic",
                "rows": rows,
                "cols": cols,
                "dataflow": dataflow,
                "units": units,
            },
        }
    )


MLP = Model.make(
    "mlp",
    {"features": 1024},
    [
        LayerSpec.make("dense", "fc1", in_features=1024, out_features=4096),
        LayerSpec.make("relu", "act"),
        LayerSpec.make("dense", "fc2", in_features=4096, out_features=1024),
    ],
)


# ------------------------------------------------------------------------------------------------ roofline
def test_roofline_ceilings_slopes_and_ridge():
    l2 = {"name": "L2", "role": "onchip", "capacity": "40 MB", "bandwidth": "7 TB/s"}
    a = evaluate(MLP, [gpu(extra_levels=[l2])], "fp16")
    r = compute_roofline(a)
    d = r.devices[0]
    assert d.peak == 312e12 and d.ridge == pytest.approx(312 / 2.039)  # 153.0 FLOP/byte, the chapter's A100
    assert d.ceiling.y.tolist() == [312e12, 312e12]
    assert d.ceiling.x[0] == pytest.approx(153.0, abs=0.05) and d.ceiling.x[1] == r.x_range[1]
    assert {c.precision: c.flops for c in d.other_ceilings} == {"tf32": 156e12, "int8": 624e12}
    tf32 = next(c for c in d.other_ceilings if c.precision == "tf32")
    assert tf32.x[0] == pytest.approx(156e12 / 2039e9)  # 76.5: the slope meets the TF32 roof there
    hbm, onchip = d.slopes
    assert (hbm.level, onchip.level) == ("HBM", "L2")
    assert onchip.ridge == pytest.approx(312 / 7)  # 44.6 FLOP/byte
    assert hbm.y[0] == pytest.approx(r.x_range[0] * 2039e9) and hbm.y[-1] == pytest.approx(312e12)
    assert d.missing == ""


def test_roofline_points_are_intensity_and_attainable():
    a = evaluate(MLP, [gpu()], "fp16")
    r = compute_roofline(a, focused_layer=2)
    p = r.points
    assert p.names == ("fc1", "act", "fc2")
    # fc1 at batch 1: 2*1024*4096 + 4096 FLOPs over (1024*4096 + 4096 + 1024 + 4096) elements x 2 bytes
    flops = 2 * 1024 * 4096 + 4096
    nbytes = (1024 * 4096 + 4096 + 1024 + 4096) * 2
    assert p.intensity[0] == pytest.approx(flops / nbytes)  # ~1.0 FLOP/byte: memory-bound
    assert p.attainable[0] == pytest.approx(flops / nbytes * 2039e9)
    assert p.bound[0] == "memory" and p.regime[0] == "very low"
    assert p.size.max() == 1.0 and np.all((p.size >= 0) & (p.size <= 1))
    assert p.time_share.sum() == pytest.approx(1.0)
    assert p.focused.tolist() == [False, False, True]
    bands = r.bands
    assert [b.name for b in bands] == ["very low", "low", "medium", "high"]
    assert [(b.lo, b.hi) for b in bands[1:3]] == [(2.0, 20.0), (20.0, 200.0)]
    assert bands[0].lo == r.x_range[0] and bands[-1].hi == r.x_range[1]
    assert bands[3].advice == REGIME_ADVICE["high"]


def test_roofline_device_without_the_precision_says_so():
    tpu = device_from_dict(
        {
            "id": "tpu",
            "name": "TPU",
            "vendor": "t",
            "kind": "tpu",
            "peak": {"bf16": "275 TFLOP/s"},
            "memory": [{"name": "HBM", "role": "offchip", "bandwidth": "1200 GB/s"}],
        }
    )
    a = evaluate(MLP, [gpu(), tpu], "fp16")  # fp16 on a bf16-only device: computes at bf16, and says so
    d = compute_roofline(a, device_index=1).devices[1]
    assert d.ceiling.precision == "bf16" and d.ceiling.flops == 275e12 and d.missing == ""
    assert a.devices.precision_notes[1] == ("TPU has no fp16 peak: computes at bf16, the other 16-bit float "
                                            "(same 2 bytes per element)")
    a = evaluate(MLP, [gpu(), tpu], "fp32")  # no fp32 peak and no same-width one: no roof
    r = compute_roofline(a, device_index=1)
    d = r.devices[1]
    assert d.ceiling is None and d.missing == "no fp32 peak"
    assert [c.precision for c in d.other_ceilings] == ["bf16"]
    assert len(d.slopes) == 1 and math.isnan(d.slopes[0].ridge)
    assert len(r.points.rows) == 0  # no attainable performance without a peak
    with pytest.raises(ValueError, match="device_index"):
        compute_roofline(a, device_index=2)


# ------------------------------------------------------------------------------------------------ energy
def test_energy_view_sums_to_the_analysis_totals():
    model = Model.make(
        "lm",
        {"tokens": 128, "hidden": 256},
        [LayerSpec.make("transformer_block", "h", repeat=3, heads=4), LayerSpec.make("layernorm", "ln")],
    )
    l2 = {"name": "L2", "role": "onchip", "capacity": "40 MB", "bandwidth": "7 TB/s"}
    a = evaluate(model, [gpu(extra_levels=[l2]), gpu("plain")], "fp16", Context(batch=4), model=model)
    e = compute_energy_view(a, 0, focused_layer=1)
    assert e.level_names == ("HBM", "L2")
    total = e.row_levels.sum() + e.row_compute.sum()
    assert total == pytest.approx(a.totals.energy[0])  # repeats (x3) included
    assert e.layer_levels.sum(axis=0) == pytest.approx(e.row_levels.sum(axis=0))
    assert e.layer_names == ("h", "ln") and e.layer_levels.shape == (2, 2)
    assert e.device_total == pytest.approx(
        a.totals.energy / 4
    )  # per inference: the batch of 4 shares the pass
    assert e.unit == "inference"
    assert math.isnan(e.device_levels[1, 1])  # the second device has no L2
    assert np.nansum(e.device_levels, axis=1) + e.device_compute == pytest.approx(e.device_total)
    assert e.focused_rows.sum() == 1 and e.row_names[int(np.flatnonzero(e.focused_rows)[0])] == "ln"


def test_energy_ladder_is_the_chapters_horowitz_table():
    a = evaluate(MLP, [gpu()], "fp16")
    e = compute_energy_view(a, 0)
    pj = {x.label: x.energy * 1e12 for x in e.ladder}
    assert pj == pytest.approx(
        {"INT8 add": 0.03, "FP32 add": 0.9, "FP32 multiply": 3.7, "SRAM read (8 KB)": 5.0, "DRAM read": 640.0}
    )
    assert pj["DRAM read"] / pj["SRAM read (8 KB)"] == pytest.approx(128)  # the chapter's "~128x"
    assert pj["DRAM read"] / pj["INT8 add"] == pytest.approx(21333.3, rel=1e-4)  # "over 20,000x"
    own = {x.label: x.energy for x in e.device_ladder}
    assert own["HBM"] == pytest.approx(640e-12)  # the default, per 32-bit access
    assert own["MAC at fp16"] == pytest.approx(1.5e-12)


def test_energy_table_sources_and_editing():
    level = {
        "name": "HBM",
        "role": "offchip",
        "capacity": "80 GB",
        "bandwidth": "2039 GB/s",
        "energy": {"value": "7 pJ/B", "source": "ds"},
    }
    sram = {"name": "L2", "role": "onchip", "capacity": "40 MB", "bandwidth": "7 TB/s"}
    device = device_from_dict(
        {
            "id": "x",
            "name": "X",
            "vendor": "t",
            "kind": "gpu",
            "sources": {"ds": {"title": "test datasheet", "url": "https://e.com", "date": "2024"}},
            "peak": {"fp16": "312 TFLOP/s"},
            "memory": [level, sram],
            "energy_per_mac": {"fp16": {"value": "0.5 pJ", "source": "ds"}},
        }
    )
    rows = {r.key: r for r in energy_table(device, "fp16")}
    assert rows["memory[0]"].value == pytest.approx(7e-12) and rows["memory[0]"].source == "test datasheet"
    assert not rows["memory[0]"].is_default
    assert rows["memory[1]"].is_default and "SRAM" in rows["memory[1]"].source
    assert rows["mac"].value == pytest.approx(0.5e-12) and rows["mac"].unit == "J/MAC"
    edited = with_energy(device, "memory[0]", 14e-12, "fp16")
    before, after = evaluate(MLP, [device], "fp16"), evaluate(MLP, [edited], "fp16")
    assert after.totals.energy_by_level[0, 0] == pytest.approx(2 * before.totals.energy_by_level[0, 0])
    assert energy_table(edited, "fp16")[0].source == "entered by the user (no source)"
    edited_mac = with_energy(device, "mac", 1e-12, "fp16")
    assert evaluate(MLP, [edited_mac], "fp16").totals.compute_energy[0] == pytest.approx(
        2 * before.totals.compute_energy[0]
    )
    with pytest.raises(ValueError, match="memory\\[5\\]"):
        with_energy(device, "memory[5]", 1e-12, "fp16")
    with pytest.raises(ValueError, match="positive"):
        with_energy(device, "mac", -1.0, "fp16")
    assert DRAM_ENERGY_PER_BYTE == 160e-12


# ------------------------------------------------------------------------------------------------ tiling
FRINGE = Model.make(
    "fringe",
    {"tokens": 4096, "hidden": 129},
    [
        LayerSpec.make("dense", "proj", in_features=129, out_features=129, bias=False),
        LayerSpec.make("relu", "act"),
    ],
)


def test_tiling_129_on_a_128_array():
    a = evaluate(FRINGE, [systolic()], "fp16")
    row = default_row(a, -1, 0)
    assert a.table.names[row] == "proj"
    t = compute_tiling_view(a, row, 0)
    # WS: K = 129 on the rows, N = 129 on the columns, M = 4096 streamed; 2 x 2 folds
    assert (t.rows_dim, t.cols_dim, t.array, t.folds) == ("K", "N", (128, 128), (2, 2))
    assert t.efficiency == pytest.approx(129 * 129 / (4 * 128 * 128))  # 0.254
    assert t.current_efficiency == pytest.approx(t.efficiency)
    assert t.fringe_active == (1, 1) and t.idle_pes == 128 * 128 - 1
    assert t.sweep_dim == "K" and t.multiple == 128 and t.current_value == 129
    assert t.sweep_values[0] <= 129 <= t.sweep_values[-1]
    assert len(t.sweep_values) == 4 * 128 + 1
    # the cliff just past each multiple
    for c in t.cliffs:
        i = int(np.flatnonzero(t.sweep_values == c)[0])
        if i + 1 < len(t.sweep_values):
            assert t.sweep_efficiency[i + 1] < t.sweep_efficiency[i]
    at = dict(zip(t.sweep_values.tolist(), t.sweep_efficiency.tolist()))
    assert at[128.0] == pytest.approx(128 * 129 / (2 * 128 * 128))
    assert at[129.0] == pytest.approx(t.efficiency)


def test_tiling_padding_options_are_priced_by_re_evaluating_the_gemm():
    a = evaluate(FRINGE, [systolic()], "fp16")
    row = int(a.table.names.index("proj"))
    t = compute_tiling_view(a, row, 0)
    opts = {o.value: o for o in t.options}
    assert sorted(opts) == [128, 129, 256]
    assert (opts[128].action, opts[129].action, opts[256].action) == ("reshape", "current", "pad")
    assert opts[129].time == pytest.approx(a.time[row, 0])  # the re-evaluation reproduces the row
    flops = 2 * 4096 * 129 * 129
    assert opts[129].time == pytest.approx(flops / (100e12 * 129 * 129 / (4 * 128 * 128)))  # compute-bound
    # reshape to 128: 1 x 2 folds, 128/129 of the work
    assert opts[128].efficiency == pytest.approx(128 * 129 / (2 * 128 * 128))
    assert opts[128].time == pytest.approx(2 * 4096 * 128 * 129 / (100e12 * opts[128].efficiency))
    # pad to 256: the same 2 x 2 folds, so no faster (zeros are computed)
    assert opts[256].time == pytest.approx(opts[129].time, rel=1e-9)
    assert opts[128].delta_time < 0
    assert "reshape to 128" in t.suggestion and "pad to 256" in t.suggestion
    assert "Reshaping to 128 pays" in t.suggestion


def test_tiling_on_tensor_cores_matches_the_analysis():
    dev = gpu(matrix_engine={"type": "tensor_core", "sm_count": 108, "block_tile": {"m": 128, "n": 128}})
    model = Model.make(
        "m",
        {"tokens": 1000, "hidden": 1000},
        [LayerSpec.make("dense", "fc", in_features=1000, out_features=1000)],
    )
    a = evaluate(model, [dev], "fp16")
    t = compute_tiling_view(a, 0, 0)
    assert t.engine == "tensor_core" and (t.rows_dim, t.cols_dim) == ("M", "N")
    assert t.current_efficiency == pytest.approx(a.mapping_efficiency[0, 0])
    assert t.array in ((128, 128), (64, 64))
    tile = t.array[0]
    assert t.fringe_active[0] == 1000 - (math.ceil(1000 / tile) - 1) * tile
    assert "wave" in t.suggestion


def test_tiling_without_an_engine_or_gemm_says_why():
    a = evaluate(FRINGE, [gpu()], "fp16")
    t = compute_tiling_view(a, 0, 0)
    assert t.row == -1 and "no matrix engine" in t.missing
    assert len(t.gemm_rows) == 1  # the per-operator bars are still there
    b = evaluate(FRINGE, [systolic()], "fp16")
    relu = int(b.table.names.index("act"))
    assert "no matrix multiplication" in compute_tiling_view(b, relu, 0).missing
    assert default_row(b, 1, 0) == -1  # the relu layer has no GEMM
