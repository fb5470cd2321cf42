"""Hypothesis invariants of the analyses."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from explorer.core.analysis.evaluate import evaluate
from explorer.core.analysis.tiling import systolic_arrays, systolic_mapping
from explorer.core.hardware.device_file import device_from_dict
from explorer.core.workload.layers import Context
from explorer.core.workload.model import LayerSpec, Model

dims = st.integers(min_value=1, max_value=5000)
arrays = st.sampled_from([8, 16, 32, 128, 256])


def device(peak_t, bw_g, engine=None, l2=None):
    mem = [{"name": "DRAM", "role": "offchip", "capacity": "16 GB", "bandwidth": f"{bw_g} GB/s"}]
    if l2:
        mem.append({"name": "SRAM", "role": "onchip", "capacity": f"{l2} MB", "bandwidth": f"{bw_g * 8} GB/s"})
    data = {"id": "d", "name": "d", "vendor": "v", "kind": "npu", "peak": {"fp16": f"{peak_t} TFLOP/s"}, "memory": mem}
    if engine:
        data["matrix_engine"] = engine
    return device_from_dict(data)


@given(m=dims, n=dims, k=dims, r=arrays, c=arrays, df=st.sampled_from(["ws", "os", "is"]))
def test_mapping_efficiency_in_unit_interval(m, n, k, r, c, df):
    eff, folds, cycles = systolic_arrays(m, n, k, 1, r, c, df, 1)
    assert 0 < eff[()] <= 1
    assert folds[()] >= 1 and cycles[()] > 0


@given(a=st.integers(1, 40), b=st.integers(1, 40), k=dims, r=arrays, c=arrays, df=st.sampled_from(["ws", "os", "is"]))
def test_exact_multiples_map_perfectly(a, b, k, r, c, df):
    rows_dim, cols_dim = {"os": ("m", "n"), "ws": ("k", "n"), "is": ("k", "m")}[df]
    dims_ = {"m": k, "n": k, "k": k}
    dims_[rows_dim], dims_[cols_dim] = a * r, b * c
    assert systolic_mapping(dims_["m"], dims_["n"], dims_["k"], r, c, df).mapping_efficiency == 1.0


@given(d=st.integers(2, 2000), t=arrays)
def test_one_past_a_multiple_is_a_cliff(d, t):
    below = systolic_mapping(t * d, t, 64, t, t, "os").mapping_efficiency
    past = systolic_mapping(t * d + 1, t, 64, t, t, "os").mapping_efficiency
    assert below == 1.0 and past < 1.0


layer_specs = st.one_of(
    st.builds(lambda i, o, b: LayerSpec.make("dense", in_features=64, out_features=o, bias=b),
              st.just(64), st.integers(1, 4096), st.booleans()),
    st.builds(lambda o, k, s: LayerSpec.make("conv2d", out_channels=o, kernel_size=k, stride=s, padding=k // 2),
              st.integers(1, 512), st.sampled_from([1, 3, 5]), st.sampled_from([1, 2])),
)


@settings(max_examples=60, deadline=None)
@given(spec=layer_specs, batch=st.integers(1, 256), peak=st.floats(1, 2000), bw=st.floats(10, 8000),
       eta_c=st.floats(0.05, 1), eta_m=st.floats(0.05, 1), l2=st.sampled_from([None, 1, 40]))
def test_roofline_invariants(spec, batch, peak, bw, eta_c, eta_m, l2):
    if spec.kind == "dense":
        model = Model.make("m", {"features": 64}, [spec])
    else:
        model = Model.make("m", {"channels": 16, "height": 32, "width": 32}, [spec])
    engine = {"type": "systolic", "rows": 128, "cols": 128, "dataflow": "ws"}
    d = device(peak, bw, engine, l2).with_efficiency(eta_c, eta_m)
    r = evaluate(model, [d], "fp16", Context(batch=batch))
    peak_s, bw_s = peak * 1e12, bw * 1e9
    assert np.all(r.attainable <= peak_s * eta_c * (1 + 1e-12))  # attainable <= peak
    assert np.all(r.ideal_time >= r.flops[:, None] / peak_s * (1 - 1e-12))  # time >= compute bound
    assert np.all(r.ideal_time >= r.bytes[:, None] / bw_s * (1 - 1e-12))  # time >= memory bound
    assert np.all(r.time >= r.flops[:, None] / (peak_s * eta_c) * (1 - 1e-12))
    assert np.all(r.time >= r.ideal_time * (1 - 1e-12))  # time_s only adds losses to the pure roofline
    assert np.all((r.mapping_efficiency > 0) & (r.mapping_efficiency <= 1))
    assert np.all(r.level_traffic >= 0)
    assert np.all(r.level_traffic[:, :, 0] >= r.weight_bytes[:, None] * (1 - 1e-12))  # weights come from DRAM


@settings(max_examples=40, deadline=None)
@given(o1=st.integers(1, 2048), extra=st.integers(1, 2048), batch=st.integers(1, 64))
def test_energy_grows_with_bytes(o1, extra, batch):
    d = device(300, 2000)
    small = Model.make("s", {"features": 512}, [LayerSpec.make("dense", in_features=512, out_features=o1)])
    big = Model.make("b", {"features": 512}, [LayerSpec.make("dense", in_features=512, out_features=o1 + extra)])
    e_small = evaluate(small, [d], "fp16", Context(batch=batch))
    e_big = evaluate(big, [d], "fp16", Context(batch=batch))
    assert e_big.bytes[0] > e_small.bytes[0]
    assert e_big.energy[0, 0] > e_small.energy[0, 0]


def test_default_sram_energy_follows_horowitz():
    from explorer.core.analysis.device_arrays import default_sram_energy

    # Horowitz ISSCC 2014, 64-bit reads: 8 KB 10 pJ, 32 KB 20 pJ, 1 MB 100 pJ -> per byte 1.25, 2.5, 12.5 pJ
    assert [round(default_sram_energy(c) * 1e12, 4) for c in (8e3, 32e3, 1e6)] == [1.25, 2.5, 12.5]
    assert default_sram_energy(16e3) * 1e12 == 1.875  # halfway on a log scale
    assert default_sram_energy(1e3) == default_sram_energy(8e3) and default_sram_energy(4e7) == default_sram_energy(1e6)
    assert default_sram_energy(float("nan")) * 1e12 == 2.5
