"""The engine's settings and the simulation's per-replica record: the batching policy, speculative decoding,
the prefix cache's hits, and :class:`SimRun` (what one replica's simulated schedule gives per request)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .surface import StepSurface
from .workload import Requests


@dataclass(frozen=True)
class Policy:
    """The engine's batching settings (vLLM's names in brackets)."""

    max_batch: int = 256  # sequences in a step [max_num_seqs]
    max_batched_tokens: int = 8192  # prompt tokens in a prefill step [max_num_batched_tokens]
    chunked: bool = False  # chunked prefill [enable_chunked_prefill]
    chunk: int = 512  # tokens in a chunked step, decode tokens included

    def __post_init__(self):
        for name in ("max_batch", "max_batched_tokens", "chunk"):
            if getattr(self, name) < 1:
                raise ValueError(f"--{name.replace('_', '-')}: must be >= 1, got {getattr(self, name)}")


@dataclass(frozen=True)
class Speculative:
    """Speculative decoding (Leviathan et al. 2023, "Fast Inference from Transformers via Speculative
    Decoding", ICML, https://arxiv.org/abs/2211.17192, eq. 1): ``k`` draft tokens accepted each with
    probability ``acceptance`` give E = (1 - a^(k+1)) / (1 - a) tokens per target step (k + 1 when a = 1).
    A step costs k draft steps (``draft`` surface, or ``draft_cost`` x the target's decode step) plus one
    verification of k + 1 tokens per sequence. With chunked prefill (:meth:`mixed`) the verification tokens ride
    in the same target pass as the prompt chunks and count against the chunk's token budget (k + 1 per decoder)."""

    k: int = 4
    acceptance: float = 0.7
    draft_cost: float = 0.1
    draft: StepSurface | None = None

    def __post_init__(self):
        if self.k < 1:
            raise ValueError(f"--spec-k: must be >= 1, got {self.k}")
        if not 0.0 <= self.acceptance <= 1.0:
            raise ValueError(f"--spec-acceptance: must be in [0, 1], got {self.acceptance}")
        if self.draft_cost < 0:
            raise ValueError(f"--spec-draft-cost: must be >= 0, got {self.draft_cost}")

    @property
    def tokens_per_step(self) -> float:
        a = self.acceptance
        return float(self.k + 1) if a >= 1.0 else (1.0 - a ** (self.k + 1)) / (1.0 - a)

    def step(self, s: StepSurface, b, c):
        draft = self.draft.decode(b, c) if self.draft is not None else self.draft_cost * s.decode(b, c)
        return self.k * draft + s.mixed(b, c, np.asarray(b) * self.k)

    def step1(self, s: StepSurface, b: float, c: float) -> float:
        draft = self.draft.decode1(b, c) if self.draft is not None else self.draft_cost * s.decode1(b, c)
        return self.k * draft + s.mixed1(b, c, b * self.k)

    def mixed(self, s: StepSurface, b, c, p):
        """A chunked-prefill step with speculative decoding: the ``b`` decoders' k drafts, then one target pass over
        their k + 1 verification tokens each and ``p`` prompt tokens (no draft without decoders)."""
        b = np.asarray(b, dtype=float)
        bb = np.maximum(b, 1.0)
        draft = self.draft.decode(bb, c) if self.draft is not None else self.draft_cost * s.decode(bb, c)
        return np.where(b > 0, self.k * draft, 0.0) + s.mixed(b, c, b * self.k + np.asarray(p))

    def mixed1(self, s: StepSurface, b: float, c: float, p: float) -> float:
        if b <= 0:
            return s.mixed1(0, c, p)
        draft = self.draft.decode1(b, c) if self.draft is not None else self.draft_cost * s.decode1(b, c)
        return self.k * draft + s.mixed1(b, c, b * self.k + p)


@dataclass(frozen=True, eq=False)
class SimRun:
    """One replica's simulated schedule: per request (N,) and per step kind; seconds, tokens."""

    requests: Requests
    prefill_tokens: np.ndarray  # tokens each request's (last) prefill computed, cached prefix excluded
    first: np.ndarray  # time of the first token
    finish: np.ndarray
    preemptions: int
    steps_by_batch: np.ndarray  # (max_batch + 1,) decode steps run at each batch size
    busy_s: float  # time with a step running
    end_s: float  # the last finish
    kv_block_seconds: float  # integral of blocks in use over time
    blocks: int
    slices: tuple = ()  # (start s, duration s, kind, batch) when recorded, for the trace export

    @property
    def ttft(self) -> np.ndarray:
        return self.first - self.requests.arrival

    @property
    def tpot(self) -> np.ndarray:
        """(finish - first token) / (output - 1); NaN for one-token answers (vLLM's benchmark definition)."""
        out = self.requests.output.astype(float)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(out > 1, (self.finish - self.first) / (out - 1), np.nan)

    @property
    def e2e(self) -> np.ndarray:
        return self.finish - self.requests.arrival


def cached_tokens(requests: Requests, prefix_tokens: int, hit_rate: float, block_size: int,
                  seed: int = 0) -> np.ndarray:
    """Prompt tokens found in the prefix cache: the shared prefix's whole blocks (at most the prompt less one
    token, which is always computed), for a share ``hit_rate`` of the requests (drawn with ``seed``)."""
    n = len(requests)
    if prefix_tokens <= 0 or hit_rate <= 0:
        return np.zeros(n, dtype=np.int64)
    hit = np.random.default_rng(seed + 1).random(n) < hit_rate if hit_rate < 1 else np.ones(n, bool)
    whole = (prefix_tokens // block_size) * block_size
    cap = ((requests.input - 1) // block_size) * block_size
    return np.where(hit, np.minimum(whole, cap), 0).astype(np.int64)
