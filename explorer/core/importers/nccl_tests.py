"""nccl-tests (and rccl-tests) output: the text tables of ``all_reduce_perf``, ``all_gather_perf``,
``reduce_scatter_perf`` and ``alltoall_perf`` (``docs/calibration.md``, "Links").

One row per message size: ``size`` (B), ``count`` (elements), ``type``, ``redop``, ``root``, then twice (out of
place, in place) ``time`` (us), ``algbw`` and ``busbw`` (GB/s, decimal: 1e9 B/s) and ``#wrong``. Older versions
print no ``root`` column and ``error`` for ``#wrong``; the columns are read by the header's names, not by position.

``size`` is the buffer the nccl-tests convention times: for all-reduce the buffer each rank reduces, for
all-gather the gathered output, for reduce-scatter the input, for all-to-all what one rank sends in all. That is
the ``n`` of :mod:`explorer.core.parallel.collectives`, so ``algbw = size / time`` and ``busbw = algbw x`` the
share each link carries (2 (p - 1) / p for all-reduce, (p - 1) / p for the others).

The collective is read from the header (``# Collective test starting: all_gather_perf``), else from a
``<name>_perf`` anywhere in the text or in the file name, else from the reduction and the ratio busbw / algbw
(a reduction with a ratio >= 1 is an all-reduce, below 1 a reduce-scatter); all-gather and all-to-all (no
reduction, the same ratio) need one of the first three or the ``op`` option. The ranks are the ``# Rank N`` lines,
else the ``ranks`` option, else the ratio. Hostile input is refused with one line naming the file, the line and
the field (:class:`NcclTestsError`, a ``ValueError``).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from explorer.core.importers.registry import Imported

OPS = ("all_reduce", "all_gather", "reduce_scatter", "all_to_all")
#: the nccl-tests binaries' names -> the collective (``explorer.core.parallel.collectives`` names)
BINARIES = {"all_reduce": "all_reduce", "all_gather": "all_gather", "allgather": "all_gather",
            "reduce_scatter": "reduce_scatter", "alltoall": "all_to_all", "all_to_all": "all_to_all"}
_PERF = re.compile(r"(?<![A-Za-z0-9])(all_reduce|all_gather|allgather|reduce_scatter|alltoall|all_to_all)_perf")
_LABEL = re.compile(r"^\s*(?:\[\d+\]\s*|\d+:\s+)")  # mpirun --tag-output "[0]" or srun -l "0: " prefixes
_RANK = re.compile(r"^#\s*Rank\s+(\d+)\b")
SNIFF_BYTES = 64 * 1024
MAX_BYTES = 64 * 1024 * 1024
GB = 1e9  # nccl-tests prints decimal GB/s


class NcclTestsError(ValueError):
    """A file that is not a readable nccl-tests table; the message names the file, the line and the field."""


@dataclass(frozen=True, eq=False)
class CollectiveTable:
    """One nccl-tests run: the collective, the ranks and per row (arrays in file order, sizes > 0 only):
    ``size`` (B), ``time`` (s, out of place), ``algbw`` and ``busbw`` (B/s, as printed), and the in-place
    ``time_in_place`` (s, NaN where not printed)."""

    op: str
    ranks: int
    dtype: str
    size: np.ndarray
    time: np.ndarray
    algbw: np.ndarray
    busbw: np.ndarray
    time_in_place: np.ndarray
    source: str = ""

    @property
    def bus_factor(self) -> float:
        """busbw / algbw of this op on these ranks (2 (p - 1) / p for all-reduce, (p - 1) / p otherwise)."""
        p = self.ranks
        return 2.0 * (p - 1) / p if self.op == "all_reduce" else (p - 1) / p


def sniff_nccl_tests(path: Path) -> bool:
    """A text whose head holds a table header naming ``size``, ``time``, ``algbw`` and ``busbw``."""
    with Path(path).open("rb") as fh:
        head = fh.read(SNIFF_BYTES).decode("utf-8", errors="ignore")
    return any(_header_tokens(line) is not None for line in head.splitlines())


def _header_tokens(line: str) -> list[str] | None:
    text = _LABEL.sub("", line).strip()
    if not text.startswith("#"):
        return None
    tokens = text.lstrip("#").split()
    if tokens[:1] == ["size"] and "algbw" in tokens and "busbw" in tokens and "time" in tokens:
        return tokens
    return None


def _number(text: str, field: str, where: str, integer: bool = False) -> float:
    try:
        value = int(text) if integer else float(text)
    except ValueError:
        raise NcclTestsError(f"{where}: {field}: expected a number, got {text!r}") from None
    if not math.isfinite(value) or value < 0:
        raise NcclTestsError(f"{where}: {field}: expected a finite number >= 0, got {text!r}")
    return float(value)


def read_nccl_tests(path: str | Path, op: str | None = None, ranks: int | None = None) -> tuple[
        CollectiveTable, tuple[str, ...]]:
    """The table of ``path`` and what had to be assumed (warnings). ``op`` and ``ranks`` override what the
    file says (an ``op`` that contradicts the file's ``busbw / algbw`` is refused)."""
    path = Path(path)
    if op is not None:
        op = BINARIES.get(str(op).replace("-", "_").lower().removesuffix("_perf"))
        if op is None:
            raise NcclTestsError(f"{path}: op: expected one of {', '.join(OPS)}")
    if ranks is not None and (isinstance(ranks, bool) or not isinstance(ranks, int) or ranks < 2):
        raise NcclTestsError(f"{path}: ranks: expected a whole number >= 2, got {ranks!r}")
    try:
        if path.stat().st_size > MAX_BYTES:
            raise NcclTestsError(f"{path}: larger than {MAX_BYTES // 2**20} MiB; not an nccl-tests output")
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError:
        raise NcclTestsError(f"{path}: not UTF-8 text") from None
    except OSError as exc:
        raise NcclTestsError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    warnings: list[str] = []
    header = None
    rank_ids: set[int] = set()
    rows: list[tuple[float, ...]] = []
    dtypes, redops = set(), set()
    wrong = 0
    for number, raw in enumerate(text.splitlines(), start=1):
        line = _LABEL.sub("", raw).strip()
        where = f"{path}: line {number}"
        if not line:
            continue
        if line.startswith("#"):
            m = _RANK.match(line)
            if m:
                rank_ids.add(int(m.group(1)))
            tokens = _header_tokens(line)
            if tokens is not None:
                if header is not None and tokens != header:
                    raise NcclTestsError(f"{where}: a second table with other columns; give one run per file")
                header = tokens
            continue
        if header is None or not line[:1].isdigit():
            continue  # text before the table (commands, NCCL INFO logs) or after it
        cells = line.split()
        if len(cells) != len(header):
            raise NcclTestsError(f"{where}: expected {len(header)} columns ({' '.join(header)}), got {len(cells)}")
        cell = dict()
        times = [i for i, h in enumerate(header) if h == "time"]
        size = _number(cells[0], "size", where, integer=True)
        if size == 0:
            continue  # a zero-byte call times the launch only; it carries no bandwidth
        t = _number(cells[times[0]], "time", where)
        if t <= 0:
            raise NcclTestsError(f"{where}: time: expected a positive time in us, got {cells[times[0]]!r}")
        algbw = _number(cells[times[0] + 1], "algbw", where)
        busbw = _number(cells[times[0] + 2], "busbw", where)
        t_in = math.nan
        if len(times) > 1:
            t_in = _number(cells[times[1]], "time (in place)", where) or math.nan
        for name in ("#wrong", "error"):
            if name in header:
                cell[name] = cells[header.index(name)]
        if cell.get("#wrong", "0") not in ("0", "N/A"):
            wrong += 1
        if "type" in header:
            dtypes.add(cells[header.index("type")])
        if "redop" in header:
            redops.add(cells[header.index("redop")])
        rows.append((size, t * 1e-6, algbw * GB, busbw * GB, t_in * 1e-6))
    if header is None:
        raise NcclTestsError(f"{path}: no nccl-tests table (a '#  size  count  type ... time  algbw  busbw' "
                             "header line) found")
    if len(rows) < 3:
        raise NcclTestsError(f"{path}: size: a fit needs at least 3 rows with a size > 0, got {len(rows)}")
    if wrong:
        warnings.append(f"{wrong} rows report wrong results (#wrong > 0): their times are kept")
    data = np.array(rows, dtype=float)
    size, time, algbw, busbw, t_in = data.T
    order = np.argsort(size, kind="stable")
    size, time, algbw, busbw, t_in = size[order], time[order], algbw[order], busbw[order], t_in[order]
    # the printed ratio busbw / algbw, from the rows printed with 3 significant digits or more
    good = algbw >= 1.0 * GB
    ratio = float(np.median(busbw[good] / algbw[good])) if good.any() else math.nan
    found = _op_from_text(text) or _op_from_text(path.name)
    if op is None:
        op = found or _op_from_ratio(redops, ratio, path)
    p = ranks or (max(rank_ids) + 1 if rank_ids else None)
    if p is None:
        p = _ranks_from_ratio(op, ratio)
        if p is None:
            raise NcclTestsError(f"{path}: ranks: no '# Rank N' lines and no busbw / algbw to tell them; "
                                 "give the ranks")
        warnings.append(f"ranks: {p}, told from busbw / algbw = {ratio:.3f} (no '# Rank N' lines)")
    if p < 2:
        raise NcclTestsError(f"{path}: ranks: a collective needs 2 ranks or more, the file lists {p}")
    table = CollectiveTable(op, int(p), "/".join(sorted(dtypes)) or "unknown", size, time, algbw, busbw, t_in,
                            str(path))
    if math.isfinite(ratio) and abs(ratio / table.bus_factor - 1.0) > 0.02:
        raise NcclTestsError(f"{path}: op: busbw / algbw is {ratio:.3f} in the file, but {op} on {p} ranks "
                             f"gives {table.bus_factor:.3f}; check the collective and the ranks")
    return table, tuple(warnings)


def _op_from_text(text: str) -> str | None:
    m = _PERF.search(text)
    return BINARIES[m.group(1)] if m else None


def _op_from_ratio(redops: set[str], ratio: float, path: Path) -> str:
    if redops and redops != {"none"} and math.isfinite(ratio):
        return "all_reduce" if ratio >= 1.0 else "reduce_scatter"
    raise NcclTestsError(f"{path}: op: the file does not say which collective it timed (no '<name>_perf'); "
                         f"give it (one of {', '.join(OPS)})")


def _ranks_from_ratio(op: str, ratio: float) -> int | None:
    if not math.isfinite(ratio):
        return None
    share = ratio / 2.0 if op == "all_reduce" else ratio  # (p - 1) / p
    if not 0.0 < share < 1.0:
        return None
    p = round(1.0 / (1.0 - share))
    return p if p >= 2 else None


def load_nccl_tests(path: Path, op: str | None = None, ranks: int | None = None) -> Imported:
    table, warnings = read_nccl_tests(path, op=op, ranks=ranks)
    return Imported("collectives", table, warnings=warnings,
                    details={"op": table.op, "ranks": table.ranks, "rows": int(table.size.size)})
