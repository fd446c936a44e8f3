"""The corpus prior: Beta + point masses when AIC does not prefer the smoothed grid; accuracy at G = 2n."""

from __future__ import annotations

import numpy as np
import pytest

from sigmaudit.core.estimators import silent_bayes
from sigmaudit.core.prior import beta_cell_masses, default_grid, distinct_pairs, fit_atoms_beta_prior, fit_corpus_prior


def _corpus(kind: str, m: int, n: int, seed: int):
    rng = np.random.default_rng(seed)
    u = rng.random(m)
    if kind == "beta+atoms":
        p = np.where(u < 0.3, 0.0, np.where(u < 0.45, 1.0, rng.beta(0.6, 0.9, m)))
    else:  # two humps a single Beta cannot follow
        p = np.where(u < 0.2, 0.0, np.where(u < 0.3, 1.0, np.where(u < 0.65, rng.beta(2, 20, m), rng.beta(20, 4, m))))
    return p, rng.binomial(n, p)


def test_atoms_beta_recovers_parameters():
    p, k = _corpus("beta+atoms", 20000, 16, 3)
    _, params = fit_atoms_beta_prior(np.full(k.size, 16), k)
    assert params["w0"] == pytest.approx(0.30, abs=0.02)
    assert params["w1"] == pytest.approx(0.15, abs=0.02)
    assert params["a1"] == pytest.approx(0.6, rel=0.15)
    assert params["b1"] == pytest.approx(0.9, rel=0.15)


def test_beta_cell_masses_sum_to_one_and_match_mean():
    g = default_grid()
    w = beta_cell_masses(2.0, 5.0, g)
    assert w.sum() == pytest.approx(1.0)
    assert w[0] == 0.0 and w[-1] == 0.0
    assert float(w @ g) == pytest.approx(2.0 / 7.0, abs=2e-3)


@pytest.mark.parametrize(("kind", "expected"), [("beta+atoms", "beta+atoms/1"), ("two humps", "beta+atoms/2")])
def test_selection_by_aic(kind, expected):
    _, k = _corpus(kind, 5000, 8, 11)
    assert fit_corpus_prior(np.full(k.size, 8), k).kind == expected


@pytest.mark.parametrize("kind", ["beta+atoms", "two humps"])
def test_the_one_beta_optimum_is_fitted_once(monkeypatch, kind):
    """fit_corpus_prior's two-Beta starts grow from the one-Beta candidate's optimum, which it has fitted already:
    one one-Beta optimisation per corpus prior (there were two, the second the same call from the same start),
    and the two-Beta fit the same to the last bit as one that fits the one-Beta optimum itself (issue 45)."""
    from sigmaudit.core import prior as prior_mod

    _, k = _corpus(kind, 3000, 8, 5)
    nu, ku, cu, _ = distinct_pairs(np.full(k.size, 8), k)
    fresh, _ = prior_mod._fit_atoms_beta(nu, ku, cu, default_grid(), 2, None)  # the two-Beta fit on its own
    dims = []
    real = prior_mod.minimize_box

    def counted(fun_grad, x0, *args, **kwargs):
        dims.append(len(x0))
        return real(fun_grad, x0, *args, **kwargs)

    monkeypatch.setattr(prior_mod, "minimize_box", counted)
    chosen = fit_corpus_prior(nu, ku, cu)
    assert dims.count(4) == 1  # the one-Beta problem: 4 parameters
    two = next(s for s in chosen.scores if s[0] == "beta+atoms/2")
    assert two[1] == fresh.log_likelihood
    assert chosen.kind == ("beta+atoms/1" if kind == "beta+atoms" else "beta+atoms/2")


@pytest.mark.parametrize("kind", ["beta+atoms", "two humps"])
@pytest.mark.parametrize("seed", [1, 2])
def test_model_based_within_001_at_twice_n(kind, seed):
    """Corpus silent rate at G = 2n from n = 8 samples, against the truth mean silent(p_i, G)."""
    n, G = 8, 16
    p, k = _corpus(kind, 8000, n, seed)
    nu, ku, cu, inv = distinct_pairs(np.full(k.size, n), k)
    prior = fit_corpus_prior(nu, ku, cu)
    estimate = silent_bayes(nu, ku, G, prior).silent[inv].mean()
    truth = np.mean(p**G + (1 - p) ** G)
    assert abs(estimate - truth) < 0.01


def test_thinning_preserves_weights_and_matches_hypergeometric():
    from scipy.stats import hypergeom

    from sigmaudit.core.prior import thin_pairs

    n, k, c = np.array([8, 100, 100]), np.array([3, 37, 100]), np.array([2.0, 1.0, 3.0])
    nt, kt, ct = thin_pairs(n, k, c, cap=10)
    assert ct.sum() == pytest.approx(6.0)
    got = dict(zip(zip(nt.tolist(), kt.tolist(), strict=True), ct.tolist(), strict=True))
    assert got[(8, 3)] == 2.0
    expected = hypergeom.pmf(np.arange(11), 100, 37, 10)
    expected[10] += 3.0  # the always-right prompt stays always right
    for j in range(11):
        assert got.get((10, j), 0.0) == pytest.approx(expected[j], abs=1e-12)


def test_thinned_fit_keeps_estimates():
    """Many samples per prompt: the prior fitted to thinned pairs gives the same corpus estimates."""
    rng = np.random.default_rng(5)
    m = 6000
    n = rng.poisson(10, m) * 40 + 40
    u = rng.random(m)
    p = np.where(u < 0.25, 0.0, np.where(u < 0.4, 1.0, rng.beta(0.7, 0.9, m)))
    k = rng.binomial(n, p)
    nu, ku, cu, inv = distinct_pairs(n, k)
    prior = fit_corpus_prior(nu, ku, cu)
    for G in (32, 256):
        estimate = silent_bayes(nu, ku, G, prior).silent[inv].mean()
        assert abs(estimate - np.mean(p**G + (1 - p) ** G)) < 0.005


@pytest.mark.parametrize("chunk", [1, 3, 2048])
def test_thinning_in_blocks_matches_hypergeometric(monkeypatch, chunk):
    """Blocks of any size (and a prompt too large for the log-factorial table) give the summed
    hypergeometric weights of every thinned prompt."""
    from scipy.stats import hypergeom

    import sigmaudit.core.prior as prior_mod

    monkeypatch.setattr(prior_mod, "THIN_CHUNK", chunk)
    rng = np.random.default_rng(11)
    n = np.concatenate([rng.integers(13, 400, 40), [5_000_000]])
    k = np.array([rng.integers(0, m + 1) for m in n])
    c = rng.integers(1, 4, n.size).astype(np.float64)
    cap = 12
    nt, kt, ct = prior_mod.thin_pairs(n, k, c, cap=cap)
    got = dict(zip(zip(nt.tolist(), kt.tolist(), strict=True), ct.tolist(), strict=True))
    expected = sum(ci * hypergeom.pmf(np.arange(cap + 1), ni, ki, cap) for ni, ki, ci in zip(n, k, c, strict=True))
    for j in range(cap + 1):
        assert got.get((cap, j), 0.0) == pytest.approx(expected[j], rel=1e-9, abs=1e-12)
    assert ct.sum() == pytest.approx(c.sum())
