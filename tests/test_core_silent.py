"""Silent-group rates and DAPO's resampling (sigmaudit.core.silent)."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import binom

from sigmaudit.core.silent import (
    all_correct_rate,
    all_wrong_rate,
    dapo_expected_draws,
    dapo_groups_per_kept_group,
    dapo_keep_rate,
    silent_rate,
)

probs = st.floats(0.0, 1.0)
# scipy's binom.pmf overflows internally for p near the smallest normal float
binom_safe_probs = st.one_of(st.sampled_from([0.0, 1.0]), st.floats(1e-100, 1.0))
sizes = st.integers(1, 500)


@pytest.mark.parametrize("p", [Fraction(1, 2), Fraction(1, 4), Fraction(3, 8), Fraction(1, 64)])
@pytest.mark.parametrize("G", [1, 2, 3, 8, 16, 64])
def test_silent_rate_matches_exact_fraction(p: Fraction, G: int) -> None:
    # dyadic p are exact floats, so the only error is the float power
    exact_right, exact_wrong = p**G, (1 - p) ** G
    assert all_correct_rate(float(p), G) == pytest.approx(float(exact_right), rel=1e-14, abs=0.0)
    assert all_wrong_rate(float(p), G) == pytest.approx(float(exact_wrong), rel=1e-14, abs=0.0)
    assert silent_rate(float(p), G) == pytest.approx(float(exact_right + exact_wrong), rel=1e-14)


def test_silent_rate_reference_values() -> None:
    assert silent_rate(0.5, 8) == 2.0 / 256
    assert round(silent_rate(0.05, 8), 4) == 0.6634
    assert silent_rate(0.0, 8) == 1.0 and silent_rate(1.0, 8) == 1.0
    assert silent_rate(0.37, 1) == 1.0  # one answer always "agrees"


@settings(max_examples=200, deadline=None)
@given(binom_safe_probs, sizes)
def test_silent_rate_is_the_binomial_mass_at_zero_and_G(p: float, G: int) -> None:
    ref = binom.pmf(0, G, p) + binom.pmf(G, G, p)
    assert silent_rate(p, G) == pytest.approx(ref, rel=1e-10, abs=1e-300)
    assert silent_rate(p, G) == all_correct_rate(p, G) + all_wrong_rate(p, G)


@settings(max_examples=200, deadline=None)
@given(probs, sizes)
def test_silent_rate_is_a_rate_and_falls_with_G(p: float, G: int) -> None:
    s, s_next = silent_rate(p, G), silent_rate(p, G + 1)
    assert 0.0 <= s <= 1.0
    assert s_next <= s
    # the fewest silent groups are at p = 1/2: silent >= 2^(1 - G)
    assert s >= 2.0 ** (1 - G) * (1 - 1e-12)
    assert silent_rate(1.0 - p, G) == pytest.approx(s, rel=1e-9, abs=1e-300)


@settings(max_examples=100, deadline=None)
@given(st.lists(probs, min_size=1, max_size=50), st.integers(1, 64))
def test_corpus_rate_is_at_least_the_rate_at_the_mean_p(ps: list[float], G: int) -> None:
    """Jensen: p^G + (1 − p)^G is convex, so the mean over prompts >= the rate at the mean p."""
    mean_rate = float(np.mean(silent_rate(np.array(ps), G)))
    assert mean_rate >= silent_rate(float(np.mean(ps)), G) - 1e-12


@pytest.mark.parametrize(("p", "G"), [(0.05, 8), (0.5, 4), (0.8, 6), (0.3, 16)])
def test_silent_rate_monte_carlo(p: float, G: int) -> None:
    rng = np.random.default_rng(20260501)
    n_groups = 200_000
    k = rng.binomial(G, p, size=n_groups)
    s = silent_rate(p, G)
    se = math.sqrt(s * (1 - s) / n_groups)
    assert abs(np.mean((k == 0) | (k == G)) - s) < 5 * se  # 5 SE: a false alarm ~1 in 1.7 million
    assert abs(np.mean(k == G) - all_correct_rate(p, G)) < 5 * math.sqrt(p**G * (1 - p**G) / n_groups) + 1e-12


def test_vectorised_shapes_and_scalar_type() -> None:
    out = silent_rate(np.array([[0.1], [0.5]]), np.array([1, 2, 4]))
    assert out.shape == (2, 3)
    np.testing.assert_allclose(out[1], [1.0, 0.5, 0.125], rtol=1e-15)
    assert isinstance(silent_rate(0.2, 3), float)


# ---- DAPO dynamic sampling -------------------------------------------------------------------


def test_groups_per_kept_group_is_nan_exactly_at_p_0_and_1() -> None:
    out = dapo_groups_per_kept_group(np.array([0.0, 1.0, 0.5, 0.05]), 8)
    assert np.isnan(out[0]) and np.isnan(out[1])
    np.testing.assert_allclose(out[2:], 1 / (1 - silent_rate(np.array([0.5, 0.05]), 8)), rtol=1e-12)
    assert math.isnan(dapo_groups_per_kept_group(0.0, 4))
    assert dapo_groups_per_kept_group(0.5, 2) == 2.0


@settings(max_examples=200, deadline=None)
@given(st.floats(1e-12, 1 - 1e-9), st.integers(2, 200))
def test_groups_per_kept_group_is_finite_and_exact_inside(p: float, G: int) -> None:
    out = dapo_groups_per_kept_group(p, G)
    assert math.isfinite(out) and out >= 1.0
    # exact reference: 1 − p^G − (1 − p)^G in rational arithmetic on the float p
    fp = Fraction(p)
    kept = 1 - fp**G - (1 - fp) ** G
    assert out == pytest.approx(float(1 / kept), rel=1e-9)


def test_groups_per_kept_group_tiny_p_is_not_nan() -> None:
    # 1 − silent(1e-17, 8) rounds to 0 in the naive form; the true value is ~8e-17
    assert dapo_groups_per_kept_group(1e-17, 8) == pytest.approx(1 / 8e-17, rel=1e-12)
    assert dapo_keep_rate(1e-17, 8, 3) == pytest.approx(3 * 8e-17, rel=1e-12)


@pytest.mark.parametrize(("p", "G", "m"), [(0.05, 8, 1), (0.05, 8, 3), (0.5, 2, 4), (0.9, 16, 2)])
def test_capped_draws_closed_forms(p: float, G: int, m: int) -> None:
    s = Fraction(silent_rate(p, G))
    expected_draws = sum(s**j for j in range(m))  # draw j+1 happens iff the first j were silent
    assert dapo_expected_draws(p, G, m) == pytest.approx(float(expected_draws), rel=1e-12)
    assert dapo_keep_rate(p, G, m) == pytest.approx(float(1 - s**m), rel=1e-12)
    # drawn per kept is the same with a cap: E[draws] / P(kept) = 1 / (1 − s)
    ratio = dapo_expected_draws(p, G, m) / dapo_keep_rate(p, G, m)
    assert ratio == pytest.approx(dapo_groups_per_kept_group(p, G), rel=1e-12)


def test_capped_draws_at_p_0_and_1_use_every_try() -> None:
    np.testing.assert_array_equal(dapo_expected_draws([0.0, 1.0], 8, 5), [5.0, 5.0])
    np.testing.assert_array_equal(dapo_keep_rate([0.0, 1.0], 8, 5), [0.0, 0.0])


def test_unlimited_retries_limit() -> None:
    assert dapo_expected_draws(0.05, 8, 10_000) == pytest.approx(
        dapo_groups_per_kept_group(0.05, 8), rel=1e-12
    )


@pytest.mark.parametrize(("p", "G", "m"), [(0.05, 8, 3), (0.1, 4, 5), (0.5, 3, 2), (0.97, 8, 4)])
def test_capped_draws_monte_carlo(p: float, G: int, m: int) -> None:
    """Simulate DAPO: draw groups of G until one is not silent or m groups were drawn."""
    rng = np.random.default_rng(7 + m)
    n_prompts = 100_000
    draws = np.zeros(n_prompts, dtype=np.int64)
    kept = np.zeros(n_prompts, dtype=bool)
    for _ in range(m):
        active = ~kept
        draws[active] += 1
        k = rng.binomial(G, p, size=int(active.sum()))
        kept[np.flatnonzero(active)[(k > 0) & (k < G)]] = True
    mean_draws, keep_rate = draws.mean(), kept.mean()
    se_draws = draws.std(ddof=1) / math.sqrt(n_prompts)
    se_keep = math.sqrt(keep_rate * (1 - keep_rate) / n_prompts)
    assert abs(mean_draws - dapo_expected_draws(p, G, m)) < 5 * se_draws + 1e-12
    assert abs(keep_rate - dapo_keep_rate(p, G, m)) < 5 * se_keep + 1e-12
