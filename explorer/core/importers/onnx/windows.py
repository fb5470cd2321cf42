"""Sliding windows of ONNX convolutions and pools: the total padding an axis asks for, the symmetric padding that
reproduces ONNX's output size, and the bounds on strides and dilations a real model stays within."""

from __future__ import annotations

from explorer.core.importers.onnx.graph import OnnxImportError
from explorer.core.importers.onnx.nodes import attr
from explorer.core.workload.layers.base import conv_out


def solve_padding(size: int, k: int, s: int, d: int, out: int, total: int) -> int | None:
    """The symmetric padding p (0 <= p <= total + d*k + s) that gives ONNX's output size, nearest to half the total
    padding (the smaller on a tie), or None. Solved in closed form: ``conv_out`` is ``out`` exactly when
    lo <= 2p <= lo + s - 1 with lo = (out - 1) s + d (k - 1) + 1 - size, so the work never grows with the sizes
    (a search over every candidate took 41 s and 7 GB for a dilation of 2**24)."""
    lo = (out - 1) * s + d * (k - 1) + 1 - size
    p_lo, p_hi = max(0, -(-lo // 2)), min((lo + s - 1) // 2, total + d * k + s)
    if p_lo > p_hi:
        return None
    p = min(max(total // 2, p_lo), p_hi)
    return p if conv_out(size, k, s, p, d) == out else None


#: The largest stride or dilation taken at face value: larger ones come from a broken or hostile file.
MAX_WINDOW_STEP = 1 << 16


def check_window(node, index: int, attrs: dict[str, list], nd: int) -> None:
    for name, values in attrs.items():
        if len(values) != nd or any(not isinstance(v, int) or not 1 <= v <= MAX_WINDOW_STEP for v in values):
            raise OnnxImportError(f"node {index} ({node.op_type} '{node.name or node.output[0]}'): {name} "
                                  f"{list(values)[:4]} must be {nd} whole numbers from 1 to {MAX_WINDOW_STEP}")


def pad_total(node, axis: int, nd: int, size: int, k: int, s: int, d: int, out: int) -> tuple[int, bool]:
    """Total padding along one spatial axis and whether it is split unevenly."""
    auto = attr(node, "auto_pad", "NOTSET")
    if auto in ("SAME_UPPER", "SAME_LOWER"):
        total = max((out - 1) * s + d * (k - 1) + 1 - size, 0)
        return total, total % 2 == 1
    if auto == "VALID":
        return 0, False
    pads = attr(node, "pads", [0] * (2 * nd))
    return pads[axis] + pads[axis + nd], pads[axis] != pads[axis + nd]
