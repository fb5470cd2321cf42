"""Storage formats of tensors, with their real bits, and which format each tensor of a model is stored in.

A precision (:mod:`.precision`) is an element type a device has a peak for. A *format* is how a tensor is
stored: plain elements of one precision, or elements plus scales shared by a block of them. The scales are
part of the format and are counted, never rounded away:

=========  ==================  ===========================================  ============================
format     elements            scales                                       bits per element
=========  ==================  ===========================================  ============================
int4-g128  INT4                one FP16 per group of 128                    4 + 16/128 = 4.125
int4-gN    INT4                one FP16 per group of N                      4 + 16/N
int8-gN    INT8                one FP16 per group of N                      8 + 16/N
mxfp8      FP8 (E4M3 or E5M2)  one E8M0 (8 bits) per block of 32            8 + 8/32 = 8.25
mxfp6      FP6 (E2M3 or E3M2)  one E8M0 per 32                              6 + 8/32 = 6.25
mxfp4      FP4 (E2M1)          one E8M0 per 32                              4 + 8/32 = 4.25
mxint8     INT8                one E8M0 per 32                              8 + 8/32 = 8.25
nvfp4      FP4 (E2M1)          one FP8 E4M3 per 16, and one FP32 per tensor  4 + 8/16 = 4.5 (+ 32 bits
                                                                            per tensor, counted)
=========  ==================  ===========================================  ============================

Sources: the MX formats from the OCP Microscaling Formats (MX) Specification v1.0 (:data:`OCP_MX`); NVFP4 from
NVIDIA's description of it (:data:`NVIDIA_NVFP4`). Group quantization (GPTQ/AWQ-style int4 with a 16-bit scale
per group) is counted with its scales only: a kernel that also stores a zero point per group adds its bits,
not counted here. A block's scale is counted as a fraction per element, ``elements x bits / 8`` bytes: exact
for tensors whose sizes are multiples of the block, the usual case. "A tensor", for the per-tensor scale, is one
weight, input, output or KV-cache operand of one operator row of the work table.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from .precision import BYTES_PER_ELEMENT, PRECISIONS, check_precision

OCP_MX = ("OCP Microscaling Formats (MX) Specification, Version 1.0, Open Compute Project, September 2023, "
          "https://www.opencompute.org/documents/ocp-microscaling-formats-mx-v1-0-spec-final-pdf")
NVIDIA_NVFP4 = ("NVIDIA Technical Blog, 'Introducing NVFP4 for Efficient and Accurate Low-Precision "
                "Inference', June 2025, https://developer.nvidia.com/blog/"
                "introducing-nvfp4-for-efficient-and-accurate-low-precision-inference/")
GROUP = ("group quantization: a 16-bit scale per group of weights (as GPTQ and AWQ checkpoints store; "
         "zero points not counted)")

_ELEMENTS = {"fp64": "FP64", "fp32": "FP32", "tf32": "TF32 (stored as FP32)", "fp16": "FP16", "bf16": "BF16",
             "fp8": "FP8 (E4M3 or E5M2)", "fp6": "FP6 (E2M3 or E3M2)", "int8": "INT8", "int4": "INT4",
             "fp4": "FP4 (E2M1)"}


@dataclass(frozen=True)
class Format:
    """How a tensor is stored. ``compute`` is the precision whose peak multiplies its elements natively."""

    name: str
    element: str
    element_bits: float
    compute: str
    block: int = 0  # elements sharing one scale (0: no block scale)
    scale: str = ""  # the block scale's encoding
    scale_bits: int = 0
    tensor_scale_bits: int = 0  # one more scale per tensor (NVFP4: an FP32)
    tensor_scale: str = ""
    source: str = ""

    @property
    def bits(self) -> float:
        """Bits per element, the block scales included (the per-tensor scale is counted per tensor)."""
        return self.element_bits + (self.scale_bits / self.block if self.block else 0.0)

    @property
    def bytes_per_element(self) -> float:
        return self.bits / 8.0

    @property
    def plain(self) -> bool:
        return not self.block and not self.tensor_scale_bits

    def nbytes(self, elements, tensors=None):
        """Bytes of ``elements`` (array or number) stored in this format, plus one per-tensor scale for each
        tensor: ``tensors`` (the count of tensors) or, by default, one where ``elements`` > 0."""
        out = np.asarray(elements, dtype=float) * self.bytes_per_element
        if self.tensor_scale_bits:
            n = (np.asarray(elements) > 0) if tensors is None else np.asarray(tensors, dtype=float)
            out = out + n * (self.tensor_scale_bits / 8.0)
        return out if out.ndim else float(out)

    def describe(self) -> str:
        """'mxfp4: FP4 (E2M1) + an E8M0 scale per 32 = 4.25 bits per element'."""
        if self.plain:
            return f"{self.name}: {self.element}, {self.bits:g} bits per element"
        parts = [f"{self.name}: {self.element}"]
        if self.block:
            parts.append(f" + one {self.scale} scale per {self.block}")
        text = "".join(parts) + f" = {self.bits:g} bits per element"
        if self.tensor_scale_bits:
            text += f" (+ one {self.tensor_scale} scale per tensor)"
        return text


def _plain(p: str) -> Format:
    return Format(p, _ELEMENTS[p], BYTES_PER_ELEMENT[p] * 8.0, p)


def _group(element: str, size: int) -> Format:
    return Format(f"{element}-g{size}", element.upper(), BYTES_PER_ELEMENT[element] * 8.0, element,
                  block=size, scale="FP16", scale_bits=16, source=GROUP)


_MX = {
    "mxfp8": Format("mxfp8", "FP8 (E4M3 or E5M2)", 8, "fp8", 32, "E8M0", 8, source=OCP_MX),
    "mxfp6": Format("mxfp6", "FP6 (E2M3 or E3M2)", 6, "fp6", 32, "E8M0", 8, source=OCP_MX),
    "mxfp4": Format("mxfp4", "FP4 (E2M1)", 4, "fp4", 32, "E8M0", 8, source=OCP_MX),
    "mxint8": Format("mxint8", "INT8", 8, "int8", 32, "E8M0", 8, source=OCP_MX),
    "nvfp4": Format("nvfp4", "FP4 (E2M1)", 4, "fp4", 16, "FP8 E4M3", 8, tensor_scale_bits=32, tensor_scale="FP32",
                    source=NVIDIA_NVFP4),
}
#: The formats offered by name (any ``int4-gN`` / ``int8-gN`` is read too).
FORMATS: tuple[str, ...] = (*PRECISIONS, "int4-g128", "int4-g64", "int4-g32", "int8-g128", *_MX)
_GROUP_RE = re.compile(r"(int4|int8)-g(\d+)")


def get_format(name: str, field: str = "format") -> Format:
    """The format called ``name`` (a precision, ``int4-g128``, ``mxfp4``, ``nvfp4``...); ValueError naming
    ``field`` otherwise."""
    key = str(name).strip().lower()
    if key in BYTES_PER_ELEMENT:
        return _plain(key)
    if key in _MX:
        return _MX[key]
    m = _GROUP_RE.fullmatch(key)
    if m and 2 <= int(m.group(2)) <= 65536:
        return _group(m.group(1), int(m.group(2)))
    raise ValueError(f"{field}: unknown format '{name}'; expected one of {', '.join(FORMATS)} "
                     "(or int4-gN / int8-gN for a group of N)")


def check_format(name: str, field: str = "format") -> str:
    return get_format(name, field).name


#: Wider precisions a device may compute at when it has no peak at the one asked for, nearest first; each
#: holds every value of the one it replaces (FP4 and FP6 elements are exact in FP8, FP16 and BF16 in TF32).
#: Never a narrower one.
FALLBACK: dict[str, tuple[str, ...]] = {
    "fp4": ("fp6", "fp8", "fp16", "bf16", "tf32", "fp32"),
    "fp6": ("fp8", "fp16", "bf16", "tf32", "fp32"),
    "fp8": ("fp16", "bf16", "tf32", "fp32"),
    "int4": ("int8", "fp8", "fp16", "bf16", "fp32"),
    "int8": ("fp16", "bf16", "tf32", "fp32"),
    "fp16": ("tf32", "fp32"),
    "bf16": ("tf32", "fp32"),
    "tf32": ("fp32",),
    "fp32": ("fp64",),
    "fp64": (),
}

#: Quantization presets: (weights, activations, KV cache); None = the precision shorthand.
PRESETS: dict[str, tuple[str | None, str | None, str | None]] = {
    "w4a16": ("int4-g128", "fp16", None),
    "w8a16": ("int8", "fp16", None),
    "w8a8": ("int8", "int8", None),
    "fp8": ("fp8", "fp8", "fp8"),
    "mxfp4": ("mxfp4", "mxfp4", None),
    "nvfp4": ("nvfp4", "nvfp4", None),
}
TENSORS = ("weights", "activations", "kv_cache")


@dataclass(frozen=True)
class TensorFormats:
    """The format of each tensor of a model and the precision its matrix multiplies compute at.

    ``compute``: the wider of the weights' and the activations' precisions (ties: the activations'), because
    the kernel converts the narrower operand: W4A16 dequantizes the int4 weights and computes in 16-bit; W8A8
    and all-FP8 compute in 8-bit; MXFP4 x MXFP4 at the FP4 rate. A tensor stored at a narrower (or another
    same-size) precision than ``compute`` is dequantized as it is read or written: one FLOP per element, per
    pass (the multiply by its scale; the widening itself is free).
    """

    precision: str  # the shorthand the unset tensors follow
    weights: Format
    activations: Format
    kv_cache: Format

    @classmethod
    def of(cls, precision: str, weights: str | None = None, activations: str | None = None,
           kv_cache: str | None = None) -> TensorFormats:
        precision = check_precision(precision)
        return cls(precision, *(get_format(v if v is not None else precision, k)
                                for k, v in zip(TENSORS, (weights, activations, kv_cache))))

    @property
    def uniform(self) -> bool:
        """Every tensor in the shorthand's plain precision (the analysis of a precision alone)."""
        return all(f.name == self.precision for f in (self.weights, self.activations, self.kv_cache))

    @property
    def compute(self) -> str:
        w, a = self.weights.compute, self.activations.compute
        return w if BYTES_PER_ELEMENT[w] > BYTES_PER_ELEMENT[a] else a

    def converted(self, compute: str | None = None) -> tuple[str, ...]:
        """The tensors dequantized to ``compute`` (default: :attr:`compute`) for the multiplies: those stored
        at another precision no wider than it. A wider one (an FP16 KV cache under FP4 multiplies) is taken
        as it is: its attention is modeled at ``compute`` like every other operator."""
        c = compute or self.compute
        return tuple(t for t in TENSORS if getattr(self, t).compute != c
                     and BYTES_PER_ELEMENT[getattr(self, t).compute] <= BYTES_PER_ELEMENT[c])

    def label(self) -> str:
        """'w int4-g128, a fp16, kv fp8' (or the precision alone when uniform)."""
        if self.uniform:
            return self.precision
        return f"w {self.weights.name}, a {self.activations.name}, kv {self.kv_cache.name}"

    def notes(self) -> tuple[str, ...]:
        """What the analysis assumes about these formats, in words (empty when uniform)."""
        if self.uniform:
            return ()
        out = [f"{t.replace('_', ' ')}: {getattr(self, t).describe()}" for t in TENSORS]
        conv = self.converted()
        out.append(f"matrix multiplies compute at {self.compute} (the wider of the weights' "
                   f"{self.weights.compute} and the activations' {self.activations.compute})")
        if conv:
            names = " and ".join(t.replace("_", " ") for t in conv)
            out.append(f"{names} dequantized (converted) to {self.compute} as they are read or written: "
                       "1 FLOP per element per pass, counted in the FLOPs")
        return tuple(out)

    def to_dict(self) -> dict:
        return {"precision": self.precision, "weights": self.weights.name,
                "activations": self.activations.name, "kv_cache": self.kv_cache.name, "compute": self.compute,
                "bits": {t: getattr(self, t).bits for t in TENSORS}}


def fallback_precision(compute: str, available) -> str | None:
    """``compute`` if in ``available`` (the precisions with a peak), else the nearest wider one, else None."""
    for p in (compute, *FALLBACK.get(compute, ())):
        if p in available:
            return p
    return None
