"""``hwexplorer``: the desktop app with no arguments, headless subcommands otherwise."""

from __future__ import annotations

import argparse
import sys

from . import __version__
from .cli.common import CliError


def build_parser() -> argparse.ArgumentParser:
    from .cli import analyze_cmd, catalog_cmd, plan_cmd, report_cmd, tiling_cmd

    parser = argparse.ArgumentParser(
        prog="hwexplorer",
        description="Hardware Explorer: roofline, energy, tiling and cost models of ML models on accelerators. "
        "Run without a command to open the desktop app.",
    )
    parser.add_argument("--version", action="version", version=f"hwexplorer {__version__}")
    parser.add_argument("--db", metavar="URL", help="catalog database URL (default: SQLite in the user data "
                        "folder; or $HWEXPLORER_DB), e.g. postgresql+psycopg://user@host/db")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in (analyze_cmd, tiling_cmd, catalog_cmd, plan_cmd, report_cmd):
        module.add_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        from .ui.app import run_app

        return run_app(db_url=args.db)
    try:
        return int(args.func(args) or 0)
    except CliError as exc:
        print(f"hwexplorer: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
