"""Fit the catalog devices' calibrations to kernels.csv (calibration split) and report the held-out error.

    python catalog/measurements/fit_catalog.py          # print the calibration: blocks and the error table
    python catalog/measurements/fit_catalog.py --write  # also replace the blocks in catalog/<device>.yaml

The fitted parameters depend only on the CSV and the device files, so a rerun reproduces the stored blocks.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from explorer.core.analysis.calibration_fit import error_report, fit_device  # noqa: E402
from explorer.core.calibration.measurements import read_measurements, select  # noqa: E402
from explorer.core.calibration.model import Fit  # noqa: E402
from explorer.core.hardware.calibration_file import calibration_to_dict  # noqa: E402
from explorer.core.hardware.device_file import load_device_file  # noqa: E402

DATA = "catalog/measurements/kernels.csv"
DATE = "2026-11-25"
PRECISION = "bf16"  # the GEMMs were measured in bf16; the curve is listed for fp16 too (same Tensor Core rate)
ALSO = ("fp16",)
#: the sources: block each device file gains (keys used by the CSV's source column)
SOURCES = {
    "xla-sm90": {"title": "OpenXLA GPU cost model, default matmul performance table, entries for sm_90 (H100), "
                          "bf16xbf16->bf16 (tensorflow/tensorflow third_party/xla/xla/service/gpu/model/"
                          "matmul_interpolator_data.h at 372d578bb861cc5804e56d37d93aec931a59762c)",
                 "url": "https://github.com/tensorflow/tensorflow/blob/372d578bb861cc5804e56d37d93aec931a59762c/"
                        "third_party/xla/xla/service/gpu/model/matmul_interpolator_data.h", "date": DATE},
    "xla-sm100": {"title": "OpenXLA GPU cost model, default matmul performance table, entries for sm_100 (B200), "
                           "bf16xbf16->bf16 (tensorflow/tensorflow third_party/xla/xla/backends/gpu/cost_model/"
                           "matmul_interpolator_data.h at a305421c45a1ea5117c170b8d8a00a51f9dcee8f)",
                  "url": "https://github.com/tensorflow/tensorflow/blob/a305421c45a1ea5117c170b8d8a00a51f9dcee8f/"
                         "third_party/xla/xla/backends/gpu/cost_model/matmul_interpolator_data.h", "date": DATE},
    "bwbench-h100": {"title": "yencal/gpu-bandwidth-benchmark, figure bandwidth_plot_blocksize1024_h100.png "
                              "(16-byte vector copy, 1024 threads per block), values read from the figure",
                     "url": "https://github.com/yencal/gpu-bandwidth-benchmark/blob/"
                            "fc3888365d78c460968f5f3ebad4194b07aedb6d/figures/bandwidth_plot_blocksize1024_h100.png",
                     "date": DATE},
    "bwbench-a100": {"title": "yencal/gpu-bandwidth-benchmark, figure bandwidth_plot_blocksize1024_a100.png "
                              "(16-byte vector copy, 1024 threads per block), values read from the figure",
                     "url": "https://github.com/yencal/gpu-bandwidth-benchmark/blob/"
                            "fc3888365d78c460968f5f3ebad4194b07aedb6d/figures/bandwidth_plot_blocksize1024_a100.png",
                     "date": DATE},
}


def fit_all(write: bool = False) -> None:
    rows = read_measurements(ROOT / DATA)
    provenance = Fit(DATA, 0, date=DATE, split="calibration")
    print(f"{'device':24} {'kind':12} {'held out':>8} {'ideal MAPE':>11} {'calibrated MAPE':>16}")
    for device_id in sorted({r.device for r in rows}):
        path = ROOT / "catalog" / f"{device_id}.yaml"
        device = replace(load_device_file(path), calibration=None)
        cal, results = fit_device(select(rows, device_id, split="calibration"), device, PRECISION, provenance,
                                  ALSO)
        calibrated = replace(device, calibration=cal)
        for rep in error_report(select(rows, device_id, split="held_out"), calibrated, PRECISION):
            print(f"{rep.device:24} {rep.kind:12} {rep.points:8d} {100 * rep.ideal_mape:10.1f}% "
                  f"{100 * rep.calibrated_mape:15.1f}%")
        for kind, res in results.items():
            if res.at_bound:
                print(f"  note: {device_id} {kind}: {', '.join(res.at_bound)} at its bound")
        block = calibration_to_dict(cal)
        text = yaml.safe_dump({"calibration": block}, sort_keys=False, width=110).replace("'" + DATE + "'", DATE)
        print(text)
        if write:
            _write(path, text, {r.source for r in select(rows, device_id)})


def _write(path: Path, block: str, sources: set[str]) -> None:
    """Replace (or append) the calibration: block at the end of the file and add the sources it cites."""
    text = path.read_text()
    head = text.split("\ncalibration:\n")[0].rstrip("\n") + "\n"
    lines = head.splitlines(keepends=True)
    end = next(i for i, line in enumerate(lines) if line.startswith("sources:")) + 1
    while end < len(lines) and (lines[end].startswith(" ") or not lines[end].strip()):
        end += 1
    new = "".join(f"  {key}:\n" + "".join(f"    {k}: {json.dumps(v) if k == 'title' else v}\n"
                                            for k, v in SOURCES[key].items())
                  for key in sorted(sources) if f"\n  {key}:\n" not in "".join(lines[:end]))
    path.write_text("".join(lines[:end]) + new + "".join(lines[end:]) + block)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="write the blocks into the catalog device files")
    fit_all(parser.parse_args().write)
