"""Silent-rate estimates from finite logs: plug-in, unbiased, model-based (sigmaudit.core.estimators)."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.integrate import quad
from scipy.special import betaln
from scipy.stats import binom

from sigmaudit.core.estimators import (
    ESTIMATORS,
    SilentEstimate,
    silent_bayes,
    silent_estimate,
    silent_plugin,
    silent_unbiased,
)
from sigmaudit.core.prior import BetaPrior, GridPrior, default_grid, fit_grid_prior
from sigmaudit.core.silent import silent_rate


def enumerate_subsets(n: int, k: int, G: int) -> tuple[Fraction, Fraction]:
    """Share of the G-subsets of a log with k right of n that are all right / all wrong."""
    log = [1] * k + [0] * (n - k)
    right = wrong = total = 0
    for subset in itertools.combinations(range(n), G):
        votes = {log[i] for i in subset}
        right += votes == {1}
        wrong += votes == {0}
        total += 1
    return Fraction(right, total), Fraction(wrong, total)


@pytest.mark.parametrize("n", range(1, 11))
def test_unbiased_equals_exhaustive_enumeration(n: int) -> None:
    for G in range(1, n + 1):
        ks = np.arange(n + 1)
        est = silent_unbiased(np.full(n + 1, n), ks, G)
        for k in range(n + 1):
            right, wrong = enumerate_subsets(n, k, G)
            assert est.all_correct[k] == pytest.approx(float(right), rel=1e-12, abs=1e-15)
            assert est.all_wrong[k] == pytest.approx(float(wrong), rel=1e-12, abs=1e-15)


@pytest.mark.parametrize("p", [Fraction(1, 2), Fraction(1, 10), Fraction(2, 3), Fraction(97, 100)])
@pytest.mark.parametrize(("n", "G"), [(1, 1), (4, 2), (8, 8), (8, 3), (12, 5), (20, 16)])
def test_unbiased_is_unbiased_exactly(p: Fraction, n: int, G: int) -> None:
    """E over k ~ Binom(n, p) of [C(k,G) + C(n−k,G)] / C(n,G) is silent(p, G), in exact rationals."""
    exact = sum(
        math.comb(n, k) * p**k * (1 - p) ** (n - k) * Fraction(math.comb(k, G) + math.comb(n - k, G), math.comb(n, G))
        for k in range(n + 1)
    )
    assert exact == p**G + (1 - p) ** G
    # and the module's floating-point estimate averages to the same
    ks = np.arange(n + 1)
    est = silent_unbiased(np.full(n + 1, n), ks, G).silent
    mean = float(np.sum(binom.pmf(ks, n, float(p)) * est))
    assert mean == pytest.approx(silent_rate(float(p), G), rel=1e-12)


def test_unbiased_large_n_is_stable() -> None:
    # C(k, G)/C(n, G) via log-gamma for n far beyond exact float factorials
    n, k, G = 5000, 1234, 40
    right = math.prod(Fraction(k - i, n - i) for i in range(G))
    wrong = math.prod(Fraction(n - k - i, n - i) for i in range(G))
    est = silent_unbiased(n, k, G)
    assert est.all_correct[()] == pytest.approx(float(right), rel=1e-9)
    assert est.all_wrong[()] == pytest.approx(float(wrong), rel=1e-9)


def test_unbiased_is_nan_where_n_below_G() -> None:
    est = silent_unbiased([4, 8, 16], [2, 0, 16], 8)
    assert np.isnan(est.silent[0])
    assert est.silent[1] == 1.0 and est.all_wrong[1] == 1.0 and est.all_correct[1] == 0.0
    assert est.silent[2] == 1.0


def test_plugin_matches_formula_and_is_biased() -> None:
    n, k = np.array([8, 8, 10, 3]), np.array([0, 3, 5, 3])
    G = 16
    est = silent_plugin(n, k, G)
    p_hat = k / n
    np.testing.assert_allclose(est.all_correct, p_hat**G, rtol=1e-15)
    np.testing.assert_allclose(est.all_wrong, (1 - p_hat) ** G, rtol=1e-15)
    np.testing.assert_allclose(est.silent, silent_rate(p_hat, G), rtol=1e-15)
    # p̂ = 0 from 8 samples reads as "always silent"; the exact mean of the plug-in is biased
    p = 0.3
    ks = np.arange(9)
    mean_plugin = float(np.sum(binom.pmf(ks, 8, p) * silent_plugin(np.full(9, 8), ks, G).silent))
    assert mean_plugin - silent_rate(p, G) > 0.05


def _beta_posterior_quad(a: float, b: float, n: int, k: int, G: int) -> tuple[float, float]:
    """E[p^G | k, n] and E[(1 − p)^G | k, n] under Beta(a, b), by numerical integration."""
    a1, b1 = a + k, b + n - k
    log_norm = betaln(a1, b1)

    def dens(p: float) -> float:
        return math.exp((a1 - 1) * math.log(p) + (b1 - 1) * math.log1p(-p) - log_norm)

    opts = {"epsabs": 0.0, "epsrel": 1e-11, "limit": 200}
    right = quad(lambda p: p**G * dens(p), 0.0, 1.0, **opts)[0]
    wrong = quad(lambda p: (1 - p) ** G * dens(p), 0.0, 1.0, **opts)[0]
    return right, wrong


@pytest.mark.parametrize(
    ("a", "b", "n", "k", "G"),
    [
        (1.0, 1.0, 8, 0, 16),
        (2.0, 5.0, 8, 3, 8),
        (0.7, 0.4, 4, 4, 32),
        (3.5, 1.2, 16, 9, 4),
        (1.5, 2.5, 1, 0, 1),
        (5.0, 5.0, 20, 10, 64),
    ],
)
def test_bayes_beta_prior_matches_numerical_integration(a, b, n, k, G) -> None:
    prior = BetaPrior(a=a, b=b, log_likelihood=0.0)
    right, wrong = _beta_posterior_quad(a, b, n, k, G)
    est = silent_bayes(n, k, G, prior)
    assert est.all_correct[()] == pytest.approx(right, rel=1e-8)
    assert est.all_wrong[()] == pytest.approx(wrong, rel=1e-8)
    closed = (
        math.exp(betaln(a + k + G, b + n - k) - betaln(a + k, b + n - k))
        + math.exp(betaln(a + k, b + n - k + G) - betaln(a + k, b + n - k))
    )
    assert prior.silent_rate(n, k, G)[()] == pytest.approx(closed, rel=1e-12)


def test_bayes_grid_prior_is_the_posterior_mean_on_the_grid() -> None:
    grid = np.array([0.0, 0.2, 0.5, 0.9, 1.0])
    weights = np.array([0.3, 0.1, 0.2, 0.1, 0.3])
    prior = GridPrior(grid=grid, weights=weights, iterations=0, log_likelihood=0.0)
    n, k, G = np.array([4, 4, 4]), np.array([0, 2, 4]), 6
    est = silent_bayes(n, k, G, prior)
    for i in range(3):
        post = weights * grid ** k[i] * (1 - grid) ** (n[i] - k[i])
        post /= post.sum()
        assert est.all_correct[i] == pytest.approx(post @ grid**G, rel=1e-12)
        assert est.all_wrong[i] == pytest.approx(post @ (1 - grid) ** G, rel=1e-12)
    # k = 0 of 4 cannot come from p = 1, so all-correct gets only the p = 0.2, 0.5, 0.9 mass
    assert est.all_correct[0] < 0.01


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 30), st.data(), st.integers(1, 50))
def test_every_estimate_is_a_rate(n: int, data, G: int) -> None:
    k = data.draw(st.integers(0, n))
    prior = fit_grid_prior([n, n, n], [0, k, n], grid=default_grid(41))
    for name in ESTIMATORS:
        est = silent_estimate(n, k, G, name, prior)
        assert isinstance(est, SilentEstimate)
        s = est.silent[()]
        if name == "unbiased" and n < G:
            assert np.isnan(s)
            continue
        assert -1e-12 <= est.all_correct[()] <= 1 + 1e-12
        assert -1e-12 <= est.all_wrong[()] <= 1 + 1e-12
        assert -1e-12 <= s <= 1 + 1e-12


def test_dispatch_by_name() -> None:
    prior = BetaPrior(2.0, 3.0, 0.0)
    n, k = np.array([8, 8]), np.array([1, 7])
    np.testing.assert_array_equal(silent_estimate(n, k, 4, "plugin").silent, silent_plugin(n, k, 4).silent)
    np.testing.assert_array_equal(silent_estimate(n, k, 4, "unbiased").silent, silent_unbiased(n, k, 4).silent)
    np.testing.assert_array_equal(
        silent_estimate(n, k, 4, "bayes", prior).silent, silent_bayes(n, k, 4, prior).silent
    )
    with pytest.raises(ValueError, match="prior"):
        silent_estimate(n, k, 4, "bayes")
    with pytest.raises(ValueError, match="'mle'"):
        silent_estimate(n, k, 4, "mle")  # type: ignore[arg-type]


def test_G_must_be_a_single_number() -> None:
    with pytest.raises(ValueError, match="single"):
        silent_plugin([8], [3], [4, 8])
