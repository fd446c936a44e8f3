"""sigmaudit.core.forecast against brute force, exact fractions, Monte Carlo and hypothesis properties."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sigmaudit.core.forecast import (
    avoided_at_lost,
    brier,
    calibration,
    calibration_error,
    fit_recalibration,
    greso_skip_probability,
    log_loss,
    recalibrate,
    silent_forecast,
    tradeoff,
    visit_history,
)
from sigmaudit.core.prior import GridPrior

# a small rational prior with point masses at 0 and 1 (exact arithmetic possible)
GRID = [Fraction(0), Fraction(1, 10), Fraction(1, 4), Fraction(1, 2), Fraction(4, 5), Fraction(1)]
WEIGHTS = [Fraction(2, 10), Fraction(1, 10), Fraction(2, 10), Fraction(2, 10), Fraction(2, 10), Fraction(1, 10)]
PRIOR = GridPrior(np.array([float(g) for g in GRID]), np.array([float(w) for w in WEIGHTS]), 0, 0.0)


def exact_predictive(n: int, k: int, G: int) -> tuple[Fraction, Fraction]:
    """(P(all wrong), P(all correct)) of G further answers after k right of n, by exact sums."""
    like = [w * g**k * (1 - g) ** (n - k) for g, w in zip(GRID, WEIGHTS, strict=True)]
    z = sum(like)
    aw = sum(L * (1 - g) ** G for L, g in zip(like, GRID, strict=True)) / z
    ac = sum(L * g**G for L, g in zip(like, GRID, strict=True)) / z
    return aw, ac


@pytest.mark.parametrize(("n", "k", "G"), [(0, 0, 1), (0, 0, 8), (4, 0, 4), (4, 4, 8), (8, 3, 8), (16, 1, 2),
                                           (5, 5, 1), (10, 9, 16)])
def test_predictive_equals_exact_sums(n: int, k: int, G: int) -> None:
    f = silent_forecast([n], [k], PRIOR, G)
    aw, ac = exact_predictive(n, k, G)
    assert f.all_wrong[0] == pytest.approx(float(aw), rel=1e-12, abs=1e-15)
    assert f.all_correct[0] == pytest.approx(float(ac), rel=1e-12, abs=1e-15)
    assert f.silent[0] == pytest.approx(float(aw + ac), rel=1e-12, abs=1e-15)


def test_predictive_matches_monte_carlo() -> None:
    """Draw p from the prior, k of n, then G more; among draws with the logged k the share of silent
    continuations matches the posterior predictive (6 sigma)."""
    rng = np.random.default_rng(7)
    m, n, G = 2_000_000, 6, 4
    p = rng.choice(PRIOR.grid, size=m, p=PRIOR.weights)
    k = rng.binomial(n, p)
    more = rng.binomial(G, p)
    for kk in (0, 2, 6):
        sel = k == kk
        observed = float(((more[sel] == 0) | (more[sel] == G)).mean())
        predicted = float(silent_forecast([n], [kk], PRIOR, G).silent[0])
        se = np.sqrt(predicted * (1 - predicted) / sel.sum())
        assert abs(observed - predicted) < 6 * se


def test_fractional_counts_are_a_power_likelihood() -> None:
    """Half the counts (weights 1/2) give the posterior ∝ prior · (p^k (1-p)^(n-k))^(1/2)."""
    f = silent_forecast([3.0], [1.0], PRIOR, 2)
    g, w = PRIOR.grid, PRIOR.weights
    post = w * np.sqrt(g**2 * (1 - g) ** 4)
    post /= post.sum()
    assert f.all_correct[0] == pytest.approx(float(post @ g**2), rel=1e-12)
    assert f.p_mean[0] == pytest.approx(float(post @ g), rel=1e-12)


def test_visit_history_against_brute_force() -> None:
    rng = np.random.default_rng(3)
    rows = []
    for prompt in range(40):
        steps = np.sort(rng.choice(np.arange(1, 60), size=rng.integers(1, 12), replace=False))
        for s in steps:
            n = int(rng.integers(1, 9))
            rows.append((prompt, int(s), n, int(rng.integers(0, n + 1))))
    p, s, n, k = (np.array(c) for c in zip(*rows, strict=True))
    hls = [0.7, 3.0, float("inf")]
    h = visit_history(p, s, n, k, hls)
    for i in range(p.size):
        earlier = [j for j in range(p.size) if p[j] == p[i] and s[j] < s[i]]
        for a, hl in enumerate(hls):
            w = [0.5 ** ((s[i] - s[j]) / hl) for j in earlier]
            assert h.n_eff[a, i] == pytest.approx(sum(wj * n[j] for wj, j in zip(w, earlier, strict=True)), rel=1e-12)
            assert h.k_eff[a, i] == pytest.approx(sum(wj * k[j] for wj, j in zip(w, earlier, strict=True)), rel=1e-12)
        assert h.visits_before[i] == len(earlier)
        assert h.last_step[i] == s[earlier[-1]] if earlier else np.isnan(h.last_step[i])
        streak_c = streak_w = 0
        for j in reversed(earlier):
            if k[j] != n[j]:
                break
            streak_c += 1
        for j in reversed(earlier):
            if k[j] != 0:
                break
            streak_w += 1
        assert (h.streak_correct[i], h.streak_wrong[i]) == (streak_c, streak_w)


def test_visit_history_rejects_unsorted() -> None:
    with pytest.raises(ValueError, match="sorted"):
        visit_history([0, 0], [2, 1], [4, 4], [1, 1], [1.0])
    with pytest.raises(ValueError, match="half-lives"):
        visit_history([0], [1], [4], [1], [0.0])


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(st.floats(0, 50), st.floats(0, 1)), min_size=1, max_size=8),
    st.lists(st.floats(0.01, 1.0), min_size=6, max_size=6),
    st.integers(1, 64),
)
def test_probabilities_are_probabilities(counts, weights, G) -> None:
    N = np.array([c[0] for c in counts])
    K = N * np.array([c[1] for c in counts])
    w = np.array(weights) / np.sum(weights)
    prior = GridPrior(PRIOR.grid, w, 0, 0.0)
    f = silent_forecast(N, K, prior, G)
    for x in (f.all_wrong, f.all_correct, f.silent, f.p_mean):
        assert np.all((x >= -1e-12) & (x <= 1 + 1e-12))
    np.testing.assert_allclose(f.silent, f.all_wrong + f.all_correct, rtol=0, atol=1e-15)
    more = silent_forecast(N, K, prior, G + 1)
    assert np.all(more.silent <= f.silent + 1e-12)  # a larger group is never more likely silent


def test_greso_rule_follows_the_paper() -> None:
    # skip chance 1 − max(p^z, 0.01) for a streak z of one kind, 0 without a streak
    q = greso_skip_probability([0, 1, 2, 3, 0, 0, 0], [0, 0, 0, 0, 1, 2, 9], 0.5, 0.8)
    expected = [0.0, 0.5, 0.75, 0.875, 0.2, 1 - 0.64, 1 - max(0.8**9, 0.01)]
    np.testing.assert_allclose(q, expected, rtol=0, atol=1e-15)
    assert greso_skip_probability([40], [0], 0.5, 0.5)[0] == pytest.approx(0.99)  # the exploration floor
    z = np.arange(0, 30)
    assert np.all(np.diff(greso_skip_probability(z, np.zeros_like(z), 0.7, 0.7)) >= 0)


def test_scores_against_hand_values() -> None:
    f, y = np.array([0.9, 0.2, 0.5]), np.array([1.0, 0.0, 1.0])
    assert brier(f, y) == pytest.approx((0.01 + 0.04 + 0.25) / 3)
    assert log_loss(f, y) == pytest.approx(-(np.log(0.9) + np.log(0.8) + np.log(0.5)) / 3)
    table = calibration(np.array([0.05, 0.07, 0.95, 1.0]), np.array([0.0, 1.0, 1.0, 1.0]))
    assert [c.n for c in table] == [2, 0, 0, 0, 0, 0, 0, 0, 0, 2]
    assert table[0].predicted == pytest.approx(0.06) and table[0].observed == pytest.approx(0.5)
    assert calibration_error(table) == pytest.approx((2 * 0.44 + 2 * 0.025) / 4)
    assert tradeoff([1, 0, 0.5], [1, 0, 0]) == (1.0, pytest.approx(0.25))


def test_avoided_at_lost_is_the_best_threshold() -> None:
    rng = np.random.default_rng(1)
    f = np.round(rng.random(300), 2)  # ties
    y = (rng.random(300) < f).astype(float)
    for max_lost in (0.0, 0.05, 0.2, 1.0):
        best = 0.0
        for t in np.unique(f):
            avoided, lost = tradeoff(f >= t, y)
            if lost <= max_lost + 1e-12:
                best = max(best, avoided)
        assert avoided_at_lost(f, y, max_lost) == pytest.approx(best)


def test_recalibration_recovers_a_known_distortion() -> None:
    rng = np.random.default_rng(5)
    f = rng.uniform(0.02, 0.98, 40_000)
    skew = rng.uniform(-1, 1, f.size)
    truth = recalibrate(f, skew, [1.5, 0.3, -0.4])
    y = (rng.random(f.size) < truth).astype(float)
    coef = fit_recalibration(f, skew, y, ridge=1.0)
    np.testing.assert_allclose(coef, [1.5, 0.3, -0.4], atol=0.08)
    calibrated = (rng.random(f.size) < f).astype(float)
    np.testing.assert_allclose(fit_recalibration(f, skew, calibrated), [1.0, 0.0, 0.0], atol=0.06)


def _recal_rows(seed: int, size: int, coef) -> tuple[np.ndarray, np.ndarray]:
    from sigmaudit.core.forecast import recal_features

    rng = np.random.default_rng(seed)
    f, skew = rng.uniform(0.02, 0.98, size), rng.uniform(-1, 1, size)
    return recal_features(f, skew), (rng.random(size) < recalibrate(f, skew, coef)).astype(float)


def test_the_recalibration_update_is_the_full_refit_to_second_order() -> None:
    """Issue 45 item 2: the online recalibration adds the groups of the steps since its last refit to it
    (update_recalibration) instead of refitting on every earlier group. Brute force: the update solves its
    own objective (the earlier rows' loss as its quadratic at the old optimum + the new rows' exact loss:
    zero gradient), lands where a refit on all rows lands to within a tenth of the coefficients' standard
    errors, and is exact for a first fit (the ridge is the quadratic of no rows)."""
    from sigmaudit.core.forecast import (
        RECAL_RIDGE,
        fit_recalibration_rows,
        fit_recalibration_state,
        update_recalibration,
    )

    X1, y1 = _recal_rows(1, 4_000, [1.5, 0.3, -0.4])
    X2, y2 = _recal_rows(2, 1_000, [1.3, 0.5, -0.2])  # drifted: the new rows pull the map elsewhere
    old = fit_recalibration_state(X1, y1)
    new = update_recalibration(old, X2, y2)
    p = 1.0 / (1.0 + np.exp(-(X2 @ new.coef)))
    grad = X2.T @ (p - y2) + old.hessian @ (new.coef - old.coef)
    assert np.abs(grad).max() < 1e-6 * len(y2)
    full = fit_recalibration_rows(np.vstack([X1, X2]), np.concatenate([y1, y2]))
    se = np.sqrt(np.diag(np.linalg.inv(new.hessian)))
    assert np.abs(new.coef - full).max() < 0.1 * se.min(), (new.coef, full, se)
    assert not np.allclose(new.coef, old.coef, atol=se.min())  # the update did move the map
    none = fit_recalibration_state(X1[:0], y1[:0])  # no rows: the identity, curvature = the ridge
    np.testing.assert_array_equal(none.coef, [1.0, 0.0, 0.0])
    np.testing.assert_array_equal(none.hessian, RECAL_RIDGE * np.eye(3))
    np.testing.assert_array_equal(update_recalibration(none, X1, y1).coef, fit_recalibration_rows(X1, y1))
    # the Hessian kept is the objective's at the optimum, by central differences of the gradient
    def g(t):
        q = 1.0 / (1.0 + np.exp(-(X1 @ t)))
        return X1.T @ (q - y1) + RECAL_RIDGE * (t - np.array([1.0, 0.0, 0.0]))
    h = 1e-5
    num = np.stack([(g(old.coef + h * e) - g(old.coef - h * e)) / (2 * h) for e in np.eye(3)], axis=1)
    np.testing.assert_allclose(old.hessian, num, rtol=1e-6)
