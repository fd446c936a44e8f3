"""Corpus-level priors over p: grid prior by EM, Beta prior by beta-binomial ML (sigmaudit.core.prior)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.special import betaln, comb

from sigmaudit.core.prior import (
    GRID_SIZE,
    BetaPrior,
    default_grid,
    distinct_pairs,
    fit_beta_prior,
    fit_grid_prior,
)


def simulate(seed: int, n_prompts: int, w0: float, w1: float, a: float, b: float, n: int = 8):
    """True p (never-solved w0, always-solved w1, Beta(a, b) otherwise) and k ~ Binom(n, p)."""
    rng = np.random.default_rng(seed)
    kind = rng.choice(3, size=n_prompts, p=[w0, w1, 1 - w0 - w1])
    p = np.where(kind == 0, 0.0, np.where(kind == 1, 1.0, rng.beta(a, b, n_prompts)))
    return p, rng.binomial(n, p)


def marginal_log_lik(n, k, counts, grid, weights) -> float:
    """Σ_i c_i log Σ_m w_m p_m^k (1 − p_m)^(n − k), written out directly."""
    total = 0.0
    for ni, ki, ci in zip(n, k, counts, strict=True):
        lik = np.where(grid == 0, float(ki == 0), 1.0) * np.where(grid == 1, float(ki == ni), 1.0)
        inner = (grid > 0) & (grid < 1)
        lik[inner] = grid[inner] ** ki * (1 - grid[inner]) ** (ni - ki)
        total += ci * math.log(float(weights @ lik))
    return total


def test_default_grid() -> None:
    g = default_grid()
    assert g.size == GRID_SIZE
    assert g[0] == 0.0 and g[-1] == 1.0
    assert np.all(np.diff(g) > 0)
    # uniform in arcsin(sqrt p): denser at the ends than in the middle
    assert g[1] - g[0] < g[GRID_SIZE // 2 + 1] - g[GRID_SIZE // 2]
    np.testing.assert_allclose(np.diff(np.arcsin(np.sqrt(g))), np.pi / 2 / (GRID_SIZE - 1), rtol=1e-9)


@pytest.mark.parametrize("size", [2, 3, 4, 41, 400, 401, 2001])
def test_default_grid_is_mirror_symmetric_to_the_bit(size: int) -> None:
    """grid[size − 1 − i] == 1 − grid[i] exactly, so sigma_on_grid evaluates E[σ] once per mirror pair."""
    g = default_grid(size)
    assert np.array_equal(g[::-1], 1.0 - g)
    assert np.all(np.diff(g) > 0) and g[0] == 0.0 and g[-1] == 1.0
    np.testing.assert_allclose(np.diff(np.arcsin(np.sqrt(g))), np.pi / 2 / (size - 1), rtol=1e-9)


def test_distinct_pairs_round_trip() -> None:
    n = np.array([8, 8, 4, 8, 4, 8])
    k = np.array([0, 3, 4, 0, 4, 8])
    n_u, k_u, c_u, inverse = distinct_pairs(n, k)
    np.testing.assert_array_equal(n_u[inverse], n)
    np.testing.assert_array_equal(k_u[inverse], k)
    assert c_u.sum() == 6
    assert len(set(zip(n_u.tolist(), k_u.tolist(), strict=True))) == n_u.size == 4
    assert c_u[(n_u == 8) & (k_u == 0)][0] == 2


def _distinct_rows(n, k):
    """The reference: np.unique of the (n, k) rows (what distinct_pairs computed before its integer keys)."""
    pairs = np.stack([np.ravel(n), np.ravel(k)], axis=1).astype(np.int64)
    uniq, inverse, counts = np.unique(pairs, axis=0, return_inverse=True, return_counts=True)
    return uniq[:, 0], uniq[:, 1], counts.astype(np.float64), inverse.ravel()


@given(st.lists(st.tuples(st.sampled_from([1, 2, 8, 16, 255, 256, 5000, 3_037_000_498, 3_037_000_499, 2**40]),
                          st.floats(0, 1)), min_size=1, max_size=60))
@settings(max_examples=300, deadline=None)
def test_distinct_pairs_matches_unique_of_the_rows(groups) -> None:
    """Integer keys (bincount for a small span, np.unique of the keys, the rows past int64's keys) give
    np.unique's arrays of the (n, k) rows: same pairs, order, multiplicities, inverse, dtypes."""
    n = np.array([g for g, _ in groups], dtype=np.int64)
    k = np.array([int(g * f) for g, f in groups], dtype=np.int64)
    got, want = distinct_pairs(n, k), _distinct_rows(n, k)
    for a, b in zip(got, want, strict=True):
        assert a.dtype == b.dtype
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize(("size", "top"), [(200_000, 16), (5_000, 4_000)])
def test_distinct_pairs_on_many_groups_both_tallies(size: int, top: int) -> None:
    """A log's many groups of a few sizes (bincount's table) and scattered sizes (np.unique of the keys)."""
    rng = np.random.default_rng(size)
    n = rng.integers(1, top + 1, size)
    k = rng.integers(0, n + 1)
    for a, b in zip(distinct_pairs(n, k), _distinct_rows(n, k), strict=True):
        np.testing.assert_array_equal(a, b)


@pytest.fixture(scope="module")
def mixed_counts():
    _, k = simulate(11, 3000, 0.2, 0.1, 0.5, 0.5)
    return distinct_pairs(np.full(k.size, 8), k)[:3]


def test_grid_prior_weights_and_likelihood(mixed_counts) -> None:
    n_u, k_u, c_u = mixed_counts
    prior = fit_grid_prior(n_u, k_u, c_u)
    assert np.all(prior.weights >= 0)
    assert prior.weights.sum() == pytest.approx(1.0, rel=1e-12)
    assert prior.iterations >= 1 and prior.iterations <= 3000
    ref = marginal_log_lik(n_u, k_u, c_u, prior.grid, prior.weights)
    assert prior.log_likelihood == pytest.approx(ref, rel=1e-10)
    # mass near the ends follows the never/always-solved prompts: 0.2 + 0.7·P(Beta(½,½) < 0.02)
    # ≈ 0.26 below 0.02 and 0.1 + 0.063 ≈ 0.16 above 0.98 (how EM splits it between p = 0 and
    # the grid points next to it is not identified by 8 samples, so only the sums are checked)
    assert prior.weights[prior.grid < 0.02].sum() == pytest.approx(0.263, abs=0.03)
    assert prior.weights[prior.grid > 0.98].sum() == pytest.approx(0.163, abs=0.03)


def test_em_log_likelihood_never_decreases(mixed_counts) -> None:
    n_u, k_u, c_u = mixed_counts
    lls = [
        fit_grid_prior(n_u, k_u, c_u, max_iter=m, tol=-np.inf).log_likelihood
        for m in (1, 2, 3, 5, 10, 30, 100, 300)
    ]
    assert np.all(np.diff(lls) >= -1e-9 * abs(lls[0]))
    assert lls[-1] > lls[0]
    # the default stopping rule lands between a short run and a much longer one
    default = fit_grid_prior(n_u, k_u, c_u)
    longer = fit_grid_prior(n_u, k_u, c_u, max_iter=default.iterations + 2000, tol=-np.inf)
    assert lls[0] < default.log_likelihood <= longer.log_likelihood + 1e-9


def test_weights_argument_equals_expanded_input() -> None:
    n, k = np.array([8, 8, 8, 8, 4]), np.array([0, 0, 3, 8, 2])
    expanded = fit_grid_prior(n, k)
    n_u, k_u, c_u, _ = distinct_pairs(n, k)
    grouped = fit_grid_prior(n_u, k_u, c_u)
    np.testing.assert_allclose(grouped.weights, expanded.weights, rtol=1e-12, atol=1e-15)
    assert grouped.log_likelihood == pytest.approx(expanded.log_likelihood, rel=1e-12)


def test_all_never_solved_puts_mass_near_zero() -> None:
    prior = fit_grid_prior(np.full(100, 8), np.zeros(100, dtype=int))
    assert prior.weights[prior.grid < 0.05].sum() > 0.99
    post = prior.posterior([8], [0])
    assert post.shape == (1, prior.grid.size)
    assert post.sum() == pytest.approx(1.0, rel=1e-12)


def test_posterior_is_bayes_rule() -> None:
    prior = fit_grid_prior([8, 8, 8], [1, 4, 7], grid=np.linspace(0, 1, 11))
    post = prior.posterior([8, 5], [2, 5])
    for row, (n, k) in zip(post, [(8, 2), (5, 5)], strict=True):
        ref = prior.weights * comb(n, k) * prior.grid**k * (1 - prior.grid) ** (n - k)
        np.testing.assert_allclose(row, ref / ref.sum(), rtol=1e-10, atol=1e-300)
    assert post[1, 0] == 0.0  # 5 of 5 right rules out p = 0


def test_empty_input_is_rejected() -> None:
    with pytest.raises(ValueError, match="zero prompts"):
        fit_grid_prior(np.array([], dtype=int), np.array([], dtype=int))


def _beta_binomial_ll(a: float, b: float, n, k) -> float:
    return float(np.sum(betaln(a + k, b + n - k) - betaln(a, b)))


def test_beta_prior_is_the_likelihood_maximum() -> None:
    _, k = simulate(5, 20_000, 0.0, 0.0, 2.0, 5.0)
    n = np.full(k.size, 8)
    prior = fit_beta_prior(n, k)
    assert prior.log_likelihood == pytest.approx(_beta_binomial_ll(prior.a, prior.b, n, k), rel=1e-12)
    for da, db in [(1.01, 1.0), (0.99, 1.0), (1.0, 1.01), (1.0, 0.99), (1.01, 1.01), (0.99, 0.99)]:
        assert _beta_binomial_ll(prior.a * da, prior.b * db, n, k) <= prior.log_likelihood + 1e-9
    # with 20,000 prompts the ML estimate of (a, b) = (2, 5) has ~3% standard error; allow 15%
    assert prior.a == pytest.approx(2.0, rel=0.15)
    assert prior.b == pytest.approx(5.0, rel=0.15)


def test_beta_prior_branches() -> None:
    prior = BetaPrior(a=2.0, b=3.0, log_likelihood=0.0)
    right, wrong = prior.branch_rates([8, 8], [0, 8], 4)
    np.testing.assert_allclose(prior.silent_rate([8, 8], [0, 8], 4), right + wrong, rtol=1e-15)
    # Beta(2, 11) after 0 of 8: E[p^4] = B(6, 11) / B(2, 11)
    assert right[0] == pytest.approx(math.exp(betaln(6, 11) - betaln(2, 11)), rel=1e-12)
    assert wrong[1] == pytest.approx(math.exp(betaln(10, 7) - betaln(10, 3)), rel=1e-12)
