"""The step's SNR with between-prompt and per-rollout noise, and the flat-range rule (issue 41 items 1, 2;
docs/theory.md, "The step's signal-to-noise ratio, with both noise terms"): E[σ⁴] against the sum over k,
the variance formula against a Monte Carlo of its linear-score model, the std convention cancelling and the
limits (hypothesis), the rule against a literal reading over every whole G, and the corpora of the issue."""

from __future__ import annotations

from math import comb

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sigmaudit.audits.objective import Band, evaluate
from sigmaudit.audits.snr_choice import band_ratios, choose_snr
from sigmaudit.core.corpus import Corpus
from sigmaudit.core.update import noise_ratio, sigma_fourth, snr_moments, step_snr


def corpus_at(p: float, seed: int = 0, prompts: int = 1000, n: int = 64) -> Corpus:
    k = np.random.default_rng(seed).binomial(n, p, prompts)
    return Corpus(np.full(prompts, n), k)


def beta_corpus(seed: int = 1) -> Corpus:
    rng = np.random.default_rng(seed)
    p = rng.beta(0.7, 1.2, 2000)
    return Corpus(np.full(2000, 16), rng.binomial(16, p))


def exhausted_corpus(seed: int = 2) -> Corpus:
    """A run late in training: most prompts always solved, a hard tail never solved, few in between."""
    rng = np.random.default_rng(seed)
    p = np.concatenate([np.ones(600), np.zeros(150), rng.beta(8, 1, 250)])
    return Corpus(np.full(1000, 16), rng.binomial(16, p))


# ---------------------------------------------------------------- the moments


@pytest.mark.parametrize("G", [1, 2, 3, 5, 8, 17, 64])
@pytest.mark.parametrize("p", [0.0, 1e-4, 0.02, 0.3, 0.5, 0.97, 1.0])
def test_sigma_fourth_is_the_sum_over_k(G, p):
    want = sum(comb(G, k) * p**k * (1 - p) ** (G - k) * (k * (G - k) / G**2) ** 2 for k in range(G + 1))
    assert sigma_fourth([p], [G])[0, 0] == pytest.approx(want, rel=1e-10, abs=1e-300)


def test_rloo_snr_is_dr_grpos():
    """RLOO's advantages are Dr. GRPO's times G/(G − 1): a common factor, so the SNR is the same."""
    p = np.linspace(0.01, 0.99, 40)
    for G in (2, 3, 8, 40):
        d, r = snr_moments(p, [G], "drgrpo"), snr_moments(p, [G], "rloo")
        lift = G / (G - 1)
        np.testing.assert_allclose(r[0], d[0] * lift, rtol=1e-12)
        np.testing.assert_allclose(r[1], d[1] * lift**2, rtol=1e-12)
        np.testing.assert_allclose(r[2], d[2] * lift**2, rtol=1e-12)


# ---------------------------------------------------------------- the variance formula, by Monte Carlo


def simulate_steps(ps: np.ndarray, G: int, N: int, nu: float, tau: float, mu: np.ndarray, steps: int,
                   rng: np.random.Generator) -> np.ndarray:
    """u per step in the linear-score model: rollout i of prompt j scores μ_0 + r_ij·(Δμ + η_j) + ξ_ij, prompts
    drawn uniformly from ``ps``, GRPO with the sample std (verl's torch.std, TRL's nanstd)."""
    D = mu.size
    out = np.empty((steps, D))
    for t in range(steps):
        p = rng.choice(ps, size=N)
        r = (rng.random((N, G)) < p[:, None]).astype(float)
        sd = r.std(axis=1, ddof=1, keepdims=True)
        A = np.divide(r - r.mean(axis=1, keepdims=True), sd, out=np.zeros_like(r), where=sd > 0)
        eta = nu / np.sqrt(D) * rng.standard_normal((N, D))
        xi = tau / np.sqrt(D) * rng.standard_normal((N, G, D))
        s = 0.3 + r[..., None] * (mu + eta[:, None, :]) + xi
        out[t] = np.einsum("ng,ngd->d", A, s) / (N * G)
    return out


@pytest.mark.slow
def test_variance_formula_against_a_monte_carlo_of_the_linear_score_model():
    """E[u] = m1·Δμ and tr Var(u) = [ν²·m2 + τ²·ma/G + |Δμ|²·Var(c)]/N, the closed form (plug-in p, exact
    moments) against 4,000 simulated steps, within 4 standard errors."""
    rng = np.random.default_rng(11)
    ps = np.array([0.1, 0.5, 0.8])
    corpus = Corpus.from_pairs([10, 10, 10], [1, 5, 8], [1, 1, 1])  # p̂ = 0.1, 0.5, 0.8
    D, nu, tau, steps = 32, 2.0, 3.0, 4000
    mu = np.zeros(D)
    mu[0] = 0.5
    for G, N in ((2, 12), (4, 6), (12, 2)):
        cur = evaluate(corpus, [G], N * G, estimator="plugin")
        m1, m2, ma = (float(cur.moments[k][0]) for k in ("m1", "m2", "ma"))
        us = simulate_steps(ps, G, N, nu, tau, mu, steps, rng)
        mean = us.mean(axis=0)
        se_mean = us.std(axis=0, ddof=1) / np.sqrt(steps)
        assert abs(mean[0] - m1 * mu[0]) < 4 * se_mean[0]
        assert np.all(np.abs(mean[1:]) < 4.5 * se_mean[1:])
        trace = float(((us - mean) ** 2).sum(axis=1).mean() * steps / (steps - 1))
        per_step = ((us - mean) ** 2).sum(axis=1)
        se_trace = float(per_step.std(ddof=1) / np.sqrt(steps))
        want = (nu**2 * m2 + tau**2 * ma / G + float(mu @ mu) * (m2 - m1**2)) / N
        assert abs(trace - want) < 4 * se_trace, (G, trace, want, se_trace)
        # the neglected term is what the docs bound: at most |Δμ|²/ν² of the between-prompt term
        assert float(mu @ mu) * (m2 - m1**2) <= float(mu @ mu) / nu**2 * nu**2 * m2


# ---------------------------------------------------------------- properties


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(0.0, 1.0), min_size=1, max_size=8), st.integers(2, 200), st.integers(2, 100_000),
       st.floats(1e-3, 1e4))
def test_snr_is_free_of_the_std_convention(ps, G, R, lam):
    p = np.array(ps)
    s = [m.mean() for m in snr_moments(p, [G], "grpo", "sample")]
    q = [m.mean() for m in snr_moments(p, [G], "grpo", "population")]
    N = R // G
    assert step_snr(*s, N, G, lam) == pytest.approx(step_snr(*q, N, G, lam), rel=1e-9, abs=1e-300)
    # and f, hence λ, is free of it too
    if s[2] > 0 and q[2] > 0:
        assert noise_ratio(0.1, s[1], s[2], G) == pytest.approx(noise_ratio(0.1, q[1], q[2], G), rel=1e-9)


@settings(max_examples=40, deadline=None)
@given(st.floats(0.05, 0.95), st.floats(0.01, 0.99), st.integers(2, 64))
def test_the_share_gives_back_its_f(p, f, G0):
    """λ from f at G₀ puts exactly the share f of the noise variance on the prompt draw at G₀."""
    m1, m2, ma = (float(x[0, 0]) for x in snr_moments(np.array([p]), [G0]))
    lam = noise_ratio(f, m2, ma, G0)
    assert m2 / (m2 + lam * ma / G0) == pytest.approx(f, rel=1e-9)


@settings(max_examples=30, deadline=None)
@given(st.floats(0.1, 0.9), st.floats(0.01, 0.5))
def test_limits(p, f):
    """Large G: between-prompt noise dominates and the SNR falls like sqrt(N); f → 1 (no per-rollout noise):
    G = 2 with the most prompts is best among G whose groups speak as well."""
    Gs = [2, 4, 16384, 65536]
    m1, m2, ma = snr_moments(np.array([p]), Gs)
    R = 1 << 20
    N = R // np.array(Gs)
    lam = noise_ratio(f, float(m2[0, 1]), float(ma[0, 1]), 4)
    snr = step_snr(m1[0], m2[0], ma[0], N, np.array(Gs), lam)
    assert snr[3] < snr[2]
    assert snr[3] / snr[2] == pytest.approx(np.sqrt(N[3] / N[2]), rel=0.05)
    only = step_snr(m1[0], m2[0], ma[0], N, np.array(Gs), 0.0)  # f = 1
    assert only[0] > only[2]


# ---------------------------------------------------------------- the rule, read literally


@pytest.mark.parametrize("advantage", ["grpo", "drgrpo"])
def test_flat_range_is_the_literal_rule_over_every_whole_G(advantage):
    corpus = beta_corpus()
    R, tol = 600, 0.05
    choice, _ = choose_snr(corpus, R, R, run_G=8, advantage=advantage)
    every = evaluate(corpus, sorted({*range(2, R + 1), 8}), R, advantage=advantage, estimator="bayes")
    ratios, _, _ = band_ratios(every, Band())
    ok = (ratios >= 1 - tol).all(axis=0)
    want = [int(g) for g in every.G[ok]]
    got = [g for lo, hi in choice.flat_runs for g in range(lo, hi + 1)]
    assert got == want and choice.flat_exact
    assert choice.verdict == "keep" and choice.recommended_G == 8


# ---------------------------------------------------------------- the corpora of the issue


@pytest.mark.parametrize(("name", "corpus", "lo_max", "hi_min"), [
    ("half", corpus_at(0.5), 8, 12), ("hard", corpus_at(0.02), 8, 32), ("beta", beta_corpus(), 8, 12)])
def test_typical_corpora_get_a_flat_range_holding_8(name, corpus, lo_max, hi_min):
    choice, _ = choose_snr(corpus, 4096, 4096, run_G=8)
    (lo, hi), = choice.flat_runs[:1]
    assert lo <= lo_max and hi >= hi_min and choice.in_flat(8)
    assert choice.verdict == "keep" and choice.recommended_G == 8
    assert all(s.run_G_loss < 0.05 for s in choice.shares)


def test_half_and_hard_corpora_at_R_4096():
    half, _ = choose_snr(corpus_at(0.5), 4096, 4096, run_G=None)
    hard, _ = choose_snr(corpus_at(0.02), 4096, 4096, run_G=None)
    assert half.flat_runs == ((6, 14),) and half.verdict == "no-run-G" and half.recommended_G == 8
    assert hard.flat_runs[0][0] == 7 and hard.flat_runs[-1][1] >= 40  # hard prompts: larger groups pay longer
    assert max(s.best_G for s in hard.shares) > max(s.best_G for s in half.shares)


def test_exhausted_corpus_and_a_run_G_outside():
    corpus = exhausted_corpus()
    choice, _ = choose_snr(corpus, 4096, 4096, run_G=2)
    assert not choice.in_flat(2) and choice.verdict == "nearest"
    assert choice.recommended_G == choice.flat_runs[0][0]
    assert all(s.run_G_loss > 0.05 for s in choice.shares[:1])


def test_range_moves_with_the_share_and_prompts_follow_R():
    corpus = beta_corpus()
    low, _ = choose_snr(corpus, 4096, 4096, run_G=8, band=Band((0.02,), 8, True))
    high, _ = choose_snr(corpus, 4096, 4096, run_G=8, band=Band((0.5,), 8, True))
    assert low.flat_runs[-1][1] > high.flat_runs[-1][1] and low.flat_runs[0][0] > high.flat_runs[0][0]
    at16, _ = choose_snr(corpus, 4096, 4096, run_G=8, band=Band((0.1,), 16, True))
    at8, _ = choose_snr(corpus, 4096, 4096, run_G=8, band=Band((0.1,), 8, True))
    assert at16.flat_runs != at8.flat_runs  # the G a share was measured at matters
    small, _ = choose_snr(corpus, 1024, 1024, run_G=8)
    big, _ = choose_snr(corpus, 16384, 16384, run_G=8)
    assert small.recommended_G == big.recommended_G == 8
    assert big.recommended_prompts_per_step == 16 * small.recommended_prompts_per_step


def test_dr_grpo_and_rloo_follow_the_data():
    answers = {}
    for name, corpus in (("half", corpus_at(0.5)), ("hard", corpus_at(0.02)), ("exhausted", exhausted_corpus())):
        for adv in ("drgrpo", "rloo"):
            c, _ = choose_snr(corpus, 4096, 4096, run_G=None, advantage=adv)
            answers[name, adv] = (c.flat_runs, tuple(s.best_G for s in c.shares))
    for adv in ("drgrpo", "rloo"):
        assert len({answers[n, adv] for n in ("half", "hard", "exhausted")}) == 3
    assert all(answers[n, "drgrpo"] == answers[n, "rloo"] for n in ("half", "hard", "exhausted"))


def test_no_flat_range_is_said_and_the_minimax_G_chosen():
    corpus = beta_corpus()
    c, _ = choose_snr(corpus, 4096, 4096, run_G=8, tolerance=0.001, band=Band((0.02, 0.5), 8, True))
    assert c.flat_runs == () and c.verdict == "no-flat-range"
    evaluated = evaluate(corpus, sorted({*range(2, 200), 8}), 4096, estimator="bayes")
    ratios, _, _ = band_ratios(evaluated, Band((0.02, 0.5), 8, True))
    assert c.worst_loss == pytest.approx(1 - ratios.min(axis=0).max(), abs=1e-9)


def test_few_prompts_per_step_are_named():
    c, _ = choose_snr(corpus_at(0.5), 128, 128, run_G=8)
    assert c.recommended_G == 8 and c.recommended_prompts_per_step == 16 and c.small_prompts  # 16 < 1/0.05
    c, _ = choose_snr(corpus_at(0.5), 4096, 4096, run_G=8)
    assert c.recommended_prompts_per_step == 512 and not c.small_prompts


# ---------------------------------------------------------------- one answer, monotone sweeps


def test_sweeps_use_one_estimator_and_fall_with_G_on_open_instruct(capsys):
    """Issue 41 item 3: on sample_logs/open-instruct (8–24 samples per prompt) the predicted silent share rose
    0.9 % → 1.6 % inside one sweep (unbiased at G = 8, bayes at 12 and above); one estimator per sweep falls."""
    import json

    from cli_runner import run

    d = json.loads(run(capsys, "plan", "sample_logs/open-instruct", "-q", "-f", "json", "--bootstrap", "0")[1])
    sil = [r["silent"] for r in d["sweep"]]
    assert len({r["estimator"] for r in d["sweep"]}) == 1 and all(a >= b for a, b in zip(sil, sil[1:], strict=False))
    s = json.loads(run(capsys, "scan", "sample_logs/open-instruct", "-q", "-f", "json")[1])
    est = [r["estimate"] for r in s["silent"]]
    assert len({r["estimator"] for r in s["silent"]}) == 1 and all(a >= b for a, b in zip(est, est[1:], strict=False))


@pytest.mark.parametrize("path", ["sample_logs/rollouts.parquet", "sample_logs/verl", "sample_logs/open-instruct"])
def test_scan_says_what_plan_recommends(capsys, path):
    """Issue 41 item 3: scan's "what to do" is plan's recommendation (one R rule, one rule, the logged G)."""
    import json

    from cli_runner import run

    p = json.loads(run(capsys, "plan", path, "-q", "-f", "json", "--bootstrap", "0")[1])
    s = json.loads(run(capsys, "scan", path, "-q", "-f", "json")[1])["recommendation"]
    assert s["budget"] == p["budget"] and s["choice"]["recommended_G"] == p["recommended_G"]
    assert s["choice"]["flat_runs"] == p["snr_choice"]["flat_runs"]
    assert s["choice"]["verdict"] == p["snr_choice"]["verdict"]
