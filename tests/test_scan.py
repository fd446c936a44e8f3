"""`sigmaudit.audits.scan.audit` on hand-built LoadedCounts: every figure against an independent computation.

References are computed here with plain Python (``fractions.Fraction``, ``math.comb``, explicit
binomial sums, linear searches); the code under test works on numpy arrays of distinct pairs.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import math
from fractions import Fraction

import numpy as np
import polars as pl
import pytest
from scipy.stats import binom

from sigmaudit.audits import corpus_of
from sigmaudit.audits.observed import FILTERED_MIN_EXPECTED
from sigmaudit.audits.scan import audit
from sigmaudit.core.posterior import weighted_quantile
from sigmaudit.errors import ConfigError
from sigmaudit.loaders import LoadedCounts
from sigmaudit.render import Format, render
from sigmaudit.views import build_view

# --------------------------------------------------------------------------- builders and references


def loaded_from(pairs: list[tuple[int, int]], groups: list[tuple[int | None, str, int, int]] | None = None,
                **extra) -> LoadedCounts:
    """LoadedCounts with prompts p0, p1, ... holding the given (n, k); optional per-group rows."""
    per_prompt = pl.DataFrame({"prompt": [f"p{i}" for i in range(len(pairs))],
                               "n": [n for n, _ in pairs], "k": [k for _, k in pairs]},
                              schema={"prompt": pl.Utf8, "n": pl.Int64, "k": pl.Int64})
    per_group = None
    if groups is not None:
        per_group = pl.DataFrame({"step": [g[0] for g in groups], "prompt": [g[1] for g in groups],
                                  "n": [g[2] for g in groups], "k": [g[3] for g in groups]},
                                 schema={"step": pl.Int64, "prompt": pl.Utf8, "n": pl.Int64, "k": pl.Int64})
    loaded = LoadedCounts(per_prompt=per_prompt, per_group=per_group, layout="long", files=("a.csv",),
                          n_rows=sum(n for n, _ in pairs), missing_rewards=0,
                          n_single_sample_prompts=sum(n == 1 for n, _ in pairs), notes=(), reward_source="reward",
                          has_steps=groups is not None and any(g[0] is not None for g in groups))
    return dataclasses.replace(loaded, **extra)


def plugin_ref(pairs, G):
    """(silent, all_wrong, all_correct) as exact Fractions: mean of p̂^G + (1 − p̂)^G."""
    aw = sum((1 - Fraction(k, n)) ** G for n, k in pairs) / len(pairs)
    ac = sum(Fraction(k, n) ** G for n, k in pairs) / len(pairs)
    return aw + ac, aw, ac


def unbiased_ref(pairs, G):
    """Hypergeometric estimate by brute force: every G-subset of each prompt's n logged answers."""
    aw = ac = Fraction(0)
    for n, k in pairs:
        answers = [1] * k + [0] * (n - k)
        subsets = list(itertools.combinations(range(n), G))
        aw += Fraction(sum(all(answers[i] == 0 for i in s) for s in subsets), len(subsets))
        ac += Fraction(sum(all(answers[i] == 1 for i in s) for s in subsets), len(subsets))
    return (aw + ac) / len(pairs), aw / len(pairs), ac / len(pairs)


def bayes_ref(prior, pairs, G):
    """Posterior mean of p^G + (1 − p)^G under a grid prior, by plain loops over the grid."""
    tot_aw = tot_ac = 0.0
    for n, k in pairs:
        post = [w * (q**k) * ((1 - q) ** (n - k)) for q, w in zip(prior.grid.tolist(), prior.weights.tolist(),
                                                                strict=True)]
        z = sum(post)
        tot_aw += sum(m * (1 - q) ** G for m, q in zip(post, prior.grid.tolist(), strict=True)) / z
        tot_ac += sum(m * q**G for m, q in zip(post, prior.grid.tolist(), strict=True)) / z
    return (tot_aw + tot_ac) / len(pairs), tot_aw / len(pairs), tot_ac / len(pairs)


def expected_sigma_ref(p: float, G: int) -> float:
    return sum(math.comb(G, i) * p**i * (1 - p) ** (G - i) * math.sqrt(i * (G - i)) / G for i in range(G + 1))


def exact_need_ref(p: float, eps: float) -> int:
    G = 1
    while expected_sigma_ref(p, G) / math.sqrt(p * (1 - p)) < 1 - eps:
        G += 1
    return G


def closed_need_ref(p: Fraction, eps: Fraction) -> int:
    return math.ceil(1 / (8 * eps * p * (1 - p)))


def shares_ref(ps, masses, pred):
    total = sum(masses)
    return sum(m for p, m in zip(ps, masses, strict=True) if pred(p)) / total


# --------------------------------------------------------------------------- a hand-computed corpus

# p̂ = 1/4, 1, 1/2, 0 ; n = 4, 4, 6, 2
PAIRS = [(4, 1), (4, 4), (6, 3), (2, 0)]
# Known groups (sum per prompt = PAIRS): sizes 4,2,2,4,2,2 -> most common size 2
GROUPS = [(1, "p0", 4, 1), (1, "p1", 2, 2), (2, "p1", 2, 2), (1, "p2", 4, 2), (2, "p2", 2, 1), (3, "p3", 2, 0)]


@pytest.fixture(scope="module")
def report():
    return audit(loaded_from(PAIRS, GROUPS), G=(2, 4), g_main=16, eps=0.05)


@pytest.fixture(scope="module")
def plugin_report():
    return audit(loaded_from(PAIRS, GROUPS), G=(2, 4), g_main=16, eps=0.05, estimator="plugin")


def test_corpus_figures(report):
    assert report.prompts == 4
    assert report.rollouts == 16
    assert report.files == 1
    assert report.steps == 3
    assert report.layout == "long"
    assert (report.samples_per_prompt.min, report.samples_per_prompt.median, report.samples_per_prompt.max) == (2, 4, 6)
    pr = report.pass_rate
    assert pr.mean == pytest.approx(float((Fraction(1, 4) + 1 + Fraction(1, 2) + 0) / 4), abs=1e-15)  # 7/16
    assert pr.median == pytest.approx(3 / 8, abs=1e-15)  # mean of 1/4 and 1/2
    assert pr.never_solved == 0.25
    assert pr.always_solved == 0.25
    assert pr.histogram == (1, 0, 1, 0, 0, 1, 0, 0, 0, 1)  # 0 -> bin 0, .25 -> 2, .5 -> 5, 1 -> 9 (last closed)
    assert sum(pr.histogram) == report.prompts


def test_silent_rows_against_exact_fractions(report):
    from sigmaudit.core.corpus import Corpus

    prior = Corpus([n for n, _ in PAIRS], [k for _, k in PAIRS]).prior
    g2, g4 = report.silent
    assert (g2.G, g4.G) == (2, 4)
    for row in (g2, g4):
        s, aw, ac = plugin_ref(PAIRS, row.G)
        assert row.plugin == pytest.approx(float(s), abs=1e-14)
        assert row.all_wrong == pytest.approx(float(aw), abs=1e-14)
        assert row.all_correct == pytest.approx(float(ac), abs=1e-14)
        bs, baw, bac = bayes_ref(prior, PAIRS, row.G)
        assert row.bayes == pytest.approx(bs, abs=1e-12)
    # G = 2: every prompt has n >= 2, so the unbiased estimate exists; the table's rows share one estimator
    # (issue 41 item 3: predictions monotone in G), the posterior, which G = 4 needs for prompts with n < 4
    us, uaw, uac = unbiased_ref(PAIRS, 2)
    assert g2.unbiased == pytest.approx(float(us), abs=1e-14)
    assert (g2.estimate, g2.estimator) == (g2.bayes, "bayes")
    bs2, baw2, bac2 = bayes_ref(prior, PAIRS, 2)
    assert g2.estimate_all_wrong == pytest.approx(baw2, abs=1e-12)
    assert g2.estimate_all_correct == pytest.approx(bac2, abs=1e-12)
    # the value by hand: (3/6 + 1 + 6/15 + 1) / 4
    assert g2.unbiased == pytest.approx((Fraction(1, 2) + 1 + Fraction(2, 5) + 1) / 4, abs=1e-14)
    # G = 4: prompt p3 has n = 2 < 4 -> no unbiased estimate; the default is model-based
    assert g4.unbiased is None
    assert (g4.estimate, g4.estimator) == (g4.bayes, "bayes")
    bs, baw, bac = bayes_ref(prior, PAIRS, 4)
    assert g4.estimate_all_wrong == pytest.approx(baw, abs=1e-12)
    assert g4.estimate_all_correct == pytest.approx(bac, abs=1e-12)
    assert report.estimator == "bayes"  # one estimator for the whole table (issue 41 item 3)


def test_observed_silent_on_known_groups(report):
    o = report.observed_silent
    assert o is not None
    assert o.G == 2  # sizes 4,2,2,4,2,2
    assert o.groups == 6
    assert o.fraction == pytest.approx(3 / 6)  # p1's two all-correct groups, p3's all-wrong group
    assert o.all_wrong == pytest.approx(1 / 6)
    assert o.all_correct == pytest.approx(2 / 6)
    assert o.rollout_share == pytest.approx(6 / 16)
    us, _, _ = unbiased_ref(PAIRS, 2)
    assert (o.expected, o.expected_estimator) == (pytest.approx(float(us), abs=1e-14), "unbiased")
    assert o.expected_groups == pytest.approx(6 * float(us))
    assert report.filtered_warning is None


def test_wasted_at_g_main(report):
    w = report.wasted
    row16 = audit(loaded_from(PAIRS), G=(16,)).silent[0]
    assert (w.G, w.estimator) == (16, "bayes")
    assert w.silent_rollout_share == pytest.approx(row16.bayes, abs=1e-14)
    assert w.all_wrong_share + w.all_correct_share == pytest.approx(w.silent_rollout_share)
    assert w.rollouts == 16
    assert w.effective_rollouts == pytest.approx(16 * (1 - row16.bayes))
    assert w.effective_rollouts_per_group == pytest.approx(16 * (1 - row16.bayes))


def test_gradient_mass_shares(plugin_report):
    report = plugin_report  # --estimator plugin: shares at p = p̂, against the hand references
    ps = [k / n for n, k in PAIRS]
    m = report.mass_share
    assert m.G == 16
    cases = {
        "grpo": [math.sqrt(p * (1 - p)) for p in ps],
        "drgrpo": [p * (1 - p) for p in ps],
        "grpo_finite": [expected_sigma_ref(p, 16) for p in ps],
        "drgrpo_finite": [p * (1 - p) * (1 - 1 / 16) for p in ps],
    }
    for name, masses in cases.items():
        bands = getattr(m, name)
        assert bands.extreme == pytest.approx(shares_ref(ps, masses, lambda p: p < 0.1 or p > 0.9), abs=1e-12)
        assert bands.middle == pytest.approx(shares_ref(ps, masses, lambda p: 0.4 <= p <= 0.6), abs=1e-12)
        for i in range(10):
            ref = shares_ref(ps, masses, lambda p, i=i: min(int(p * 10 + 1e-9), 9) == i)
            assert bands.bins[i] == pytest.approx(ref, abs=1e-12), (name, i)
    # the numbers by hand: middle GRPO share = 1/2 / (1/2 + sqrt(3)/4)
    assert m.grpo.middle == pytest.approx(0.5 / (0.5 + math.sqrt(3) / 4))
    assert m.grpo.extreme == 0.0  # the extreme prompts here have p̂ ∈ {0, 1}: no mass at all


def test_group_size_law(report):
    g = report.group_size
    assert (g.eps, g.G) == (0.05, 16)
    assert (g.in_between_prompts, g.unreachable_prompts) == (2, 2)
    # quantiles of p̂ over the in-between prompts {1/4, 1/2}, linear interpolation
    expected_p = {0.25: Fraction(5, 16), 0.5: Fraction(3, 8), 0.75: Fraction(7, 16)}
    assert [q.quantile for q in g.quantiles] == [0.25, 0.5, 0.75]
    for q in g.quantiles:
        p = expected_p[q.quantile]
        assert q.p_hat == pytest.approx(float(p), abs=1e-15)
        assert q.closed_form == closed_need_ref(p, Fraction(1, 20))
        assert q.exact == exact_need_ref(float(p), 0.05)
        assert q.met is (16 >= q.exact)
    needs = [exact_need_ref(0.25, 0.05), exact_need_ref(0.5, 0.05)]
    assert needs[1] == 11  # THEORY: the exact need at p = 1/2, ε = 0.05
    met = sum(nd <= 16 for nd in needs)
    assert g.met_prompts == met
    assert g.met_share == met / 4  # p̂ ∈ {0, 1} count as unmet
    # DAPO draws fresh prompts to refill its batch: expected groups per kept group = 1 / (1 − corpus silent rate)
    assert report.wasted.G == 16
    assert g.dapo_groups_per_kept_group == pytest.approx(1 / (1 - report.wasted.silent_rollout_share), rel=1e-12)


def test_default_g_main_is_the_most_common_group_size():
    r = audit(loaded_from(PAIRS, GROUPS), G=(4,))
    assert r.wasted.G == r.mass_share.G == r.group_size.G == 2


def test_default_g_main_without_groups_is_8():
    r = audit(loaded_from(PAIRS), G=(4,))
    assert r.observed_silent is None and r.steps is None
    assert r.wasted.G == r.mass_share.G == r.group_size.G == 8


def test_unbiased_equals_observed_when_each_prompt_is_one_group():
    """With one logged group per prompt and G = n, the hypergeometric estimate is the observed fraction."""
    pairs = [(8, k) for k in (0, 0, 3, 8, 5, 1, 8, 7)]
    groups = [(1, f"p{i}", n, k) for i, (n, k) in enumerate(pairs)]
    r = audit(loaded_from(pairs, groups), G=(8,))
    assert r.observed_silent.fraction == pytest.approx(4 / 8)
    assert r.silent[0].unbiased == pytest.approx(r.observed_silent.fraction, abs=1e-14)


# --------------------------------------------------------------------------- filtered logs


def _filtered_corpus(k_per_group: int) -> LoadedCounts:
    """40 prompts, 2 groups of 8 each with k_per_group right in both groups."""
    pairs = [(16, 2 * k_per_group)] * 40
    groups = [(s, f"p{i}", 8, k_per_group) for i in range(40) for s in (1, 2)]
    return loaded_from(pairs, groups)


def test_filtered_log_warns():
    r = audit(_filtered_corpus(1))
    o = r.observed_silent
    assert o.fraction == 0.0 and o.groups == 80
    # expected: unbiased at G = 8 from n = 16, k = 2: C(14, 8) / C(16, 8) = 3003/12870 per prompt
    assert o.expected == pytest.approx(3003 / 12870, abs=1e-14)
    assert o.expected_groups == pytest.approx(80 * 3003 / 12870)
    assert o.expected_groups >= FILTERED_MIN_EXPECTED
    assert r.filtered_warning is not None and "filtered" in r.filtered_warning
    assert r.filtered_warning in r.notes


def test_no_warning_when_few_silent_groups_are_expected():
    r = audit(_filtered_corpus(4))  # p̂ = 1/2, n = 16: unbiased silent at 8 = 2 C(8,8)/C(16,8) ≈ 1.6e-4
    assert r.observed_silent.fraction == 0.0
    assert r.observed_silent.expected_groups < FILTERED_MIN_EXPECTED
    assert r.filtered_warning is None


def test_no_warning_on_unfiltered_log(report):
    assert report.filtered_warning is None


# --------------------------------------------------------------------------- edges and validation


def test_all_unsolved_corpus_has_null_shares_not_crashes():
    r = audit(loaded_from([(4, 0), (4, 0)]), G=(2, 8), estimator="plugin")
    assert r.pass_rate.never_solved == 1.0
    assert all(s.plugin == 1.0 for s in r.silent)
    assert math.isnan(r.mass_share.grpo.middle)  # no mass anywhere: share undefined, JSON null
    assert r.group_size.quantiles == () and r.group_size.dapo_groups_per_kept_group is None
    assert r.group_size.met_share == 0.0
    d = json.loads(render(build_view(r), Format.json))
    assert d["mass_share"]["grpo"]["middle"] is None


def test_single_sample_and_missing_rewards_are_reported():
    # two of three prompts have n >= 4, so the corpus is not thin (a thin one is refused: core.identify)
    r = audit(loaded_from([(1, 1), (8, 3), (6, 2)], missing_rewards=5, notes=("1 prompts have a single sample",)))
    assert r.single_sample_prompts == 1 and r.missing_rewards == 5
    assert "1 prompts have a single sample" in r.notes
    text = render(build_view(r), Format.markdown)
    assert "5 missing" in text and "single sample" in text


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"G": (0,)}, "whole numbers >= 1"),
    ({"G": ()}, "at least one"),
    ({"G": (4,), "g_main": 0}, "whole numbers >= 1"),
    ({"eps": 0.0}, "eps must lie in \\(0, 1\\)"),
    ({"eps": 1.0}, "eps must lie in \\(0, 1\\)"),
])
def test_bad_arguments_raise_config_error(kwargs, match):
    with pytest.raises(ConfigError, match=match):
        audit(loaded_from(PAIRS), **kwargs)


def test_g_sizes_are_sorted_and_deduplicated():
    r = audit(loaded_from(PAIRS), G=(8, 2, 8))
    assert [s.G for s in r.silent] == [2, 8]


@pytest.mark.parametrize("q", [0.0, 0.1, 0.25, 0.5, 0.75, 0.9, 1.0])
def test_weighted_quantile_equals_numpy_on_expanded_values(q):
    import numpy as np

    values = np.array([0.5, 0.1, 0.9, 0.3])
    weights = np.array([3.0, 1.0, 2.0, 5.0])
    expanded = np.repeat(values, weights.astype(int))
    assert weighted_quantile(values, weights, q) == pytest.approx(float(np.quantile(expanded, q)), abs=1e-15)


def test_posterior_mass_shares_and_log_shares_are_labelled():
    """Default rule: shares from the posterior mixture over the prior grid (independent sum here);
    never/always solved both in the log and under the posterior."""
    r = audit(loaded_from(PAIRS, GROUPS), G=(2, 4), g_main=16, eps=0.05)
    corpus = corpus_of(loaded_from(PAIRS, GROUPS))
    grid, w = corpus.prior.grid, corpus.prior.weights
    mix = np.zeros(grid.size)
    for n, k, m in zip(corpus.n, corpus.k, corpus.weight, strict=True):
        post = binom.pmf(k, n, grid) * w
        mix += m * post / post.sum()
    sd = np.sqrt(grid * (1 - grid))
    extreme = (grid < 0.1) | (grid > 0.9)
    assert r.mass_share.basis == "posterior"
    assert r.mass_share.grpo.extreme == pytest.approx((mix @ (sd * extreme)) / (mix @ sd), rel=1e-9)
    assert r.pass_rate.never_solved_posterior == pytest.approx(mix[0] / mix.sum(), rel=1e-9, abs=1e-15)
    assert r.pass_rate.always_solved_posterior == pytest.approx(mix[-1] / mix.sum(), rel=1e-9, abs=1e-15)
    md = render(build_view(r), Format.markdown)
    assert "never solved in the log (k = 0)" in md and "never solved (p = 0): range the data allow" in md
    assert "posterior P(p = 0)" not in md  # the prior's point is printed only with its interval (--bootstrap)

