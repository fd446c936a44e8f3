"""The check gate (sigmaudit.audits.check): the pure pass/fail function, metric values against references."""

from __future__ import annotations

import math
from fractions import Fraction
from math import comb

import numpy as np
import pytest
from scipy.stats import binom

from sigmaudit.audits.check import METRICS, OBSERVED_ONLY, Check, CheckResult, Threshold, check, evaluate, passes
from sigmaudit.core.corpus import Corpus
from sigmaudit.views.check import github_annotations, sentence, worded

# ---------------------------------------------------------------- truth table of the gate

TRUTH_TABLE = [
    # value, kind, limit, passes
    (0.30, "max", 0.30, True),  # equal holds
    (0.29, "max", 0.30, True),
    (0.31, "max", 0.30, False),
    (0.0, "max", 0.0, True),
    (1.0, "max", 1.0, True),
    (1e-12, "max", 0.0, False),  # a hair above 0 is not 0
    (0.90, "min", 0.90, True),
    (0.91, "min", 0.90, True),
    (0.89, "min", 0.90, False),
    (1.0, "min", 1.0, True),
    (None, "max", 1.0, False),  # undefined never passes
    (None, "min", 0.0, False),
    (float("nan"), "max", 1.0, False),
    (float("nan"), "min", 0.0, False),
]


@pytest.mark.parametrize(("value", "kind", "limit", "expected"), TRUTH_TABLE)
def test_passes_truth_table(value, kind, limit, expected):
    assert passes(value, kind, limit) is expected


def test_passes_rejects_unknown_kind():
    with pytest.raises(ValueError, match="'between'"):
        passes(0.5, "between", 0.5)  # type: ignore[arg-type]


def test_evaluate_orders_by_metric_and_reports_each():
    values = {"silent_rate": 0.5, "fidelity": 0.8, "never_solved_rate": 0.1}
    checks = evaluate(values, [Threshold("never_solved_rate", 0.05), Threshold("fidelity", 0.7),
                               Threshold("silent_rate", 0.5)])
    assert [c.name for c in checks] == ["silent_rate", "fidelity", "never_solved_rate"]
    assert [c.passed for c in checks] == [True, True, False]
    assert [c.op for c in checks] == ["<=", ">=", "<="]
    assert sentence(checks[2]) == "never_solved_rate 0.1000 > limit 0.0500"
    assert sentence(checks[1]) == "fidelity 0.8000 >= limit 0.7000"


def test_missing_value_fails():
    (c,) = evaluate({"fidelity": None}, [Threshold("fidelity", 0.0)])
    assert c.value is None and not c.passed
    assert sentence(c) == "fidelity undefined < limit 0.0000"


# ---------------------------------------------------------------- values on a hand-built corpus

N = np.array([8, 8, 8, 8, 8, 8, 20])
K = np.array([0, 2, 4, 8, 8, 5, 1])


def _unbiased(n: int, k: int, g: int) -> tuple[Fraction, Fraction]:
    return Fraction(comb(n - k, g), comb(n, g)), Fraction(comb(k, g), comb(n, g))


def _reference_fidelity(corpus: Corpus, G: int) -> float:
    """Posterior by scipy's binomial pmf; E[σ] by a direct sum over k."""
    grid, w = corpus.prior.grid, corpus.prior.weights
    ks = np.arange(G + 1)
    sig = np.sqrt(ks * (G - ks)) / G
    es = np.array([binom.pmf(ks, G, p) @ sig for p in grid])
    sd = np.sqrt(grid * (1 - grid))
    num = den = 0.0
    for n, k, m in zip(corpus.n, corpus.k, corpus.weight, strict=True):
        post = binom.pmf(k, n, grid) * w
        post /= post.sum()
        num += m * post @ es
        den += m * post @ sd
    return num / den


def _posterior_refs(corpus: Corpus) -> tuple[float, float]:
    """(extreme share, never solved) from the posterior, by scipy's binomial pmf on the prior grid."""
    grid, w = corpus.prior.grid, corpus.prior.weights
    sd = np.sqrt(grid * (1 - grid))
    extreme = (grid < 0.1) | (grid > 0.9)
    num = den = never = 0.0
    for n, k, m in zip(corpus.n, corpus.k, corpus.weight, strict=True):
        post = binom.pmf(k, n, grid) * w
        post /= post.sum()
        num += m * post @ (sd * extreme)
        den += m * post @ sd
        never += m * post[grid == 0].sum()
    return num / den, never / corpus.weight.sum()


def test_metric_values_match_references():
    corpus = Corpus(N, K)
    thresholds = [Threshold(name, 0.5) for name in METRICS if name not in OBSERVED_ONLY]
    res = check(corpus, 4, thresholds)
    assert res.estimator == "unbiased"  # n >= 4 everywhere
    values = {c.name: c.value for c in res.checks}
    assert {c.name: c.estimator for c in res.checks} == {
        "silent_rate": "unbiased", "all_wrong_rate": "unbiased", "all_correct_rate": "unbiased",
        "extreme_share": "bayes", "fidelity": "bayes", "never_solved_rate": "bayes"}
    aw = [_unbiased(int(n), int(k), 4) for n, k in zip(N, K, strict=True)]
    all_wrong = sum(a for a, _ in aw) / len(aw)
    all_correct = sum(b for _, b in aw) / len(aw)
    assert values["all_wrong_rate"] == pytest.approx(float(all_wrong), abs=1e-12)
    assert values["all_correct_rate"] == pytest.approx(float(all_correct), abs=1e-12)
    assert values["silent_rate"] == pytest.approx(float(all_wrong + all_correct), abs=1e-12)
    extreme, never = _posterior_refs(corpus)
    assert values["never_solved_rate"] == pytest.approx(never, rel=1e-9)
    assert values["extreme_share"] == pytest.approx(extreme, rel=1e-9)
    assert values["fidelity"] == pytest.approx(_reference_fidelity(corpus, 4), rel=1e-9)


def test_plugin_shares_are_those_in_the_log():
    thresholds = [Threshold(m, 0.5) for m in METRICS if m not in OBSERVED_ONLY]
    plug = {c.name: c.value for c in check(Corpus(N, K), 4, thresholds, estimator="plugin").checks}
    assert plug["never_solved_rate"] == pytest.approx(1 / 7)  # k = 0 in the log
    # GRPO mass sqrt(p̂(1−p̂)); only p̂ = 1/20 lies in the extreme band with non-zero mass
    p_hat = K / N
    mass = np.sqrt(p_hat * (1 - p_hat))
    assert plug["extreme_share"] == pytest.approx(mass[-1] / mass.sum(), rel=1e-12)
    assert plug["silent_rate"] == pytest.approx(np.mean(p_hat**4 + (1 - p_hat) ** 4), rel=1e-12)


def test_small_n_extreme_share_is_not_stuck_at_zero():
    """With n = 5 no p̂ = k/5 lies strictly inside (0, 0.1): the log-based share is 0 whatever the
    truth; the posterior one sees the hard prompts. Over 12 corpora: never near 0, within 0.06 of the
    truth on average (one corpus can miss by 0.15: n = 5 barely tells an atom at p = 1 from a Beta's
    tail, and the maximum-likelihood prior takes the one the counts favour)."""
    t = [Threshold("extreme_share", 1.0)]
    errors = []
    for seed in range(12):
        rng = np.random.default_rng(seed)
        p = rng.beta(0.4, 1.5, 400)
        n = np.full(400, 5)
        corpus = Corpus(n, rng.binomial(n, p))
        assert check(corpus, 4, t, estimator="plugin").checks[0].value == 0.0
        truth = float(np.sum(np.sqrt(p * (1 - p)) * ((p < 0.1) | (p > 0.9))) / np.sum(np.sqrt(p * (1 - p))))
        value = check(corpus, 4, t).checks[0].value
        assert value > 0.05
        errors.append(value - truth)
    assert np.mean(np.abs(errors)) < 0.06


def test_confidence_gates_on_the_bound():
    corpus = Corpus(N, K)
    point = check(corpus, 4, [Threshold("silent_rate", 1.0)]).checks[0].value
    limit = point + 1e-9  # the point passes, the upper bound cannot
    plain = check(corpus, 4, [Threshold("silent_rate", limit)], replicates=60)
    sure = check(corpus, 4, [Threshold("silent_rate", limit)], replicates=60, confidence=0.95)
    c = sure.checks[0]
    assert plain.passed and not sure.passed
    assert c.tested > c.value and c.value_ci[0] <= c.value <= c.value_ci[1]
    # min-limits use the lower bound
    fid = check(corpus, 4, [Threshold("fidelity", 0.0)], replicates=60, confidence=0.95).checks[0]
    assert fid.tested <= fid.value


def test_failing_value_never_prints_equal_to_its_limit():
    (c,) = evaluate({"silent_rate": 0.50004}, [Threshold("silent_rate", 0.5)])
    assert not c.passed and sentence(c) == "silent_rate 0.50004 > limit 0.50000"


def test_bayes_when_some_prompt_has_fewer_samples_than_G():
    res = check(Corpus(N, K), 12, [Threshold("silent_rate", 1.0)])
    assert res.estimator == "bayes"
    assert res.passed and 0.0 < res.checks[0].value < 1.0


def test_passed_iff_every_check_passes():
    corpus = Corpus(N, K)
    ok = check(corpus, 4, [Threshold("never_solved_rate", 1 / 7), Threshold("silent_rate", 1.0)], estimator="plugin")
    assert ok.passed and not ok.failed
    bad = check(corpus, 4, [Threshold("never_solved_rate", 0.14), Threshold("silent_rate", 1.0)], estimator="plugin")
    assert not bad.passed and [c.name for c in bad.failed] == ["never_solved_rate"]


def test_contract_and_annotations():
    res = CheckResult(passed=False, G=16, estimator="bayes", prompts=3, checks=(
        Check("silent_rate", 0.5, 0.3, "max", False), Check("fidelity", 0.9, 0.8, "min", True)))
    assert res.to_dict()["checks"][0]["sentence"] is None  # the audit returns numbers; views word them
    d = worded(res).to_dict()
    assert list(d) == ["passed", "G", "G_source", "estimator", "estimator_rule", "fidelity_estimator", "prompts",
                       "level", "replicates", "confidence", "checks", "warnings", "filtered", "pre_filter", "basis",
                       "consecutive", "silent_by", "by", "window", "drift", "dapo", "config"]
    assert d["checks"][0] == {"name": "silent_rate", "value": 0.5, "value_ci": None, "tested": 0.5, "limit": 0.3,
                              "kind": "max", "op": "<=", "passed": False, "estimator": "auto",
                              "sentence": "silent_rate 0.5000 > limit 0.3000", "meaning": "silent-group rate at G"}
    assert github_annotations(res) == [
        "::error title=sigmaudit check (silent_rate)::silent_rate 0.5000 > limit 0.3000 at G = 16 "
        "(silent-group rate at G)"]
    assert worded(res).verdict() == "check FAILED (1 of 2): silent_rate 0.5000 > limit 0.3000 at G = 16"
    with pytest.raises(ValueError, match="not worded"):
        res.verdict()
    assert not math.isnan(d["checks"][1]["value"])
