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
