"""``hwexplorer report MODEL --device DEV ... --out report.pdf|.html|.csv``: the comparison report (docs/cli.md)."""

from __future__ import annotations

from .analyze_cmd import add_workload_args
from .common import CliError
from .plan_cmd import add_requirement_args, prepare


def add_parser(sub) -> None:
    p = sub.add_parser("report", help="write a comparison report (PDF, HTML or CSV)",
                       description="Summary table, the four panels as figures, the procurement plan, assumptions, "
                                   "data sources and method for MODEL on every DEV.")
    p.add_argument("model", metavar="MODEL", help="a template id (e.g. gpt2) or a model file (.json)")
    add_workload_args(p)
    add_requirement_args(p, target_required=False)
    p.add_argument("--out", "-o", required=True, metavar="FILE",
                   help="report.pdf, report.html or report.csv (CSV also writes FILE-layers.csv)")
    p.add_argument("--format", choices=("pdf", "html", "csv"), default=None,
                   help="the format when FILE's extension does not say it")
    p.add_argument("--title", default=None, help="the report's title (default: the model and device count)")
    p.set_defaults(func=run)


def run(args) -> int:
    from ..report import ReportError, build_report, check_writable, format_of, write_report

    try:
        fmt = format_of(args.out, args.format)
        check_writable(args.out)
    except ReportError as exc:
        raise CliError(str(exc)) from None
    analysis, req, costs = prepare(args)
    try:
        data = build_report(analysis, costs, req, title=args.title)
        written = write_report(data, args.out, fmt)
    except ReportError as exc:
        raise CliError(str(exc)) from None
    except ValueError as exc:
        raise CliError(str(exc)) from None
    for path in written:
        print(f"wrote {path}")
    return 0
