"""The context axis's interpolation of a run (``context_plane._interpolate``) interpolates only the entries that
differ between its nodes and copies the rest: every float must still be the full Newton polynomial's, rounded as
before (``_rounded(_newton(...), _whole(...))``), bit for bit, whatever the node values: constants, -0.0 and +0.0,
infinities, NaN, whole numbers, lengths outside the nodes (extrapolation), degree 1 (decode) and 2 (prefill)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from explorer.core.workload.context_plane import _interpolate, _newton, _rounded, _whole

SPECIAL = [0.0, -0.0, 1.0, -3.0, 7.5, 1e300, np.inf, -np.inf, np.nan, 4096.0, 2.0**53]


def _reference(xs, ys, at):
    return _rounded(_newton(xs, ys, at), _whole(ys, 1))


@st.composite
def cases(draw):
    deg = draw(st.sampled_from([1, 2]))
    f, rows = draw(st.integers(1, 5)), draw(st.integers(1, 6))
    first = np.array(draw(st.lists(st.sampled_from(SPECIAL) | st.floats(-1e6, 1e6) | st.integers(-10**6, 10**6)
                                   .map(float), min_size=f * rows, max_size=f * rows)))
    ys = np.repeat(first[None], deg + 1, axis=0)
    for k in range(1, deg + 1):  # some entries move (by whole or fractional steps, or to a special value)
        move = np.array(draw(st.lists(st.booleans(), min_size=f * rows, max_size=f * rows)))
        step = np.array(draw(st.lists(st.sampled_from(SPECIAL) | st.integers(-50, 50).map(float)
                                      | st.floats(-1e3, 1e3), min_size=f * rows, max_size=f * rows)))
        with np.errstate(all="ignore"):
            ys[k] = np.where(move, ys[k - 1] + step, ys[k - 1])
    x0 = draw(st.integers(1, 5000))
    gaps = draw(st.lists(st.integers(1, 300), min_size=deg, max_size=deg))
    xs = np.cumsum([x0, *gaps]).astype(float)
    at = np.array(sorted(draw(st.lists(st.integers(max(1, x0 - 50), int(xs[-1]) + 50), min_size=1, max_size=40))),
                  dtype=float)
    return xs, ys.reshape(deg + 1, f, rows), at


@settings(max_examples=300, deadline=None)
@given(cases())
def test_interpolating_only_the_moving_entries_gives_the_same_bits(case):
    xs, ys, at = case
    with np.errstate(all="ignore"):
        got = _interpolate(xs, ys, at)
        want = _reference(xs, ys, at)
    assert got.shape == want.shape
    got = np.ascontiguousarray(got)
    # the same bits, but for a NaN's sign and payload, which IEEE 754 leaves unspecified for an arithmetic result
    # (inf - inf, found by hypothesis: a NaN either way; never a model's number)
    nan = np.isnan(want)
    assert np.array_equal(np.isnan(got), nan)
    assert np.array_equal(got[~nan].view(np.int64), want[~nan].view(np.int64))


def test_a_constant_minus_zero_becomes_plus_zero_as_newton_makes_it():
    """-0.0 at both nodes: Newton gives -0.0 + 0.0 = +0.0 between and beyond them (at >= x0): not copied."""
    xs = np.array([10.0, 20.0])
    ys = np.array([[[-0.0, 5.0]], [[-0.0, 6.0]]])
    got = _interpolate(xs, ys, np.array([10.0, 15.0, 20.0]))
    assert not np.signbit(got[1, 0, 0]) and got[1, 0, 1] == 5.5
    assert np.array_equal(got.view(np.int64) if got.flags.c_contiguous else np.ascontiguousarray(got).view(np.int64),
                          _reference(xs, ys, np.array([10.0, 15.0, 20.0])).view(np.int64))


def test_the_result_is_a_view_of_a_length_major_block():
    """(A, F, L) as a view of (F, A, L): a block of consecutive lengths reshapes to columns (F, A x L) without a
    copy (what ``context_axis._from_numbers`` relies on)."""
    xs = np.array([1.0, 9.0])
    ys = np.arange(2 * 3 * 4, dtype=float).reshape(2, 3, 4)
    got = _interpolate(xs, ys, np.arange(1.0, 10.0))
    cols = got.transpose(1, 0, 2).reshape(3, 9 * 4)
    assert np.shares_memory(cols, got)
    assert got[4, 2, 3] == 11.0 + (4 * 12.0) / 8.0


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 30), st.integers(0, 6), st.data())
def test_the_regions_are_numpys_unique_rows_in_its_order(p, k, data):
    """``context_axis._regions``: the distinct rows of the sides and each point's region, as
    ``np.unique(axis=0, return_inverse=True)`` gives them (the order decides which region is solved first)."""
    from explorer.core.workload.context_axis import _regions

    sides = np.array(data.draw(st.lists(st.lists(st.booleans(), min_size=k, max_size=k), min_size=p, max_size=p)),
                     dtype=bool).reshape(p, k)
    keys, region = _regions(sides)
    want_keys, want_region = np.unique(sides, axis=0, return_inverse=True)
    assert np.array_equal(keys, want_keys) and keys.dtype == want_keys.dtype
    assert np.array_equal(region, want_region.reshape(-1))
