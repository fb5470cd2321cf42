"""Measured kernels from a profiler's trace, for ``calibrate kernels`` (``docs/calibration.md``, "From a trace").

Two exports are read:

* **PyTorch profiler Chrome trace** (``torch.profiler.profile(activities=[CPU, CUDA], record_shapes=True)``,
  ``export_chrome_trace``): each GPU kernel (``cat: "kernel"``) names the operator that launched it through
  ``args["External id"]``, the same id as that operator's ``cpu_op`` event, whose ``args["Input Dims"]`` and
  ``args["Input type"]`` give the shapes and element types. An operator's GPU time is the sum of its kernels'
  durations (a split-K GEMM launches two). GEMMs: ``aten::mm`` ``[[m, k], [k, n]]``, ``aten::addmm`` (bias,
  ``[m, k]``, ``[k, n]``), ``aten::bmm`` ``[[b, m, k], [b, k, n]]``, ``aten::baddbmm`` (bias, then as bmm).
  Element-wise operators (:data:`ELEMENTWISE`): the bytes are each tensor once, from the dims and the element
  size of its type: the inputs read, plus the output written (the largest input's size; an in-place ``op_``
  writes its first input; ``copy_`` reads the source and writes the destination; ``fill_`` only writes).
* **Nsight Compute raw CSV** (``ncu --csv --page raw``, read by :func:`explorer.core.traces.nsight.load_nsight`):
  no shapes, but measured DRAM bytes. Kernels whose name says GEMM (:data:`GEMM_NAMES`) are skipped (ncu
  records no GEMM shape, and no tensor-core FLOPs); the others with DRAM bytes become element-wise kernels of
  those bytes (the traffic the vector curve is fitted to), when their SASS FLOPs, where counted, stay under
  :data:`VECTOR_INTENSITY` FLOP per byte.

Repeats of one kernel (same kind, shape or bytes) become one measurement: the **median** of their times
(``published`` says how many). Everything left out is counted by reason in :attr:`TraceKernels.skipped`.
Pure functions; one-line ``ValueError`` naming the file (and the event or line) on bad input.
"""

from __future__ import annotations

import json
import math
import re
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from explorer.core.calibration.measurements import Measurement
from explorer.core.traces.model import COMPUTE, TraceError
from explorer.core.traces.nsight import load_nsight

GEMM_OPS = ("aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm")
ELEMENTWISE = ("aten::add", "aten::add_", "aten::sub", "aten::sub_", "aten::mul", "aten::mul_", "aten::div",
               "aten::div_", "aten::relu", "aten::relu_", "aten::gelu", "aten::silu", "aten::silu_",
               "aten::sigmoid", "aten::tanh", "aten::neg", "aten::exp", "aten::copy_", "aten::fill_",
               "aten::clamp", "aten::where")
#: element sizes of torch's type names as the profiler writes them ("Input type")
TYPE_BYTES = {"float": 4, "double": 8, "c10::Half": 2, "c10::BFloat16": 2, "int": 4, "long int": 8,
              "short int": 2, "signed char": 1, "unsigned char": 1, "bool": 1, "c10::Float8_e4m3fn": 1,
              "c10::Float8_e5m2": 1}
#: which torch types a --precision's GEMMs ran at
PRECISION_TYPES = {"fp32": ("float",), "tf32": ("float",), "fp16": ("c10::Half",), "bf16": ("c10::BFloat16",),
                   "fp8": ("c10::Float8_e4m3fn", "c10::Float8_e5m2"), "fp64": ("double",)}
GEMM_NAMES = re.compile(r"gemm|cutlass|xmma|hmma|cublas|matmul|_mma_|wgmma", re.IGNORECASE)
VECTOR_INTENSITY = 1.0  # FLOP/B: above it an Nsight kernel is not taken as element-wise
MAX_EVENTS = 2_000_000


@dataclass(frozen=True)
class TraceKernels:
    """The measured kernels a trace gives (one per distinct shape, the median time), and what was left out."""

    rows: tuple[Measurement, ...]
    skipped: dict[str, int] = field(default_factory=dict)  # reason -> kernels
    kernels: int = 0  # GPU kernels (Chrome) or profiled kernels (Nsight) in the file
    format: str = ""


def _prod(dims) -> int:
    return int(np.prod(dims)) if dims else 1


def _dims(args: dict) -> list:
    dims = args.get("Input Dims")
    if not isinstance(dims, list) or not all(isinstance(d, list) for d in dims):
        raise ValueError("Input Dims: expected a list of shapes (profile with record_shapes=True)")
    if not all(isinstance(x, int) and not isinstance(x, bool) and x >= 0 for d in dims for x in d):
        raise ValueError("Input Dims: expected whole numbers >= 0")
    return dims


def _gemm_shape(op: str, dims: list) -> tuple[int, int, int, int]:
    """(batch, m, n, k) of a GEMM operator from its input dims."""
    a, b = (dims[0], dims[1]) if op in ("aten::mm", "aten::bmm") else (dims[1], dims[2]) if len(dims) >= 3 \
        else ([], [])
    if op in ("aten::mm", "aten::addmm") and len(a) == 2 and len(b) == 2 and a[1] == b[0]:
        return 1, a[0], b[1], a[1]
    if op in ("aten::bmm", "aten::baddbmm") and len(a) == 3 and len(b) == 3 and a[0] == b[0] and a[2] == b[1]:
        return a[0], a[1], b[2], a[2]
    raise ValueError(f"Input Dims: {dims} are not the operands of {op}")


def _elementwise_bytes(op: str, dims: list, types: list) -> float:
    sizes = [(_prod(d), TYPE_BYTES.get(t)) for d, t in zip(dims, types) if d and t]
    if not sizes or any(b is None for _, b in sizes):
        unknown = sorted({t for d, t in zip(dims, types) if d and t not in TYPE_BYTES})
        raise ValueError(f"Input type: no element size for {unknown or 'its tensors'}")
    nbytes = [n * b for n, b in sizes]
    if op == "aten::copy_":  # copy_(dst, src): read the source, write the destination
        return float(nbytes[0] + (nbytes[1] if len(nbytes) > 1 else nbytes[0]))
    if op == "aten::fill_":
        return float(nbytes[0])
    written = nbytes[0] if op.endswith("_") else max(nbytes)
    return float(sum(nbytes) + written)


def _load_json(path: Path) -> list:
    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError:
        raise ValueError(f"{path}: not UTF-8 text") from None
    except OSError as exc:
        raise ValueError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}: line {exc.lineno}: not JSON ({exc.msg})") from None
    events = data.get("traceEvents") if isinstance(data, dict) else data
    if not isinstance(events, list):
        raise ValueError(f"{path}: traceEvents: expected a PyTorch profiler (Chrome) trace with a list of events")
    if len(events) > MAX_EVENTS:
        raise ValueError(f"{path}: traceEvents: more than {MAX_EVENTS:,} events")
    return events


def _dur(e: dict, path: Path, i: int) -> float:
    d = e.get("dur")
    if isinstance(d, bool) or not isinstance(d, (int, float)) or not math.isfinite(d) or d < 0:
        raise ValueError(f"{path}: traceEvents[{i}] ({e.get('name')!r}): dur: expected microseconds >= 0, got {d!r}")
    return float(d) * 1e-6


def read_torch_trace(path: str | Path, device: str, source: str, precision: str) -> TraceKernels:
    """The GEMMs at ``precision`` and the element-wise operators of a PyTorch profiler trace, as measurements."""
    path = Path(path)
    events = _load_json(path)
    ops: dict = {}
    gpu: dict = defaultdict(float)
    kernels = 0
    skipped: dict[str, int] = defaultdict(int)
    for i, e in enumerate(events):
        if not isinstance(e, dict) or e.get("ph") != "X":
            continue
        args = e.get("args") if isinstance(e.get("args"), dict) else {}
        ext = args.get("External id")
        if e.get("cat") == "kernel":
            kernels += 1
            if ext is None:
                skipped["kernel with no External id (no operator to take its shape from)"] += 1
                continue
            gpu[ext] += _dur(e, path, i)
        elif e.get("cat") == "cpu_op" and ext is not None:
            ops[ext] = (i, e)
    if not kernels:
        raise ValueError(f"{path}: no GPU kernels (cat 'kernel'): profile with ProfilerActivity.CUDA")
    groups: dict = defaultdict(list)
    allowed = PRECISION_TYPES.get(precision, ())
    for ext, seconds in gpu.items():
        if ext not in ops:
            skipped["kernel whose operator is not in the trace"] += 1
            continue
        i, e = ops[ext]
        name, args = str(e.get("name")), e.get("args")
        if name not in GEMM_OPS and name not in ELEMENTWISE:
            skipped[f"operator neither a GEMM nor element-wise ({name})"] += 1
            continue
        try:
            dims = _dims(args)
            types = [str(t) for t in args.get("Input type") or []]
            if name in GEMM_OPS:
                operand = types[0] if name in ("aten::mm", "aten::bmm") else (types[1] if len(types) > 1 else "")
                if operand not in allowed:
                    skipped[f"GEMM at {operand or 'an unknown type'}, not {precision}"] += 1
                    continue
                groups[("gemm", name, *_gemm_shape(name, dims))].append(seconds)
            else:
                groups[("elementwise", name, _elementwise_bytes(name, dims, types))].append(seconds)
        except ValueError as exc:
            raise ValueError(f"{path}: traceEvents[{i}] ({name}): {exc}") from None
    return TraceKernels(_measurements(groups, device, source, precision), dict(skipped), kernels, "torch")


def read_nsight_kernels(path: str | Path, device: str, source: str, precision: str) -> TraceKernels:
    """The element-wise (memory-bound) kernels of an Nsight Compute raw CSV, with their measured DRAM bytes."""
    try:
        trace = load_nsight(path)
    except TraceError as exc:
        raise ValueError(str(exc)) from None
    groups: dict = defaultdict(list)
    skipped: dict[str, int] = defaultdict(int)
    kernels = [e for e in trace.events if e.category == COMPUTE]
    for e in kernels:
        if GEMM_NAMES.search(e.name):
            skipped["GEMM (Nsight Compute records no GEMM shape)"] += 1
        elif not e.bytes:
            skipped["no DRAM bytes (dram__bytes.sum)"] += 1
        elif e.duration_s <= 0:
            skipped["zero duration"] += 1
        elif e.flops is not None and e.flops > VECTOR_INTENSITY * e.bytes:
            skipped[f"more than {VECTOR_INTENSITY:g} FLOP per DRAM byte: not element-wise"] += 1
        else:
            groups[("elementwise", _short(e.name), float(e.bytes))].append(e.duration_s)
    return TraceKernels(_measurements(groups, device, source, precision), dict(skipped), len(kernels), "nsight")


def _short(name: str) -> str:
    """A kernel's name without its template arguments, for the residual table."""
    return re.sub(r"<.*>", "<...>", name)[:80]


def _measurements(groups: dict, device: str, source: str, precision: str) -> tuple[Measurement, ...]:
    out = []
    for key, times in sorted(groups.items(), key=lambda kv: (kv[0][0], kv[0][2:], kv[0][1])):
        t = float(np.median(times))
        published = f"median of {len(times)} kernel{'s' * (len(times) > 1)}"
        if key[0] == "gemm":
            _, op, b, m, n, k = key
            out.append(Measurement(device, source, "gemm", op, precision, b, m, n, k, 2.0 * b * m * n * k, 0.0,
                                   published, t, "calibration"))
        else:
            _, op, nbytes = key
            out.append(Measurement(device, source, "elementwise", op, precision, 1, 0, 0, 0, 0.0, nbytes,
                                   published, t, "calibration"))
    return tuple(r for r in out if r.time_s > 0 and (r.kind == "elementwise" or min(r.m, r.n, r.k) > 0))


def detect_format(path: str | Path) -> str:
    """'torch' (a .json trace), 'nsight' (a CSV with ncu's 'Kernel Name' header or '==PROF==' lines) or 'csv'."""
    path = Path(path)
    if path.suffix.lower() == ".json":
        return "torch"
    try:
        with path.open(encoding="utf-8-sig", errors="replace") as fh:
            head = fh.read(4096)
    except OSError:
        return "csv"
    return "nsight" if "==PROF==" in head or '"Kernel Name"' in head or "Kernel Name," in head else "csv"
