"""Numeric precisions and their storage size."""

from __future__ import annotations

PRECISIONS: tuple[str, ...] = ("fp64", "fp32", "tf32", "fp16", "bf16", "fp8", "int8", "int4", "fp4")

#: Bytes per element as stored in memory. TF32 is a compute format: its operands are stored as FP32.
BYTES_PER_ELEMENT: dict[str, float] = {
    "fp64": 8.0,
    "fp32": 4.0,
    "tf32": 4.0,
    "fp16": 2.0,
    "bf16": 2.0,
    "fp8": 1.0,
    "int8": 1.0,
    "int4": 0.5,
    "fp4": 0.5,
}


def check_precision(name: str, field: str = "precision") -> str:
    key = str(name).strip().lower()
    if key not in BYTES_PER_ELEMENT:
        raise ValueError(f"{field}: unknown precision '{name}'; expected one of {', '.join(PRECISIONS)}")
    return key
