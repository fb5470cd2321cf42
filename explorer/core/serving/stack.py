"""Several replicas' analytic estimates at once (issue 22: the Serving panel's answer per model edit).

The capacity search (:func:`~.analytic.capacity`: doubling, then 50 halvings of the estimate's stability) runs the
estimate's fixed point (60 steps, each an interpolation of the step surface) some 11 times per replica; on 20
devices that was ~46,000 interpolations of 31 rates each, ~3.7 s per edit spent in numpy's fixed cost per call. A
:class:`SetupStack` holds the setups of one question that can go together (the same engine policy, KV block size
and surface grids, no speculative decoding: the devices of the Serving panel, the planner, ``serve`` and
``plan --rate``) with their surfaces stacked (S, B, C), so that the fixed point runs over arrays (setups, rates):
one set of numpy calls for all of them.

Every element is computed by the same operations on the same floats as a lone :class:`~.analytic.Setup`'s (the
same methods; the interpolation's one-number-axis path, :func:`~.surface._bilinear_x`, reads row s of the stack
for row s of the rates): row s of a stack's answer is setup s's alone, to the bit
(``tests/core/serving/test_capacity_batched.py``).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .analytic import (
    CAPACITIES,
    LoadCurve,
    Setup,
    _fixed_point,
    _prompt,
    bisect_rows,
    capacity,
    curve_of,
    curve_rates,
    results_at,
    search_capacity,
)
from .result import ServingResult
from .surface import StepSurface
from .workload import SLO, Workload


class SetupStack:
    """Setups stacked: the interface :func:`~.analytic._fixed_point` reads (``policy``, ``memory``'s block size,
    ``tokens_per_step``, ``decoder_tokens``, ``batch_cap``, ``prompt_s``, ``step``, ``mixed``), its numbers one
    row per setup, (S, 1) per setup or (S, R) per setup and rate."""

    spec = None  # no speculative decoding in a stack (:meth:`key`)
    step = Setup.step
    mixed = Setup.mixed
    tokens_per_step = Setup.tokens_per_step
    decoder_tokens = Setup.decoder_tokens

    def __init__(self, setups: Sequence[Setup]):
        if len({self.key(s) for s in setups}) != 1 or self.key(setups[0]) is None:
            raise ValueError("setups stacked must share their policy, block size and grids, without speculation")
        s0 = setups[0]
        self.setups = tuple(setups)
        self.rows = len(self.setups)
        self.policy = s0.policy
        self.memory = s0.memory  # read for its block size only (the prompt's cached prefix), the same in every row
        f = s0.surface
        self.surface = StepSurface(f.batch, f.context, np.stack([s.surface.decode_s for s in setups]),
                                   f.prefill_batch, f.length, np.stack([s.surface.prefill_s for s in setups]))

    @staticmethod
    def key(setup: Setup) -> tuple | None:
        """What setups stacked together share; None: not stacked (speculative decoding: a draft per setup)."""
        if setup.spec is not None:
            return None
        s = setup.surface
        return (setup.policy, setup.memory.block_size, s.decode_s.shape, s.prefill_s.shape, s.batch.tobytes(),
                s.context.tobytes(), s.prefill_batch.tobytes(), s.length.tobytes())

    def batch_cap(self, context: float) -> np.ndarray:
        """(S, 1): each setup's :meth:`~.analytic.Setup.batch_cap`."""
        return np.array([s.batch_cap(context) for s in self.setups])[:, None]

    def prompt_s(self, p: float) -> np.ndarray:
        """(S, 1): each setup's :meth:`~.analytic.Setup.prompt_s`."""
        return self.surface.prefill(1, p)


def stacks(setups: Sequence[Setup]) -> list[tuple[list[int], Setup | SetupStack]]:
    """``setups`` in groups: (their indices, a :class:`SetupStack` of them), a setup that goes with no other
    alone as itself."""
    groups: dict = {}
    for i, s in enumerate(setups):
        groups.setdefault(SetupStack.key(s) or ("alone", i), []).append(i)
    return [(idx, setups[idx[0]] if len(idx) == 1 else SetupStack([setups[i] for i in idx]))
            for idx in groups.values()]


def capacities(workload: Workload, setups: Sequence[Setup]) -> list[float]:
    """:func:`~.analytic.capacity` of each setup: those not kept searched together, a stack at a time
    (:func:`stacks`), and kept (:data:`~.analytic.CAPACITIES`); the very floats of each one's search alone."""
    keys = [("capacity", workload, s) for s in setups]
    try:
        found = [CAPACITIES.peek(k) for k in keys]
    except TypeError:  # a workload with a trace: not kept, each searched alone
        return [capacity(workload, s) for s in setups]
    todo = [i for i, x in enumerate(found) if x is None]
    for idx, s in stacks([setups[i] for i in todo]):
        for i, cap in zip(idx, search_capacity(workload, s, len(idx))):
            found[todo[i]] = float(cap)
            CAPACITIES.put(keys[todo[i]], found[todo[i]])
    return found


def answers(workload: Workload, setups: Sequence[Setup], slo: SLO,
            points: int = 24) -> list[tuple[ServingResult, LoadCurve]]:
    """Per setup, :func:`~.serve.answer`'s analytic part: (the estimate at the workload's rate, the load curve of
    ``points`` rates): the capacities searched together (:func:`capacities`), then one fixed point per stack at
    every rate its setups need (the workload's rate, the curve's rates, the capacity), each row's results taken from
    its columns (:func:`~.analytic.results_at`): the very floats of each setup's answer alone."""
    caps = capacities(workload, setups)
    rate = workload.mean_rate()
    out: list = [None] * len(setups)
    for idx, s in stacks(setups):
        i_mean, p, o = _prompt(workload, s)
        rows, curves = [], []
        for i in idx:
            reps = setups[i].replicas
            curve = curve_rates(workload, caps[i] * reps, points)
            curves.append(curve)
            padded = np.resize(curve, points)  # no stable rate: the one rate repeated, its first column read
            rows.append(np.concatenate([np.array([rate]) / reps, padded / reps, [caps[i]]]))
        lam = np.array(rows)
        fixed = [np.broadcast_to(x, lam.shape) for x in _fixed_point(s, lam if len(idx) > 1 else lam[0], p, o,
                                                                     i_mean + o / 2)]
        for k, (i, curve) in enumerate(zip(idx, curves)):
            row = [x[k] for x in fixed]
            at_cap = tuple(x[-1:] for x in row[:3])
            est = results_at(workload, setups[i], slo, np.array([rate]), tuple(x[:1] for x in row), at_cap)[0]
            cols = slice(1, 1 + len(curve))
            res = results_at(workload, setups[i], slo, curve, tuple(x[cols] for x in row), at_cap)
            out[i] = est, curve_of(slo, curve, res, caps[i] * reps)
    return out


def slo_rates(workload: Workload, setups: Sequence[Setup], slo: SLO, points: int = 48) -> list[float]:
    """:func:`~.fleet.slo_rate` of each setup (the highest rate one replica serves meeting every service level):
    the capacities searched together, then per stack the estimate at ``points`` rates up to each capacity and the
    bisection's midpoints (:func:`~.analytic.bisect_rows`), every row's in one fixed point per call; the very
    floats of each setup's search alone."""
    caps = capacities(workload, setups)
    out = [0.0] * len(setups)
    live = [i for i, cap in enumerate(caps) if cap > 0]  # no stable rate: 0
    for idx, s in stacks([setups[i] for i in live]):
        rows = [live[k] for k in idx]
        for i, found in zip(rows, _SloSearch(workload, [setups[i] for i in rows], s, slo,
                                             [caps[i] for i in rows]).run(points)):
            out[i] = found
    return out


class _SloSearch:
    """:func:`slo_rates` over one stack (``s``: a :class:`SetupStack` of ``setups``, or the one setup alone)."""

    def __init__(self, workload: Workload, setups: list[Setup], s, slo: SLO, caps: list[float]):
        self.workload, self.setups, self.s, self.slo, self.caps = workload, setups, s, slo, caps
        self.reps = np.array([[x.replicas] for x in setups], dtype=float)
        i_mean, self.p, self.o = _prompt(workload, s)
        self.c = i_mean + self.o / 2
        self.at_caps = [x.reshape(len(setups), 1) for x in self._fixed(np.array([[cap] for cap in caps]))[:3]]

    def _fixed(self, lam: np.ndarray) -> list[np.ndarray]:
        """The fixed point at per-replica rates ``lam`` (rows, M), each result (rows, M)."""
        one = isinstance(self.s, Setup)
        return [np.broadcast_to(x, lam.shape) for x in _fixed_point(self.s, lam[0] if one else lam, self.p, self.o,
                                                                    self.c)]

    def meets(self, rates: np.ndarray) -> np.ndarray:
        """(rows, M) rates for all the replicas -> (rows, M): stable and every service level met (the estimate)."""
        fixed = self._fixed(rates / self.reps)
        return np.array([[r.stable and r.slo_met for r in results_at(
            self.workload, setup, self.slo, rates[k], tuple(x[k] for x in fixed), tuple(x[k] for x in self.at_caps))]
            for k, setup in enumerate(self.setups)])

    def run(self, points: int) -> list[float]:
        grid = np.array([np.linspace(cap / points, cap, points) for cap in self.caps])
        ok = self.meets(grid)
        lo, hi, done = [], [], {}
        for k in range(len(self.setups)):
            if not ok[k].any():
                lo.append(0.0)
                hi.append(float(grid[k, 0]))
                continue
            j = int(np.flatnonzero(ok[k])[-1])
            if j == points - 1:  # answered: bisected along with the others (rows are independent), its answer kept
                done[k], j = float(grid[k, -1]), j - 1
            lo.append(float(grid[k, j]))
            hi.append(float(grid[k, j + 1]))
        found = bisect_rows(lo, hi, 24, self.meets)
        return [done.get(k, x) for k, x in enumerate(found)]
