"""Kernel fusion of a chain of element-wise ops: memory footprint and off-chip traffic (Tables 19-20).

The chapter's chain ``X' = ReLU(X); X'' = BN(X'); Y = a X'' + b`` on a 1024 x 1024 FP32 tensor
(4,194,304 B = 4.2 MB, decimal MB as the rendered text prints; the older source says "4 MB", MiB):

* unfused, every intermediate is stored: X, X', X'', Y = ``k + 1`` tensors for ``k`` ops (16.8 MB);
* fused, the chapter counts only Y (4.2 MB, "a 4x reduction"). The fused kernel still reads X, so
  counting it gives 2 tensors (8.4 MB, 2x): the D-7 caveat, switched by ``fused_counts_input``.

Traffic (self-check R:3018): ``k`` unfused ops each read and write the tensor (``2k`` traversals); fused,
one read and one write (2). When bandwidth-bound the speed-up is about ``k`` (Conv+BN+ReLU: 6 vs 2, 3x).
"""

from __future__ import annotations

from dataclasses import dataclass

from ._common import Preset, non_negative, positive, positive_int


@dataclass(frozen=True)
class FusionResult:
    tensor_bytes: float
    unfused_footprint: float
    fused_footprint: float
    footprint_reduction: float
    unfused_traffic: float
    fused_traffic: float
    traffic_reduction: float
    unfused_time: float  # s at ``bandwidth``; 0 when no bandwidth is given
    fused_time: float


def kernel_fusion(
    elements: float,
    bytes_per_element: float,
    ops: int,
    fused_counts_input: bool = False,
    bandwidth: float = 0.0,
) -> FusionResult:
    """Footprint and traffic (bytes) of ``ops`` element-wise ops over a tensor of ``elements`` values."""
    n = float(positive(elements, "elements"))
    p = float(positive(bytes_per_element, "bytes_per_element"))
    k = positive_int(ops, "ops")
    bw = float(non_negative(bandwidth, "bandwidth"))
    tensor = n * p
    unfused_fp = (k + 1) * tensor
    fused_fp = (2 if fused_counts_input else 1) * tensor
    unfused_tr = 2 * k * tensor
    fused_tr = 2 * tensor
    t_un, t_f = (unfused_tr / bw, fused_tr / bw) if bw > 0 else (0.0, 0.0)
    return FusionResult(
        tensor,
        unfused_fp,
        fused_fp,
        unfused_fp / fused_fp,
        unfused_tr,
        fused_tr,
        unfused_tr / fused_tr,
        t_un,
        t_f,
    )


PRESETS: list[Preset] = [
    Preset(
        "ReLU -> BN -> scale on 1024x1024 FP32 (Tables 19-20)",
        kernel_fusion,
        {"elements": 1024 * 1024.0, "bytes_per_element": 4.0, "ops": 3, "fused_counts_input": False},
        "E-16, Tables 19-20, R:1902-1924",
        "16.8 MB vs 4.2 MB, 4x",
    ),
    Preset(
        "Same chain, fused kernel also counts its input X (D-7)",
        kernel_fusion,
        {"elements": 1024 * 1024.0, "bytes_per_element": 4.0, "ops": 3, "fused_counts_input": True},
        "D-7 caveat on Table 20",
        "16.8 MB vs 8.4 MB, 2x",
    ),
    Preset(
        "Conv + BN + ReLU traffic on A100",
        kernel_fusion,
        {"elements": 1024 * 1024.0, "bytes_per_element": 2.0, "ops": 3, "bandwidth": 2039e9},
        "E-17, self-check R:3018",
        "6 vs 2 traversals, about 3x when bandwidth-bound",
    ),
]
