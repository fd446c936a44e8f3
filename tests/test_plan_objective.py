"""`plan`'s objectives at a fixed rollout budget (issues 32, 41): every value and the step SNR's moments against a
brute-force enumeration over k with the trainers' own advantage formulas, the views' rule against a literal
reading of it, and Knapsack-RL's published value (the SNR rule itself: tests/test_plan_snr.py)."""

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


def brute(p: float, G: int, advantage: str, std: str) -> tuple[float, float, float, float]:
    """(E[c], E[a], P(informative), E[c²]) by enumerating k, with c from Σ_i A_i s_i = G c Δs (s = 1 on the
    right answers, 0 on the wrong ones, so Δs = 1) and a = Σ A_i² / G."""
    ec = ea = inf = ec2 = 0.0
    for k in range(G + 1):
        w = comb(G, k) * p**k * (1 - p) ** (G - k)
        r = np.array([1.0] * k + [0.0] * (G - k))
        A = advantages(r, advantage, std)
        ec += w * float(A @ r) / G  # Σ A_i s_i / G with s = r: the per-prompt gain times Δs = 1
        ec2 += w * (float(A @ r) / G) ** 2
        ea += w * float(A @ A) / G
        inf += w * (0 < k < G)
    return ec, ea, inf, ec2


@pytest.mark.parametrize(("advantage", "std"), [("grpo", "sample"), ("grpo", "population"), ("drgrpo", "sample"),
                                                ("rloo", "sample")])
def test_every_objective_against_enumeration_over_k(advantage, std):
    corpus = Corpus(np.array(N), np.array(K))
    Gs, R = [2, 3, 5, 8, 13, 24], 1000
    cur = evaluate(corpus, Gs, R, advantage=advantage, std=std, estimator="plugin")  # p = p̂: exact enumeration
    p_hat = [k / n for n, k in zip(N, K, strict=True)]
    for i, G in enumerate(Gs):
        per = [brute(p, G, advantage, std) for p in p_hat]
        ec, ea, inf, ec2 = (float(np.mean([x[j] for x in per])) for j in range(4))
        Np = R // G
        sil = float(np.mean([p**G + (1 - p) ** G for p in p_hat]))
        assert cur.N[i] == Np and Np * G <= R < (Np + 1) * G
        assert cur.values["update"][i] == pytest.approx(ec, rel=1e-10)
        assert cur.moments["m1"][i] == pytest.approx(ec, rel=1e-10)
        assert cur.moments["m2"][i] == pytest.approx(ec2, rel=1e-10)
        assert cur.moments["ma"][i] == pytest.approx(ea, rel=1e-10)
        lam = 7.0
        assert cur.snr(lam)[i] == pytest.approx(sqrt(Np * ec**2 / (ec2 + lam * ea / G)), rel=1e-10)
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
        assert cur.moments["m2"][i] == pytest.approx(float(w @ vals[:, 3]), rel=1e-6)
        assert cur.moments["ma"][i] == pytest.approx(float(w @ vals[:, 1]), rel=1e-6)


@given(st.integers(1, 10**6), st.integers(1, 10**4))
def test_prompts_per_step_fill_the_budget(R, G):
    n = int(prompts_per_step(R, np.array([G]))[0])
    assert n * G <= R < (n + 1) * G


def test_std_convention_scales_the_update_not_the_snr():
    corpus = Corpus(np.array(N), np.array(K))
    s = evaluate(corpus, [2, 8, 32], 4096, std="sample")
    p = evaluate(corpus, [2, 8, 32], 4096, std="population")
    np.testing.assert_allclose(s.values["update"], p.values["update"] * np.sqrt([1 / 2, 7 / 8, 31 / 32]), rtol=1e-12)
    for lam in (0.0, 3.0, 300.0):
        np.testing.assert_allclose(s.snr(lam), p.snr(lam), rtol=1e-12)


# ---------------------------------------------------------------- the rule, read literally


def literal_rule(values: dict[str, np.ndarray], Gs: list[int], name: str, tol: float) -> int:
    """A view's rule of docs/theory.md over the G given: the smallest within tol of the best."""
    f = values[name]
    return min(Gs[i] for i in range(len(Gs)) if f[i] >= (1 - tol) * max(f))


@pytest.mark.parametrize("name", ["informative", "rollouts", "knapsack"])
@pytest.mark.parametrize("tol", [0.02, 0.05, 0.2])
def test_recommendation_is_the_literal_rule(name, tol):
    """The views jump with ⌊R/G⌋: exact over the searched G (the grid and each N's largest G), and within
    the tolerance over every whole G."""
    from sigmaudit.audits.objective import choose

    corpus = Corpus(np.array(N), np.array(K))
    R, end = 600, 300
    every = list(range(2, end + 1))
    full = evaluate(corpus, every, R, estimator="bayes")
    choice, searched = choose(corpus, name, R, end, tolerance=tol, estimator="bayes")
    assert choice.searched < len(every) / 2  # a grid, not every whole G
    got = choice.recommended_G
    on_grid = [int(g) for g in searched.G if g >= 2]
    sub = {k: np.array([v[every.index(g)] for g in on_grid]) for k, v in full.values.items()}
    assert got == literal_rule(sub, on_grid, name, tol)
    f = full.values[name]
    assert f[every.index(got)] >= (1 - tol) * max(f) * (1 - 0.01)


# ---------------------------------------------------------------- the corpora of the issue


def test_G_1_is_named_as_the_cause(capsys, tmp_path):
    """Issue 36 item 32: every prompt solved half the time; -G 1 shows G = 1's zeros and says why."""
    path = tmp_path / "half.csv"
    path.write_text("prompt,n,k\n" + "".join(f"q{i},16,8\n" for i in range(50)))
    code, out, _ = run(capsys, "plan", str(path), "-G", "1", "-f", "json", "-q", "--bootstrap", "0")
    d = json.loads(out)
    row = d["sweep"][0]
    assert code == 0 and row["G"] == 1 and row["update"] == 0.0 and row["silent"] == 1.0
    assert row["snr_vs_best"] == [0.0, 0.0, 0.0, 0.0]
    assert d["recommended_G"] >= 2  # the search covers G >= 2 whatever -G shows
    text = " ".join(run(capsys, "plan", str(path), "-G", "1", "-q", "--bootstrap", "0")[1].split()).replace("│ ", "")
    assert "G = 1: one answer per prompt has no spread" in text and "never or always solved" not in text
    # with a target, the floor names the G it needs, not a dead corpus
    code, out, _ = run(capsys, "plan", str(path), "-G", "1", "--max-silent", "0.3", "-f", "json", "-q",
                       "--bootstrap", "0")
    d = json.loads(out)
    assert code == 1 and d["floor"]["needed_G"] == 3 and not d["floor"]["below_floor"]
    assert "never or always solved" not in d["reason"] and "try larger" not in d["reason"]
