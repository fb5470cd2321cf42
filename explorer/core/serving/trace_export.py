"""The simulated schedule as a Chrome/Perfetto trace (the JSON trace-event format: ``ph: "X"`` complete events
for steps, ``ph: "b"/"e"`` async spans for requests; times in microseconds). Open it in ui.perfetto.dev or
chrome://tracing: one process per replica, its steps on one track, each request's wait, prefill-to-first-token
and decode spans on the async tracks."""

from __future__ import annotations

import math

import numpy as np

from .simulate import SimRun

US = 1e6


def chrome_trace(runs, model: str = "") -> dict:
    """``runs``: (request indices, :class:`SimRun` recorded with ``record=True``) per replica."""
    events: list[dict] = []
    for pid, (idx, run) in enumerate(runs):
        run: SimRun
        events.append({"name": "process_name", "ph": "M", "pid": pid, "tid": 0,
                       "args": {"name": f"replica {pid}" + (f" ({model})" if model else "")}})
        events.append({"name": "thread_name", "ph": "M", "pid": pid, "tid": 0, "args": {"name": "steps"}})
        for start, dur, kind, batch in run.slices:
            events.append({"name": f"{kind} x{batch}", "cat": kind, "ph": "X", "pid": pid, "tid": 0,
                           "ts": start * US, "dur": dur * US, "args": {"sequences": int(batch)}})
        req = run.requests
        for j, i in enumerate(np.asarray(idx).tolist()):
            parts = (("queued + prefill", req.arrival[j], run.first[j]), ("decode", run.first[j], run.finish[j]))
            for name, t0, t1 in parts:
                if not (math.isfinite(t0) and math.isfinite(t1)) or t1 <= t0:
                    continue
                common = {"name": name, "cat": "request", "pid": pid, "tid": 1, "id": int(i)}
                events.append({**common, "ph": "b", "ts": float(t0) * US,
                               "args": {"request": int(i), "input_tokens": int(req.input[j]),
                                        "output_tokens": int(req.output[j])}})
                events.append({**common, "ph": "e", "ts": float(t1) * US})
    return {"traceEvents": events, "displayTimeUnit": "ms"}
