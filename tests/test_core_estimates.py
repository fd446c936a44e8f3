"""One estimator rule and its intervals (sigmaudit.core.estimates): plan's recommendation is check's
threshold, the bootstrap covers at its nominal rate, small-n shares are not stuck at zero."""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
import pytest
from cli_runner import run
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import integrate, stats

from sigmaudit.audits.check import Threshold, check
from sigmaudit.audits.plan import Targets, plan
from sigmaudit.core.corpus import Corpus
from sigmaudit.core.estimates import Spec, bootstrap, resolve
from sigmaudit.core.fidelity import expected_sigma
from sigmaudit.core.prior import _fit_atoms_beta, default_grid, distinct_pairs, fit_corpus_prior, refit_prior

REAL = Path(__file__).parent / "data" / "real"
EVALPERF = REAL / "evalperf_per_task_pass_rates.csv"
AIME = REAL / "pika_aime_1983_2024_pass_rates.csv"
CRUX = REAL / "cruxeval_codellama7b_t0.2_input_n10.csv"


def test_resolve_rule():
    assert resolve("silent_rate", 8, "auto", 8) == "unbiased"
    assert resolve("silent_rate", 9, "auto", 8) == "bayes"
    assert resolve("fidelity", 4, "auto", 8) == "bayes"
    assert resolve("never_solved_rate", 4, "unbiased", 8) == "bayes"
    assert resolve("silent_rate", 9, "unbiased", 8) == "unbiased"  # undefined there: None, not a switch
    assert resolve("extreme_share", 4, "plugin", 8) == "plugin"
    with pytest.raises(ValueError, match="'median'"):
        resolve("silent_rate", 4, "median", 8)  # type: ignore[arg-type]


# ---------------------------------------------------------------- plan's G is check's G


def _corpora():
    rng = np.random.default_rng(11)
    out = []
    for n_max, size, a, b in ((8, 300, 0.5, 0.8), (16, 200, 2.0, 1.0), (5, 400, 0.3, 0.3)):
        n = rng.integers(max(2, n_max // 2), n_max + 1, size)
        p = rng.beta(a, b, size)
        out.append(Corpus(n, rng.binomial(n, p)))
    return out


@pytest.mark.parametrize("estimator", ["auto", "bayes", "plugin"])
@pytest.mark.parametrize("which", [0, 1, 2])
def test_plan_recommends_exactly_the_smallest_G_check_passes(which, estimator):
    corpus = _corpora()[which]
    curve = plan(corpus, [2, 4, 8, 16, 32, 64], estimator=estimator).sweep
    silents = [r.silent for r in curve if r.silent is not None]
    fids = [r.fidelity for r in curve if r.fidelity is not None]
    # limits between the swept values: the answer usually lies off the grid
    for X in np.quantile(silents, [0.2, 0.5, 0.8]):
        res = plan(corpus, [2, 4, 8, 16, 32, 64], targets=Targets(max_silent=float(X)), estimator=estimator)
        G = res.recommended_G
        assert G is not None
        assert check(corpus, G, [Threshold("silent_rate", float(X))], estimator=estimator).passed
        if G > 1:
            assert not check(corpus, G - 1, [Threshold("silent_rate", float(X))], estimator=estimator).passed
    Y = float(np.quantile(fids, 0.5))
    res = plan(corpus, [2, 4, 8, 16, 32, 64], targets=Targets(min_fidelity=Y), estimator=estimator)
    G = res.recommended_G
    assert check(corpus, G, [Threshold("fidelity", Y)], estimator=estimator).passed
    assert G == 1 or not check(corpus, G - 1, [Threshold("fidelity", Y)], estimator=estimator).passed


@settings(max_examples=25, deadline=None, derandomize=True)
@given(seed=st.integers(0, 2**31), prompts=st.integers(30, 150), n_min=st.integers(8, 16),
       Gs=st.lists(st.integers(1, 64), min_size=2, max_size=40, unique=True))
def test_a_quantity_at_G_has_the_same_bits_in_a_batch_and_alone(seed, prompts, n_min, Gs):
    """plan sweeps and searches G in batches, check computes one G: the same value to the last bit, or a target
    set exactly at a plan row's value is met by plan's table and missed by its search (it recommended G = 17 with
    the G = 16 row showing the target)."""
    rng = np.random.default_rng(seed)
    n = rng.integers(n_min, 41, prompts)
    k = rng.binomial(n, rng.beta(0.4, 0.4, prompts))
    corpus = Corpus(n, k)
    names = ["silent_rate", "fidelity", "all_wrong_rate", "extreme_share"]
    for estimator in ("bayes", "auto", "plugin"):
        batch = corpus.estimates(names, Gs, estimator)
        for g in Gs:
            for name in names:
                one = corpus.estimates([name], [g], estimator).value(name, g)
                assert one == batch.value(name, g), (estimator, name, g)


def test_issue_reproducer_plan_then_check_on_evalperf(capsys):
    """plan --max-silent 0.659 then check -G <recommended> exits 0, and 1 at the G below."""
    code, out, _ = run(capsys, "plan", str(EVALPERF), "--max-silent", "0.659", "-f", "json", "-q", "--bootstrap", "0")
    G = json.loads(out)["recommended_G"]
    assert code == 0 and G == 9
    for g, want in ((G, 0), (G - 1, 1)):
        code, _, err = run(capsys, "check", str(EVALPERF), "-G", str(g), "--max-silent", "0.659", "-q",
                           "--bootstrap", "0", "-f", "json")
        assert code == want, err


# ---------------------------------------------------------------- small-n shares


@pytest.mark.parametrize("path", [AIME, CRUX])
def test_extreme_share_is_positive_and_labelled_on_small_n_logs(capsys, path):
    code, out, _ = run(capsys, "scan", str(path), "-f", "json", "-q")
    d = json.loads(out)
    assert code == 0 and d["samples_per_prompt"]["max"] <= 10
    assert d["mass_share"]["basis"] == "posterior" and d["mass_share"]["grpo"]["extreme"] > 0.01
    code, out, _ = run(capsys, "scan", str(path), "-q", "--full")
    assert "never solved in the log (k = 0)" in out and "never solved (p = 0): range the data allow" in out
    assert "extreme (p < 0.1 or p > 0.9)" in out
    code, out, _ = run(capsys, "check", str(path), "-G", "8", "--max-extreme-share", "1", "-f", "json", "-q",
                       "--bootstrap", "20")
    (c,) = json.loads(out)["checks"]
    assert c["value"] > 0.01 and c["estimator"] == "bayes" and c["value_ci"][0] <= c["value"] <= c["value_ci"][1]


def test_few_prompts_and_extrapolation_warn():
    """Ten prompts, each 1 of 2 right (the issue's example: 0.0079 at G = 8, 2.7e-19 at G = 64 with no
    word) is refused: two samples fix E[p], E[p^2] only, so the silent rate at 64 is not identified.
    Ten prompts with 4 of 8 right are identified enough to answer, with both warnings."""
    from sigmaudit.core.identify import NotIdentifiedError

    with pytest.raises(NotIdentifiedError, match="not identified"):
        check(Corpus(np.full(10, 2), np.ones(10, dtype=int)), 64, [Threshold("silent_rate", 0.5)], replicates=20)
    corpus = Corpus(np.full(10, 8), np.full(10, 4))
    res = check(corpus, 64, [Threshold("silent_rate", 0.5)], replicates=20)
    assert any("only 10 prompts" in w for w in res.warnings)
    assert any("exceeds every prompt's logged samples (at most 8)" in w for w in res.warnings)


# ---------------------------------------------------------------- the bootstrap


def test_refit_reproduces_a_fresh_fit():
    rng = np.random.default_rng(5)
    n = rng.integers(4, 12, 500)
    p = np.where(rng.random(500) < 0.2, 0.0, rng.beta(2, 3, 500))
    k = rng.binomial(n, p)
    nu, ku, cu, _ = distinct_pairs(n, k)
    prior = fit_corpus_prior(nu, ku, cu)
    w = rng.multinomial(500, cu / cu.sum()).astype(float)
    fresh = fit_corpus_prior(nu[w > 0], ku[w > 0], w[w > 0])
    assert fresh.kind == prior.kind
    again = refit_prior(prior, nu, ku, w)
    post = lambda pr: pr.posterior(nu, ku) @ (pr.grid**8 + (1 - pr.grid) ** 8)  # noqa: E731
    assert w @ post(again) / w.sum() == pytest.approx(w @ post(fresh) / w.sum(), abs=2e-4)


W0, W1, A, B = 0.15, 0.05, 1.5, 2.5
"""The synthetic population: point masses at p = 0 and 1, and Beta(A, B)."""


def _E(f) -> float:
    beta = integrate.quad(lambda p: f(p) * stats.beta.pdf(p, A, B), 0, 1, limit=200)[0]
    return W0 * f(0.0) + W1 * f(1.0) + (1 - W0 - W1) * beta


def test_bootstrap_interval_coverage():
    """COVERAGE TEST (about 20-40 s; the slowest test of the suite, on purpose): nominal 90 % intervals
    cover the population value in 85-95 % of many synthetic corpora.

    60 corpora of 300 prompts, n = 8 samples each, p from point masses at 0 and 1 plus a Beta; 80
    replicates per interval; six quantities, the unbiased and the bayes (refitted-prior) paths, one G
    beyond n. The prior is fitted in the family the population comes from (the family choice itself is
    not what is tested). Pooled over quantities the coverage must lie in [0.85, 0.95]; each quantity
    alone (60 corpora: ±4 % noise) in [0.78, 0.99].
    """
    sd = lambda p: np.sqrt(p * (1 - p))  # noqa: E731
    truth = {
        ("silent_rate", 8): _E(lambda p: p**8 + (1 - p) ** 8),
        ("silent_rate", 16): _E(lambda p: p**16 + (1 - p) ** 16),
        ("all_wrong_rate", 4): _E(lambda p: (1 - p) ** 4),
        ("fidelity", 8): _E(lambda p: float(expected_sigma(p, 8)) if 0 < p < 1 else 0.0) / _E(sd),
        ("extreme_share", 8): _E(lambda p: sd(p) * ((p < 0.1) | (p > 0.9))) / _E(sd),
        ("never_solved_rate", 8): W0,
    }
    n, N, R, reps = 8, 300, 60, 80
    specs = [Spec(q, G, resolve(q, G, "auto", n)) for (q, G) in truth]
    assert {s.estimator for s in specs} == {"unbiased", "bayes"}
    values = np.array(list(truth.values()))
    rng = np.random.default_rng(7)
    hits = np.zeros(len(specs))
    start = time.perf_counter()
    for r in range(R):
        u = rng.random(N)
        p = np.where(u < W0, 0.0, np.where(u < W0 + W1, 1.0, rng.beta(A, B, N)))
        nu, ku, cu, _ = distinct_pairs(np.full(N, n), rng.binomial(n, p))
        prior, _ = _fit_atoms_beta(nu, ku, cu, default_grid(), 1, None)
        iv = bootstrap(nu, ku, cu, prior, specs, replicates=reps, seed=r).interval(0.9)
        hits += (iv[:, 0] <= values) & (values <= iv[:, 1])
    coverage = hits / R
    pooled = hits.sum() / (R * len(specs))
    print(f"coverage per quantity {dict(zip([f'{s.name}@{s.G}' for s in specs], coverage.round(3), strict=True))}, "
          f"pooled {pooled:.3f}, {time.perf_counter() - start:.1f} s")
    assert 0.85 <= pooled <= 0.95
    assert np.all((coverage >= 0.78) & (coverage <= 0.99)), coverage


def test_posterior_never_always_shares_print_only_with_their_interval(capsys):
    """Item 3 of issue 24 on a real n = 10 corpus (CRUXEval output, Code Llama 7B: 58 % of problems 0/10): the
    share of truly unsolvable problems is the range 0 – 0.5813 (any tiny p > 0 fits k = 0), the prior's point
    0.5533 appears only beside its bootstrap interval, and the interval is the one check computes."""
    crux = CRUX.parent / "cruxeval_codellama7b_t0.2_output_n10.csv"
    code, out, _ = run(capsys, "scan", str(crux), "-f", "json", "-q")
    plain = json.loads(out)["pass_rate"]
    assert code == 0 and plain["never_solved_range"] == [0.0, 0.58125] and plain["never_solved_posterior_ci"] is None
    code, out, _ = run(capsys, "scan", str(crux), "-q", "--full")
    assert "0.0000 – 0.5813" in out and "posterior P(p = 0)" not in out
    code, out, _ = run(capsys, "scan", str(crux), "-f", "json", "-q", "--bootstrap", "40")
    d = json.loads(out)
    pr = d["pass_rate"]
    assert (d["replicates"], d["level"]) == (40, 0.9)
    lo, hi = pr["never_solved_posterior_ci"]
    assert pr["never_solved_posterior"] == pytest.approx(0.5533, abs=5e-4)
    assert 0.45 < lo < pr["never_solved_posterior"] < hi < 0.62
    lo1, hi1 = pr["always_solved_posterior_ci"]
    assert 0.18 < lo1 < pr["always_solved_posterior"] < hi1 < 0.32
    code, out, _ = run(capsys, "check", str(crux), "-G", "8", "--max-never-solved", "1", "--bootstrap", "40",
                       "-f", "json", "-q")
    (c,) = json.loads(out)["checks"]
    assert c["value"] == pytest.approx(pr["never_solved_posterior"], rel=1e-12)
    assert c["value_ci"] == pytest.approx([lo, hi], rel=1e-12)
    code, out, _ = run(capsys, "scan", str(crux), "-q", "--bootstrap", "40", "-f", "markdown")
    cell = f"{pr['never_solved_posterior']:.4f} (interval {lo:.4f} – {hi:.4f})"
    assert f"| never solved, posterior P(p = 0) | {cell} |" in out
    code, out, _ = run(capsys, "check", str(crux), "-G", "8", "--max-extreme-share", "1", "--bootstrap", "40",
                       "-f", "json", "-q")
    (e,) = json.loads(out)["checks"]
    m = d["mass_share"]
    assert m["grpo"]["extreme"] == pytest.approx(e["value"], rel=1e-12)
    assert m["grpo_extreme_ci"] == pytest.approx(e["value_ci"], rel=1e-12)
    assert 0.04 < m["grpo_extreme_ci"][0] < 0.1 and 0.2 < m["grpo_extreme_ci"][1] < 0.3  # 0.0627 – 0.2439 at 200
    code, out, _ = run(capsys, "scan", str(crux), "-q", "--bootstrap", "40", "--summary")
    assert "truly unsolvable (p = 0) 0.0%–58.1%" in out and "posterior P(p = 0) 55.3% (" in out
    # the summary's extreme share is at the logged G (its interval is the G → ∞ share's, in the JSON and --full)
    assert f"GRPO {m['grpo_finite']['extreme']:.1%}" in out and m['grpo_extreme_ci'][0] <= m['grpo']['extreme']



_QUANTILE_VALUES = st.lists(st.one_of(st.floats(-1e6, 1e6, allow_subnormal=True), st.sampled_from([0.0, -0.0, 1.0])),
                            min_size=1, max_size=40)
_Q = st.one_of(st.floats(0.0, 1.0), st.sampled_from([0.0, 0.05, 0.5, 0.95, 1.0]))


@settings(max_examples=500, deadline=None)
@given(values=_QUANTILE_VALUES, q=_Q, qs=st.lists(_Q, min_size=1, max_size=3))
def test_linear_quantiles_have_numpys_bits(values, q, qs):
    """The bootstrap intervals' quantiles (without np.quantile, whose np.unique imports numpy.ma) are np.quantile's
    default method bit for bit, for one q and for several at once: signed zeros (which of 0.0 and −0.0 a
    partition puts where), ties, one value, q at 0, 1/2 and 1, the interpolation from each end."""
    from sigmaudit.core.posterior import linear_quantiles

    x = np.array(values)
    assert repr(linear_quantiles(x, [q])[0]) == repr(float(np.quantile(x, q)))
    assert [repr(v) for v in linear_quantiles(x, qs)] == [repr(float(v)) for v in np.quantile(x, qs)]
    assert x.tolist() == values  # the input is not reordered


def test_linear_quantiles_brute_force():
    """Against the definition (Hyndman and Fan's type 7) on a sorted sample: at (n − 1)q, the value there or the
    straight line between its neighbours."""
    from sigmaudit.core.posterior import linear_quantiles

    x = np.array([3.0, 1.0, 2.0, 10.0])  # sorted: 1, 2, 3, 10
    assert linear_quantiles(x, [0.0, 1.0, 0.5]) == [1.0, 10.0, 2.5]  # index 1.5: halfway between 2 and 3
    assert linear_quantiles(x, [0.9])[0] == pytest.approx(3.0 + 0.7 * 7.0, abs=1e-12)  # index 2.7
    assert linear_quantiles(np.array([7.5]), [0.3]) == [7.5]
