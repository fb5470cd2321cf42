"""``hwexplorer report MODEL --device DEV ... --out report.pdf|.html|.csv``: the comparison report (docs/cli.md)."""

from __future__ import annotations

from pathlib import Path

from .analyze_cmd import add_workload_args
from .common import CliError
from .plan_cmd import add_requirement_args, prepare
from .report_serving import add_args as add_serving_args
from .report_serving import choice_from_args, section_from_args
from .report_training import add_training_args, training_section


def add_parser(sub) -> None:
    p = sub.add_parser("report", help="write a comparison report (PDF, HTML or CSV)",
                       description="Summary table, the four panels as figures, the procurement plan, assumptions, "
                                   "data sources and method for MODEL on every DEV.")
    p.add_argument("model", metavar="MODEL", help="a template id (e.g. gpt2) or a model file (.json)")
    add_workload_args(p)
    p.add_argument("--system", action="append", metavar="SYS",
                   help="add a Systems section: the model on this system (id or file; repeatable), its best layout "
                        "and communication breakdown, and with --target the fleet sized on it; without --device the "
                        "systems' devices are compared")
    add_training_args(p)
    add_requirement_args(p, target_required=False)
    add_serving_args(p)
    p.add_argument("--out", "-o", required=True, metavar="FILE",
                   help="report.pdf, report.html, report.csv (CSV also writes FILE-layers.csv, and FILE-systems.csv "
                        "and FILE-training.csv with those sections) or report.xlsx")
    p.add_argument("--format", choices=("pdf", "html", "csv", "xlsx"), default=None,
                   help="the format when FILE's extension does not say it")
    p.add_argument("--xlsx", action="store_true",
                   help="also write an XLSX workbook (one sheet per table) beside FILE, as FILE with the suffix "
                        ".xlsx (a FILE.xlsx is that workbook alone)")
    p.add_argument("--title", default=None, help="the report's title (default: the model and device count)")
    p.set_defaults(func=run)


def run(args) -> int:
    from ..report import ReportError, build_report, check_writable, format_of, write_report

    try:
        fmt = format_of(args.out, args.format)
        xlsx = Path(args.out).with_suffix(".xlsx") if args.xlsx and fmt != "xlsx" else None
        if xlsx is not None:
            check_writable(xlsx)
        check_writable(args.out)
    except ReportError as exc:
        raise CliError(str(exc)) from None
    choice_from_args(args)  # bad serving options: refused before any work
    systems = []
    if args.system:
        from .system_cmd import project_system

        systems = [project_system(args.model, spec, 1, None) for spec in dict.fromkeys(args.system)]
    trained = []
    if args.train:
        from .system_cmd import project_system

        trained = [project_system(args.model, spec, 1, None) for spec in dict.fromkeys(args.train)]
    if not args.device and (systems or trained):
        args.device = list(dict.fromkeys(s.device_id for s in (*systems, *trained)))
    analysis, req, costs = prepare(args)
    section = _systems_section(systems, analysis, req, args.time_model, args.model) if systems else None
    training = training_section(trained, analysis, costs, _devices_of(trained, analysis, args.model), args) if trained else None
    serving = section_from_args(args, analysis)
    try:
        data = build_report(analysis, costs, req, title=args.title, time_model=args.time_model,
                            **({"systems": section} if section else {}),
                            **({"training": training} if training else {}),
                            **({"serving": serving} if serving else {}))
        written = write_report(data, args.out, fmt)
        if xlsx is not None:
            written += write_report(data, xlsx, "xlsx")
    except ReportError as exc:
        raise CliError(str(exc)) from None
    except ValueError as exc:
        raise CliError(str(exc)) from None
    for path in written:
        print(f"wrote {path}")
    return 0


def _devices_of(systems, analysis, model_arg: str = "") -> dict:
    """The devices of ``systems`` by id: those of the analysis, the others from the catalog."""
    from .resolve import project_devices

    devices = {d.id: d for d in analysis.devices.devices}
    missing = sorted({s.device_id for s in systems} - set(devices))
    devices.update({d.id: d for d in project_devices(model_arg, missing, None)} if missing else {})
    return devices


def _systems_section(systems, analysis, req, time_model: str = "ideal", model_arg: str = ""):
    from ..core.parallel.compare import size_on_systems
    from ..core.parallel.sizing import size_fleet
    from ..core.parallel.system_pass import Options
    from ..report.systems_section import build_section
    from .resolve import project_devices

    devices = {d.id: d for d in analysis.devices.devices}
    missing = sorted({s.device_id for s in systems} - set(devices))
    devices.update({d.id: d for d in project_devices(model_arg, missing, None)} if missing else {})
    results = size_on_systems(analysis.model, [(s, devices[s.device_id]) for s in systems], analysis.precision,
                              analysis.ctx, analysis.devices.formats, options=Options(time_model=time_model))
    plans = size_fleet(results, req.target, req.latency, req.price) if req.target is not None else ()
    return build_section(results, plans)
