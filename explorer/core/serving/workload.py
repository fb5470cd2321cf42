"""A serving workload: how requests arrive, how long their prompts and answers are, and the service levels.

* arrivals: ``poisson`` (exponential gaps of mean 1/rate) or ``constant`` (one every 1/rate seconds);
* lengths: ``fixed`` (input, output), ``uniform`` (each in [low, high], whole tokens) or a ``histogram`` of
  (input, output) pairs read from a CSV and drawn with replacement;
* or a replayed trace (CSV or JSONL of arrival time, input tokens, output tokens per request), as serving engines'
  benchmark tools record them; arrivals are then the trace's own.

Every reader refuses a bad row with one line naming the file, the row and the field (:class:`WorkloadError`).
Times are seconds, lengths tokens.
"""

from __future__ import annotations

import csv
import json
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

ARRIVALS = ("poisson", "constant")
PERCENTILES = {"p50": 50.0, "p90": 90.0, "p99": 99.0}
#: the column names a trace or histogram may use for each field (vLLM's and SGLang's benchmark outputs included)
_ALIASES = {
    "arrival": ("arrival_time", "arrival", "timestamp", "time", "arrival_s"),
    "input": ("input_tokens", "input_len", "prompt_len", "prompt_tokens", "input", "input_length"),
    "output": ("output_tokens", "output_len", "completion_tokens", "output", "output_length"),
}


#: the most tokens one request may have (input, output or prefix): a thousand times the longest context of today's
#: models (10^6); a length read from a file above it (1e40 once crashed the analytic model's log10) is refused
MAX_TOKENS = 1_000_000_000


class WorkloadError(ValueError):
    """Bad workload input: one line naming the field (and the file and row, for a file)."""


@dataclass(frozen=True)
class Lengths:
    """Input and output lengths in tokens: ``fixed`` (input, output), ``uniform`` (ranges), ``histogram`` (pairs)."""

    kind: str = "fixed"
    input: tuple[int, int] = (1024, 1024)  # fixed: (n, n); uniform: (low, high)
    output: tuple[int, int] = (256, 256)
    pairs: tuple[tuple[int, int], ...] = ()  # histogram: the (input, output) rows drawn from

    def __post_init__(self):
        if self.kind not in ("fixed", "uniform", "histogram"):
            raise WorkloadError(f"lengths: expected fixed, uniform or histogram, got {self.kind!r}")
        if self.kind == "histogram":
            if not self.pairs:
                raise WorkloadError("lengths: a histogram needs at least one (input, output) row")
            for i, o in self.pairs:
                if not (1 <= i <= MAX_TOKENS and 1 <= o <= MAX_TOKENS):
                    raise WorkloadError(f"lengths: a histogram row ({i}, {o}) is not 1 to {MAX_TOKENS:,} tokens")
            return
        for name, (low, high) in (("input", self.input), ("output", self.output)):
            if low < 1 or high < low or high > MAX_TOKENS:
                raise WorkloadError(f"--{name}: lengths must be whole numbers from 1 to {MAX_TOKENS:,} with low <= "
                                    f"high, got {low}-{high}")

    @staticmethod
    def fixed(input_tokens: int, output_tokens: int) -> Lengths:
        return Lengths("fixed", (input_tokens, input_tokens), (output_tokens, output_tokens))

    def sample(self, n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        if self.kind == "histogram":
            rows = np.array(self.pairs, dtype=np.int64)
            pick = rng.integers(0, len(rows), n)
            return rows[pick, 0], rows[pick, 1]
        ins = rng.integers(self.input[0], self.input[1] + 1, n)
        outs = rng.integers(self.output[0], self.output[1] + 1, n)
        return ins.astype(np.int64), outs.astype(np.int64)

    def means(self) -> tuple[float, float]:
        if self.kind == "histogram":
            rows = np.array(self.pairs, dtype=float)
            return float(rows[:, 0].mean()), float(rows[:, 1].mean())
        return (self.input[0] + self.input[1]) / 2, (self.output[0] + self.output[1]) / 2

    def input_quantile(self, q: float) -> float:
        """The input length at quantile ``q`` in [0, 1] (for the analytic estimate's latency percentiles)."""
        if self.kind == "histogram":
            return float(np.quantile(np.array(self.pairs, dtype=float)[:, 0], q))
        return self.input[0] + q * (self.input[1] - self.input[0])


@dataclass(frozen=True)
class SLO:
    """Service levels in seconds at a percentile (``p50``, ``p90``, ``p99``); None = no target."""

    ttft: float | None = None
    tpot: float | None = None
    e2e: float | None = None
    ttft_pct: str = "p90"
    tpot_pct: str = "p90"
    e2e_pct: str = "p90"

    def __post_init__(self):
        for name in ("ttft", "tpot", "e2e"):
            value, pct = getattr(self, name), getattr(self, name + "_pct")
            if pct not in PERCENTILES:
                raise WorkloadError(f"--{name}-{pct}: percentile must be one of {', '.join(PERCENTILES)}")
            if value is not None and (not math.isfinite(value) or value <= 0):
                raise WorkloadError(f"--{name}-{pct}: must be a time > 0, got {value} s")

    def targets(self) -> list[tuple[str, float, str]]:
        """(metric, seconds, percentile) for each target set."""
        return [(n, getattr(self, n), getattr(self, n + "_pct")) for n in ("ttft", "tpot", "e2e")
                if getattr(self, n) is not None]


@dataclass(frozen=True)
class Workload:
    """Arrivals at ``rate`` requests/s of ``lengths``, or a replayed ``trace``; ``prefix_tokens`` a prompt prefix
    shared by every request, found in the prefix cache with probability ``prefix_hit_rate``."""

    rate: float = 1.0
    arrival: str = "poisson"
    lengths: Lengths = field(default_factory=Lengths)
    trace: Requests | None = None
    prefix_tokens: int = 0
    prefix_hit_rate: float = 0.0

    def __post_init__(self):
        if self.trace is None and (not math.isfinite(self.rate) or self.rate <= 0):
            raise WorkloadError(f"--rate: must be > 0 requests/s, got {self.rate}")
        if self.arrival not in ARRIVALS:
            raise WorkloadError(f"--arrival: expected one of {', '.join(ARRIVALS)}, got {self.arrival!r}")
        if not 0 <= self.prefix_tokens <= MAX_TOKENS:
            raise WorkloadError(f"--prefix-tokens: must be from 0 to {MAX_TOKENS:,}, got {self.prefix_tokens}")
        if not 0.0 <= self.prefix_hit_rate <= 1.0:
            raise WorkloadError(f"--prefix-hit-rate: must be in [0, 1], got {self.prefix_hit_rate}")

    def mean_lengths(self) -> tuple[float, float]:
        if self.trace is not None:
            return float(self.trace.input.mean()), float(self.trace.output.mean())
        return self.lengths.means()

    def max_lengths(self) -> tuple[int, int]:
        """The longest input and output a request can have (the grids' extent)."""
        if self.trace is not None:
            return int(self.trace.input.max()), int(self.trace.output.max())
        if self.lengths.kind == "histogram":
            rows = np.array(self.lengths.pairs)
            return int(rows[:, 0].max()), int(rows[:, 1].max())
        return self.lengths.input[1], self.lengths.output[1]

    def mean_rate(self) -> float:
        if self.trace is not None:
            span = float(self.trace.arrival[-1] - self.trace.arrival[0])
            return (len(self.trace) - 1) / span if span > 0 and len(self.trace) > 1 else math.inf
        return self.rate

    def requests(self, n: int, seed: int = 0) -> Requests:
        """``n`` requests (the trace's first ``n`` when replaying one)."""
        if self.trace is not None:
            t = self.trace
            return Requests(t.arrival[:n] - t.arrival[0], t.input[:n], t.output[:n])
        if n < 1:
            raise WorkloadError(f"--requests: must be >= 1, got {n}")
        rng = np.random.default_rng(seed)
        gaps = rng.exponential(1.0 / self.rate, n) if self.arrival == "poisson" else np.full(n, 1.0 / self.rate)
        arrival = np.cumsum(gaps) - gaps[0]
        ins, outs = self.lengths.sample(n, rng)
        return Requests(arrival, ins, outs)


@dataclass(frozen=True, eq=False)
class Requests:
    """Arrays (N,): arrival time [s] (sorted), input and output tokens."""

    arrival: np.ndarray
    input: np.ndarray
    output: np.ndarray

    def __len__(self) -> int:
        return len(self.arrival)


def _column(header: list[str], name: str, where: str) -> int:
    lowered = [h.strip().lower() for h in header]
    for alias in _ALIASES[name]:
        if alias in lowered:
            return lowered.index(alias)
    raise WorkloadError(f"{where}: no {name} column (expected one of {', '.join(_ALIASES[name])})")


def _read_rows(path: Path, names: tuple[str, ...], what: str) -> list[tuple[int, dict]]:
    """(row number, {name: text}) from a CSV with a header or a JSONL file of objects."""
    if not path.exists():
        raise WorkloadError(f"{what}: no such file: {path}")
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise WorkloadError(f"{what} {path}: cannot read ({exc})") from None
    out = []
    if path.suffix.lower() in (".jsonl", ".ndjson"):
        for i, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                raise WorkloadError(f"{what} {path}: line {i}: not JSON ({exc.msg})") from None
            except RecursionError:
                raise WorkloadError(f"{what} {path}: line {i}: nested too deeply") from None
            if not isinstance(obj, dict):
                raise WorkloadError(f"{what} {path}: line {i}: expected an object")
            lowered = {str(k).lower(): v for k, v in obj.items()}
            row = {}
            for name in names:
                key = next((a for a in _ALIASES[name] if a in lowered), None)
                if key is None:
                    raise WorkloadError(f"{what} {path}: line {i}: no {name} field "
                                        f"(expected one of {', '.join(_ALIASES[name])})")
                row[name] = lowered[key]
            out.append((i, row))
        return out
    reader = csv.reader(text.splitlines())
    header = next(reader, None)
    if not header:
        raise WorkloadError(f"{what} {path}: empty file")
    cols = {name: _column(header, name, f"{what} {path}") for name in names}
    for i, cells in enumerate(reader, start=2):
        if not any(c.strip() for c in cells):
            continue
        if len(cells) < len(header):
            raise WorkloadError(f"{what} {path}: row {i}: expected {len(header)} columns, got {len(cells)}")
        out.append((i, {name: cells[c] for name, c in cols.items()}))
    return out


def _number(value, where: str, name: str, whole: bool, minimum: float, maximum: float = math.inf) -> float:
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise WorkloadError(f"{where}: {name}: not a number: {value!r}") from None
    if not math.isfinite(x) or x < minimum or (whole and x != int(x)):
        kind = "a whole number" if whole else "a number"
        raise WorkloadError(f"{where}: {name}: must be {kind} >= {minimum:g}, got {value!r}")
    if x > maximum:
        raise WorkloadError(f"{where}: {name}: must be at most {maximum:,.0f}, got {value!r}")
    return x


def read_histogram(path: str | Path) -> Lengths:
    """A CSV (or JSONL) of (input, output) token lengths -> a ``histogram`` :class:`Lengths`."""
    path = Path(path)
    rows = _read_rows(path, ("input", "output"), "--lengths")
    if not rows:
        raise WorkloadError(f"--lengths {path}: no rows")
    pairs = tuple((int(_number(r["input"], f"--lengths {path}: row {i}", "input", True, 1, MAX_TOKENS)),
                   int(_number(r["output"], f"--lengths {path}: row {i}", "output", True, 1, MAX_TOKENS)))
                  for i, r in rows)
    return Lengths("histogram", pairs=pairs)


def read_trace(path: str | Path) -> Requests:
    """A CSV or JSONL request trace: arrival time [s], input and output tokens per request (sorted by arrival)."""
    path = Path(path)
    rows = _read_rows(path, ("arrival", "input", "output"), "--trace")
    if not rows:
        raise WorkloadError(f"--trace {path}: no rows")
    arrival, ins, outs = [], [], []
    for i, r in rows:
        where = f"--trace {path}: row {i}"
        arrival.append(_number(r["arrival"], where, "arrival", False, 0))
        ins.append(int(_number(r["input"], where, "input", True, 1, MAX_TOKENS)))
        outs.append(int(_number(r["output"], where, "output", True, 1, MAX_TOKENS)))
    if max(arrival) == min(arrival):  # its offered rate, (N - 1) / span, would be infinite (or 0/0 for one row)
        raise WorkloadError(f"--trace {path}: every arrival is at {arrival[0]:g} s: a trace needs arrivals at two "
                            "different times at least (its rate is (requests - 1) / span)")
    order = np.argsort(np.array(arrival), kind="stable")
    return Requests(np.array(arrival)[order], np.array(ins, dtype=np.int64)[order],
                    np.array(outs, dtype=np.int64)[order])
