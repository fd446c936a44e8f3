"""The G sweep and the recommendation (sigmaudit.audits.plan) against independent references and properties."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import binom

from sigmaudit.audits.plan import DEFAULT_G_GRID, SweepRow, Targets, plan, recommend, sweep
from sigmaudit.core.corpus import Corpus
from sigmaudit.views.plan import reason

N = np.array([8, 8, 8, 8, 16, 16, 32, 4, 4, 8])
K = np.array([0, 0, 1, 4, 15, 16, 9, 2, 0, 7])


@pytest.fixture(scope="module")
def corpus() -> Corpus:
    return Corpus(N, K)


def _posteriors(corpus: Corpus) -> np.ndarray:
    """Posterior per distinct pair by scipy's binomial pmf (independent of GridPrior.posterior)."""
    grid, w = corpus.prior.grid, corpus.prior.weights
    rows = [binom.pmf(k, n, grid) * w for n, k in zip(corpus.n, corpus.k, strict=True)]
    return np.array([r / r.sum() for r in rows])


def test_sweep_against_reference(corpus):
    rows = sweep(corpus, [3, 8, 20], batch_prompts=100, estimator="bayes")
    post, grid, m = _posteriors(corpus), corpus.prior.grid, corpus.weight
    sd = np.sqrt(grid * (1 - grid))
    for r in rows:
        G = r.G
        aw = m @ (post @ (1 - grid) ** G) / m.sum()
        ac = m @ (post @ grid**G) / m.sum()
        ks = np.arange(G + 1)
        es = np.array([binom.pmf(ks, G, p) @ (np.sqrt(ks * (G - ks)) / G) for p in grid])
        assert r.all_wrong == pytest.approx(aw, rel=1e-9)
        assert r.all_correct == pytest.approx(ac, rel=1e-9)
        assert r.silent == pytest.approx(aw + ac, rel=1e-9)
        assert r.fidelity == pytest.approx((m @ (post @ es)) / (m @ (post @ sd)), rel=1e-9)
        assert r.signal_prompts_per_batch == pytest.approx(100 * (1 - r.silent))
        assert r.dapo_groups_per_kept_group == pytest.approx(1 / (1 - r.silent))
        assert r.rollouts_per_signal_prompt == pytest.approx(G / (1 - r.silent))


def test_default_grid_and_unreachable_share(corpus):
    res = plan(corpus, estimator="bayes")
    assert [r.G for r in res.sweep] == list(DEFAULT_G_GRID)
    assert res.estimator == "bayes" and res.prompts == N.size
    assert {r.estimator for r in res.sweep} == {"bayes"}
    auto = plan(corpus)  # the default rule: unbiased while every prompt has n >= G (here G <= 4)
    assert auto.estimator == "auto"
    assert [r.estimator for r in auto.sweep[:3]] == ["unbiased", "unbiased", "bayes"]
    post, m = _posteriors(corpus), corpus.weight
    u0 = m @ post[:, 0] / m.sum()
    u1 = m @ post[:, -1] / m.sum()
    assert res.unreachable_all_wrong == pytest.approx(u0, rel=1e-9, abs=1e-15)
    assert res.unreachable_all_correct == pytest.approx(u1, rel=1e-9, abs=1e-15)
    # the silent rate's floor as G → ∞: every finite G stays above it and a huge G approaches it
    assert all(r.silent >= res.unreachable_share for r in res.sweep)
    far = sweep(corpus, [10**7], estimator="bayes")[0]
    assert far.silent == pytest.approx(res.unreachable_share, abs=1e-6)
    assert res.recommended_G is None and not res.target_failed
    assert "no target given" in reason(res)


def test_recommendation_and_reasons(corpus):
    rows = sweep(corpus, DEFAULT_G_GRID, estimator="bayes")
    target = rows[4].silent  # G = 16 exactly meets it; G = 15 (not on the grid) does not
    res = plan(corpus, targets=Targets(max_silent=target), estimator="bayes")
    assert res.recommended_G == 16 and not res.target_failed
    assert reason(res).startswith(f"the smallest G with silent ≤ {target:g} (every whole G up to 256 searched")
    between = (rows[3].silent + rows[4].silent) / 2  # met first at a G between 12 and 16, off the grid
    res = plan(corpus, targets=Targets(max_silent=between), estimator="bayes")
    assert 12 < res.recommended_G < 16 and res.recommended_G in [r.G for r in res.sweep]
    res = plan(corpus, targets=Targets(max_silent=res.unreachable_share / 2))
    assert res.recommended_G is None and res.target_failed
    assert "never- or always-solved prompts alone make up" in reason(res)
    floor_ok = (res.unreachable_share + rows[-1].silent) / 2  # reachable in the limit, not on this grid
    res = plan(corpus, [2, 4], targets=Targets(max_silent=floor_ok))
    assert res.recommended_G is None and reason(res).startswith("no G up to 4 meets")
    assert "G = 4" in reason(res)


def test_json_contract_keys(corpus):
    d = plan(corpus, [2, 8], targets=Targets(min_fidelity=0.5)).to_dict()
    assert {"sweep", "recommended_G", "estimator", "targets", "unreachable_share", "prompts"} <= d.keys()
    assert set(d["sweep"][0]) == {"G", "silent", "all_wrong", "all_correct", "fidelity", "signal_prompts_per_batch",
                                  "rollouts_per_signal_prompt", "dapo_groups_per_kept_group", "estimator",
                                  "silent_ci", "fidelity_ci"}
    assert {"recommended_G_range", "level", "replicates", "warnings"} <= d.keys()
    assert d["targets"] == {"max_silent": None, "min_fidelity": 0.5}
    assert d["allocation"] is None


def test_all_silent_corpus_has_no_signal():
    c = Corpus(np.array([8, 8]), np.array([0, 8]))
    r = sweep(c, [4])[0]
    assert r.silent > 0.9
    res = plan(c, [4, 256], targets=Targets(max_silent=0.05))
    assert res.recommended_G is None


# ---------------------------------------------------------------- properties

# n >= 4 (RICH_SAMPLES): thinner corpora are refused unless the log pins the silent rate down
counts = st.integers(4, 24).flatmap(lambda n: st.tuples(st.just(n), st.integers(0, n)))
corpora = st.lists(counts, min_size=1, max_size=12)
grids = st.lists(st.integers(1, 300), min_size=1, max_size=8, unique=True)


@settings(max_examples=10, deadline=None)
@given(corpora, grids)
def test_silent_monotone_fidelity_monotone(pairs, Gs):
    n, k = np.array(pairs).T
    rows = sweep(Corpus(n, k), Gs, estimator="bayes")  # one estimator: monotone (auto may step at G = min n)
    assert [r.G for r in rows] == sorted(Gs)
    for a, b in zip(rows, rows[1:], strict=False):
        assert b.silent <= a.silent + 1e-12
        assert b.all_wrong <= a.all_wrong + 1e-12 and b.all_correct <= a.all_correct + 1e-12
        if a.fidelity is not None:
            assert b.fidelity >= a.fidelity - 1e-12
    for r in rows:
        assert 0.0 <= r.silent <= 1.0 + 1e-12
        assert r.fidelity is None or 0.0 <= r.fidelity <= 1.0


@settings(max_examples=10, deadline=None)
@given(corpora, st.floats(0, 1), st.one_of(st.none(), st.floats(0, 1)))
def test_recommended_G_is_smallest_qualifying(pairs, max_silent, min_fidelity):
    n, k = np.array(pairs).T
    targets = Targets(max_silent=max_silent, min_fidelity=min_fidelity)
    res = plan(Corpus(n, k), targets=targets)
    Gs = [r.G for r in res.sweep]
    meets = [targets.met_by(r) for r in res.sweep]
    if res.recommended_G is None:
        assert not any(meets) and res.target_failed
    else:
        i = Gs.index(res.recommended_G)
        r = res.sweep[i]
        assert r.silent <= max_silent
        assert min_fidelity is None or r.fidelity >= min_fidelity
        assert i == 0 or not targets.met_by(res.sweep[i - 1])
        assert not any(meets[:i])


def _row(G: int, silent: float, fidelity: float | None) -> SweepRow:
    return SweepRow(G, silent, silent, 0.0, fidelity, "bayes", None, None, 0.0, None, None)


def test_recommend_truth_table():
    rows = [_row(2, 0.8, 0.5), _row(4, 0.5, 0.7), _row(8, 0.3, None), _row(16, 0.2, 0.95)]
    assert recommend(rows, Targets()) is None
    assert recommend(rows, Targets(max_silent=0.5)) == 4  # equality meets
    assert recommend(rows, Targets(max_silent=0.49)) == 8
    assert recommend(rows, Targets(max_silent=0.49, min_fidelity=0.9)) == 16  # None fidelity never meets
    assert recommend(rows, Targets(min_fidelity=0.99)) is None
    assert recommend(list(reversed(rows)), Targets(max_silent=0.9)) == 2
