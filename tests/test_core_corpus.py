"""Corpus: distinct (n, k) pairs and corpus-level silent rates (sigmaudit.core.corpus)."""

from __future__ import annotations

import numpy as np
import pytest

from sigmaudit.core.corpus import Corpus, CorpusSilent
from sigmaudit.core.estimators import silent_plugin, silent_unbiased
from sigmaudit.core.silent import silent_rate


def simulate(seed: int, n_prompts: int, w0: float, w1: float, a: float, b: float, n: int = 8):
    """True p (never-solved w0, always-solved w1, Beta(a, b) otherwise) and k ~ Binom(n, p)."""
    rng = np.random.default_rng(seed)
    kind = rng.choice(3, size=n_prompts, p=[w0, w1, 1 - w0 - w1])
    p = np.where(kind == 0, 0.0, np.where(kind == 1, 1.0, rng.beta(a, b, n_prompts)))
    return p, rng.binomial(n, p)


N = np.array([8, 8, 8, 4, 8, 4, 16])
K = np.array([0, 3, 0, 4, 8, 4, 5])


def test_corpus_collapses_to_distinct_pairs() -> None:
    c = Corpus(N, K)
    assert c.n_prompts == 7
    assert c.n.size == 5  # (8,0) ×2, (4,4) ×2, and three singletons
    assert c.weight.sum() == 7
    assert c.min_samples == 4
    np.testing.assert_allclose(c.p_hat, c.k / c.n)
    # a weighted mean over pairs is the plain mean over prompts
    assert c.mean(c.p_hat) == pytest.approx(float(np.mean(K / N)), rel=1e-14)


def test_empty_corpus_is_rejected() -> None:
    with pytest.raises(ValueError, match="zero prompts|at least one prompt"):
        Corpus(np.array([], dtype=int), np.array([], dtype=int))


def test_default_estimator_switches_at_min_samples() -> None:
    c = Corpus(N, K)
    assert c.default_estimator(4) == "unbiased"
    assert c.default_estimator(5) == "bayes"
    assert c.silent(4).estimator == "unbiased"
    assert c.silent(5).estimator == "bayes"


def test_corpus_rates_are_means_over_prompts() -> None:
    c = Corpus(N, K)
    for G in (1, 2, 4):
        out = c.silent(G, "unbiased")
        assert isinstance(out, CorpusSilent) and out.G == G
        assert out.silent_rate == pytest.approx(float(np.mean(silent_unbiased(N, K, G).silent)), rel=1e-12)
        assert out.silent_rate == pytest.approx(out.all_wrong_rate + out.all_correct_rate, rel=1e-12)
    plug = c.silent(16, "plugin")
    assert plug.silent_rate == pytest.approx(float(np.mean(silent_plugin(N, K, 16).silent)), rel=1e-12)
    # Jensen: the mean of the per-prompt rates exceeds the rate at the mean p̂
    assert plug.silent_rate > silent_rate(float(np.mean(K / N)), 16)


def test_unbiased_is_undefined_beyond_min_samples() -> None:
    out = Corpus(N, K).silent(8, "unbiased")
    assert out.silent_rate is None and out.all_wrong_rate is None and out.all_correct_rate is None
    assert out.estimator == "unbiased"


def test_prior_is_fitted_once() -> None:
    c = Corpus(N, K)
    assert c.prior is c.prior
    assert c.prior.weights.sum() == pytest.approx(1.0, rel=1e-12)


# Model-based corpus silent rate at G = 2n against the truth. With the corpus prior (Beta plus
# point masses, grid EM as fallback; fit_corpus_prior) over 15 seeds x 5 mixtures, n = 8, G = 16:
# 20,000 prompts: error mean -0.0002, SD 0.0027, max 0.009, none above 0.01; 3000 prompts:
# SD 0.0068, 16% above 0.01 -- at that size the spread is the noise floor (E[p^16] is not
# identified by 8 samples per prompt, and the truth is the realised prompts' mean). The test
# therefore uses 20,000 prompts; the 0.01 tolerance is the requirement.
MIXTURES = {
    "20% never, 10% always, Beta(0.5, 0.5)": (0.2, 0.1, 0.5, 0.5),
    "30% never, 20% always, Beta(2, 5)": (0.3, 0.2, 2.0, 5.0),
}


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("mixture", list(MIXTURES))
def test_model_based_silent_rate_at_twice_the_logged_n(mixture: str, seed: int) -> None:
    w0, w1, a, b = MIXTURES[mixture]
    n, n_prompts = 8, 20000
    p, k = simulate(seed, n_prompts, w0, w1, a, b, n)
    c = Corpus(np.full(n_prompts, n), k)
    out = c.silent(2 * n)
    assert out.estimator == "bayes"
    truth = float(np.mean(silent_rate(p, 2 * n)))
    assert abs(out.silent_rate - truth) <= 0.01, (out.silent_rate, truth)
    assert out.silent_rate == pytest.approx(out.all_wrong_rate + out.all_correct_rate, rel=1e-12)


def test_model_based_silent_rate_u_shaped() -> None:
    """A U-shaped Beta(0.3, 0.3) corpus (missed by the plain grid EM at 3000 prompts)."""
    p, k = simulate(1, 20000, 0.0, 0.0, 0.3, 0.3)
    out = Corpus(np.full(20000, 8), k).silent(16)
    assert abs(out.silent_rate - float(np.mean(silent_rate(p, 16)))) <= 0.01


def test_from_pairs_equals_the_expanded_corpus():
    n, k, w = np.array([8, 4, 8, 16]), np.array([3, 1, 0, 16]), np.array([5, 2, 7, 1])
    packed = Corpus.from_pairs(n, k, w)
    expanded = Corpus(np.repeat(n, w), np.repeat(k, w))
    assert packed.n_prompts == expanded.n_prompts == 15
    assert np.array_equal(packed.n, expanded.n) and np.array_equal(packed.weight, expanded.weight)
    assert packed.silent(8, "bayes").silent_rate == pytest.approx(expanded.silent(8, "bayes").silent_rate, rel=1e-12)
    with pytest.raises(ValueError, match="distinct"):
        Corpus.from_pairs([8, 8], [3, 3], [1, 1])
