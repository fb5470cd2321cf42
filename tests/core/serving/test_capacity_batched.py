"""The analytic estimate's interpolation with one axis a single number, and the capacity search over many setups at
once (explorer/core/serving/stack.py), give the very floats of the code before (issue 22: the Serving panel's answer
per edit): the interpolation before and the fixed point before are kept here verbatim as the reference, and every
comparison is equality, not closeness. The simulation's scalar interpolation (``decode1``) is not used by the
estimate: it rounds differently (bounded here: at most 2 units in the last place)."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from explorer.core.serving import analytic, serve
from explorer.core.serving.analytic import Setup, _fixed_point, _prompt, bisect, capacity
from explorer.core.serving.serve import answer, cached_answers, device_setups
from explorer.core.serving.simulate import Policy, Speculative
from explorer.core.serving.stack import SetupStack, capacities, stacks
from explorer.core.serving.surface import StepSurface, _bilinear
from explorer.core.serving.workload import SLO, Lengths, Requests, Workload

DEVICES = ("nvidia-h100-sxm5", "nvidia-l4", "amd-mi300x", "google-tpu-v5e", "nvidia-a100-sxm4-80gb")


def old_bilinear(xs, ys, z, x, y):
    """The interpolation before (verbatim)."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if x.shape != y.shape:
        x, y = np.broadcast_arrays(x, y)
    x, y = np.minimum(np.maximum(x, xs[0]), xs[-1]), np.minimum(np.maximum(y, ys[0]), ys[-1])
    i = np.clip(np.searchsorted(xs, x, side="right") - 1, 0, max(len(xs) - 2, 0))
    j = np.clip(np.searchsorted(ys, y, side="right") - 1, 0, max(len(ys) - 2, 0))
    if len(xs) == 1:
        fx, i1 = np.zeros_like(x), i
    else:
        fx, i1 = (x - xs[i]) / (xs[i + 1] - xs[i]), i + 1
    if len(ys) == 1:
        fy, j1 = np.zeros_like(y), j
    else:
        fy, j1 = (y - ys[j]) / (ys[j + 1] - ys[j]), j + 1
    out = (z[i, j] * (1 - fx) * (1 - fy) + z[i1, j] * fx * (1 - fy) + z[i, j1] * (1 - fx) * fy
           + z[i1, j1] * fx * fy)
    return out if out.ndim else float(out)


class OldSetup:
    """A setup (no speculative decoding) whose decode, prefill and chunked steps go through the interpolation before,
    as StepSurface's and Setup's methods computed them (verbatim)."""

    def __init__(self, setup):
        self.setup, self.surface, self.policy, self.memory = setup, setup.surface, setup.policy, setup.memory
        self.tokens_per_step, self.decoder_tokens, self.batch_cap = 1.0, 1, setup.batch_cap

    def decode(self, b, c):
        s = self.surface
        return old_bilinear(s.batch, s.context, s.decode_s, b, c)

    def prefill(self, n, length):
        s = self.surface
        return old_bilinear(s.prefill_batch, s.length, s.prefill_s, n, length)

    def step(self, b, c):
        return self.decode(np.maximum(np.asarray(b, dtype=float), 1.0), c)

    def mixed(self, b, c, p):
        b = np.asarray(b, dtype=float)
        kv = np.where(b > 0, self.decode(np.maximum(b, 1), c) - self.decode(np.maximum(b, 1), 1), 0.0)
        return self.prefill(1, np.asarray(b) + np.asarray(p)) + np.maximum(kv, 0.0)


def old_fixed_point(s: OldSetup, lam, p, o, c):
    """The fixed point before (verbatim, on :class:`OldSetup`)."""
    e, cap, pol = s.tokens_per_step, s.batch_cap(c), s.policy
    b = np.ones_like(lam)
    if pol.chunked:
        for _ in range(60):
            t, busy_c, _ = old_chunked(s, b, c, lam, p)
            b = np.minimum(lam * max(o - 1, 0) / e * t, cap + 1)
        stable = (b <= cap) & (busy_c < 1)
        b = np.minimum(b, cap)
        t, busy_c, _ = old_chunked(s, b, c, lam, p)
        return b, t, busy_c, stable
    tp = float(s.prefill(1, p))
    rho = lam * tp
    for _ in range(60):
        t = s.step(b, c)
        b = np.minimum(lam * max(o - 1, 0) / e * t / np.maximum(1 - rho, 1e-9), cap + 1)
    stable = (b <= cap) & (rho < 1)
    b = np.minimum(b, cap)
    return b, s.step(b, c), rho, stable


def old_chunked(s, b, c, lam, p):
    room = np.maximum(s.policy.chunk - b * s.decoder_tokens, 1.0)
    pc = np.minimum(p, room)
    t_c = s.mixed(b, c, pc)
    busy_c = lam * (p / pc) * t_c
    t_d = s.step(np.maximum(b, 1), c)
    steps = np.maximum(1 - busy_c, 0) / t_d + lam * p / pc
    return 1.0 / steps, busy_c, t_c


def old_capacity(workload, setup):
    """The capacity search before (its doubling and batched halvings, on the fixed point before)."""
    i_mean, p, o = _prompt(workload, setup)
    c = i_mean + o / 2
    old = OldSetup(setup)

    def stable(rates):
        return dict(zip(rates, old_fixed_point(old, np.array(rates), p, o, c)[3].tolist()))

    his = [1.0]
    while his[-1] < 1e9:
        his.append(his[-1] * 2)
    ok = stable(his)
    k = next(i for i, h in enumerate(his) if not ok[h] or h >= 1e9)
    return bisect(his[k - 1] if k else 0.0, his[k], 50, stable)


def grids(draw, n):
    return np.unique(np.array(draw(st.lists(st.floats(0.5, 5000, allow_nan=False), min_size=1, max_size=n))))


@st.composite
def surfaces(draw):
    xs, ys = grids(draw, 6), grids(draw, 6)
    z = np.array(draw(st.lists(st.floats(1e-6, 10.0), min_size=len(xs) * len(ys), max_size=len(xs) * len(ys))))
    return xs, ys, z.reshape(len(xs), len(ys))


points = st.floats(-100, 6000, allow_nan=False) | st.sampled_from([0.0, 1.0, 0.5, math.inf, -math.inf])


@settings(max_examples=300, deadline=None)
@given(surfaces(), st.lists(points, min_size=1, max_size=8), points)
def test_one_axis_a_number_gives_the_interpolation_before_to_the_bit(surface, many, one):
    xs, ys, z = surface
    many = np.array(many)
    for x, y in ((many, one), (one, many), (one, one), (np.float64(one), many), (many, int(max(min(one, 1e6), -1e6)))):
        got, want = _bilinear(xs, ys, z, x, y), old_bilinear(xs, ys, z, x, y)
        assert np.array_equal(got, want) and type(got) is type(want)
        # on a grid point of a one-point axis or the ends: also the general path's (both arrays) answer
    got = _bilinear(xs, ys, z, many, np.full(len(many), one))
    assert np.array_equal(got, old_bilinear(xs, ys, z, many, one))


@settings(max_examples=100, deadline=None)
@given(surfaces(), st.integers(2, 4), st.data())
def test_a_stack_of_surfaces_gives_each_row_its_own_interpolation(surface, rows, data):
    xs, ys, z = surface
    zs = np.stack([z * (k + 1) + k for k in range(rows)])
    b = np.array(data.draw(st.lists(st.lists(points, min_size=3, max_size=3), min_size=rows, max_size=rows)))
    c = data.draw(points)
    for k in range(rows):
        assert np.array_equal(_bilinear(xs, ys, zs, b, c)[k], old_bilinear(xs, ys, zs[k], b[k], c))
        assert np.array_equal(_bilinear(xs, ys, zs, c, b)[k], old_bilinear(xs, ys, zs[k], c, b[k]))
        assert _bilinear(xs, ys, zs, c, 3.0)[k, 0] == old_bilinear(xs, ys, zs[k], c, 3.0)
    with pytest.raises(ValueError, match="one of batch and context a single number"):
        _bilinear(xs, ys, zs, b, b)


@pytest.fixture(scope="module")
def setups_by_case(devices, llama8b):
    out = {}
    for chunked in (False, True):
        for lengths in ((1024, 256), (128, 16), (4000, 900)):
            w = Workload(rate=3.0, lengths=Lengths.fixed(*lengths))
            out[chunked, lengths] = w, device_setups(llama8b, [devices[i] for i in DEVICES], w,
                                                     Policy(max_batch=128, chunked=chunked))
    return out


@pytest.mark.parametrize("chunked", [False, True])
@pytest.mark.parametrize("lengths", [(1024, 256), (128, 16), (4000, 900)])
def test_the_stacked_capacity_search_gives_the_search_before_to_the_bit(setups_by_case, chunked, lengths):
    w, setups = setups_by_case[chunked, lengths]
    want = [old_capacity(w, s) for s in setups]
    analytic.CAPACITIES.clear()
    assert capacities(w, setups) == want  # one stack of five devices
    assert analytic.CAPACITIES.misses == len(setups)
    assert [capacity(w, s) for s in setups] == want and analytic.CAPACITIES.hits == len(setups)  # kept
    analytic.CAPACITIES.clear()
    assert [capacity(w, s) for s in setups] == want  # each alone
    assert sum(x > 0 for x in want) >= 3 and 0.0 in want  # the TPU v5e's 16 GB leave no KV cache


@pytest.mark.parametrize("chunked", [False, True])
def test_the_stacked_fixed_point_gives_each_setup_the_fixed_point_before(setups_by_case, chunked):
    w, setups = setups_by_case[chunked, (1024, 256)]
    i_mean, p, o = _prompt(w, setups[0])
    c = i_mean + o / 2
    rng = np.random.default_rng(7)
    rates = np.concatenate([[0.0, 1e-3, 1e9], rng.random(40) * 60])  # idle, stable and far over capacity
    stack = SetupStack(setups)
    got = _fixed_point(stack, np.tile(rates, (len(setups), 1)), p, o, c)
    stable = []
    for k, s in enumerate(setups):
        want = old_fixed_point(OldSetup(s), rates, p, o, c)
        alone = _fixed_point(s, rates, p, o, c)
        for g, a, ref in zip(got, alone, want):
            assert np.array_equal(np.broadcast_to(g, (len(setups), len(rates)))[k], ref)
            assert np.array_equal(a, ref)
        stable += want[3].tolist()
    assert any(stable) and not all(stable)


def test_answers_of_many_devices_equal_each_answer_alone(setups_by_case):
    w, setups = setups_by_case[False, (1024, 256)]
    slo = SLO(ttft=0.5, tpot=0.05)
    serve.ANSWERS.clear()
    analytic.CAPACITIES.clear()
    many = cached_answers(w, setups, slo)
    assert analytic.CAPACITIES.misses == len(setups)  # one stacked search, then every estimate reads it
    analytic.CAPACITIES.clear()
    for got, s in zip(many, setups):
        want = answer(w, s, slo)
        assert repr(got.estimate) == repr(want.estimate)  # every float to the bit (repr round-trips; NaN too)
        for name in ("rates", "throughput_per_device", "per_user", "ttft", "tpot", "stable", "meets"):
            assert np.array_equal(getattr(got.curve, name), getattr(want.curve, name))
        assert (got.curve.knee, got.curve.capacity) == (want.curve.knee, want.curve.capacity)
    assert cached_answers(w, setups, slo)[0] is many[0]  # kept


def test_setups_go_together_only_when_they_share_policy_block_size_grids_and_no_speculation(setups_by_case):
    w, plain = setups_by_case[False, (1024, 256)]
    _, chunked = setups_by_case[True, (1024, 256)]
    spec = Setup(plain[0].surface, plain[0].memory, plain[0].policy, Speculative(k=3))
    mixed = [plain[0], chunked[0], plain[1], spec, chunked[1], plain[2]]
    groups = stacks(mixed)
    assert sorted(idx for idx, _ in groups) == [[0, 2, 5], [1, 4], [3]]
    assert {len(idx): type(s).__name__ for idx, s in groups} == {3: "SetupStack", 2: "SetupStack", 1: "Setup"}
    analytic.CAPACITIES.clear()
    got = capacities(w, mixed)
    analytic.CAPACITIES.clear()
    assert got == [capacity(w, s) for s in mixed]
    with pytest.raises(ValueError, match="must share their policy"):
        SetupStack([plain[0], chunked[0]])


def test_a_trace_workload_is_searched_and_kept_by_its_trace(setups_by_case):
    _, setups = setups_by_case[False, (1024, 256)]
    trace = Requests(arrival=np.array([0.0, 0.5, 1.0]), input=np.array([1000, 1024, 1048]),
                     output=np.array([250, 256, 262]))
    w = Workload(rate=2.0, trace=trace)
    analytic.CAPACITIES.clear()
    got = capacities(w, setups[:3])
    assert got == [old_capacity(w, s) for s in setups[:3]] and analytic.CAPACITIES.misses == 3
    same = Workload(rate=2.0, trace=Requests(trace.arrival, trace.input, trace.output))  # equal arrays, another trace
    assert capacities(w, setups[:3]) == got and capacities(same, setups[:3]) == got
    assert analytic.CAPACITIES.misses == 6  # a trace is kept by identity (its arrays are not compared)


def test_the_scalar_interpolation_of_the_simulation_rounds_within_two_units_in_the_last_place(setups_by_case):
    """Why the estimate keeps the array path: ``decode1`` sums the same four corners in another order."""
    _, setups = setups_by_case[False, (1024, 256)]
    rng = np.random.default_rng(3)
    differ = 0
    for s in setups:
        f: StepSurface = s.surface
        b, c = rng.random(3000) * 140, rng.random(3000) * 1400
        arr = f.decode(b, c)
        one = np.array([f.decode1(x, y) for x, y in zip(b, c)])
        assert np.all(np.abs(arr - one) <= 2 * np.spacing(arr))
        differ += int((arr != one).sum())
    assert differ > 0  # they do differ: equality with the code before needs the array path's order


@pytest.mark.parametrize("slo", [SLO(ttft=0.5, tpot=0.05), SLO(ttft=0.2, tpot=0.02, ttft_pct="p99"), SLO(ttft=30.0),
                                 SLO(tpot=1e-4)])
@pytest.mark.parametrize("chunked", [False, True])
def test_the_stacked_service_level_rates_equal_each_search_alone(setups_by_case, slo, chunked):
    from explorer.core.serving import fleet
    from explorer.core.serving.stack import slo_rates

    w, setups = setups_by_case[chunked, (1024, 256)]
    analytic.CAPACITIES.clear()
    got = slo_rates(w, setups, slo)
    analytic.CAPACITIES.clear()
    assert got == [fleet.slo_rate(w, s, slo) for s in setups]  # each alone: tested against the one-rate bisection
    assert 0.0 in got  # the TPU v5e: no KV cache
    if slo.ttft == 30.0:
        assert sum(x > 0 for x in got) >= 3


def test_the_fleet_of_many_devices_equals_each_row_alone(setups_by_case, devices):
    from explorer.core.serving import fleet

    w, setups = setups_by_case[False, (1024, 256)]
    slo = SLO(ttft=0.5, tpot=0.05)
    fleet.SLO_RATES.clear()
    rows = fleet.size_fleet(w, setups, [devices[i] for i in DEVICES], slo)
    assert fleet.SLO_RATES.misses == len(setups)  # searched together, kept
    fleet.SLO_RATES.clear()
    analytic.CAPACITIES.clear()
    alone = sorted((fleet.fleet_row(w, s, devices[d], slo) for s, d in zip(setups, DEVICES)), key=fleet.rank_key)
    assert repr(rows) == repr(tuple(alone)) and any(r.feasible for r in rows)
