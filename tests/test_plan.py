"""The G sweep, the targets, the floor and the bounds of `plan` (sigmaudit.audits.plan) against independent
references and properties."""

from __future__ import annotations

import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import binom

from sigmaudit.audits.plan import DEFAULT_G_GRID, MAX_PLAN_G, SweepRow, Targets, plan, recommend, sweep
from sigmaudit.core.corpus import Corpus
from sigmaudit.errors import ConfigError
from sigmaudit.views.plan import reason, worded

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
    rows = sweep(corpus, [3, 8, 20], 100, estimator="bayes")
    post = _posteriors(corpus)
    grid = corpus.prior.grid
    for r in rows:
        G = r.G
        per = post @ (grid**G + (1 - grid) ** G)
        want = float(per @ corpus.weight / corpus.weight.sum())
        assert r.silent == pytest.approx(want, rel=1e-8)
        assert r.prompts_per_step == 100 // G and r.prompts_per_step * G <= 100 < (r.prompts_per_step + 1) * G
        assert r.informative_groups == pytest.approx(r.prompts_per_step * (1 - r.silent), rel=1e-8)
        assert r.informative_rollouts == pytest.approx(r.prompts_per_step * G * (1 - r.silent), rel=1e-8)
        assert r.dapo_groups_per_kept_group == pytest.approx(1 / (1 - r.silent))


def test_intervals_cover_the_point_and_match_a_direct_bootstrap(corpus):
    rows = sweep(corpus, [4, 16], 256, replicates=60, level=0.9)
    reps = corpus.replicates(60)
    from sigmaudit.core.update import gain_tables

    c_tab, _ = gain_tables(corpus.prior.grid, [4, 16])
    direct = (reps.mixtures @ c_tab) / reps.draws.sum(axis=1, keepdims=True)
    for i, r in enumerate(rows):
        lo, hi = r.update_ci
        assert lo <= r.update <= hi
        assert (lo, hi) == pytest.approx(tuple(np.quantile(direct[:, i], [0.05, 0.95])), rel=1e-12)


def test_default_grid_and_unreachable_share(corpus):
    res = plan(corpus)
    assert [r.G for r in res.sweep if r.G in DEFAULT_G_GRID] == list(DEFAULT_G_GRID)
    at0, at1 = corpus.unreachable_parts()
    assert res.unreachable_share == pytest.approx(corpus.mean(at0 + at1))
    assert res.budget.rollouts_per_step == 512 * 8 and res.budget.source == "batch"


def test_targets_choose_the_smallest_G_check_passes(corpus):
    from sigmaudit.audits.check import estimate_metrics

    res = plan(corpus, [2, 4, 8, 16, 64], targets=Targets(max_silent=0.5))
    g = res.recommended_G
    assert g is not None
    val = lambda G: estimate_metrics(corpus, G, ["silent_rate"]).value("silent_rate", G)  # noqa: E731
    assert val(g) <= 0.5 and (g == 1 or val(g - 1) > 0.5)
    assert reason(res).startswith(f"the smallest G with silent ≤ 0.5 ('sigmaudit check -G {g}'")


def test_all_silent_corpus_has_no_signal():
    c = Corpus(np.array([8, 8]), np.array([0, 8]))
    r = sweep(c, [4], 64)[0]
    assert r.silent > 0.9
    res = plan(c, [4, 256], rollouts_per_step=4096, targets=Targets(max_silent=0.05))
    assert res.recommended_G is None and res.floor is not None


# ---------------------------------------------------------------- the floor never says "larger -G"


def test_target_under_the_floor_names_the_floor_and_the_curated_figure():
    c = Corpus(np.array([64] * 30 + [64] * 70), np.array([0] * 20 + [64] * 10 + [32] * 70))
    res = worded(plan(c, rollouts_per_step=4096, targets=Targets(max_silent=0.2)))
    assert res.target_failed and res.floor.below_floor
    assert res.floor.unreachable_share == pytest.approx(0.3, abs=0.02)
    assert res.floor.curated_dropped_share == pytest.approx(0.3) and res.floor.curated_silent < 0.2
    assert "floor at any G" in res.reason and "the data is the lever" in res.reason
    assert "larger -G" not in res.reason and "try" not in res.reason


def test_target_above_the_floor_past_the_sweep_names_the_G_it_needs():
    c = Corpus(np.array([64] * 100), np.array([0] * 10 + [1] * 90))
    res = worded(plan(c, [2, 4, 8], rollouts_per_step=4096, targets=Targets(max_silent=0.3)))
    assert res.target_failed and not res.floor.below_floor
    g = res.floor.needed_G
    assert g is not None and g > 8 and res.floor.needed_prompts_per_step == 4096 // g
    again = plan(c, [2, g], rollouts_per_step=4096, targets=Targets(max_silent=0.3))
    assert again.recommended_G == g
    assert f"it needs G = {g:,}" in res.reason and "larger -G" not in res.reason


# ---------------------------------------------------------------- bounds (issue 36 item 24)


def test_huge_G_is_refused_in_one_line(corpus):
    with pytest.raises(ConfigError, match="above 65,536"):
        plan(corpus, [2**62], rollouts_per_step=2**63 - 1)
    with pytest.raises(ConfigError, match="above the rollouts per step R = 4,096"):
        plan(corpus, [8192], rollouts_per_step=4096)


def test_large_G_is_searched_on_a_grid_quickly(corpus):
    t = time.process_time()
    res = plan(corpus, [8, MAX_PLAN_G], rollouts_per_step=MAX_PLAN_G, targets=Targets(max_silent=0.3))
    assert time.process_time() - t < 20  # every whole G to 65,536 took minutes
    assert res.recommended_G is not None
    t = time.process_time()
    res = plan(corpus, [8, 8192], rollouts_per_step=8192, objective="update")
    assert time.process_time() - t < 20 and res.objective_choice.searched < 400


# ---------------------------------------------------------------- properties

counts = st.integers(4, 24).flatmap(lambda n: st.tuples(st.just(n), st.integers(0, n)))
corpora = st.lists(counts, min_size=1, max_size=12)
grids = st.lists(st.integers(1, 300), min_size=1, max_size=8, unique=True)


@settings(max_examples=5, deadline=None)
@given(corpora, grids)
def test_silent_monotone_fidelity_monotone(pairs, Gs):
    n, k = np.array(pairs).T
    rows = sweep(Corpus(n, k), Gs, 4096, estimator="bayes")
    assert [r.G for r in rows] == sorted(Gs)
    for a, b in zip(rows, rows[1:], strict=False):
        assert b.silent <= a.silent + 1e-12
        if a.fidelity is not None:
            assert b.fidelity >= a.fidelity - 1e-12
        assert b.update >= a.update - 1e-12  # GRPO's batch-mean update rises with G


@settings(max_examples=6, deadline=None)
@given(corpora, st.floats(0, 1), st.one_of(st.none(), st.floats(0, 1)))
def test_recommended_G_is_smallest_qualifying(pairs, max_silent, min_fidelity):
    from sigmaudit.audits.check import estimate_metrics

    n, k = np.array(pairs).T
    c = Corpus(n, k)
    targets = Targets(max_silent=max_silent, min_fidelity=min_fidelity)
    res = plan(c, [2, 5, 24], rollouts_per_step=4096, targets=targets)
    names = ["silent_rate", "fidelity"]

    def meets(G: int) -> bool:
        e = estimate_metrics(c, G, names)
        return targets.met(e.value("silent_rate", G), e.value("fidelity", G))

    every = [g for g in range(1, 25) if meets(g)]
    assert res.recommended_G == (every[0] if every else None)


def _row(G: int, silent: float, fidelity: float | None) -> SweepRow:
    return SweepRow(G, 1, silent, silent, 0.0, fidelity, "bayes", None, None, 0.0, None, 0.0, None, 0.0, None,
                    0.0, None, 0.0, None, None)


def test_recommend_truth_table():
    rows = [_row(2, 0.8, 0.5), _row(4, 0.5, 0.7), _row(8, 0.3, None), _row(16, 0.2, 0.95)]
    assert recommend(rows, Targets()) is None
    assert recommend(rows, Targets(max_silent=0.5)) == 4
    assert recommend(rows, Targets(max_silent=0.49)) == 8
    assert recommend(rows, Targets(max_silent=0.49, min_fidelity=0.9)) == 16
    assert recommend(rows, Targets(min_fidelity=0.99)) is None
