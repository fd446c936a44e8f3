"""The grid maximum-likelihood prior (core/npmle.py) is the maximum: no EM run gets above it, and its
optimality condition holds (no grid point's directional derivative exceeds the optimum's)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest

from sigmaudit.core.npmle import fit_npmle, gap_bound
from sigmaudit.core.prior import _scaled_lik, default_grid, distinct_pairs, fit_grid_prior, thin_pairs

REAL = Path(__file__).parent / "data" / "real"


def _ll(lik, shift, c, w):
    return float(c @ (np.log(lik @ w) + shift[:, 0]))


def _corpora():
    rng = np.random.default_rng(3)
    n = rng.integers(2, 40, 400)
    u = rng.random(400)
    p = np.where(u < 0.3, 0.0, np.where(u < 0.4, 1.0, rng.beta(0.6, 0.9, 400)))
    yield "synthetic", distinct_pairs(n, rng.binomial(n, p))[:3]
    table = pl.read_csv(REAL / "evalperf_per_task_pass_rates.csv")
    for run in sorted(set(table["run"]))[:3]:
        d = table.filter(pl.col("run") == run)
        yield run, distinct_pairs(d["n_samples"].to_numpy(), d["n_correct"].to_numpy())[:3]
    aime = pl.read_csv(REAL / "pika_aime_1983_2024_pass_rates.csv")
    yield "aime", distinct_pairs(aime["n_samples"].to_numpy(), aime["n_correct"].to_numpy())[:3]

@pytest.mark.parametrize(("name", "pairs"), list(_corpora()), ids=lambda v: v if isinstance(v, str) else "")
def test_the_maximum_is_not_beaten_by_a_long_em(name, pairs):
    n, k, c = thin_pairs(*pairs)
    grid = default_grid()
    lik, shift = _scaled_lik(n, k, grid)
    w, iterations = fit_npmle(lik, c)
    assert iterations < 200 and w.min() >= 0.0 and w.sum() == pytest.approx(1.0, abs=1e-12)
    best = _ll(lik, shift, c, w)
    em = fit_grid_prior(n, k, c, grid=grid, max_iter=20000, tol=0.0)
    assert em.log_likelihood <= best + 1e-9 * abs(best)
    # optimality: max_j D_j <= 1 + 1e-8 bounds the gap to the maximum by sum(c) * 1e-8
    assert gap_bound(lik, c, w) <= c.sum() * 2e-8


def test_a_two_point_corpus_has_its_closed_form():
    """Only k = 0 and k = n pairs at n = 3: the maximum puts mass 0.3 at p = 0 and 0.7 at p = 1."""
    n = np.array([3, 3])
    k = np.array([0, 3])
    c = np.array([3.0, 7.0])
    lik, _ = _scaled_lik(n, k, default_grid())
    w, _ = fit_npmle(lik, c)
    assert w[0] == pytest.approx(0.3, abs=1e-7) and w[-1] == pytest.approx(0.7, abs=1e-7)


def test_the_bracket_answers_as_the_exact_maximum():
    """A corpus with 600+ distinct pairs (the bracket path): for values around the maximum, the bracket from a
    short EM run answers 'exceeds' exactly as the maximum does, solving only when it straddles the value."""
    from sigmaudit.core.npmle import EXACT_CELLS, GridMaximum

    rng = np.random.default_rng(11)
    n = rng.integers(20, 200, 3000)
    k = rng.binomial(n, np.where(rng.random(3000) < 0.2, 0.0, rng.beta(0.7, 0.9, 3000)))
    nu, ku, cu = thin_pairs(*distinct_pairs(n, k)[:3])
    grid = default_grid()
    lik, shift = _scaled_lik(nu, ku, grid)
    assert lik.size >= EXACT_CELLS
    best = _ll(lik, shift, cu, fit_npmle(lik, cu)[0])
    rough = fit_grid_prior(nu, ku, cu, grid=grid, max_iter=150).weights
    for delta in (-50.0, -1.0, -1e-3, 1e-3, 1.0, 50.0):
        bracket = GridMaximum(lik, shift, cu, rough)
        assert bracket.exceeds(best + delta) == (delta < 0), delta
    far = GridMaximum(lik, shift, cu, rough)
    assert far.exceeds(best - 1e6) and not far.exact  # decided by the bracket alone


def test_grid_points_whose_curvature_underflows_do_not_make_the_step_singular():
    """Groups of 8 at ten half-integer steps (tests/test_loaders_engines.py's half_steps.csv, 3 prompts):
    few pairs with many samples each, so H_jj = Σ h_i L_ij² underflows to 0 at grid points far from every
    pair. The working set's Hessian was singular there ("Singular matrix", exit 2); the maximum is still
    reached and beats a long EM run."""
    k = np.array([sum(int(i < (s + p) % 9) for s in range(10) for i in range(8)) for p in range(3)])
    n, k, c = thin_pairs(*distinct_pairs(np.full(3, 80), k)[:3])
    grid = default_grid()
    lik, shift = _scaled_lik(n, k, grid)
    w, iterations = fit_npmle(lik, c)
    assert iterations < 200 and w.min() >= 0.0 and w.sum() == pytest.approx(1.0, abs=1e-12)
    em = fit_grid_prior(n, k, c, grid=grid, max_iter=20000, tol=0.0)
    assert em.log_likelihood <= _ll(lik, shift, c, w) + 1e-9 * abs(em.log_likelihood)
    assert gap_bound(lik, c, w) <= c.sum() * 2e-8
