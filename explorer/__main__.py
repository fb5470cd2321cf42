"""``hwexplorer``: the desktop app with no arguments, headless subcommands otherwise."""

from __future__ import annotations

import argparse
import sys
from importlib import import_module

PROJECT_SUFFIX = ".hwproj"  # = explorer.core.session.project.SUFFIX, not imported: --help stays light (tested)

#: The subcommands in their order: (name, module under explorer.cli, the help line the module's ``add_parser`` gives).
#: Only the chosen command's module is imported (``--help`` lists them from here); a test checks that each help line
#: is the module's own.
COMMANDS = (
    ("analyze", "analyze_cmd", "analyze a model on one or more devices"),
    ("tiling", "tiling_cmd", "map one GEMM onto a systolic array"),
    ("catalog", "catalog_cmd", "list, show, import, export and validate accelerator devices"),
    ("plan", "plan_cmd", "size and cost a deployment: checks, units, TCO, buy vs rent, ranking"),
    ("report", "report_cmd", "write a comparison report (PDF, HTML or CSV)"),
    ("train", "train_cmd", "time, memory, MFU and cost of training a model on a system"),
    ("calibrate", "calibrate_cmd", "fit a link or a device to your own measurements"),
    ("serve", "serve_cmd", "serving under load: latency percentiles, throughput and goodput"),
    ("sweep", "sweep_cmd", ("a design-space sweep: batch x sequence length x phase x precision x device, or "
                           "served rates")),
)
NAMES = tuple(c[0] for c in COMMANDS)


class VersionAction(argparse.Action):
    """``--version``: the package's version, read when asked for (``importlib.metadata`` costs start-up time)."""

    def __init__(self, option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS,
                 help="show program's version number and exit"):
        super().__init__(option_strings, dest=dest, default=default, nargs=0, help=help)

    def __call__(self, parser, namespace, values, option_string=None):
        from . import __version__

        print(f"hwexplorer {__version__}")
        parser.exit()


class OneLineParser(argparse.ArgumentParser):
    """Bad options are bad input like any other: one line and exit 2, not the usage text (``--help`` shows it)."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message}\n")


def chosen_command(argv: list[str]) -> str | None:
    """The subcommand named in ``argv`` (the first word that is one, after the global options), or None."""
    skip = False
    for a in argv:
        if skip:
            skip = False
        elif a == "--db":
            skip = True  # its value
        elif a.startswith("-"):
            continue
        else:
            return a if a in NAMES else None
    return None


def build_parser(load: str | tuple[str, ...] | None = NAMES) -> argparse.ArgumentParser:
    """The command line. ``load``: the command(s) whose module is imported and whose full parser is built (default
    all of them); the others are listed by name and help line only (what ``--help`` prints)."""
    loaded = (load,) if isinstance(load, str) else tuple(load or ())
    parser = OneLineParser(
        prog="hwexplorer",
        description="Hardware Explorer: roofline, energy, tiling and cost models of ML models on accelerators. "
        "Run without a command to open the desktop app; with a project file (hwexplorer study.hwproj) to open "
        "it there.",
    )
    parser.add_argument("--version", action=VersionAction)
    parser.add_argument("--db", metavar="URL", help="catalog database URL (default: SQLite in the user data "
                        "folder; or $HWEXPLORER_DB), e.g. postgresql+psycopg://user@host/db")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, module, help_line in COMMANDS:
        if name in loaded:
            import_module(f"explorer.cli.{module}").add_parser(sub)
        else:
            sub.add_parser(name, help=help_line)
    parser.commands = tuple(sub.choices)  # the subcommands' names (a project path is none of them)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(chosen_command(argv))  # only the chosen command's module is imported
    project = None
    if argv and argv[-1].lower().endswith(PROJECT_SUFFIX) and not argv[-1].startswith("-") and not any(
            a in parser.commands for a in argv):
        project = argv.pop()  # hwexplorer study.hwproj: the app, with that project open
    args = parser.parse_args(argv)
    if args.command is None:
        from .ui.app import run_app

        return run_app(db_url=args.db, project=project)
    from .cli.common import CliError  # the command's module has imported it already

    try:
        return int(args.func(args) or 0)
    except CliError as exc:
        print(f"hwexplorer: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
