"""A sweep's points to and from a file: CSV (always) or Parquet (with the optional ``pyarrow``, extra ``[sweep]``).

CSV: one header line of the column names of :data:`.run.COLUMNS` (each name ends in its unit: ``_s``,
``_tok_s``, ``_usd``, ``_j``, ``_bytes``), one line per point; an unknown number is an empty cell, ``fits`` and
``pareto`` are ``true``/``false``. Written as a stream to a temporary file beside the target, then renamed over
it (a failed or interrupted write leaves the previous file intact).
"""

from __future__ import annotations

import csv
import math
import os
import tempfile
from collections.abc import Callable
from pathlib import Path

import numpy as np

from explorer.core.files import spreadsheet_safe, spreadsheet_unsafe

from . import serving_columns as serving
from .run import COLUMNS, NAMES, NAMES_V1, SweepResult

SUFFIXES = (".csv", ".parquet")
TEXT = {"device", "layout", "precision", "phase", "cost_source", "time_source"} | serving.TEXT
INTS = {"batch", "seq_len"} | serving.INTS
BOOLS = {"fits", "pareto"} | serving.BOOLS
HEADERS = (NAMES, serving.NAMES, NAMES_V1)  # roofline points, served configurations, roofline points before
# time_source (read with time_source 'spec': that version ran the ideal model only)
CHUNK = 4096  # points per write (and per progress report)


class OutputError(ValueError):
    """The output cannot be written (its suffix, its folder, a missing optional library)."""


def check_output(path: str | Path) -> str:
    """The format of ``path`` ("csv" or "parquet"), or OutputError naming what is wrong."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in SUFFIXES:
        raise OutputError(f"cannot write {suffix or 'a file without a suffix'}: expected {' or '.join(SUFFIXES)}")
    if not path.parent.is_dir():
        raise OutputError(f"no such folder: {path.parent}")
    if suffix == ".parquet":
        try:
            import pyarrow  # noqa: F401
        except ImportError:
            raise OutputError("writing .parquet needs pyarrow (pip install 'hwexplorer[sweep]'), or use .csv") from None
    return suffix[1:]


def _cells(name: str, values: np.ndarray) -> list[str]:
    """One column of a chunk as CSV cells (floats in their shortest round-trip form, unknown empty)."""
    if name in BOOLS:
        return ["true" if v else "false" for v in values.tolist()]
    if name in TEXT:
        return [spreadsheet_safe(str(v)) for v in values.tolist()]
    if name in INTS:
        return [str(v) for v in values.astype(int).tolist()]
    return [repr(v) if math.isfinite(v) else "" for v in values.astype(float).tolist()]


def write(result: SweepResult, path: str | Path, progress: Callable[[int, int], None] | None = None) -> None:
    """Write every point of ``result`` to ``path`` (.csv or .parquet), atomically; ``progress(done, total)``
    after each chunk. A serving sweep's result (``result.names``: :data:`.serving_columns.NAMES`) writes its own
    columns."""
    names = getattr(result, "names", NAMES)
    fmt = check_output(path)
    path = Path(path)
    total = len(result)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        if fmt == "parquet":
            os.close(fd)
            _write_parquet(result, names, tmp, progress)
        else:
            with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
                writer = csv.writer(f, lineterminator="\n")
                writer.writerow(names)
                for start in range(0, total, CHUNK):
                    writer.writerows(zip(*(_cells(n, result.columns[n][start:start + CHUNK]) for n in names)))
                    if progress:
                        progress(min(start + CHUNK, total), total)
                f.flush()
                os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


PARQUET_ROWS = 131_072  # points per Parquet row group (and per progress report)


def _write_parquet(result: SweepResult, names: tuple[str, ...], tmp: str, progress) -> None:
    """Stream the points to ``tmp`` one row group at a time (memory: one group's columns, not the whole file)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    total = len(result)
    schema = pa.schema([(n, pa.string() if n in TEXT else pa.bool_() if n in BOOLS else pa.int64() if n in INTS
                         else pa.float64()) for n in names])
    with pq.ParquetWriter(tmp, schema) as writer:
        for start in range(0, max(total, 1), PARQUET_ROWS):
            stop = min(start + PARQUET_ROWS, total)
            arrays = [pa.array(result.columns[n][start:stop].tolist() if n in TEXT else
                               np.asarray(result.columns[n][start:stop]), type=schema.field(n).type) for n in names]
            writer.write_table(pa.Table.from_arrays(arrays, schema=schema))
            if progress:
                progress(stop, total)
    with open(tmp, "rb+") as f:
        os.fsync(f.fileno())


def read(path: str | Path) -> dict[str, np.ndarray]:
    """The columns of a sweep file written by :func:`write` (text as object arrays, NaN where empty): a roofline
    sweep's or a serving sweep's, told apart by the header."""
    path = Path(path)
    if path.suffix.lower() == ".parquet":
        import pyarrow.parquet as pq

        table = pq.read_table(path)
        names = tuple(table.column_names)
        if names not in HEADERS:
            raise ValueError(f"{path}: columns: expected {', '.join(NAMES)} (or a serving sweep's)")
        return _upgraded({n: np.array(table.column(n).to_pylist(), dtype=object if n in TEXT else None)
                          for n in names})
    with open(path, encoding="utf-8", newline="") as f:
        rows = list(csv.reader(f))
    header, body = tuple(rows[0]) if rows else (), rows[1:]
    if header not in HEADERS:
        raise ValueError(f"{path}: header: expected {', '.join(NAMES)} (or a serving sweep's)")
    out = {}
    for k, name in enumerate(header):
        cells = [r[k] for r in body]
        if name in TEXT:  # the apostrophe the writer put before formula-like text comes off
            out[name] = np.array([spreadsheet_unsafe(c) for c in cells], dtype=object)
        elif name in BOOLS:
            out[name] = np.array([c == "true" for c in cells], dtype=bool)
        elif name in INTS:
            out[name] = np.array([int(c) for c in cells], dtype=int)
        else:
            out[name] = np.array([float(c) if c else math.nan for c in cells], dtype=float)
    return _upgraded(out)


def _upgraded(columns: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """A roofline sweep file written before ``time_source`` existed, with it ('spec' on every row), in today's
    column order; other files as they are."""
    if tuple(columns) != NAMES_V1:
        return columns
    n = len(columns["device"])
    return {name: columns[name] if name != "time_source" else np.array(["spec"] * n, dtype=object) for name in NAMES}


def units_header() -> str:
    """One line: each column with its unit (for --help and docs)."""
    return ", ".join(f"{n} [{u}]" if u else n for n, u, _ in COLUMNS)
