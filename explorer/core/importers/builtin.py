"""The importers the app ships: our JSON model file, ONNX, Hugging Face config.json, and one per profiler-trace
format.

Sniffs read at most the first few KiB and never import a format's library: the ONNX sniff reads the
protobuf's first fields by hand, so ``onnx`` is imported only when an ONNX file is loaded.
"""

from __future__ import annotations

import re
from functools import partial
from pathlib import Path

from explorer.core.importers.hf_config import sniff_hf_config
from explorer.core.importers.nccl_tests import sniff_nccl_tests
from explorer.core.importers.registry import Imported, register
from explorer.core.traces import TRACE_FORMATS, detect_format, load_trace
from explorer.core.workload.model import load_model_file as _read_model_file

SNIFF_BYTES = 8 * 1024
_MODEL_KEYS = (re.compile(r'"layers"\s*:'), re.compile(r'"input"\s*:'))
# ModelProto fields (number -> protobuf wire type): ir_version 1, producer_name 2, producer_version 3,
# domain 4, model_version 5, doc_string 6, graph 7, opset_import 8, metadata_props 14, training_info 20,
# functions 25, configuration 26. Serializers write them in field order, ir_version first.
_ONNX_FIELDS = {1: 0, 2: 2, 3: 2, 4: 2, 5: 0, 6: 2, 7: 2, 8: 2, 14: 2, 20: 2, 25: 2, 26: 2}


def _head(path: Path, size: int = SNIFF_BYTES) -> bytes:
    with Path(path).open("rb") as f:
        return f.read(size)


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while pos < len(data) and shift < 64:
        byte = data[pos]
        value |= (byte & 0x7F) << shift
        pos += 1
        if not byte & 0x80:
            return value, pos
        shift += 7
    raise ValueError("truncated varint")


def sniff_onnx(path: Path) -> bool:
    """An ONNX ``ModelProto``: starts with a plausible ``ir_version`` and its next fields are ModelProto's
    (checked as far as the head reaches)."""
    data = _head(path)
    if data[:1] != b"\x08":
        return False
    ir_version, pos = _varint(data, 1)
    if not 1 <= ir_version <= 100:
        return False
    seen = 0
    while pos < len(data) and seen < 8:
        key, pos = _varint(data, pos)
        number, wire = key >> 3, key & 7
        if _ONNX_FIELDS.get(number) != wire:
            return False
        if wire == 0:
            _, pos = _varint(data, pos)
        else:
            length, pos = _varint(data, pos)
            pos += length
        seen += 1
    return True


def sniff_model_file(path: Path) -> bool:
    """Our JSON model file: a JSON object with ``input`` and ``layers`` keys near the top (and no
    ``traceEvents``, which would make it a Chrome trace)."""
    text = _head(path).decode("utf-8-sig", errors="ignore")
    return (text.lstrip().startswith("{") and all(k.search(text) for k in _MODEL_KEYS)
            and '"traceEvents"' not in text)


def load_model_file(path: Path) -> Imported:
    return Imported("model", _read_model_file(path))


def _sniff_trace(fmt: str, path: Path) -> bool:
    return detect_format(path) == fmt


def _load_trace(fmt: str, path: Path, clock_hz: float | str | None = None) -> Imported:
    trace = load_trace(path, fmt=fmt, clock_hz=clock_hz)
    return Imported("trace", trace, warnings=tuple(trace.warnings))


def register_builtin() -> None:
    register("model_file", "Hardware Explorer model", "model", (".json",), sniff_model_file,
             "explorer.core.importers.builtin:load_model_file")
    register("onnx", "ONNX model", "model", (".onnx",), sniff_onnx,
             "explorer.core.importers.onnx.convert:load_imported", options=("dims", "name"))
    # before the traces: the Chrome trace sniff accepts any JSON. No suffix: a config is told by its content (or is
    # the config.json of a dropped folder), so an unrecognized .json still goes to the model-file loader
    register("hf_config", "Hugging Face config.json (or its folder)", "model", (), sniff_hf_config,
             "explorer.core.importers.hf_config:load_hf_config")
    for fmt in TRACE_FORMATS:  # in detection order: the first format that matches decides
        register(fmt.name, fmt.label, "trace", fmt.suffixes, partial(_sniff_trace, fmt.name),
                 partial(_load_trace, fmt.name), options=("clock_hz",))
    # after the traces (whose sniffs name their own columns): a text table with size, time, algbw and busbw
    register("nccl_tests", "nccl-tests output (all_reduce_perf, all_gather_perf, ...)", "collectives",
             (".txt", ".log", ".out"), sniff_nccl_tests, "explorer.core.importers.nccl_tests:load_nccl_tests",
             options=("op", "ranks"))
