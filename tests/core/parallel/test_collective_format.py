"""The element size of collectives under an fp8 activation format: a stated setting, because engines differ.

TensorRT-LLM and vLLM all-reduce the residual stream in the model's fp16/bf16 by default, even with fp8 weights or
activations ("engine", the default: at least 2 B). TensorRT-LLM's opt-in Low-Precision-AllReduce
(https://nvidia.github.io/TensorRT-LLM/legacy/advanced/lowprecision-pcie-allreduce.html, read 2026-11-27) sends FP8
e4m3 with one scale per warp of 496 elements in 16 B of every 512 ("fp8": 32/31 B). "activations" takes the
activation format as it is (1 B for fp8: what the system pass did before the setting existed)."""

import pytest
from hand_systems import hgx

from explorer.core.formats import TensorFormats
from explorer.core.parallel.layout import Layout
from explorer.core.parallel.system_pass import Options, analyze_system, collective_element_bytes
from explorer.core.workload.layers import Context
from explorer.core.workload.templates import get_template

LLAMA70 = get_template("llama2-70b").build()
DECODE = Context(batch=8, phase="decode", seq_len=4096)
FP8 = TensorFormats.of("fp8", activations="fp8")
BF16 = TensorFormats.of("bf16")
FP32 = TensorFormats.of("fp32")


def test_element_bytes_by_setting():
    assert collective_element_bytes(FP8) == 2.0  # engine: fp8 activations are all-reduced at 16 bits
    assert collective_element_bytes(FP8, "activations") == 1.0
    assert collective_element_bytes(FP8, "fp8") == pytest.approx(512 / 496)
    assert collective_element_bytes(BF16) == 2.0 and collective_element_bytes(FP32) == 4.0  # never narrower
    with pytest.raises(ValueError, match="collective_format"):
        collective_element_bytes(BF16, "int4")


def test_fp8_activations_all_reduce_at_16_bits_by_default(devices):
    """Llama-2-70B TP 8: 37,377,536 B per step at 2 B per element (test_link_energy). fp8 activations leave it the
    same by default; 'activations' halves it; 'fp8' is 32/31 of the half."""
    h100 = devices["nvidia-h100-sxm5"]
    runs = {f: analyze_system(LLAMA70, hgx(), h100, [Layout(tp=8)], "fp8", DECODE, FP8,
                              Options(collective_format=f)) for f in ("engine", "activations", "fp8")}
    assert runs["engine"].level_bytes[0, 0] == 37_377_536 and runs["engine"].collective_bytes == 2.0
    assert runs["activations"].level_bytes[0, 0] == 37_377_536 / 2
    assert runs["fp8"].level_bytes[0, 0] == pytest.approx(37_377_536 / 2 * 32 / 31, rel=1e-12)
    assert runs["activations"].comm_time[0] < runs["engine"].comm_time[0]
    # the activations' memory is still counted at their own format
    assert runs["engine"].activation_bytes[0] == runs["activations"].activation_bytes[0]
