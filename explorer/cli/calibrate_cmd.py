"""``calibrate link FILE --system S`` and ``calibrate kernels CSV --device D``: fit a link or a device to the
user's measurements (``docs/calibration.md``, ``docs/cli.md``). Bad input is one line and exit 2."""

from __future__ import annotations

import math
import re
from dataclasses import replace
from datetime import date
from pathlib import Path

from ..core.importers import ImporterError, load
from ..core.parallel.collectives import ALGORITHMS
from ..core.parallel.link_fit import ABOVE, JOINS, LEVELS, LinkFit, fit_link, level_domain
from ..core.units import UnitError, parse_si
from .common import CliError, is_path, print_json, text_table
from .resolve import resolve_devices


def add_parser(sub) -> None:
    p = sub.add_parser("calibrate", help="fit a link or a device to your own measurements")
    inner = p.add_subparsers(dest="what", metavar="WHAT")
    inner.required = True
    link = inner.add_parser("link", help="fit a system level's latency and bandwidth to nccl-tests output")
    link.add_argument("file", metavar="FILE", help="nccl-tests output (all_reduce_perf, all_gather_perf, "
                      "reduce_scatter_perf, alltoall_perf)")
    link.add_argument("--system", required=True, metavar="SYS", help="a system id of the catalog or a system file")
    link.add_argument("--level", choices=LEVELS, default=None, help="the level the run measured (default: the "
                      "innermost domain holding the file's ranks)")
    link.add_argument("--op", default=None, help="the collective, when the file does not say "
                      "(all_reduce, all_gather, reduce_scatter, all_to_all)")
    link.add_argument("--ranks", type=int, default=None, help="the ranks, when the file lists none")
    link.add_argument("--algorithm", choices=ALGORITHMS, default="ring", help="the collective's algorithm in the "
                      "model (default ring, as NCCL_ALGO=Ring)")
    link.add_argument("--min-size", default="0 B", metavar="SIZE", help="fit only messages of at least SIZE "
                      "(e.g. 1 MiB; default all)")
    link.add_argument("--join", choices=JOINS, default="sum", help="sum: the alpha-beta model, latency + size / "
                      "bandwidth (default); soft: also fit the sharpness of their join, for a bus bandwidth that "
                      "ramps up more slowly than alpha-beta (docs/calibration.md)")
    link.add_argument("--save", action="store_true", help="store the fitted alpha and bandwidth in the system "
                      "(its file when --system is a file, else the catalog database); the calibrated time model "
                      "uses them")
    link.add_argument("--name", default=None, help="the saved calibration's name: its source key is fit-NAME "
                      "(default: the file's name)")
    link.add_argument("--json", action="store_true", help="print JSON")
    link.set_defaults(func=run_link)
    kern = inner.add_parser("kernels", help="fit a device's calibration to measured kernels: a CSV of shapes and "
                            "times, a PyTorch profiler trace or an Nsight Compute CSV")
    kern.add_argument("file", metavar="FILE", help="a CSV with columns kind (gemm|elementwise), m, n, k, batch, "
                      "bytes, time; a PyTorch profiler Chrome trace (.json, record_shapes=True); or an Nsight "
                      "Compute raw CSV (ncu --csv --page raw)")
    kern.add_argument("--format", dest="file_format", choices=("auto", "csv", "torch", "nsight"), default="auto",
                      help="what FILE is (default auto: .json is a PyTorch trace, a CSV with ncu's 'Kernel Name' "
                           "header is Nsight Compute, else the plain CSV)")
    kern.add_argument("--device", required=True, metavar="DEV", help="a device id of the catalog or a device file")
    kern.add_argument("--precision", default="bf16", help="the precision the kernels ran at (default bf16)")
    kern.add_argument("--save", action="store_true", help="store the fitted calibration in the catalog database")
    kern.add_argument("--name", default=None, help="the saved calibration's name: its source key is fit-NAME "
                      "(default: the file's name)")
    kern.add_argument("--json", action="store_true", help="print JSON")
    kern.set_defaults(func=run_kernels)
    undo = inner.add_parser("revert", help="undo saved calibrations: a catalog device's curves or a catalog "
                            "system's fitted links back to the shipped ones")
    which = undo.add_mutually_exclusive_group(required=True)
    which.add_argument("--device", metavar="DEV", help="a device id of the catalog")
    which.add_argument("--system", metavar="SYS", help="a system id of the catalog")
    undo.add_argument("--json", action="store_true", help="print JSON")
    undo.set_defaults(func=run_revert)


# ---------------------------------------------------------------------------------------------------- link


def run_link(args) -> int:
    from .system_cmd import resolve_system

    path = Path(args.file)
    if not path.is_file():
        raise CliError(f"FILE: no such file: {args.file}")
    options = {k: v for k, v in (("op", args.op), ("ranks", args.ranks)) if v is not None}
    try:
        imported = load(path, kind="collectives", **options)
    except (ImporterError, ValueError) as exc:
        raise CliError(str(exc)) from None
    table = imported.value
    try:
        min_size = parse_si(args.min_size, "bytes", "--min-size")
    except UnitError as exc:
        raise CliError(str(exc)) from None
    if min_size < 0:
        raise CliError(f"--min-size: expected a size >= 0, got {args.min_size!r}")
    system = resolve_system(args.system, 1, getattr(args, "db", None))
    try:
        domain = level_domain(system, table.ranks, args.level)
        fit = fit_link(table.op, table.size, table.time, table.ranks, args.algorithm, min_size,
                       getattr(args, "join", "sum"))
    except ValueError as exc:
        raise CliError(f"--{exc}" if str(exc).startswith("level") else str(exc)) from None
    stated_bw = system.bandwidth(domain)
    stated_alpha = domain.alpha
    data = link_json(fit, table, system, domain, stated_bw, stated_alpha, imported.warnings)
    data["saved"] = None
    if args.save:
        data["saved"] = _save_link(args.system, system, domain, fit, table, path, getattr(args, "db", None),
                                   getattr(args, "name", None))
    if args.json:
        print_json(data)
    else:
        print_link(data, fit)
    return 0


def link_conditions(fit: LinkFit, table) -> str:
    """The run and the fit in words, stored beside a saved fit (the app's named link fits write the same)."""
    from ..core.session.link_calibrations import link_conditions as conditions

    return conditions(fit, table.dtype)


def stored_fit(fit: LinkFit, table, key: str):
    """The :class:`LinkCalibration` a fit is saved as: figures written in us and GB/s to 6 significant digits,
    their values read back from that text (so a saved file reads back to the same numbers; the app's named link
    fits are made by the same function, ``explorer/core/session/link_calibrations.py``)."""
    from ..core.session.link_calibrations import link_calibration, stored_texts

    alpha, bandwidth = stored_texts(fit)
    return link_calibration(alpha, bandwidth, fit.op, fit.ranks, fit.algorithm, link_conditions(fit, table),
                            fit.sharpness, key)


def with_fit(system, domain, fit: LinkFit, table, path: Path, name: str | None = None):
    """``system`` with ``domain``'s fitted link stored, citing the measurement file (URL, today's date)."""
    from ..core.session.link_calibrations import link_source, with_link

    key, today = _source_key(path, "link", name), date.today().isoformat()
    source = link_source(key, path.name, path.resolve().as_uri(), today)  # the app's Save to catalog cites the same
    return with_link(system, domain, stored_fit(fit, table, key), source)


def _save_link(spec: str, system, domain, fit: LinkFit, table, path: Path, db_url, name=None) -> str:
    """Store the fit in the system file ``spec`` or the catalog's system; returns where it went."""
    from ..core.hardware.system_file import save_system_file

    saved = with_fit(system, domain, fit, table, path, name)
    if is_path(spec) or Path(spec).exists():
        save_system_file(saved, spec)
        return str(spec)
    from ..store.engine import open_catalog

    try:
        with open_catalog(db_url) as repo:
            repo.update_system(saved, repo.system_record(system.id).version)
    except ValueError as exc:
        raise CliError(f"--save: {exc}") from None
    return "catalog"


def _num(x: float) -> float | None:
    return None if x is None or not math.isfinite(x) else float(x)


def link_json(fit: LinkFit, table, system, domain, stated_bw: float, stated_alpha: float, warnings) -> dict:
    level = "scale-up" if domain.scope == "scale_up" else "scale-out"
    return {
        "file": table.source, "op": fit.op, "ranks": fit.ranks, "dtype": table.dtype, "algorithm": fit.algorithm,
        "system": system.id, "level": level, "domain": domain.name,
        "alpha_s": fit.alpha, "bandwidth_Bps": fit.bandwidth, "sharpness": fit.sharpness,
        "join": fit.join,
        "stated": {"bandwidth_Bps": _num(stated_bw), "alpha_s": _num(stated_alpha),
                   "bandwidth_fraction": _num(fit.bandwidth / stated_bw) if stated_bw else None},
        "mape": fit.mape, "mape_above_1MiB": _num(fit.mape_above), "max_error_above_1MiB": _num(fit.max_error_above),
        "at_bound": list(fit.at_bound), "warnings": list(warnings),
        "rows": [{"size_B": float(n), "measured_s": float(t), "predicted_s": float(tp), "busbw_measured_Bps": float(bm),
                  "busbw_predicted_Bps": float(bp), "error": float(e)}
                 for n, t, tp, bm, bp, e in zip(fit.size, fit.measured, fit.predicted, fit.busbw_measured,
                                                fit.busbw_predicted, fit.error)],
    }


def _size(n: float) -> str:
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= scale:
            return f"{n / scale:g} {unit}"
    return f"{n:g} B"


def print_link(d: dict, fit: LinkFit) -> None:
    stated = d["stated"]
    print(f"{d['op']} on {d['ranks']} ranks ({d['dtype']}), {d['algorithm']} model, {d['system']} {d['level']} "
          f"({d['domain']})")
    line = f"  alpha {d['alpha_s'] * 1e6:.3f} us per step, bandwidth {d['bandwidth_Bps'] / 1e9:.1f} GB/s per direction"
    if stated["bandwidth_Bps"]:
        line += f" ({stated['bandwidth_fraction'] * 100:.0f} % of the stated {stated['bandwidth_Bps'] / 1e9:.0f} GB/s)"
    if d["join"] == "soft":
        line += f", sharpness {d['sharpness']:.3f} (soft join)"
    print(line)
    if stated["alpha_s"] is None:
        print(f"  the system file states no latency for {d['domain']}")
    else:
        print(f"  stated latency {stated['alpha_s'] * 1e6:.3f} us")
    above = "n/a" if d["mape_above_1MiB"] is None else f"{d['mape_above_1MiB'] * 100:.1f} %"
    worst = "n/a" if d["max_error_above_1MiB"] is None else f"{d['max_error_above_1MiB'] * 100:.1f} %"
    print(f"  bus bandwidth MAPE {d['mape'] * 100:.1f} % over {len(d['rows'])} messages; {above} at "
          f"{_size(ABOVE)} and above (worst {worst})")
    for w in d["warnings"] + [f"{n} ended on its bound: the data do not pin it down" for n in d["at_bound"]]:
        print(f"  note: {w}")
    rows = [[_size(r["size_B"]), f"{r['measured_s'] * 1e6:.2f}", f"{r['predicted_s'] * 1e6:.2f}",
             f"{r['busbw_measured_Bps'] / 1e9:.2f}", f"{r['busbw_predicted_Bps'] / 1e9:.2f}",
             f"{r['error'] * 100:+.1f}"] for r in d["rows"]]
    print(text_table(["size", "", "measured (us)", "predicted (us)", "busbw measured (GB/s)",
                      "busbw predicted (GB/s)", "error (%)"], [[r[0], "", *r[1:]] for r in rows]))
    if d.get("saved"):
        where = "the catalog database" if d["saved"] == "catalog" else d["saved"]
        print(f"  saved in {where}: the calibrated link of '{d['domain']}' (the calibrated time model uses it)")
    else:
        print("  not saved (--save stores it in the system)")


# ------------------------------------------------------------------------------------------------- kernels


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def _source_key(path: Path, default: str = "kernels", name: str | None = None) -> str:
    """``fit-<name>``, or ``fit-<file stem>`` without a name: the saved calibration's source key."""
    if name is not None:
        if not _slug(name):
            raise CliError(f"--name: expected letters or digits, got {name!r}")
        return "fit-" + _slug(name)
    return "fit-" + (_slug(path.stem) or default)


def run_kernels(args) -> int:
    from ..core.analysis.calibration_fit import fit_device
    from ..core.analysis.trace_kernels import detect_format, read_nsight_kernels, read_torch_trace
    from ..core.calibration.model import Fit
    from ..core.calibration.user_csv import read_kernel_csv
    from ..core.hardware.device import Source
    from ..core.precision import BYTES_PER_ELEMENT, PRECISIONS

    path = Path(args.file)
    if not path.is_file():
        raise CliError(f"FILE: no such file: {args.file}")
    if args.precision not in PRECISIONS:
        raise CliError(f"--precision: expected one of {', '.join(PRECISIONS)}, got {args.precision!r}")
    device = resolve_devices([args.device], getattr(args, "db", None))[0]
    if device.peak_flops(args.precision) != device.peak_flops(args.precision) or not device.bandwidth:
        raise CliError(f"--device {device.id}: no {args.precision} peak or no memory bandwidth to calibrate against")
    key, today = _source_key(path, name=getattr(args, "name", None)), date.today().isoformat()
    fmt = getattr(args, "file_format", "auto")
    fmt = detect_format(path) if fmt == "auto" else fmt
    skipped, in_file = {}, None
    try:
        if fmt == "csv":
            rows = read_kernel_csv(path, device.id, key, args.precision, BYTES_PER_ELEMENT[args.precision])
        else:
            read = read_torch_trace if fmt == "torch" else read_nsight_kernels
            found = read(path, device.id, key, args.precision)
            rows, skipped, in_file = list(found.rows), found.skipped, found.kernels
            if not rows:
                why = "; ".join(f"{n} {reason}" for reason, n in found.skipped.items()) or "none"
                raise ValueError(f"{path}: no kernels to fit among {found.kernels} (left out: {why})")
        cal, results = fit_device(rows, device, args.precision, Fit(str(path), 0, date=today))
    except ValueError as exc:
        raise CliError(str(exc)) from None
    kinds = {"matrix": "gemm", "vector": "elementwise"}
    out = {"device": device.id, "precision": args.precision, "file": str(path), "format": fmt, "date": today,
           "source": key, "kernels_in_file": in_file, "measurements": len(rows), "skipped": skipped,
           "curves": {}, "saved": False}
    for kind, res in results.items():
        sel = [r for r in rows if r.kind == kinds[kind]]
        out["curves"][kind] = {
            "fraction": res.curve.fraction, "latency_s": res.curve.latency, "sharpness": res.curve.sharpness,
            "points": len(sel), "mape": res.mape, "at_bound": list(res.at_bound),
            "rows": [{"op": r.op, "batch": r.batch, "m": r.m, "n": r.n, "k": r.k, "bytes": r.bytes,
                      "measured": r.published or None, "measured_s": r.time_s, "predicted_s": float(p), "error": float(p / r.time_s - 1.0)}
                     for r, p in zip(sel, res.predicted)]}
    if args.save:
        sources = {**device.sources, key: Source(key, f"kernel times fitted by 'hwexplorer calibrate kernels' from "
                                                     f"{path.name}", path.resolve().as_uri(), today)}
        named = None
        if getattr(args, "name", None) is not None:  # also a named calibration of the device, for the app's chooser
            from ..core.session.named_calibrations import NamedCalibration, canonical

            named = NamedCalibration(args.name.strip(), canonical(cal), path.name, fmt, args.precision, today,
                                     len(rows), {k: round(float(r.mape), 4) for k, r in results.items()})
        _save(replace(device, calibration=cal, sources=sources), getattr(args, "db", None), named)
        out["saved"] = True
    if args.json:
        print_json(out)
    else:
        print_kernels(out)
    return 0


def _save(device, db_url, named=None) -> None:
    """Store the device's new calibration; with ``named`` (``--name``), also keep it as a named calibration of the
    device (``named_calibrations``: the app's Fidelity chooser lists it, ``catalog export`` carries it)."""
    from ..store.engine import open_catalog

    try:
        with open_catalog(db_url) as repo:
            version = repo.record(device.id).version
            repo.update(device, version)
            if named is not None:
                repo.save_calibration(device.id, named)
    except ValueError as exc:
        raise CliError(f"--save: {exc}") from None


def print_kernels(d: dict) -> None:
    print(f"{d['device']} at {d['precision']}, fitted to {d['file']} ({d['format']}, {d['date']})")
    if d["kernels_in_file"] is not None:
        print(f"  {d['kernels_in_file']} kernels in the trace -> {d['measurements']} measurements (repeats of one "
              "shape: their median time)")
    for reason, n in d["skipped"].items():
        print(f"  left out: {n} x {reason}")
    for kind, c in d["curves"].items():
        print(f"  {kind}: fraction {c['fraction']:.3f}, latency {c['latency_s'] * 1e6:.2f} us, sharpness "
              f"{c['sharpness']:.2f}; {c['points']} kernels, MAPE {c['mape'] * 100:.1f} %")
        for name in c["at_bound"]:
            print(f"  note: {kind} {name} ended on its bound: the data do not pin it down")
        rows = [[r["op"], f"{r['batch']}x{r['m']}x{r['n']}x{r['k']}" if r["m"] else _size(r["bytes"]),
                 f"{r['measured_s'] * 1e6:.2f}", f"{r['predicted_s'] * 1e6:.2f}", f"{r['error'] * 100:+.1f}"]
                for r in c["rows"]]
        print(text_table(["kernel", "shape", "measured (us)", "calibrated (us)", "error (%)"], rows))
    print("  saved in the catalog database" if d["saved"] else "  not saved (--save stores it in the catalog)")


# -------------------------------------------------------------------------------------------------- revert


def run_revert(args) -> int:
    """Give a shipped catalog device its shipped calibration back (and drop the fit-* sources saved with it), or a
    shipped system its shipped domains (dropping the fitted links). One transaction; a user device or system has no
    shipped version to go back to (exit 2, one line)."""
    from ..store.engine import open_catalog

    kind, ident = ("device", args.device) if args.device else ("system", args.system)
    try:
        with open_catalog(getattr(args, "db", None)) as repo:
            stored = repo.record(ident) if kind == "device" else repo.system_record(ident)
            main = "calibration" if kind == "device" else "domains"
            fields = [f for f in stored.overrides if f == main or f.startswith("sources.fit-")]
            if fields:
                revert = repo.revert if kind == "device" else repo.revert_system
                revert(ident, stored.version, fields)
    except (ValueError, KeyError) as exc:
        raise CliError(f"--{kind}: {exc.args[0] if isinstance(exc, KeyError) and exc.args else exc}") from None
    out = {kind: ident, "reverted": fields}
    if args.json:
        print_json(out)
    elif fields:
        print(f"{ident}: {', '.join(fields)} back to the shipped values")
    else:
        print(f"{ident}: no saved calibration to revert (its calibration is the shipped one)")
    return 0
