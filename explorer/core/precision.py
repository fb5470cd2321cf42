"""Numeric precisions and their storage size.

These are the keys of a device's peaks (one per element type the vendor prints a rate for). Block-scaled and
group-quantized storage formats (MXFP4, NVFP4, int4 with a scale per 128...) are in :mod:`.formats`; each
computes at one of these precisions.
"""

from __future__ import annotations

#: fp6 comes last (it came after the others), so the earlier ones keep their positions in the lists that show them.
PRECISIONS: tuple[str, ...] = ("fp64", "fp32", "tf32", "fp16", "bf16", "fp8", "int8", "int4", "fp4", "fp6")

#: Bytes per element as stored in memory. TF32 is a compute format: its operands are stored as FP32.
BYTES_PER_ELEMENT: dict[str, float] = {
    "fp64": 8.0,
    "fp32": 4.0,
    "tf32": 4.0,
    "fp16": 2.0,
    "bf16": 2.0,
    "fp8": 1.0,
    "fp6": 0.75,  # FP6 (E2M3 / E3M2), packed: 6 bits
    "int8": 1.0,
    "int4": 0.5,
    "fp4": 0.5,
}


#: The other 16-bit float: a request for one on a device that lists only the other computes there (same 2 bytes
#: per element; TPUs list bf16 only), and the analysis says so (issue 24: the default fp16 dropped every TPU).
SAME_WIDTH: dict[str, str] = {"fp16": "bf16", "bf16": "fp16"}


def check_precision(name: str, field: str = "precision") -> str:
    key = str(name).strip().lower()
    if key not in BYTES_PER_ELEMENT:
        raise ValueError(f"{field}: unknown precision '{name}'; expected one of {', '.join(PRECISIONS)}")
    return key
