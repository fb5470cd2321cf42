"""``hwexplorer``: the desktop app with no arguments, headless subcommands otherwise."""

from __future__ import annotations

import argparse
import sys

from . import __version__
from .cli.common import CliError
from .core.session.project import SUFFIX as PROJECT_SUFFIX


class OneLineParser(argparse.ArgumentParser):
    """Bad options are bad input like any other: one line and exit 2, not the usage text (``--help`` shows it)."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    from .cli import (
        analyze_cmd,
        calibrate_cmd,
        catalog_cmd,
        plan_cmd,
        report_cmd,
        serve_cmd,
        sweep_cmd,
        tiling_cmd,
        train_cmd,
    )

    parser = OneLineParser(
        prog="hwexplorer",
        description="Hardware Explorer: roofline, energy, tiling and cost models of ML models on accelerators. "
        "Run without a command to open the desktop app; with a project file (hwexplorer study.hwproj) to open "
        "it there.",
    )
    parser.add_argument("--version", action="version", version=f"hwexplorer {__version__}")
    parser.add_argument("--db", metavar="URL", help="catalog database URL (default: SQLite in the user data "
                        "folder; or $HWEXPLORER_DB), e.g. postgresql+psycopg://user@host/db")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in (analyze_cmd, tiling_cmd, catalog_cmd, plan_cmd, report_cmd, train_cmd, calibrate_cmd, serve_cmd,
                   sweep_cmd):
        module.add_parser(sub)
    parser.commands = tuple(sub.choices)  # the subcommands' names (a project path is none of them)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    project = None
    if argv and argv[-1].lower().endswith(PROJECT_SUFFIX) and not argv[-1].startswith("-") and not any(
            a in parser.commands for a in argv):
        project = argv.pop()  # hwexplorer study.hwproj: the app, with that project open
    args = parser.parse_args(argv)
    if args.command is None:
        from .ui.app import run_app

        return run_app(db_url=args.db, project=project)
    try:
        return int(args.func(args) or 0)
    except CliError as exc:
        print(f"hwexplorer: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
