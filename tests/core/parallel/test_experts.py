"""The expected maximum expert-group load against a Monte Carlo of the same routing."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from explorer.core.parallel import experts
from explorer.core.parallel.experts import expected_max_load, imbalance


@pytest.mark.parametrize("n, ep", [(2, 8), (16, 8), (64, 8), (300, 32), (512, 8), (2000, 8), (4096, 64)])
def test_expected_max_against_monte_carlo_of_the_multinomial(n, ep):
    rng = np.random.default_rng(20261125)
    loads = rng.multinomial(n, [1 / ep] * ep, size=200_000).max(axis=1)
    mc, se = loads.mean(), loads.std() / np.sqrt(len(loads))
    assert expected_max_load(n, ep) == pytest.approx(mc, abs=max(5 * se, 0.002 * mc))


def test_skewed_routing_against_monte_carlo():
    rng = np.random.default_rng(7)
    for n, ep, skew in ((64, 8, 0.5), (256, 8, 1.0), (1000, 8, 0.25)):
        shares = experts._shares(ep, skew)
        assert shares.sum() == pytest.approx(1.0) and shares[0] == pytest.approx((1 + skew) / ep)
        mc = rng.multinomial(n, shares, size=200_000).max(axis=1).mean()
        assert expected_max_load(n, ep, skew) == pytest.approx(mc, rel=0.003)


def test_real_top_k_routing_is_close_to_the_stated_model():
    """Mixtral-like: 8 experts, top-2 (distinct), 8 devices of one expert each, 64 tokens. The multinomial model
    treats the 128 assignments as independent; real top-k routing draws two distinct experts per token."""
    rng = np.random.default_rng(3)
    picks = np.argsort(rng.random((50_000, 64, 8)), axis=2)[:, :, :2]  # each token: 2 distinct of 8
    loads = np.stack([(picks == e).sum(axis=(1, 2)) for e in range(8)], axis=1).max(axis=1)
    model = expected_max_load(128, 8)
    assert model == pytest.approx(loads.mean(), rel=0.03)
    assert model >= loads.mean() - 0.05  # distinct picks spread slightly more evenly: the model is not optimistic


def test_exact_and_approximation_meet_at_the_limit():
    n = experts.EXACT_LIMIT
    exact, approx = expected_max_load(n, 8), experts._normal(n, experts._classes(experts._shares(8, 0.0)))
    assert approx == pytest.approx(exact, rel=1e-3)
    assert expected_max_load(n + 1, 8) >= exact


def test_one_token_on_eight_devices_by_hand():
    # one token, top-2 of 8 experts on 8 devices: two assignments; max load is 2 with probability 1/8, else 1
    assert expected_max_load(2, 8) == pytest.approx(1 + 1 / 8, abs=1e-9)
    assert imbalance(1, 2, 8) == pytest.approx(1.125 / (2 / 8))


@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 3000), ep=st.sampled_from([2, 4, 8, 16, 64]), skew=st.sampled_from([0.0, 0.3, 1.0]))
def test_invariants(n, ep, skew):
    e = expected_max_load(n, ep, skew)
    assert n / ep - 1e-9 <= e <= n + 1e-9
    assert expected_max_load(n + 1, ep, skew) >= e - 1e-6  # more tokens never lower the busiest load
    assert imbalance(n, 1, ep, skew) >= 1.0
    assert expected_max_load(n, ep, skew + 0.5) >= e - 1e-6  # more skew never helps
