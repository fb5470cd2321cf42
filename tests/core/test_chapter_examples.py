"""The chapter's worked examples (../shared/reference/chapter-models-2.md section 2), reproduced exactly.

Rendered-text (R) values are the acceptance values; the exact value is asserted, the printed rounding beside it.
"""

import numpy as np
import pytest

from explorer.core.analysis.evaluate import evaluate
from explorer.core.workload.layers import Context
from explorer.core.workload.model import LayerSpec, Model, build_table


def one_layer(input_, spec, batch):
    return Model.make("example", input_, [spec]), Context(batch=batch)


@pytest.mark.parametrize("fixture, ridge, printed", [("v100", 138.889, "138.9"), ("a100", 153.016, "153"),
                                                      ("h100", 295.224, "295.2"), ("t4", 203.125, "203.1")])
def test_ridge_points_e1(request, fixture, ridge, printed):
    """E-1 / E-35: ridge = peak FP16 / bandwidth."""
    device = request.getfixturevalue(fixture)
    assert device.ridge("fp16") == pytest.approx(ridge, abs=1e-3)
    assert f"{device.ridge('fp16'):.1f}".rstrip("0").rstrip(".") == printed


def test_a100_fp32_ridge_e2(make_device):
    assert make_device("a", "19.5 TFLOP/s", "2039 GB/s", "fp32").ridge("fp32") == pytest.approx(9.5635, abs=1e-4)


def test_qkv_projection_e3(a100):
    """E-3: hidden 768, batch 32, seq 512, FP16: 58 GFLOP, 104.2 MB, 556.4 FLOP/byte, compute-bound on A100."""
    model, ctx = one_layer({"tokens": 512, "hidden": 768},
                           LayerSpec.make("dense", in_features=768, out_features=3 * 768, bias=False), 32)
    r = evaluate(model, [a100], "fp16", ctx)
    assert r.flops[0] == 2 * 3 * 32 * 512 * 768 * 768 == pytest.approx(57.982e9, rel=1e-4)
    assert r.bytes[0] == 104_202_240
    assert r.intensity[0] == pytest.approx(556.44, abs=0.01)
    assert not r.memory_bound[0, 0]


def test_softmax_e4(a100):
    """E-4: batch 32, 12 heads, seq 512: 302 MFLOP, 402.7 MB, 0.75 FLOP/byte (non-causal, all S*S scores)."""
    model, ctx = one_layer({"tokens": 512, "hidden": 768},
                           LayerSpec.make("attention", heads=12, causal=False, bias=False), 32)
    r = evaluate(model, [a100], "fp16", ctx)
    i = r.table.names.index("attention0.softmax")
    assert r.flops[i] == 301_989_888
    assert r.bytes[i] == 402_653_184
    assert r.intensity[i] == pytest.approx(0.75)
    assert r.memory_bound[i, 0]


def test_conv2d_e5(a100):
    """E-5: B=32, Cin=128, 56x56, Cout=256, 3x3 same: 59.2 GFLOP, 77.7 MB, 762.2 FLOP/byte."""
    model, ctx = one_layer({"channels": 128, "height": 56, "width": 56},
                           LayerSpec.make("conv2d", out_channels=256, kernel_size=3, padding=1), 32)
    r = evaluate(model, [a100], "fp16", ctx)
    assert r.table.out_shapes[0] == (256, 56, 56)
    assert r.flops[0] == pytest.approx(59.190e9, rel=1e-4)
    assert r.weight_bytes[0] == 589_824
    assert r.bytes[0] == 77_660_160
    assert r.intensity[0] == pytest.approx(762.167, abs=1e-3)
    assert r.attainable[0, 0] == pytest.approx(312e12)  # "near-peak ~312 TFLOP/s"


def test_dense_batch32_e6(a100):
    """E-6: (32x2048)(2048x2048) FP16 on A100: 31 FLOP/byte, 63.3 TFLOP/s, 20.3 percent."""
    model, ctx = one_layer({"features": 2048}, LayerSpec.make("dense", in_features=2048, out_features=2048,
                                                              bias=False), 32)
    r = evaluate(model, [a100], "fp16", ctx)
    assert r.flops[0] == pytest.approx(268.4e6, rel=1e-3)
    assert r.bytes[0] == 8_650_752
    assert r.intensity[0] == pytest.approx(31.0303, abs=1e-4)
    assert r.attainable[0, 0] == pytest.approx(63.271e12, rel=1e-4)
    assert r.attainable[0, 0] / 312e12 == pytest.approx(0.20279, abs=1e-5)


def test_layernorm_e7(a100):
    """E-7: (32, 512, 768) FP16: 75.5 MFLOP, 50.3 MB, 1.5 FLOP/byte, 102x below the A100 ridge, 3.1 TFLOP/s."""
    model, ctx = one_layer({"tokens": 512, "hidden": 768}, LayerSpec.make("layernorm"), 32)
    r = evaluate(model, [a100], "fp16", ctx)
    assert r.flops[0] == 75_497_472
    assert r.bytes[0] == 50_334_720
    assert r.intensity[0] == pytest.approx(1.49991, abs=1e-5)
    assert a100.ridge("fp16") / r.intensity[0] == pytest.approx(102.02, abs=0.01)
    assert r.attainable[0, 0] == pytest.approx(3.0583e12, rel=1e-4)
    assert r.attainable[0, 0] / 312e12 < 0.01


@pytest.mark.parametrize("batch, intensity", [(1, 0.99902), (32, 31.0303), (256, 204.8)])
def test_batch_raises_intensity_e8(a100, batch, intensity):
    """E-8 / E-35: M = N = 2048, FP16: batch 1, 32, 256 give 1, 31, 204.8 FLOP/byte."""
    model, ctx = one_layer({"features": 2048}, LayerSpec.make("dense", in_features=2048, out_features=2048,
                                                              bias=False), batch)
    r = evaluate(model, [a100], "fp16", ctx)
    assert r.intensity[0] == pytest.approx(intensity, abs=1e-4)
    assert r.memory_bound[0, 0] == (batch < 256)


def test_gpt2_xl_decode_ceiling_e9(a100):
    """E-9: 1.5e9 parameters at FP16, batch 1: ~1 FLOP/byte, 2.04 TFLOP/s on A100, ~0.7 percent of peak."""
    model, ctx = one_layer({"features": 1500}, LayerSpec.make("matmul", m=1, n=1_000_000, k=1500), 1)
    r = evaluate(model, [a100], "fp16", ctx)
    assert r.table.total("params") == 1.5e9
    assert r.intensity[0] == pytest.approx(1.0, abs=1e-3)
    assert r.attainable[0, 0] == pytest.approx(2.039e12, rel=2e-3)
    assert 100 * r.attainable[0, 0] / 312e12 == pytest.approx(0.6535, abs=2e-3)


def test_small_batch_on_t4_e35(t4):
    """E-35: batch-1 ceiling on T4 = 320 GB/s x 0.999 = 0.32 TFLOP/s."""
    model, ctx = one_layer({"features": 2048}, LayerSpec.make("dense", in_features=2048, out_features=2048,
                                                              bias=False), 1)
    r = evaluate(model, [t4], "fp16", ctx)
    assert r.attainable[0, 0] == pytest.approx(0.3197e12, rel=1e-3)


def test_legacy_kernel_flips_between_generations_e1(a100, h100):
    """E-1: a kernel at 200 FLOP/byte is compute-bound on A100 and bandwidth-bound on H100."""
    assert a100.ridge("fp16") < 200 < h100.ridge("fp16")


def test_square_gemm_n_over_3():
    """M-6.3 / E-1: square n x n x n GEMM at FP16 has I = n/3: 341.3 at n = 1024."""
    t = build_table(Model.make("g", {"features": 1}, [LayerSpec.make("matmul", m=1024, n=1024, k=1024)]))
    intensity = t.flops[0] / ((t.weight_elems[0] + t.input_elems[0] + t.output_elems[0]) * 2)
    assert intensity == pytest.approx(341.333, abs=1e-3)


def test_multiple_devices_in_one_pass(v100, a100, h100):
    model, ctx = one_layer({"features": 2048}, LayerSpec.make("dense", in_features=2048, out_features=2048,
                                                              bias=False), 32)
    r = evaluate(model, [v100, a100, h100], "fp16", ctx)
    np.testing.assert_allclose(r.devices.ridge, [138.889, 153.016, 295.224], atol=1e-3)
    np.testing.assert_allclose(r.attainable[0], [31.0303 * 0.9e12, 31.0303 * 2.039e12, 31.0303 * 3.35e12], rtol=1e-5)
