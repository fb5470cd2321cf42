"""Write the Fidelity view's demonstration project: published H100 kernel times as a trace of a model.

    python docs/screenshots/fidelity-demo/make_demo.py

Reads the H100 SXM5 rows of ``catalog/measurements/kernels.csv`` (published measurements, sources in that folder's
README): the GEMMs of batch 1 (the model has one batch for every layer) and the element-wise copies outside the L2
range, of both splits. Each becomes one layer of a model (a ``matmul`` of two activations, or an ``opaque`` copy,
as ``explorer/core/analysis/calibration_fit.py`` analyses them) and one kernel of a Chrome trace named after the
layer, whose duration is the published time, unchanged. Layer names say the split: ``heldout`` rows were never
fitted, ``fit`` rows are the calibration's own data. Writes ``h100-kernels.hwproj`` beside this script: the model,
the H100 SXM5 at bf16 and the trace (``h100-kernels-trace.json`` is the trace alone, for File > Import Trace).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
sys.path.insert(0, str(ROOT))

from explorer.core.analysis.calibration_fit import _layer  # noqa: E402
from explorer.core.calibration.measurements import read_measurements  # noqa: E402
from explorer.core.files import atomic_write_text  # noqa: E402
from explorer.core.session.project import Project  # noqa: E402
from explorer.core.session.state import Assumptions, State  # noqa: E402
from explorer.core.traces import load_trace  # noqa: E402
from explorer.core.workload.model import LayerSpec, Model  # noqa: E402

DEVICE = "nvidia-h100-sxm5"
TAG = {"calibration": "fit", "held_out": "heldout"}


def main() -> None:
    rows = [r for r in read_measurements(ROOT / "catalog" / "measurements" / "kernels.csv")
            if r.device == DEVICE and r.split != "excluded" and (r.kind != "gemm" or r.batch == 1)]
    layers, events, ts = [], [], 0.0
    for i, r in enumerate(rows):
        base = _layer(r, 2.0)  # bf16: 2 bytes per element
        shape = f"{r.m}x{r.n}x{r.k}" if r.kind == "gemm" else f"{int(r.bytes)}B"
        name = f"{TAG[r.split]}-{r.kind}-{shape}-{i}"
        layers.append(LayerSpec.make(base.kind, name, **base.params))
        dur_us = r.time_s * 1e6
        events.append({"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": 7, "ts": round(ts, 3),
                       "dur": dur_us, "args": {"device": 0, "stream": 7}})
        ts += dur_us + 5.0
    model = Model.make("Published H100 kernels (catalog/measurements)", {"features": 1}, layers)
    trace_path = HERE / "h100-kernels-trace.json"
    atomic_write_text(trace_path, json.dumps({"traceEvents": events}, indent=1) + "\n")
    trace = load_trace(trace_path)
    state = State(model=model, device_ids=(DEVICE,), assumptions=Assumptions(precision="bf16"), trace=trace)
    atomic_write_text(HERE / "h100-kernels.hwproj", Project.of_state(state).dumps())
    print(f"{len(rows)} kernels: {sum(r.kind == 'gemm' for r in rows)} GEMMs, "
          f"{sum(r.kind != 'gemm' for r in rows)} copies")


if __name__ == "__main__":
    main()
