"""``serve --simulate`` shows a progress bar on stderr (issue 19): drawn in place only when stderr is a terminal,
erased at the end, never with --json, never on stdout; the bar's own line by hand."""

from __future__ import annotations

import io
import json

import pytest

from explorer.__main__ import main
from explorer.cli.progress import WIDTH, ProgressBar

ARGS = ["serve", "llama3-8b", "-d", "nvidia-h100-sxm5", "--rate", "5/s", "--input", "256", "--output", "64",
        "--simulate", "--requests", "400"]


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_the_bar_by_hand():
    bar = ProgressBar("simulating", 2000, stream=Tty())
    line = bar.line(0.45)
    assert line.startswith("simulating [" + "#" * round(0.45 * WIDTH) + "." * (WIDTH - round(0.45 * WIDTH)) + "]")
    assert " 45% 900/2,000 requests " in line and line.endswith(" s")
    assert bar.line(2.0).count("#") == WIDTH and "2,000/2,000" in bar.line(2.0)  # clamped to the whole run


def test_inactive_off_a_terminal():
    out = io.StringIO()
    bar = ProgressBar("simulating", 10, stream=out)
    bar(0.5)
    bar.close()
    assert not bar.active and out.getvalue() == ""


def test_serve_draws_on_a_terminal_and_erases_it(monkeypatch, capsys):
    plain = main(ARGS)
    expected = capsys.readouterr().out
    tty = Tty()
    monkeypatch.setattr("sys.stderr", tty)
    assert plain == 0 and main(ARGS) == 0
    err = tty.getvalue()
    frames = err.split("\r")
    drawn = [f for f in frames if f.startswith("simulating [")]
    assert len(drawn) > 10 and "100% 400/400 requests" in drawn[-1]
    assert frames[-1] == "" and frames[-2].strip() == ""  # the last write blanks the line and returns
    assert capsys.readouterr().out == expected  # stdout is the same with and without the bar


@pytest.mark.parametrize("extra", [["--json"], []])
def test_never_with_json_nor_off_a_terminal(monkeypatch, capsys, extra):
    if extra:
        monkeypatch.setattr("sys.stderr", Tty())
    assert main([*ARGS, *extra]) == 0
    cap = capsys.readouterr()
    import sys

    err = sys.stderr.getvalue() if extra else cap.err
    assert err == ""
    if extra:
        assert json.loads(cap.out)["simulation"]["requests"] == 400
