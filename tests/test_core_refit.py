"""Bootstrap refits of every replicate at once (sigmaudit/core/refit.py, optimize.minimize_box_rows) give
each replicate the refit it gets alone (refit_prior: projected Newton from the corpus fit)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest

from sigmaudit.core.optimize import (
    _cholesky_rows,
    damped_cholesky,
    damped_cholesky_rows,
    minimize_box,
    minimize_box_rows,
)
from sigmaudit.core.prior import _fit_atoms_beta, default_grid, distinct_pairs, refit_prior, thin_pairs
from sigmaudit.core.refit import refit_atoms_beta_rows, refit_atoms_beta_theta, thinning_matrix
from sigmaudit.core.rows import AtomsBetaRows
from sigmaudit.core.special import beta_cell_masses, beta_cell_masses_rows

REAL = Path(__file__).parent / "data" / "real"


def _corpus(seed: int, N: int = 300, n_max: int = 12):
    rng = np.random.default_rng(seed)
    n = rng.integers(4, n_max, N)
    u = rng.random(N)
    p = np.where(u < 0.2, 0.0, np.where(u < 0.3, 1.0, rng.beta(1.5, 2.5, N)))
    return distinct_pairs(n, rng.binomial(n, p))[:3]


@pytest.mark.parametrize("components", [1, 2])
def test_rows_objective_is_the_single_objective_per_row(components):
    from sigmaudit.core.prior import AtomsBetaObjective

    n, k, c = _corpus(1)
    rng = np.random.default_rng(2)
    C = rng.multinomial(int(c.sum()), c / c.sum(), size=5).astype(float)
    rows = AtomsBetaRows(n, k, C, components)
    theta = rng.normal(0.0, 1.0, (5, 2 + 3 * components - 1))
    f, g = rows.fun_grad(np.arange(5), theta)
    H = rows.hessian(np.arange(5), theta)
    for r in range(5):
        one = AtomsBetaObjective(n, k, C[r], components)
        f1, g1 = one.nll_grad(theta[r])
        assert f[r] == pytest.approx(f1, rel=1e-12)
        np.testing.assert_allclose(g[r], g1, rtol=1e-9, atol=1e-9)
        np.testing.assert_allclose(H[r], one.nll_hessian(theta[r]), rtol=1e-9, atol=1e-8)


F_AGREE = 1e-10
"""Two fits of one replicate reach one optimum when their objectives (one function, evaluated alike) differ by at
most this much relative to max(1, |f|). Both stop on a projected gradient below 1e-9·max(1, |f|) or a predicted
Newton gain below 2e-13·max(1, |f|) (optimize.minimize_box): where the optimum is flat the two stop points may
differ in the parameters by much more than that (CPU, numpy and BLAS decide the last bits of the sums that decide
a stop), but never in the objective."""
W_AGREE = 1e-5
"""...and their grid weights differ by at most this much in total (L1): every printed figure is a prior or
posterior mean of a function between 0 and 1 shown to at most 0.1 % (0.001), so it moves by at most 1 % of its
printed step. (On the machines of issue 42, 49 of 401 weights differed by ~3e-5 of their value, far inside this.)"""


def _agree(rows, b, theta_rows, theta_one, w_rows, w_one):
    at = np.array([b, b])
    f, _ = rows.fun_grad(at, np.stack([theta_rows, np.asarray(theta_one, dtype=np.float64)]))
    assert abs(f[0] - f[1]) <= F_AGREE * max(1.0, abs(f[1])), (b, f)
    assert np.abs(w_rows - w_one).sum() <= W_AGREE, (b, np.abs(w_rows - w_one).sum())


@pytest.mark.parametrize(("seed", "components"), [(3, 1), (4, 2), (5, 2)])
def test_every_replicate_gets_its_own_refit(seed, components):
    """The batched refits reach the optimum refit_prior reaches one by one: the same objective, the same grid
    weights to what any printed figure can show (F_AGREE, W_AGREE)."""
    n, k, c = _corpus(seed)
    prior, _ = _fit_atoms_beta(n, k, c, default_grid(), components, None)
    draws = np.random.default_rng(seed).multinomial(int(c.sum()), c / c.sum(), size=12).astype(float)
    W = refit_atoms_beta_rows(prior, n, k, draws)
    rows, theta = refit_atoms_beta_theta(prior, n, k, draws)
    for b in range(draws.shape[0]):
        one = refit_prior(prior, n, k, draws[b])
        _agree(rows, b, theta[b], one.theta, W[b], one.weights)


def test_the_agreement_test_fails_on_another_optimum():
    """The criterion can fail: a refit of another replicate's counts is not this replicate's optimum."""
    n, k, c = _corpus(4)
    prior, _ = _fit_atoms_beta(n, k, c, default_grid(), 2, None)
    draws = np.random.default_rng(4).multinomial(int(c.sum()), c / c.sum(), size=2).astype(float)
    W = refit_atoms_beta_rows(prior, n, k, draws)
    rows, theta = refit_atoms_beta_theta(prior, n, k, draws)
    other = refit_prior(prior, n, k, draws[1])
    with pytest.raises(AssertionError):
        _agree(rows, 0, theta[0], other.theta, W[0], other.weights)


def test_refits_on_a_real_corpus_thinned():
    """evalperf (n = 100) and the same counts scaled to n = 400 (thinned to 256 samples in the fit)."""
    table = pl.read_csv(REAL / "evalperf_per_task_pass_rates.csv").filter(pl.col("run") == pl.col("run").min())
    n, k, c, _ = distinct_pairs(table["n_samples"].to_numpy(), table["n_correct"].to_numpy())
    for scale in (1, 4):
        prior, _ = _fit_atoms_beta(n * scale, k * scale, c, default_grid(), 1, None)
        draws = np.random.default_rng(scale).multinomial(int(c.sum()), c / c.sum(), size=6).astype(float)
        W = refit_atoms_beta_rows(prior, n * scale, k * scale, draws)
        rows, theta = refit_atoms_beta_theta(prior, n * scale, k * scale, draws)
        for b in range(6):
            one = refit_prior(prior, n * scale, k * scale, draws[b])
            _agree(rows, b, theta[b], one.theta, W[b], one.weights)


def test_thinning_matrix_is_thin_pairs():
    n = np.array([5, 300, 300, 1000])
    k = np.array([2, 0, 150, 999])
    c = np.array([3.0, 1.0, 2.0, 4.0])
    n_t, k_t, M = thinning_matrix(n, k)
    n_ref, k_ref, c_ref = thin_pairs(n, k, c)
    got = dict(zip(zip(n_t.tolist(), k_t.tolist(), strict=True), (M @ c).tolist(), strict=True))
    want = dict(zip(zip(n_ref.tolist(), k_ref.tolist(), strict=True), c_ref.tolist(), strict=True))
    assert {key for key, v in got.items() if v > 0} == set(want)
    for key, v in want.items():
        assert got[key] == pytest.approx(v, rel=1e-12)


def test_minimize_box_rows_equals_minimize_box():
    """Rosenbrock-like problems with a box that binds for some rows: the same minimisers and iterations."""
    centers = np.array([[1.0, 1.0], [0.5, 0.25], [2.0, 4.0], [-1.0, 1.0]])

    def fg1(x, c):
        a, b = c
        f = (a - x[0]) ** 2 + 100 * (x[1] - x[0] ** 2) ** 2 + 0.0 * b
        g = np.array([-2 * (a - x[0]) - 400 * x[0] * (x[1] - x[0] ** 2), 200 * (x[1] - x[0] ** 2)])
        return f, g

    def h1(x, c):
        return np.array([[2 - 400 * (x[1] - 3 * x[0] ** 2), -400 * x[0]], [-400 * x[0], 200.0]])

    def fg(rows, X):
        out = [fg1(x, centers[r]) for r, x in zip(rows, X, strict=True)]
        return np.array([o[0] for o in out]), np.array([o[1] for o in out])

    def hess(rows, X):
        return np.array([h1(x, centers[r]) for r, x in zip(rows, X, strict=True)])

    lo, hi = np.array([-1.5, -0.5]), np.array([1.5, 3.0])
    x0 = np.array([[-1.2, 1.0], [0.0, 0.0], [1.4, 2.9], [1.0, -0.4]])
    fits = minimize_box_rows(fg, hess, x0, lo, hi)
    for r in range(4):
        one = minimize_box(lambda x, r=r: fg1(x, centers[r]), x0[r], lo, hi, hessian=lambda x, r=r: h1(x, centers[r]))
        np.testing.assert_allclose(fits.x[r], one.x, atol=1e-10)
        assert fits.nit[r] == one.nit


def test_damped_cholesky_rows_damps_each_row_as_alone():
    rng = np.random.default_rng(0)
    H = rng.normal(size=(30, 5, 5))
    H = H @ np.swapaxes(H, 1, 2) - rng.uniform(0, 3, (30, 1, 1)) * np.eye(5)  # some indefinite
    diag_max = np.abs(np.diagonal(H, axis1=1, axis2=2)).max(axis=1)
    L = damped_cholesky_rows(H, diag_max)
    for i in range(30):
        np.testing.assert_allclose(L[i], damped_cholesky(H[i]), rtol=1e-9, atol=1e-12)
    L_pd, ok = _cholesky_rows(H[:, :, :] + 20 * np.eye(5))
    assert ok.all()
    np.testing.assert_allclose(L_pd, np.linalg.cholesky(H + 20 * np.eye(5)), rtol=1e-12, atol=1e-12)


def test_beta_cell_masses_rows_equals_one_at_a_time():
    g = default_grid()
    inner = g[1:-1]
    edges = np.concatenate([[0.0], 0.5 * (inner[1:] + inner[:-1]), [1.0]])
    rng = np.random.default_rng(1)
    a, b = np.exp(rng.uniform(-7, 7, 25)), np.exp(rng.uniform(-7, 7, 25))
    M = beta_cell_masses_rows(a, b, edges)
    for r in range(25):
        np.testing.assert_allclose(M[r], beta_cell_masses(float(a[r]), float(b[r]), edges), rtol=1e-12, atol=1e-300)


def test_lockstep_starts_stop_as_the_sequential_runs():
    """minimize_box_rows with beat_earlier: each start of a two-Beta fit takes the iterations minimize_box takes
    with beat = the best earlier start (evalperf's first runs), and reaches the same objective."""
    from sigmaudit.core.prior import MAX_STEP, AtomsBetaObjective, _starts

    table = pl.read_csv(REAL / "evalperf_per_task_pass_rates.csv")
    for run in sorted(set(table["run"]))[:3]:
        d = table.filter(pl.col("run") == run)
        n, k, c, _ = distinct_pairs(d["n_samples"].to_numpy(), d["n_correct"].to_numpy())
        obj = AtomsBetaObjective(n, k, c, 2)
        lo, hi = obj.bounds()
        starts = _starts(obj)
        seq = [minimize_box(obj.nll_grad, starts[0], lo, hi, max_step=MAX_STEP, hessian=obj.nll_hessian)]
        for x in starts[1:]:
            seq.append(minimize_box(obj.nll_grad, x, lo, hi, max_step=MAX_STEP, hessian=obj.nll_hessian,
                                    beat=min(f.fun for f in seq)))
        rows = AtomsBetaRows(n, k, np.tile(c, (len(starts), 1)), 2)
        runs = minimize_box_rows(rows.fun_grad, rows.hessian, np.array(starts), lo, hi, max_step=MAX_STEP,
                                 beat_earlier=True)
        assert runs.nit.tolist() == [f.nit for f in seq]
        np.testing.assert_allclose(runs.fun, [f.fun for f in seq], rtol=1e-10)
