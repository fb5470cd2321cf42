"""Measured kernel times in a CSV file (``catalog/measurements/kernels.csv``; columns in its README).

Each row is one measured kernel on one device: ``kind`` gemm (``batch`` x ``m`` x ``n`` x ``k``) or elementwise
(``bytes`` moved), its ``flops`` and ``bytes`` (each tensor once), the published figure as written
(``published``), the time in seconds it implies (``time_s``), and the ``split`` the calibration uses:
``calibration`` (fitted), ``held_out`` (never fitted; the error is measured on it) or ``excluded`` (kept for the
record, outside what the model describes).
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

KINDS = ("gemm", "elementwise")
SPLITS = ("calibration", "held_out", "excluded")
COLUMNS = ("device", "source", "kind", "op", "dtype", "batch", "m", "n", "k", "size_bytes", "flops", "bytes",
           "published", "time_s", "split")


@dataclass(frozen=True)
class Measurement:
    device: str
    source: str
    kind: str
    op: str
    dtype: str
    batch: int
    m: int
    n: int
    k: int
    flops: float
    bytes: float
    published: str
    time_s: float
    split: str


def read_measurements(path: str | Path) -> list[Measurement]:
    """All rows of a measurement CSV, checked; a problem names the file and line."""
    path = Path(path)
    out = []
    with path.open(newline="", encoding="utf-8") as fh:
        reader = csv.DictReader(fh)
        missing = [c for c in COLUMNS if c not in (reader.fieldnames or ())]
        if missing:
            raise ValueError(f"{path}: missing columns {', '.join(missing)}")
        for line, row in enumerate(reader, start=2):
            try:
                out.append(_row(row))
            except (TypeError, ValueError) as exc:
                raise ValueError(f"{path}: line {line}: {exc}") from None
    return out


def _int(text: str) -> int:
    return int(text) if text else 0


def _row(row: dict) -> Measurement:
    if row["kind"] not in KINDS:
        raise ValueError(f"kind: expected one of {', '.join(KINDS)}, got {row['kind']!r}")
    if row["split"] not in SPLITS:
        raise ValueError(f"split: expected one of {', '.join(SPLITS)}, got {row['split']!r}")
    time_s = float(row["time_s"])
    if not time_s > 0:
        raise ValueError(f"time_s: expected a positive time, got {row['time_s']!r}")
    return Measurement(row["device"], row["source"], row["kind"], row["op"], row["dtype"], _int(row["batch"]) or 1,
                       _int(row["m"]), _int(row["n"]), _int(row["k"]), float(row["flops"]), float(row["bytes"]),
                       row["published"], time_s, row["split"])


def select(rows: list[Measurement], device: str | None = None, kind: str | None = None,
           split: str | None = None) -> list[Measurement]:
    return [r for r in rows if (device is None or r.device == device) and (kind is None or r.kind == kind)
            and (split is None or r.split == split)]
