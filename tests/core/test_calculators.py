"""The chapter's design-review calculators reproduce its worked examples (issue 9)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from explorer.core.calculators import CALCULATORS, CalculatorInputError, get_calculator
from explorer.core.calculators.alignment import tensor_core_alignment
from explorer.core.calculators.amdahl import amdahl, amdahl_grid
from explorer.core.calculators.batch_sweep import (
    CHAPTER_DEVICES,
    DeviceRidge,
    RidgeDevice,
    batch_sweep,
    crossing_batch,
    decode_ceiling,
)
from explorer.core.calculators.carbon import (
    JOULES_PER_KWH,
    OLDER_SOURCE_GRID,
    US_AVERAGE_GRID,
    carbon_comparison,
)
from explorer.core.calculators.dataflow import conv_dataflow, gemm_dataflow, loop_order_weight_loads
from explorer.core.calculators.fusion import kernel_fusion
from explorer.core.calculators.iron_law import iron_law
from explorer.core.calculators.sparsity import nm_sparsity
from explorer.core.calculators.speed_of_light import speed_of_light
from explorer.core.calculators.systolic import systolic_energy
from explorer.core.calculators.transfer_scaling import (
    LINKS,
    communication_cap,
    gradient_sync_scaling,
    host_transfer,
)

SECONDS_PER_YEAR = 365 * 24 * 3600.0
fractions = st.floats(0.0, 0.999999, allow_nan=False)
gains = st.floats(1.0, 1e6, allow_nan=False)


# ---------------------------------------------------------------- registry


def test_registry_lists_the_ten_calculators_with_stable_ids():
    assert [c.id for c in CALCULATORS] == [
        "amdahl",
        "iron-law",
        "batch-sweep",
        "dataflow",
        "fusion",
        "sparsity",
        "alignment",
        "transfer-scaling",
        "carbon",
        "speed-of-light",
    ]
    for calc in CALCULATORS:
        assert calc.title and calc.summary
        assert calc.function in calc.functions
        assert calc.presets, calc.id
        for preset in calc.presets:
            assert preset.function in calc.functions, (calc.id, preset.name)
            assert preset.source
            preset.run()  # every preset is a valid input set


def test_get_calculator_names_known_ids_on_a_typo():
    assert get_calculator("fusion").title == "Kernel fusion"
    with pytest.raises(KeyError, match="amdahl"):
        get_calculator("amdhal")


def test_preset_inputs_are_read_only():
    preset = get_calculator("amdahl").presets[0]
    with pytest.raises(TypeError):
        preset.inputs["hardware_gain"] = 1.0  # type: ignore[index]


def test_calculator_core_does_not_import_qt():
    folder = Path(__file__).parents[2] / "explorer" / "core" / "calculators"
    for path in folder.glob("*.py"):
        text = path.read_text(encoding="utf-8")
        for banned in ("PySide6", "pyqtgraph", "explorer.ui", "matplotlib"):
            assert banned not in text, f"{path.name} imports {banned}"


# ---------------------------------------------------------------- Amdahl


def test_amdahl_h100_examples_e2_e3():
    resnet = amdahl(0.95, 247)
    assert round(resnet.speedup, 1) == 18.6
    assert round(0.95 / 247, 4) == 0.0038
    assert resnet.ceiling == pytest.approx(20.0)
    gpt2 = amdahl(0.80, 247)
    assert round(gpt2.speedup, 1) == 4.9
    assert gpt2.ceiling == pytest.approx(5.0)
    assert resnet.speedup >= 3 * gpt2.speedup  # the chapter cell's guard


def test_amdahl_infinite_gain_and_older_values():
    assert amdahl(0.9, math.inf).speedup == pytest.approx(10.0)  # E1
    assert round(amdahl(0.95, 500).speedup, 1) == 19.3  # older source
    assert round(amdahl(0.80, 500).speedup, 1) == 5.0
    assert amdahl(0.8, 1000).speedup < 5.0  # E4
    assert round(amdahl(0.8, 100).speedup, 1) == 4.8  # footnote S:246, 5-20x
    assert round(amdahl(0.95, 100).speedup, 1) == 16.8


def test_amdahl_time_split_and_levers():
    r = amdahl(0.95, 247)
    assert r.serial_share + r.accelerated_share == pytest.approx(1.0)
    assert r.new_time_fraction == pytest.approx(0.05 + 0.95 / 247)
    assert r.gain_if_serial_halved > r.gain_if_g_doubled  # the wall: serial work matters more
    assert amdahl(1.0, 10).ceiling == math.inf


def test_amdahl_heat_map_spans_one_to_five_hundred():
    grid = amdahl_grid()
    assert grid.speedup.shape == (100, 100)
    assert grid.speedup.min() == pytest.approx(1.0)
    assert grid.speedup.max() == pytest.approx(1 / (0.001 + 0.999 / 1000))
    assert grid.levels == (1, 2, 5, 10, 20, 50, 100, 200, 500)


def test_amdahl_rejects_bad_inputs_naming_the_field():
    with pytest.raises(CalculatorInputError, match="parallel_fraction"):
        amdahl(1.2, 10)
    with pytest.raises(CalculatorInputError, match="hardware_gain"):
        amdahl(0.5, 0.5)


@given(fractions, gains)
def test_amdahl_speedup_is_bounded_by_ceiling_and_gain(p, g):
    s = amdahl(p, g).speedup
    assert 1.0 - 1e-12 <= s <= 1.0 / (1.0 - p) * (1 + 1e-12)
    assert s <= g * (1 + 1e-12)


@given(fractions, gains)
def test_amdahl_more_gain_never_hurts(p, g):
    assert amdahl(p, 2 * g).speedup >= amdahl(p, g).speedup - 1e-12


def test_amdahl_accepts_arrays():
    r = amdahl(np.array([0.8, 0.95]), 247.0)
    np.testing.assert_allclose(r.speedup, [4.9203, 18.5714], rtol=1e-4)


# ---------------------------------------------------------------- iron law


def test_iron_law_dense_layer_is_memory_bound_e6():
    r = iron_law(8_650_752, 2039e9, 268_435_456, 312e12)
    assert r.arithmetic_intensity == pytest.approx(31.0303, rel=1e-5)
    assert r.effective_ridge == pytest.approx(153.016, rel=1e-5)
    assert r.dominant_term == "data movement" and r.memory_wall
    assert r.memory_time == pytest.approx(8_650_752 / 2039e9)
    assert r.total_time == pytest.approx(r.memory_time + r.compute_time)


def test_iron_law_decode_and_training_time_e36_e25():
    decode = iron_law(140e9, 1e12, 140e9, 312e12)
    assert decode.memory_time == pytest.approx(0.140)  # 140 ms per token, fails 50 ms
    gpt3 = [
        iron_law(0, 3.35e12, 3.14e23, 1979e12, eta).total_time / SECONDS_PER_YEAR for eta in (1, 0.6, 0.4)
    ]
    assert [round(y, 1) for y in gpt3] == [5.0, 8.4, 12.6]
    assert iron_law(0, 1, 3.14e23, 1979e12).dominant_term == "compute"


def test_iron_law_latency_can_dominate_and_arrays_work():
    r = iron_law(1e3, 1e12, 1e3, 1e12, 1.0, 5e-6)
    assert r.dominant_term == "fixed latency" and not r.memory_wall
    arr = iron_law(np.array([1e3, 1e9]), 1e12, 1e9, 1e12)
    assert list(arr.dominant_term) == ["compute", "data movement"]
    with pytest.raises(CalculatorInputError, match="efficiency"):
        iron_law(1, 1, 1, 1, efficiency=0)


@given(
    st.floats(0, 1e12),
    st.floats(1e6, 1e13),
    st.floats(0, 1e15),
    st.floats(1e9, 1e16),
    st.floats(0.01, 1),
    st.floats(0, 1),
)
def test_iron_law_total_bounds_every_term(d, bw, o, peak, eta, lat):
    r = iron_law(d, bw, o, peak, eta, lat)
    assert r.total_time >= r.overlapped_time * (1 - 1e-12)
    assert r.overlapped_time >= max(r.memory_time, r.compute_time, r.latency_time) * (1 - 1e-12)
    assert sum(r.shares) == pytest.approx(1.0) or r.total_time == 0


# ---------------------------------------------------------------- batch sweep and decode


def test_batch_sweep_reproduces_e8_and_ridge_crossings():
    r = batch_sweep(np.array([1.0, 32.0, 256.0]), 2048, 2048)
    np.testing.assert_allclose(r.intensity, [0.99902, 31.0303, 204.8], rtol=1e-5)
    assert r.asymptote == pytest.approx(1024.0)
    crossings = {c.device: c for c in r.crossings}
    assert round(crossings["A100 FP16"].ridge) == 153
    assert round(crossings["H100 FP16"].ridge, 1) == 295.2
    assert round(crossings["T4 FP16"].ridge, 1) == 203.1
    # first whole batch that is compute-bound: A100 ~180, T4 ~254, H100 ~415 (M-8, derived)
    assert [math.ceil(crossings[n].crossing_batch) for n in ("A100 FP16", "T4 FP16", "H100 FP16")] == [
        180,
        254,
        415,
    ]
    assert list(crossings["A100 FP16"].compute_bound) == [False, False, True]
    assert list(crossings["H100 FP16"].compute_bound) == [False, False, False]


def test_batch_one_ceilings_e35():
    r = batch_sweep(
        1.0, 2048, 2048, devices=[DeviceRidge("A100", 312e12, 2039e9), DeviceRidge("T4", 65e12, 320e9)]
    )
    a100, t4 = r.crossings
    assert a100.attainable_flops / 1e12 == pytest.approx(2.037, abs=1e-3)
    assert t4.attainable_flops / 1e12 == pytest.approx(0.3197, abs=1e-4)


def test_dense_e6_attainable_and_utilization():
    a100 = batch_sweep(32.0, 2048, 2048).crossings[1]
    assert a100.attainable_flops / 1e12 == pytest.approx(63.27, abs=0.01)
    assert round(100 * a100.attainable_flops / 312e12, 1) == 20.3


def test_ridge_above_asymptote_never_crosses():
    assert crossing_batch(1100.0, 2048, 2048) == math.inf


def test_chapter_devices_satisfy_the_protocol():
    assert all(isinstance(d, RidgeDevice) for d in CHAPTER_DEVICES)


@given(st.floats(1.0, 1e5), st.integers(1, 8192), st.integers(1, 8192))
def test_batch_intensity_grows_towards_asymptote(b, m, n):
    lo, hi = batch_sweep(np.array([b, 2 * b]), m, n, devices=()).intensity
    assert lo <= hi * (1 + 1e-12)
    assert hi <= 2 * m * n / (2 * (m + n)) * (1 + 1e-12)


@given(st.floats(1.0, 900.0), st.integers(64, 8192))
def test_intensity_at_crossing_equals_ridge(ridge, m):
    b = crossing_batch(ridge, m, m)
    if math.isfinite(b):
        assert batch_sweep(b, m, m, devices=()).intensity == pytest.approx(ridge, rel=1e-9)


def test_gpt2_xl_decode_ceiling_e9():
    r = decode_ceiling(1.5e9, 2.0, 2039e9, 312e12)
    assert r.weight_bytes == 3e9 and r.flops_per_token == 3e9
    assert r.intensity == pytest.approx(1.0)
    assert r.attainable_flops == pytest.approx(2.039e12)
    assert round(100 * r.utilization, 2) == 0.65
    assert r.tokens_per_second == pytest.approx(2039e9 / (1.5e9 * 2))  # BW / (params x bytes)
    assert r.memory_bound


def test_decode_large_batch_hits_compute_ceiling():
    r = decode_ceiling(1.5e9, 2.0, 2039e9, 312e12, batch=1024)
    assert not r.memory_bound
    assert r.tokens_per_second == pytest.approx(312e12 / 3e9)
    assert r.utilization == pytest.approx(1.0)


# ---------------------------------------------------------------- dataflow


def test_loop_order_example_1_3():
    r = loop_order_weight_loads(16, 3, 8)
    assert (r.output_positions, r.loop_orderings) == (36, 120)
    assert (r.weight_stationary_loads, r.output_stationary_loads, r.ratio) == (144, 5184, 36.0)
    assert loop_order_weight_loads(16, 3, 8, resident_filters=16).output_stationary_loads == 144
    with pytest.raises(CalculatorInputError, match="resident_filters"):
        loop_order_weight_loads(16, 3, 8, resident_filters=17)


def test_listing_15_gemm_without_reuse():
    r = gemm_dataflow(32, 256, 512, 64 * 1024)
    assert r.no_reuse_operand_reads == 8_388_608
    assert r.unique_operand_elements == 139_264
    assert round(r.no_reuse_operand_reads / r.unique_operand_elements) == 60
    assert r.macs == 4_194_304


def test_conv_lowering_matches_e5_touch_once_traffic():
    r = conv_dataflow(32, 128, 56, 56, 256, 3, 1024 * 1024)
    assert (r.m, r.k, r.n) == (32 * 56 * 56, 128 * 9, 256)
    assert r.compulsory_bytes == 77_660_160
    assert 2 * r.macs == pytest.approx(59.19e9, rel=1e-3)
    assert r.best == "weight-stationary"  # small filters, large feature maps (Table 22: CNN -> WS)


def test_whole_operand_in_buffer_gives_compulsory_traffic():
    r = gemm_dataflow(64, 128, 256, 10**9)
    for s in r.strategies:
        assert s.total_bytes == pytest.approx(r.compulsory_bytes)


@settings(max_examples=60, deadline=None)
@given(
    st.integers(1, 300),
    st.integers(1, 300),
    st.integers(1, 300),
    st.integers(1, 1 << 16),
    st.sampled_from([1.0, 2.0, 4.0]),
)
def test_dataflow_traffic_bounds(m, k, n, elements, p):
    small = gemm_dataflow(m, k, n, elements * p, p)
    big = gemm_dataflow(m, k, n, 2 * elements * p, p)
    for s_small, s_big in zip(small.strategies, big.strategies):
        assert s_small.total_bytes >= small.compulsory_bytes - 1e-6
        assert s_big.total_bytes <= s_small.total_bytes + 1e-6  # more buffer never costs traffic
    best = small.traffic(small.best).total_bytes
    assert all(best <= s.total_bytes for s in small.strategies)


def test_dataflow_rejects_a_buffer_without_room():
    with pytest.raises(CalculatorInputError, match="buffer_bytes"):
        gemm_dataflow(4, 4, 4, 1.0, 2.0)


def test_systolic_energy_napkin_math_1_1():
    r = systolic_energy(128, 640e-12, 1e-12, clock=1e9)
    assert r.vector_energy_per_mac == pytest.approx(2561e-12)
    assert r.systolic_energy_per_mac == pytest.approx(11e-12)
    assert round(r.efficiency_ratio, 1) == 232.8
    assert round(r.systolic_dram_accesses_per_mac, 3) == 0.016
    assert r.macs_per_cycle == 16_384
    assert r.peak_flops == pytest.approx(2 * 16_384 * 1e9)


# ---------------------------------------------------------------- fusion


def test_fusion_tables_19_20_and_d7():
    r = kernel_fusion(1024 * 1024, 4, 3)
    assert r.tensor_bytes == 4_194_304
    assert round(r.unfused_footprint / 1e6, 1) == 16.8 and round(r.fused_footprint / 1e6, 1) == 4.2
    assert r.footprint_reduction == 4.0
    d7 = kernel_fusion(1024 * 1024, 4, 3, fused_counts_input=True)
    assert round(d7.fused_footprint / 1e6, 1) == 8.4 and d7.footprint_reduction == 2.0
    assert (r.unfused_traffic / r.tensor_bytes, r.fused_traffic / r.tensor_bytes) == (6, 2)
    assert r.traffic_reduction == 3.0


def test_fusion_time_at_bandwidth():
    r = kernel_fusion(1e6, 2, 4, bandwidth=1e12)
    assert r.unfused_time == pytest.approx(16e6 / 1e12) and r.fused_time == pytest.approx(4e6 / 1e12)


@given(st.floats(1, 1e10), st.sampled_from([0.5, 1, 2, 4]), st.integers(1, 50), st.booleans())
def test_fused_never_moves_or_stores_more(n, p, k, count_input):
    r = kernel_fusion(n, p, k, count_input)
    assert r.fused_traffic <= r.unfused_traffic
    assert r.fused_footprint <= r.unfused_footprint


# ---------------------------------------------------------------- sparsity


def test_two_four_fp16():
    r = nm_sparsity(2, 4, 16, weights=1e9)
    assert r.density == 0.5 and r.metadata_bits_per_group == 4
    assert r.effective_fraction == 0.5625 and r.theoretical_speedup == 2.0
    assert r.dense_bytes == 2e9 and r.sparse_bytes == pytest.approx(1.125e9)
    assert nm_sparsity(2, 4, 16, metadata_bits_per_group=2).effective_fraction == pytest.approx(34 / 64)


def test_metadata_is_n_times_ceil_log2_m():
    assert nm_sparsity(2, 8, 16).metadata_bits_per_group == 6
    assert nm_sparsity(3, 5, 16).metadata_bits_per_group == 9
    assert nm_sparsity(4, 4, 16).metadata_bits_per_group == 0  # dense: nothing to index
    with pytest.raises(CalculatorInputError, match="n"):
        nm_sparsity(5, 4, 16)


# ---------------------------------------------------------------- alignment


def test_alignment_500_features():
    assert tensor_core_alignment([500], 8, 312e12).padded_dims == (504,)
    assert tensor_core_alignment([500], 16, 312e12).padded_dims == (512,)
    assert tensor_core_alignment([500], 64, 312e12).padded_dims == (512,)
    aligned = tensor_core_alignment([512], 16, 312e12)
    assert aligned.aligned and aligned.flop_waste == 0 and aligned.padding_speedup == 1


def test_alignment_fallback_penalty_is_one_sixteenth_on_a100():
    r = tensor_core_alignment((4096, 500, 4096), 8, 312e12, 312 / 19.5)
    assert r.unpadded_throughput == pytest.approx(19.5e12)
    assert r.padded_throughput == pytest.approx(312e12 * 500 / 504)
    assert r.flop_waste == pytest.approx(4 / 504)


@given(st.integers(1, 100_000), st.sampled_from([8, 16, 64, 128]))
def test_padding_is_the_next_multiple(d, m):
    r = tensor_core_alignment([d], m, 1e12)
    (p,) = r.padded_dims
    assert p % m == 0 and d <= p < d + m
    assert 0 <= r.waste_per_dim[0] < 1


# ---------------------------------------------------------------- transfer and scaling


def test_gradient_sync_fallacy_e32():
    r = gradient_sync_scaling(1e9, LINKS["NVLink 3.0 (A100)"][0], True, 50e-3, 8)
    assert r.per_direction_bandwidth == 300e9
    assert round(r.sync_time * 1e3, 2) == 3.33
    assert round(100 * r.overhead_fraction, 1) == 6.7
    assert round(r.speedup, 1) == 7.5 and round(100 * r.efficiency, 1) == 93.8
    older = gradient_sync_scaling(1e9, 600e9, False, 50e-3, 8)
    assert round(older.sync_time * 1e3, 2) == 1.67 and round(100 * older.overhead_fraction, 1) == 3.3


def test_overlap_hides_sync_and_amdahl_cap():
    full = gradient_sync_scaling(1e9, 600e9, True, 50e-3, 8, overlap=1.0)
    assert full.exposed_sync_time == 0 and full.speedup == 8
    assert communication_cap(0.05).cap == pytest.approx(20.0)  # E-26
    assert communication_cap(0.20).cap == pytest.approx(5.0)  # self-check R:3155-3190


@given(
    st.floats(0, 1e11),
    st.floats(1e9, 1e12),
    st.booleans(),
    st.floats(1e-4, 10),
    st.integers(1, 4096),
    st.floats(0, 1),
)
def test_scaling_never_superlinear(payload, bw, bidir, step, n, overlap):
    r = gradient_sync_scaling(payload, bw, bidir, step, n, overlap)
    assert r.speedup <= n * (1 + 1e-12) and 0 < r.efficiency <= 1 + 1e-12


def test_host_transfer_kws_and_overlap():
    assert host_transfer(32e3, 64e9).input_time == pytest.approx(0.5e-6)
    r = host_transfer(64e9, 64e9, output_bytes=32e9, compute_time=2.0)
    assert r.sequential_time == pytest.approx(3.5) and r.overlapped_time == pytest.approx(2.0)
    assert host_transfer(600e9, 600e9, bidirectional_rating=True).input_time == pytest.approx(2.0)


# ---------------------------------------------------------------- carbon


def test_carbon_roi_e28():
    r = carbon_comparison(1000, 100, 1e12, 100, 5, 10e12, US_AVERAGE_GRID)
    assert r.baseline.efficiency / 1e12 == pytest.approx(0.01) and r.replacement.efficiency / 1e12 == 2
    assert r.efficiency_gap == pytest.approx(200)
    assert r.baseline.energy_per_day / JOULES_PER_KWH == pytest.approx(2400)
    assert r.replacement.energy_per_day / JOULES_PER_KWH == pytest.approx(12)
    assert round(r.emissions_saved_per_year / 1000, 1) == 373.9
    assert r.emissions_saved_per_year < r.baseline.emissions_per_year == pytest.approx(375_804)
    assert r.equal_throughput_units == 100
    older = carbon_comparison(1000, 100, 1e12, 100, 5, 10e12, OLDER_SOURCE_GRID)
    assert round(older.emissions_saved_per_year / 1000, 1) == 348.6


def test_carbon_rejects_more_than_a_day():
    with pytest.raises(CalculatorInputError, match="hours_per_day"):
        carbon_comparison(1, 1, 1, 1, 1, 1, hours_per_day=25)


# ---------------------------------------------------------------- speed of light


def test_speed_of_light_napkin_math_1_2():
    r = speed_of_light(20e-3, 0.5, 2e9, memory_latency=100e-9)
    assert round(r.signal_time * 1e12) == 133
    assert r.cycle_time == pytest.approx(500e-12)
    assert r.fits_in_one_cycle and r.cycles == pytest.approx(0.2669, abs=1e-4)
    assert r.memory_latency_cycles == pytest.approx(200)  # HBM: 100+ cycles
    sweep = speed_of_light(np.array([0.0, 20e-3, 100e-3]), 0.5, 2e9)
    assert list(sweep.fits_in_one_cycle) == [True, True, False]
