"""The step-time surface of one replica: the core's own analysis of a decode step over a grid of batch x context,
and of a prefill step over a grid of sequences x prompt length, computed once and then interpolated.

* on a device: every grid point's work table is built and the whole stack goes through the single-device pass
  (:func:`explorer.core.analysis.evaluate.evaluate`) in one call; a point's time is the sum of its rows' times;
* on a system layout: each grid point is one :func:`explorer.core.parallel.system_pass.analyze_system` of the
  layout (communication, pipeline and all), the replica's batch being the system batch / dp.

Between grid points the time is interpolated linearly in batch, context and length (step time is close to
linear in each: weights are read once per step, the KV cache read grows with batch x context). Nothing here is a
second roofline.

Step kinds built from the surface (all in seconds):
    decode(b, c)                 b sequences, one new token each, at mean context c
    prefill(n, L)                n prompts of L tokens each, as one step (their first tokens)
    mixed(b, c, p) = prefill(1, b + p) + decode(b, c) - decode(b, 1)
                                 a chunked-prefill step: b + p tokens through the layers (weights read once),
                                 plus the b decoding sequences' KV-cache reads at context c
"""

from __future__ import annotations

import math
from bisect import bisect_right
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from explorer.core.analysis.time_source import CALIBRATED, PARTLY, SPEC, system_time_sources
from explorer.core.formats import TensorFormats
from explorer.core.hardware.device import Device
from explorer.core.hardware.system import System
from explorer.core.parallel.layout import Layout
from explorer.core.parallel.system_pass import Options, analyze_system
from explorer.core.workload.layers import Context
from explorer.core.workload.model import Model


@dataclass(frozen=True, eq=False)
class StepSurface:
    """Seconds per step on grids (sorted, ascending). ``devices``: devices of one replica. A stack of surfaces on
    the same grids (:class:`~.stack.SetupStack`) carries its times as (S, B, C) and (S, N, P), one row per
    surface, and is interpolated with one of its two axes a single number (the estimate's fixed points)."""

    batch: np.ndarray  # (B,) decode batch sizes
    context: np.ndarray  # (C,) context lengths [tokens]
    decode_s: np.ndarray  # (B, C)
    prefill_batch: np.ndarray  # (N,) prompts per prefill step
    length: np.ndarray  # (P,) prompt lengths [tokens]
    prefill_s: np.ndarray  # (N, P)
    devices: int = 1
    source: str = ""
    time_model: str = "ideal"  # the time model of every step time above: ideal | calibrated (docs/calibration.md)
    time_source: str = SPEC  # where they come from: spec | partly calibrated | calibrated (.time_source)
    calibration: str = ""  # the calibrated model: what is calibrated, from how many kernels and which source

    @property
    def time_label(self) -> str:
        """The times' label for a line of text or a title: 'spec', or under the calibrated model the time source
        with its kernel counts and sources ('calibrated (matrix: 49 kernels, ...)'); 'spec (no calibration ...)'
        where the calibrated model found none and fell back to the ideal one."""
        if self.time_model == "ideal":
            return SPEC
        if self.time_source == SPEC:
            return f"{SPEC} (no calibration for this device and precision: the ideal model)"
        return self.calibration or self.time_source

    def decode(self, b, c):
        """Seconds of a decode step of ``b`` sequences at mean context ``c`` (arrays broadcast)."""
        return _bilinear(self.batch, self.context, self.decode_s, b, c)

    def prefill(self, n, length):
        """Seconds of a prefill step of ``n`` prompts of ``length`` tokens each."""
        return _bilinear(self.prefill_batch, self.length, self.prefill_s, n, length)

    def mixed(self, b, c, p):
        """Seconds of a chunked-prefill step: ``b`` decoding sequences at context ``c`` and ``p`` prompt tokens."""
        b = np.asarray(b, dtype=float)
        kv = np.where(b > 0, self.decode(np.maximum(b, 1), c) - self.decode(np.maximum(b, 1), 1), 0.0)
        return self.prefill(1, np.asarray(b) + np.asarray(p)) + np.maximum(kv, 0.0)

    # -- scalar versions of the three for the simulation's loop (plain floats, no array overhead)
    @cached_property
    def _lists(self):
        return ((self.batch.tolist(), self.context.tolist(), self.decode_s.tolist()),
                (self.prefill_batch.tolist(), self.length.tolist(), self.prefill_s.tolist()))

    def decode1(self, b: float, c: float) -> float:
        return _bilinear1(*self._lists[0], b, c)

    def prefill1(self, n: float, length: float) -> float:
        return _bilinear1(*self._lists[1], n, length)

    def mixed1(self, b: float, c: float, p: float) -> float:
        kv = self.decode1(b, c) - self.decode1(b, 1.0) if b > 0 else 0.0
        return self.prefill1(1.0, b + p) + max(kv, 0.0)

    @staticmethod
    def constant(step_s: float, prefill_s: float | None = None, max_batch: int = 1024,
                 max_len: int = 1 << 20) -> StepSurface:
        """A surface whose every decode step takes ``step_s`` and every prefill step ``prefill_s`` (default
        ``step_s``): for queueing checks against closed forms."""
        pre = step_s if prefill_s is None else prefill_s
        g, c = np.array([1.0, float(max_batch)]), np.array([1.0, float(max_len)])
        return StepSurface(g, c, np.full((2, 2), step_s), g, c, np.full((2, 2), pre), 1, "constant")


_SCALARS = (float, int)  # numpy's float64 is a float


def _bilinear(xs, ys, z, x, y):
    """Linear interpolation of z (len(xs), len(ys)) at (x, y), clamped to the grid; arrays broadcast.

    Where one of ``x``, ``y`` is one number (the analytic estimate's fixed points: a decode at one context, a
    prefill of one prompt), that axis is located once in plain floats and only the other axis is computed over
    arrays (:func:`_bilinear_x`, :func:`_bilinear_y`): the same operations on the same floats in the same order as
    the general path below, so the very same result (``tests/core/serving/test_capacity_batched.py``)."""
    if isinstance(y, _SCALARS) and not math.isnan(y):  # (NaN: the general path, whose clamp propagates it)
        return _bilinear_x(xs, z, x, *_axis0(ys, y))
    if isinstance(x, _SCALARS) and not math.isnan(x):
        return _bilinear_y(ys, z, y, *_axis0(xs, x))
    if np.ndim(z) != 2:
        raise ValueError("a stack of surfaces is interpolated with one of batch and context a single number")
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if x.shape != y.shape:
        x, y = np.broadcast_arrays(x, y)
    i, i1, fx = _axis(xs, x)
    j, j1, fy = _axis(ys, y)
    out = (z[i, j] * (1 - fx) * (1 - fy) + z[i1, j] * fx * (1 - fy) + z[i, j1] * (1 - fx) * fy
           + z[i1, j1] * fx * fy)
    return out if out.ndim else float(out)


def _axis0(xs: np.ndarray, x: float) -> tuple[int, int, float]:
    """(i, i1, fx) of :func:`_bilinear`'s general path at one number ``x``: clamped to the grid, the interval's
    index clipped to [0, len - 2], its fraction (0 on a one-point axis)."""
    x = float(min(max(x, xs[0]), xs[-1]))
    n = len(xs)
    i = min(max(int(np.searchsorted(xs, x, side="right")) - 1, 0), max(n - 2, 0))
    if n == 1:
        return i, i, 0.0
    lo = float(xs[i])
    return i, i + 1, (x - lo) / (float(xs[i + 1]) - lo)


def _axis(xs: np.ndarray, x) -> tuple:
    """(i, i1, fx) over arrays: ``x`` clamped to the grid (maximum, then minimum, as np.clip does without its
    wrappers: the fixed points call this a lot), the interval's index clipped to [0, len - 2], its fraction (0 on
    a one-point axis)."""
    x = np.minimum(np.maximum(np.asarray(x, dtype=float), xs[0]), xs[-1])
    n = len(xs)
    i = np.minimum(np.maximum(np.searchsorted(xs, x, side="right") - 1, 0), max(n - 2, 0))
    if n == 1:
        return i, i, np.zeros_like(x)
    return i, i + 1, (x - xs[i]) / (xs[i + 1] - xs[i])


def _bilinear_x(xs, z, x, j, j1, fy):
    """:func:`_bilinear` with the second axis located already (``j``, ``j1``, ``fy``: :func:`_axis0`)."""
    i, i1, fx = _axis(xs, x)
    a, a1, i, i1 = _flat(z[..., j], z[..., j1], i, i1)
    gx, gy = 1 - fx, 1 - fy
    out = a[i] * gx * gy + a[i1] * fx * gy + a1[i] * gx * fy + a1[i1] * fx * fy
    return out if out.ndim else float(out)


def _bilinear_y(ys, z, y, i, i1, fx):
    """:func:`_bilinear` with the first axis located already (``i``, ``i1``, ``fx``: :func:`_axis0`)."""
    j, j1, fy = _axis(ys, y)
    r, r1, j, j1 = _flat(z[..., i, :], z[..., i1, :], j, j1)
    gx, gy = 1 - fx, 1 - fy
    out = r[j] * gx * gy + r1[j] * fx * gy + r[j1] * gx * fy + r1[j1] * fx * fy
    return out if out.ndim else float(out)


def _flat(a: np.ndarray, a1: np.ndarray, i, i1):
    """(a, a1, i, i1) such that ``a[i]`` reads the interpolation's corners: as given for one surface; for a stack
    (``a``, ``a1`` (S, n), one row per surface; ``i``, ``i1`` (S, m), or one index for every row) the rows laid end
    to end and each row's indices shifted to its own row."""
    if a.ndim == 1:
        return a, a1, i, i1
    off = np.arange(0, a.size, a.shape[1])[:, None]
    return a.ravel(), a1.ravel(), i + off, i1 + off


def _axis1(xs: list, x: float) -> tuple[int, int, float]:
    if len(xs) == 1 or x <= xs[0]:
        return 0, 0, 0.0
    if x >= xs[-1]:
        return len(xs) - 1, len(xs) - 1, 0.0
    i = bisect_right(xs, x) - 1
    return i, i + 1, (x - xs[i]) / (xs[i + 1] - xs[i])


def _bilinear1(xs: list, ys: list, z: list, x: float, y: float) -> float:
    """:func:`_bilinear` at one point, in plain Python (the simulation calls it a few times per request)."""
    i, i1, fx = _axis1(xs, x)
    j, j1, fy = _axis1(ys, y)
    return ((z[i][j] * (1 - fx) + z[i1][j] * fx) * (1 - fy) + (z[i][j1] * (1 - fx) + z[i1][j1] * fx) * fy)


def grid(top: int, points: int, step: int = 1) -> np.ndarray:
    """Whole numbers from ``step`` to ``top`` (multiples of ``step``), about geometrically spaced, both ends in."""
    top = max(int(top), step)
    raw = np.geomspace(step, top, points)
    vals = np.unique(np.maximum(np.round(raw / step), 1).astype(int) * step)
    return np.unique(np.append(vals[vals <= top], top // step * step)).astype(float)


@dataclass(frozen=True)
class Grid:
    """The grid's extent: the largest decode batch, context, prefill batch and prompt (or chunk) length."""

    max_batch: int
    max_context: int
    max_prefill_batch: int
    max_length: int
    points: int = 10
    anchors: tuple[int, ...] = ()  # prompt lengths to hold exactly (a fixed workload's input): no interpolation


def _contexts(g: Grid) -> np.ndarray:
    return grid(g.max_context, g.points)


def _lengths(g: Grid) -> np.ndarray:
    extra = [a for a in g.anchors if 1 <= a <= g.max_length]
    return np.unique(np.concatenate([grid(g.max_length, g.points), np.array(extra, dtype=float)]))


def system_surface(model: Model, system: System, device: Device, layout: Layout, g: Grid,
                   precision: str = "fp16", formats: TensorFormats | None = None,
                   options: Options | None = None, attention: str = "fused") -> StepSurface:
    """The surface of one replica (tp x pp devices) of ``layout`` on ``system``: the system pass per grid point
    with the system's batch = dp x the replica's batch (micro-batches: the replica's batch a multiple of them)."""
    m = layout.microbatches
    batch, ctxs = grid(g.max_batch, g.points, m), _contexts(g)
    pbatch, lengths = grid(g.max_prefill_batch, max(g.points // 2, 3), m), _lengths(g)
    dec = np.zeros((len(batch), len(ctxs)))
    pre = np.zeros((len(pbatch), len(lengths)))
    options = options or Options()
    labels, kernels, links = set(), set(), set()
    for arr, bs, ls, phase in ((dec, batch, ctxs, "decode"), (pre, pbatch, lengths, "prefill")):
        for i, b in enumerate(bs):
            for j, c in enumerate(ls):
                ctx = Context(batch=int(b) * layout.dp, seq_len=int(c), phase=phase, attention=attention)
                r = analyze_system(model, system, device, [layout], precision, ctx, formats, options)
                arr[i, j] = r.step_time[0]
                labels.add(system_time_sources(r)[0])
                kernels.add(r.kernel_source)
                links.update(r.calibrated_links)
    calibration = "" if options.time_model == "ideal" else (
        f"{combined(labels)} (kernels {combined(kernels)}; fitted links: {', '.join(sorted(links)) or 'none'}, "
        "other links at their stated figures)")
    return StepSurface(batch, ctxs, dec, pbatch, lengths, pre, layout.tp * layout.pp,
                       f"{system.id} {layout.label()}", options.time_model, combined(labels), calibration)


def combined(labels) -> str:
    """One label for times made of parts labelled ``labels`` (never more certain than its least certain part):
    all spec -> spec, all calibrated -> calibrated, else partly calibrated."""
    labels = set(labels)
    if not labels or labels == {SPEC}:
        return SPEC
    return CALIBRATED if labels == {CALIBRATED} else PARTLY
