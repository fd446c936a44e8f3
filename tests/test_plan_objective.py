"""`plan`'s objectives at a fixed rollout budget (issue 32): every value against a brute-force enumeration
over k with the trainers' own advantage formulas, the SNR against a Monte Carlo of its noise model, the
recommendation rule against a literal reading of it over every whole G, and Knapsack-RL's published value."""

from __future__ import annotations

import json
from fractions import Fraction
from math import comb, sqrt

import numpy as np
import pytest
from cli_runner import run
from hypothesis import given
from hypothesis import strategies as st

from sigmaudit.audits.objective import evaluate, prompts_per_step
from sigmaudit.core.corpus import Corpus
from sigmaudit.core.knapsack import info_gain, knapsack_value

ROLLOUTS = "sample_logs/rollouts.parquet"
N = [16] * 12 + [8] * 6
K = [0, 1, 2, 3, 5, 8, 8, 11, 14, 16, 16, 4, 0, 1, 4, 7, 8, 3]


def published_value(p: Fraction, n: int) -> Fraction:
    """Knapsack-RL (arXiv:2509.25849, section 4): Value(N, p) = (1 − p^N − (1 − p)^N) · p(1 − p)², exactly."""
    return (1 - p**n - (1 - p) ** n) * p * (1 - p) ** 2


@pytest.mark.parametrize("p", [Fraction(0), Fraction(1, 1000), Fraction(1, 7), Fraction(1, 3), Fraction(1, 2),
                               Fraction(9, 10), Fraction(1)])
def test_knapsack_value_is_the_published_formula(p):
    Ns = np.arange(1, 129)
    got = np.asarray(knapsack_value(float(p), Ns))
    want = np.array([float(published_value(p, int(n))) for n in Ns])
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-300)
    assert knapsack_value(float(p), 1) == 0.0
    assert info_gain(float(p)) == pytest.approx(float(p * (1 - p) ** 2), rel=1e-12, abs=0)


# ---------------------------------------------------------------- brute force over k


def advantages(rewards: np.ndarray, advantage: str, std: str) -> np.ndarray:
    """The trainers' advantages, written from their code (TRL f2cd577 grpo_trainer/nanstd; verl b178a3c
    compute_grpo_outcome_advantage, compute_rloo_outcome_advantage), eps left out (silent groups give 0)."""
    G = rewards.size
    centred = rewards - rewards.mean()
    if advantage == "rloo":
        return rewards * G / (G - 1) - rewards.mean() * G / (G - 1)
    if advantage == "drgrpo":
        return centred
    sd = rewards.std(ddof=1 if std == "sample" else 0)  # torch.std / nanstd: Bessel's count/(count − 1)
    return np.zeros(G) if sd == 0 else centred / sd


def brute(p: float, G: int, advantage: str, std: str) -> tuple[float, float, float]:
    """(E[c], E[a], P(informative)) by enumerating k, with c from Σ_i A_i s_i = G c Δs (s = 1 on the right
    answers, 0 on the wrong ones, so Δs = 1) and a = Σ A_i² / G."""
    ec = ea = inf = 0.0
    for k in range(G + 1):
        w = comb(G, k) * p**k * (1 - p) ** (G - k)
        r = np.array([1.0] * k + [0.0] * (G - k))
        A = advantages(r, advantage, std)
        ec += w * float(A @ r) / G  # Σ A_i s_i / G with s = r: the per-prompt gain times Δs = 1
        ea += w * float(A @ A) / G
        inf += w * (0 < k < G)
    return ec, ea, inf


@pytest.mark.parametrize(("advantage", "std"), [("grpo", "sample"), ("grpo", "population"), ("drgrpo", "sample"),
                                                ("rloo", "sample")])
def test_every_objective_against_enumeration_over_k(advantage, std):
    corpus = Corpus(np.array(N), np.array(K))
    Gs, R = [2, 3, 5, 8, 13, 24], 1000
    cur = evaluate(corpus, Gs, R, advantage=advantage, std=std, estimator="plugin")  # p = p̂: exact enumeration
    p_hat = [k / n for n, k in zip(N, K, strict=True)]
    for i, G in enumerate(Gs):
        per = [brute(p, G, advantage, std) for p in p_hat]
        ec, ea, inf = (float(np.mean([x[j] for x in per])) for j in range(3))
        Np = R // G
        sil = float(np.mean([p**G + (1 - p) ** G for p in p_hat]))
        assert cur.N[i] == Np and Np * G <= R < (Np + 1) * G
        assert cur.values["update"][i] == pytest.approx(ec, rel=1e-10)
        assert cur.values["snr"][i] == pytest.approx(ec * sqrt(Np * G) / sqrt(ea), rel=1e-10)
        assert cur.values["informative"][i] == pytest.approx(Np * inf, rel=1e-10)
        assert cur.silent[i] == pytest.approx(sil, rel=1e-10)
        assert cur.values["rollouts"][i] == pytest.approx(Np * G * (1 - sil), rel=1e-10)
        kv = float(np.mean([float(published_value(Fraction(k, n), G)) for n, k in zip(N, K, strict=True)]))
        assert cur.values["knapsack"][i] == pytest.approx(Np * kv, rel=1e-10)


def test_posterior_objectives_are_the_enumeration_averaged_over_the_posterior():
    corpus = Corpus(np.array(N), np.array(K))
    grid, mix = corpus.prior.grid, corpus.mixture / corpus.mixture.sum()
    idx = np.flatnonzero(mix > 1e-9)  # the grid points carrying the corpus's posterior mass
    cur = evaluate(corpus, [4, 8], 512, estimator="bayes")
    for i, G in enumerate([4, 8]):
        vals = np.array([brute(float(grid[j]), G, "grpo", "sample") for j in idx])
        w = mix[idx] / mix[idx].sum()
        assert cur.values["update"][i] == pytest.approx(float(w @ vals[:, 0]), rel=1e-6)
        assert cur.values["snr"][i] == pytest.approx(float(w @ vals[:, 0]) * sqrt(512 // G * G)
                                                     / sqrt(float(w @ vals[:, 1])), rel=1e-6)


@given(st.integers(1, 10**6), st.integers(1, 10**4))
def test_prompts_per_step_fill_the_budget(R, G):
    n = int(prompts_per_step(R, np.array([G]))[0])
    assert n * G <= R < (n + 1) * G


def test_std_convention_scales_the_update_not_the_snr():
    corpus = Corpus(np.array(N), np.array(K))
    s = evaluate(corpus, [2, 8, 32], 4096, std="sample")
    p = evaluate(corpus, [2, 8, 32], 4096, std="population")
    np.testing.assert_allclose(s.values["update"], p.values["update"] * np.sqrt([1 / 2, 7 / 8, 31 / 32]), rtol=1e-12)
    np.testing.assert_allclose(s.values["snr"], p.values["snr"], rtol=1e-12)


def test_snr_against_a_monte_carlo_of_its_noise_model():
    """Rollout scores s = μ(r) + ξ with ξ isotropic in D dimensions: the step's update u = (1/NG) Σ A s,
    its signal |E u| and its noise sqrt(tr Var u); their ratio across G against the formula's ratio."""
    rng = np.random.default_rng(7)
    ps, R, D, steps, tau = np.array([0.1, 0.5, 0.8]), 48, 64, 3000, 3.0
    d = np.zeros(D)
    d[0] = 1.0  # Δμ: the right answers' mean score minus the wrong ones'

    def mc(G: int) -> float:
        Np = R // G
        us = np.empty((steps, D))
        for t in range(steps):
            p = rng.choice(ps, size=Np)
            r = (rng.random((Np, G)) < p[:, None]).astype(float)
            sd = r.std(axis=1, ddof=1, keepdims=True)
            A = np.divide(r - r.mean(axis=1, keepdims=True), sd, out=np.zeros_like(r), where=sd > 0)
            s = r[..., None] * d + tau * rng.standard_normal((Np, G, D))
            us[t] = np.einsum("ng,ngd->d", A, s) / (Np * G)
        return float(np.linalg.norm(us.mean(axis=0)) / np.sqrt(us.var(axis=0).sum()))

    corpus = Corpus.from_pairs([10, 10, 10], [1, 5, 8], [1, 1, 1])  # p̂ = 0.1, 0.5, 0.8, plug-in
    cur = evaluate(corpus, [2, 4, 12], R, estimator="plugin")
    want = cur.values["snr"] / cur.values["snr"][1]
    got = np.array([mc(2), mc(4), mc(12)])
    got /= got[1]
    np.testing.assert_allclose(got, want, rtol=0.06)  # 3,000 steps: ~2 % sampling error per ratio


# ---------------------------------------------------------------- the rule, read literally


def literal_rule(values: dict[str, np.ndarray], Gs: list[int], name: str, tol: float) -> int:
    """The rule of docs/theory.md over every whole G given."""
    f, snr = values[name], values["snr"]
    cand = [i for i in range(len(Gs)) if name != "update" or snr[i] >= (1 - tol) * max(snr)]
    best = max(f[i] for i in cand)
    return min(Gs[i] for i in cand if f[i] >= (1 - tol) * best)


@pytest.mark.parametrize("name", ["update", "snr", "informative", "rollouts", "knapsack"])
@pytest.mark.parametrize("tol", [0.02, 0.05, 0.2])
def test_recommendation_is_the_literal_rule(name, tol):
    """update: exact over every whole G (grid, then bisection); the per-step objectives: exact over the
    searched G (the grid and each N's largest G), and within the tolerance over every whole G."""
    from sigmaudit.audits.objective import choose

    corpus = Corpus(np.array(N), np.array(K))
    R, end = 600, 300
    every = list(range(2, end + 1))
    full = evaluate(corpus, every, R)
    choice, searched = choose(corpus, name, R, end, tolerance=tol)
    assert choice.searched < len(every) / 2  # a grid, not every whole G
    got = choice.recommended_G
    if name == "update":
        assert got == literal_rule(full.values, every, name, tol)
    else:
        on_grid = [int(g) for g in searched.G if g >= 2]
        sub = {k: np.array([v[every.index(g)] for g in on_grid]) for k, v in full.values.items()}
        assert got == literal_rule(sub, on_grid, name, tol)
        f = full.values[name]
        assert f[every.index(got)] >= (1 - tol) * max(f) * (1 - 0.01)


def test_recommended_G_is_within_the_tolerance_of_the_best(capsys):
    d = json.loads(run(capsys, "plan", ROLLOUTS, "-f", "json", "-q", "--bootstrap", "0", "--rollouts-per-step",
                       "400", "-G", "8", "-G", "64")[1])
    c = d["objective_detail"]
    R, G = d["budget"]["rollouts_per_step"], d["recommended_G"]
    every = evaluate(__import__("sigmaudit").audits.corpus_of(__import__("sigmaudit").load_counts([ROLLOUTS])),
                     range(2, R + 1), R)
    f, snr = every.values["update"], every.values["snr"]
    ok = snr >= (1 - c["tolerance"]) * snr.max()
    best = f[ok].max()
    assert f[G - 2] >= (1 - c["tolerance"]) * best - 1e-12 and ok[G - 2]
    smaller = [g for g in range(2, G) if ok[g - 2] and f[g - 2] >= (1 - c["tolerance"]) * best]
    assert smaller == []  # the smallest such G
    assert c["searched"] < R / 3  # a grid, not every whole G


# ---------------------------------------------------------------- the corpora of the issue


def corpus_at(p: float, seed: int = 0) -> Corpus:
    k = np.random.default_rng(seed).binomial(64, p, 1000)
    return Corpus(np.full(1000, 64), k)


def test_half_and_hard_corpora_get_different_kinds_of_answer():
    from sigmaudit.audits.plan import PlanOptions, plan
    from sigmaudit.views.plan import worded

    half = worded(plan(corpus_at(0.5), rollouts_per_step=4096, options=PlanOptions("update")))
    hard = worded(plan(corpus_at(0.02), rollouts_per_step=4096, options=PlanOptions("update")))
    # p = 1/2: a moderate G saturates the update; p = 0.02: the group-size law's G ≈ 1/(8·0.05·0.02) ≈ 128+
    assert 12 <= half.recommended_G <= 32 and half.price.after.silent_rate < 0.001
    assert 100 <= hard.recommended_G <= 400 and hard.price.before.silent_rate > 0.8
    assert hard.recommended_G > 4 * half.recommended_G
    # what a small G loses differs in kind: a few percent against most of the update
    assert half.objective_choice.loss_below[0] < 0.1 and hard.objective_choice.loss_below[1] > 0.8
    # and the data: nothing to drop at p = 1/2; at p = 0.02 the never-solved prompts are not provably dead
    assert half.curation.row("log").prompts_dropped == 0
    assert hard.curation.row("posterior").prompts_dropped == 0 and hard.curation.row("log").dropped_share > 0.2
    assert "no prompt is more likely unreachable than not" in hard.reason


def test_a_flat_curve_is_called_flat():
    from sigmaudit.audits.plan import PlanOptions, plan
    from sigmaudit.views.plan import worded

    # RLOO's update is p(1 − p) at every G: flat by construction
    res = worded(plan(corpus_at(0.5), rollouts_per_step=4096, options=PlanOptions("update", advantage="rloo")))
    c = res.objective_choice
    assert c.flat is False or c.within_lo == 2
    informative = worded(plan(Corpus(np.array(N), np.array(K)), rollouts_per_step=4096,
                              options=PlanOptions("snr", tolerance=0.5)))
    assert informative.objective_choice.flat and "The curve is flat" in informative.reason


def test_G_1_is_named_as_the_cause(capsys, tmp_path):
    """Issue 36 item 32: every prompt solved half the time; -G 1 shows G = 1's zeros and says why."""
    path = tmp_path / "half.csv"
    path.write_text("prompt,n,k\n" + "".join(f"q{i},16,8\n" for i in range(50)))
    code, out, _ = run(capsys, "plan", str(path), "-G", "1", "-f", "json", "-q", "--bootstrap", "0")
    d = json.loads(out)
    row = d["sweep"][0]
    assert code == 0 and row["G"] == 1 and row["update"] == 0.0 and row["snr"] == 0.0 and row["silent"] == 1.0
    assert d["recommended_G"] >= 2  # the search covers G >= 2 whatever -G shows
    text = " ".join(run(capsys, "plan", str(path), "-G", "1", "-q", "--bootstrap", "0")[1].split()).replace("│ ", "")
    assert "G = 1: one answer per prompt has no spread" in text and "never or always solved" not in text
    # with a target, the floor names the G it needs, not a dead corpus
    code, out, _ = run(capsys, "plan", str(path), "-G", "1", "--max-silent", "0.3", "-f", "json", "-q",
                       "--bootstrap", "0")
    d = json.loads(out)
    assert code == 1 and d["floor"]["needed_G"] == 3 and not d["floor"]["below_floor"]
    assert "never or always solved" not in d["reason"] and "try larger" not in d["reason"]
