"""Import a Chrome trace JSON, as written by ``torch.profiler`` (``export_chrome_trace``) and Kineto.

Read: ``traceEvents`` (or a bare JSON array of events); complete events (``ph: "X"``, ``ts`` and ``dur``
in microseconds) and begin/end pairs (``ph: "B"``/``"E"``); ``M`` metadata naming threads. From ``args``:
``flops`` (torch.profiler with ``with_flops=True``), ``bytes`` (memcpy), ``stream``/``device`` (GPU lanes).
Lanes are GPU streams (``GPU <device> stream <stream>``) or CPU threads (by ``thread_name`` metadata).
An event's location is the innermost ``record_function`` range (``user_annotation``) around it on its lane.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from explorer.core.files import NestingError, parse_nested
from explorer.core.traces.csv_table import read_text
from explorer.core.traces.model import (
    ANNOTATION,
    COMPUTE,
    CPU_OP,
    MEMCPY,
    MEMSET,
    Trace,
    TraceError,
    TraceEvent,
    ordered_lanes,
)

_CATEGORIES = {
    "kernel": COMPUTE,
    "gpu_memcpy": MEMCPY,
    "gpu_memset": MEMSET,
    "cpu_op": CPU_OP,
    "user_annotation": ANNOTATION,
    "gpu_user_annotation": ANNOTATION,
    "python_function": "python",
    "cuda_runtime": "runtime",
    "cuda_driver": "runtime",
}
_GPU_CATS = {"kernel", "gpu_memcpy", "gpu_memset", "gpu_user_annotation"}
_SKIPPED_CATS = {"trace"}  # the profiler's own envelope event around the whole capture
_US = 1e-6


def load_chrome(path: str | Path) -> Trace:
    """Read a Chrome/PyTorch-profiler trace file; raise TraceError naming the line or field on bad input."""
    file = str(path)
    text = read_text(path)
    data, warnings = _decode(text, file)
    events = data.get("traceEvents") if isinstance(data, dict) else data
    if isinstance(data, dict) and "traceEvents" not in data:
        raise TraceError("has no 'traceEvents' list; is this a Chrome/PyTorch profiler trace?",
                         file=file, field="traceEvents")
    if not isinstance(events, list):
        raise TraceError(f"must be a list of events, got {type(events).__name__}", file=file,
                         field="traceEvents")
    return _build(events, file, warnings)


def _decode(text: str, file: str) -> tuple[object, list[str]]:
    try:
        return parse_nested(json.loads, text), []
    except NestingError as exc:
        raise TraceError(str(exc), file=file) from None
    except json.JSONDecodeError as exc:
        first = exc
    stripped = text.rstrip()
    # The Chrome trace format lets the array form end without its closing bracket.
    if stripped.startswith("["):
        try:
            return parse_nested(json.loads, stripped.rstrip(",") + "]"), [("the event array has no closing ']' "
                                                            "(allowed by the Chrome trace format)")]
        except (json.JSONDecodeError, NestingError):
            pass
    truncated = first.pos >= len(stripped) - 1 or not stripped.endswith(("}", "]"))
    what = "ends early (truncated file?)" if truncated else "is not valid JSON"
    raise TraceError(f"{what} at column {first.colno}: {first.msg}", file=file, line=first.lineno) from None


def _number(event: dict, key: str, index: int, file: str, *, required: bool) -> float | None:
    value = event.get(key)
    if value is None:
        if required:
            raise TraceError(f"event '{event.get('name', '?')}' has no '{key}'", file=file,
                             field=f"traceEvents[{index}].{key}")
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise TraceError(f"'{value}' is not a number", file=file,
                         field=f"traceEvents[{index}].{key}") from None
    if not math.isfinite(number):
        raise TraceError(f"'{value}' is not finite", file=file, field=f"traceEvents[{index}].{key}")
    return number


def _arg_number(args: dict, key: str, index: int, file: str) -> float | None:
    if key not in args or args[key] in (None, ""):
        return None
    try:
        number = float(args[key])
    except (TypeError, ValueError):
        raise TraceError(f"'{args[key]}' is not a number", file=file,
                         field=f"traceEvents[{index}].args.{key}") from None
    if not math.isfinite(number) or number < 0:
        raise TraceError(f"'{args[key]}' must be a finite count >= 0", file=file,
                         field=f"traceEvents[{index}].args.{key}")
    return number


def _lane(event: dict, cat: str, args: dict, thread_names: dict) -> str:
    pid, tid = event.get("pid"), event.get("tid")
    if cat in _GPU_CATS and "stream" in args:
        return f"GPU {args.get('device', pid)} stream {args['stream']}"
    name = thread_names.get((pid, tid))
    return name if name else f"pid {pid} tid {tid}"


def _thread(event: dict, index: int, file: str) -> tuple:
    """The event's (pid, tid): numbers or text (the format allows either), anything else is refused by name."""
    for key in ("pid", "tid"):
        value = event.get(key)
        if not (value is None or isinstance(value, (int, float, str))):
            raise TraceError(f"must be a number or text, got {type(value).__name__}", file=file,
                             field=f"traceEvents[{index}].{key}")
    return event.get("pid"), event.get("tid")


def _build(raw_events: list, file: str, warnings: list[str]) -> Trace:
    thread_names: dict = {}
    for i, event in enumerate(raw_events):
        if isinstance(event, dict) and event.get("ph") == "M" and event.get("name") == "thread_name":
            args = event.get("args")
            name = args.get("name") if isinstance(args, dict) else None
            if name:
                thread_names[_thread(event, i, file)] = str(name)

    spans: list[tuple[str, str, float, float, str, float | None, float | None]] = []
    open_begins: dict = {}
    unmatched_ends = 0
    for i, event in enumerate(raw_events):
        if not isinstance(event, dict):
            raise TraceError(f"is a {type(event).__name__}, not an event object", file=file,
                             field=f"traceEvents[{i}]")
        ph = event.get("ph")
        if ph not in ("X", "B", "E"):
            continue
        raw_cat = str(event.get("cat", "")).strip()
        if raw_cat.lower() in _SKIPPED_CATS:
            continue
        args = event.get("args") or {}
        if not isinstance(args, dict):
            raise TraceError("must be an object", file=file, field=f"traceEvents[{i}].args")
        ts = _number(event, "ts", i, file, required=True)
        key = _thread(event, i, file)
        if ph == "B":
            open_begins.setdefault(key, []).append((i, event, ts))
            continue
        if ph == "E":
            stack = open_begins.get(key)
            if not stack:
                unmatched_ends += 1
                continue
            i, event, begin = stack.pop()
            args = event.get("args") or {}
            raw_cat = str(event.get("cat", "")).strip()
            dur = ts - begin
            ts = begin
        else:
            dur = _number(event, "dur", i, file, required=True)
        if dur < 0:
            raise TraceError(f"duration {dur} is negative", file=file, field=f"traceEvents[{i}].dur")
        cat = _CATEGORIES.get(raw_cat, raw_cat.lower() or "other")
        name = str(event.get("name", "")) or "(unnamed)"
        flops = _arg_number(args, "flops", i, file)
        nbytes = _arg_number(args, "bytes", i, file) if cat in (MEMCPY, MEMSET) else None
        spans.append((name, _lane(event, raw_cat, args, thread_names), ts, dur, cat, flops, nbytes))

    left_open = sum(len(s) for s in open_begins.values())
    if left_open:
        warnings.append(f"{left_open} 'B' event(s) have no matching 'E' and were left out")
    if unmatched_ends:
        warnings.append(f"{unmatched_ends} 'E' event(s) have no matching 'B' and were left out")
    if not spans:
        raise TraceError("has no duration events (ph 'X', or 'B'/'E' pairs)", file=file, field="traceEvents")

    origin = min(s[2] for s in spans)
    events = [TraceEvent(name=n, lane=lane, start_s=(ts - origin) * _US, duration_s=dur * _US, category=c,
                         flops=f, bytes=b) for n, lane, ts, dur, c, f, b in spans]
    events = _with_locations(events)
    events.sort(key=lambda e: (e.start_s, -e.duration_s))
    gpu_first = tuple(sorted({e.lane for e in events if e.lane.startswith("GPU ")}))
    return Trace(source_format="chrome", events=tuple(events), lanes=ordered_lanes(events, gpu_first),
                 warnings=tuple(warnings), source=file)


def _with_locations(events: list[TraceEvent]) -> list[TraceEvent]:
    """Give each non-annotation event the name of the innermost annotation range around it on its lane."""
    by_lane: dict[str, list[int]] = {}
    for index, event in enumerate(events):
        by_lane.setdefault(event.lane, []).append(index)
    out = list(events)
    for indices in by_lane.values():
        if not any(events[i].category == ANNOTATION for i in indices):
            continue
        order = sorted(indices, key=lambda i: (events[i].start_s, events[i].category != ANNOTATION,
                                               -events[i].duration_s))
        stack: list[TraceEvent] = []
        for i in order:
            event = events[i]
            while stack and stack[-1].end_s <= event.start_s:
                stack.pop()
            if event.category == ANNOTATION:
                stack.append(event)
            elif stack:
                out[i] = TraceEvent(event.name, event.lane, event.start_s, event.duration_s, event.category,
                                    event.flops, event.bytes, stack[-1].name)
    return out
