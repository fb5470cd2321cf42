"""The command line loads only the chosen command's module: ``hwexplorer --help`` lists every command from
explorer/__main__.py's table (the same help text as with every module loaded), and ``hwexplorer serve ...``
imports the serve command and what it needs, not the report's or the sweep's."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from explorer.__main__ import COMMANDS, PROJECT_SUFFIX, build_parser, chosen_command
from explorer.core.session.project import SUFFIX

ROOT = Path(__file__).resolve().parents[2]


def _subparsers(parser):
    return next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")


def test_the_table_says_what_each_module_registers():
    full = _subparsers(build_parser())  # every module loaded
    assert [(a.dest, a.help) for a in full._choices_actions] == [(n, h) for n, _, h in COMMANDS]
    assert build_parser(None).format_help() == build_parser().format_help()  # --help: word for word
    assert build_parser(None).commands == build_parser().commands == tuple(n for n, _, _ in COMMANDS)
    assert PROJECT_SUFFIX == SUFFIX


@pytest.mark.parametrize("argv, name", [
    (["--help"], None), ([], None), (["study.hwproj"], None), (["serve", "--help"], "serve"),
    (["--db", "sqlite://", "plan", "--rate", "3"], "plan"), (["--db", "plan", "catalog", "list"], "catalog"),
    (["bogus", "analyze"], None),
])
def test_the_chosen_command(argv, name):
    assert chosen_command(argv) == name


def _modules_after(argv: list[str]) -> set[str]:
    code = (f"import sys\nfrom explorer.__main__ import main\ntry:\n    main({argv!r})\nexcept SystemExit:\n"
            "    pass\nprint(' '.join(sorted(sys.modules)), file=sys.stderr)")
    out = subprocess.run([sys.executable, "-c", code], check=False, capture_output=True, text=True, cwd=ROOT,
                         env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}, timeout=120)
    return set(out.stderr.split())


def test_help_imports_no_command_numpy_or_pint():
    mods = _modules_after(["--help"])
    assert "explorer.__main__" in mods
    assert not {m for m in mods if m.startswith("explorer.cli")}
    assert not mods & {"numpy", "pint", "explorer.core.session.project"}


def test_a_command_imports_its_own_module_only():
    mods = _modules_after(["serve", "--help"])
    commands = {f"explorer.cli.{module}" for _, module, _ in COMMANDS} & mods
    assert commands == {"explorer.cli.serve_cmd"}  # its helpers (system_cmd's --system arguments) are no command
    assert "reportlab" not in mods and "explorer.report" not in mods
