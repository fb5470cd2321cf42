"""``hwexplorer tiling --m M --n N --k K --array RxC --dataflow ws|os|is``: folds, efficiency, fringe tax, cycles."""

from __future__ import annotations

import re

from ..core.analysis.tiling import padding_options, systolic_mapping
from .common import CliError, print_json


def add_parser(sub) -> None:
    p = sub.add_parser("tiling", help="map one GEMM onto a systolic array",
                       description="Folds, mapping efficiency, fringe tax and estimated cycles of the GEMM "
                       "C[M,N] = A[M,K] B[K,N] on an R x C systolic array.")
    for d in ("m", "n", "k"):
        p.add_argument(f"--{d}", type=int, required=True, help=f"GEMM dimension {d.upper()}")
    p.add_argument("--array", required=True, metavar="RxC", help="array size, e.g. 128x128")
    p.add_argument("--dataflow", choices=("ws", "os", "is"), default="ws", help="default ws")
    p.add_argument("--units", type=int, default=1, help="number of arrays the folds spread over (default 1)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=run)


def run(args) -> int:
    match = re.fullmatch(r"\s*(\d+)\s*[xX]\s*(\d+)\s*", args.array)
    if not match:
        raise CliError(f"--array: expected RxC such as 128x128, got {args.array!r}")
    rows, cols = int(match.group(1)), int(match.group(2))
    for name, v in (("--m", args.m), ("--n", args.n), ("--k", args.k), ("--array rows", rows),
                    ("--array cols", cols), ("--units", args.units)):
        if v < 1:
            raise CliError(f"{name}: must be a positive whole number, got {v}")
    r = systolic_mapping(args.m, args.n, args.k, rows, cols, args.dataflow, args.units)
    dims = {"M": args.m, "N": args.n, "K": args.k}
    suggestions = {}
    for dim, size in ((r.rows_dim, rows), (r.cols_dim, cols)):
        if dims[dim] % size:
            suggestions[dim] = list(padding_options(dims[dim], size))
    if args.json:
        print_json({"m": args.m, "n": args.n, "k": args.k, "array": {"rows": rows, "cols": cols},
                    "dataflow": args.dataflow, "units": args.units, "rows_dim": r.rows_dim, "cols_dim": r.cols_dim,
                    "stream_dim": r.stream_dim, "folds": int(r.folds), "mapping_efficiency": r.mapping_efficiency,
                    "fringe_tax": r.fringe_tax, "cycles": int(r.cycles), "idle_pes_last_fold": int(r.idle_pe_last_fold),
                    "padding_options": suggestions})
        return 0
    print(f"GEMM M={args.m} N={args.n} K={args.k} on {rows}x{cols} ({args.dataflow.upper()}: "
          f"{r.rows_dim} -> rows, {r.cols_dim} -> cols, {r.stream_dim} streamed), {args.units} array(s)")
    print(f"folds               {int(r.folds):,}")
    print(f"mapping efficiency  {100 * r.mapping_efficiency:.1f} %")
    print(f"fringe tax          {100 * r.fringe_tax:.1f} %")
    print(f"idle PEs last fold  {int(r.idle_pe_last_fold):,} of {rows * cols:,}")
    load = "" if args.dataflow == "os" else f"load {rows} + "
    print(f"estimated cycles    {int(r.cycles):,}  (per fold: {load}stream + fill/drain {rows + cols - 2}; "
          f"the last cycle's index, as SCALE-Sim counts)")
    for dim, options in suggestions.items():
        print(f"padding {dim}={dims[dim]} to a multiple of the array: {' or '.join(map(str, options))}")
    return 0
