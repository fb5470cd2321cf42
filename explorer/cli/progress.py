"""A one-line progress bar on stderr for long CLI runs (``serve --simulate``): drawn only when stderr is a terminal,
redrawn in place with a carriage return, erased when the run ends, so piped or redirected output (and any JSON on
stdout) never carries it."""

from __future__ import annotations

import sys
import time
from typing import Self, TextIO

WIDTH = 30  # characters of the bar itself


class ProgressBar:
    """``bar(share)`` draws ``label [#####.....]  45% 900/2,000 requests 0.4 s``; ``bar.close()`` erases it.
    Inactive (draws nothing) when ``stream`` is not a terminal or ``enabled`` is false; returns None so that a
    simulation's progress callback never asks it to stop."""

    def __init__(self, label: str, total: int, unit: str = "requests", stream: TextIO | None = None,
                 enabled: bool = True):
        self.stream = stream if stream is not None else sys.stderr
        isatty = getattr(self.stream, "isatty", None)
        self.active = bool(enabled and callable(isatty) and isatty())
        self.label, self.total, self.unit = label, total, unit
        self.start = time.perf_counter()
        self.width = 0

    def line(self, share: float) -> str:
        share = min(max(float(share), 0.0), 1.0)
        filled = round(share * WIDTH)
        done = round(share * self.total)
        return (f"{self.label} [{'#' * filled}{'.' * (WIDTH - filled)}] {100 * share:3.0f}% {done:,}/{self.total:,} "
                f"{self.unit} {time.perf_counter() - self.start:.1f} s")

    def __call__(self, share: float) -> None:
        if not self.active:
            return
        text = self.line(share)
        self.stream.write("\r" + text.ljust(self.width))
        self.stream.flush()
        self.width = max(self.width, len(text))

    def close(self) -> None:
        """Erase the bar (the line is left empty for what follows)."""
        if self.active and self.width:
            self.stream.write("\r" + " " * self.width + "\r")
            self.stream.flush()
        self.width = 0

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
