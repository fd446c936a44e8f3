"""`plan` without a target (issue 27): the objectives, the knee rule checked by brute force over every
whole G, Knapsack-RL's published value formula, and the price against the logged G."""

from __future__ import annotations

import json
from fractions import Fraction
from math import comb

import numpy as np
import pytest
from cli_runner import run
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import binom

import sigmaudit
from sigmaudit.audits import corpus_of
from sigmaudit.audits.objective import EFFICIENCY_FLOOR, SATURATION_SHARE, choose, choose_G, objective_values
from sigmaudit.audits.plan import plan
from sigmaudit.core.corpus import Corpus
from sigmaudit.core.knapsack import info_gain, knapsack_value

ROLLOUTS = "sample_logs/rollouts.parquet"
N = [16] * 12 + [8] * 6
K = [0, 1, 2, 3, 5, 8, 8, 11, 14, 16, 16, 4, 0, 1, 4, 7, 8, 3]


def published_value(p: Fraction, N: int) -> Fraction:
    """Knapsack-RL (arXiv:2509.25849, section 4): Value(N, p) = (1 − p^N − (1 − p)^N) · p(1 − p)², exactly."""
    return (1 - p**N - (1 - p) ** N) * p * (1 - p) ** 2


@pytest.mark.parametrize("p", [Fraction(0), Fraction(1, 1000), Fraction(1, 100), Fraction(1, 7), Fraction(1, 3),
                               Fraction(1, 2), Fraction(2, 3), Fraction(9, 10), Fraction(99, 100), Fraction(1)])
def test_knapsack_value_is_the_published_formula(p):
    Ns = np.arange(1, 129)
    got = np.asarray(knapsack_value(float(p), Ns))
    want = np.array([float(published_value(p, int(n))) for n in Ns])
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-300)
    assert knapsack_value(float(p), 1) == 0.0  # one answer never has a spread
    assert info_gain(float(p)) == pytest.approx(float(p * (1 - p) ** 2), rel=1e-12, abs=0)


@given(st.floats(0, 1), st.integers(1, 500))
@settings(max_examples=200, deadline=None)
def test_knapsack_value_rises_with_N_towards_info_gain(p, n):
    v, w = knapsack_value(p, n), knapsack_value(p, n + 1)
    assert 0.0 <= v <= w + 1e-18 <= info_gain(p) + 2e-18
    assert info_gain(p) <= 4 / 27 + 1e-15


def test_knapsack_objective_is_the_formula_averaged_over_prompts():
    corpus = Corpus(np.array(N), np.array(K))
    Gs = [1, 2, 3, 5, 8, 13, 40]
    # plug-in: the mean over prompts of the published formula at p̂ = k/n, in exact arithmetic
    got, used = objective_values(corpus, "knapsack", Gs, "plugin")
    want = [float(sum(published_value(Fraction(k, n), g) for n, k in zip(N, K, strict=True)) / len(N)) for g in Gs]
    assert used == "plugin"
    np.testing.assert_allclose(got, want, rtol=1e-12)
    # model-based: each prompt's posterior mean of the formula, averaged over prompts
    got, used = objective_values(corpus, "knapsack", Gs, "auto")
    grid = corpus.prior.grid
    per_pair = np.array([[float(np.dot(post, [float(published_value(Fraction(x), g)) for x in grid]))
                          for g in Gs] for post in corpus.posterior])
    assert used == "bayes"
    np.testing.assert_allclose(got, corpus.weight @ per_pair / corpus.weight.sum(), rtol=1e-10)


# ---------------------------------------------------------------- brute force over every whole G


def brute_values(corpus: Corpus, name: str, G_end: int) -> np.ndarray:
    """f(G) for G = 1..G_end, computed from first principles (binomial sums, exact hypergeometric counts)."""
    grid, post, w = corpus.prior.grid, corpus.posterior, corpus.weight
    out = []
    for G in range(1, G_end + 1):
        if name == "informative" and G <= corpus.min_samples:  # the auto rule: unbiased where every n >= G
            agree = [(comb(int(k), G) + comb(int(n - k), G)) / comb(int(n), G) for n, k in zip(corpus.n, corpus.k,
                                                                                              strict=True)]
            out.append(1.0 - float(np.dot(w, agree) / w.sum()))
            continue
        ks = np.arange(G + 1)
        pmf = binom.pmf(ks[None, :], G, grid[:, None])
        if name == "signal":
            on_grid = pmf @ (np.sqrt(ks * (G - ks)) / G)
        elif name == "informative":
            on_grid = 1.0 - pmf[:, 0] - pmf[:, G]
        else:
            on_grid = (1.0 - pmf[:, 0] - pmf[:, G]) * grid * (1.0 - grid) ** 2
        out.append(float(w @ (post @ on_grid) / w.sum()))
    return np.array(out)


def brute_recommendation(f: np.ndarray, limit: float) -> int:
    """The stated rule, read literally: the largest f among G with f(G)/G ≥ ½ max f/G, G ≤ the saturation cap."""
    per = [f[g - 1] / g for g in range(1, f.size + 1)]
    cap = next((g for g in range(1, f.size + 1) if f[g - 1] >= SATURATION_SHARE * limit), f.size)
    ok = [g for g in range(1, cap + 1) if per[g - 1] >= EFFICIENCY_FLOOR * max(per)]
    return max(ok, key=lambda g: (f[g - 1], -g))


@pytest.mark.parametrize("name", ["signal", "informative", "knapsack"])
def test_recommendation_maximises_the_objective_by_brute_force(name):
    corpus = Corpus(np.array(N), np.array(K))
    choice = choose(corpus, name, 64)
    f = brute_values(corpus, name, 64)
    got, _ = objective_values(corpus, name, range(1, 65))
    np.testing.assert_allclose(got, f, rtol=1e-9, atol=1e-12)
    rec = choice.recommended_G
    assert rec == brute_recommendation(f, choice.limit)
    per = f / np.arange(1, 65)
    for g in range(1, 65):  # every whole G: either outside the stated constraints or no better
        feasible = per[g - 1] >= EFFICIENCY_FLOOR * per.max() and (choice.saturation_G is None
                                                                 or g <= choice.saturation_G)
        assert not feasible or f[g - 1] <= f[rec - 1]
    assert choice.best_per_rollout_G in (2, 3) and rec > choice.best_per_rollout_G


def test_sample_log_recommendation_by_brute_force_up_to_the_sweep_end():
    corpus = corpus_of(sigmaudit.load_counts([ROLLOUTS]))
    choice = choose(corpus, "signal", 256)
    f = brute_values(corpus, "signal", 256)
    assert choice.recommended_G == brute_recommendation(f, choice.limit) == 8
    limit = float(corpus.weight @ (corpus.posterior @ np.sqrt(corpus.prior.grid * (1 - corpus.prior.grid))))
    assert choice.limit == pytest.approx(limit / corpus.weight.sum(), rel=1e-12)
    sat = next(g for g in range(1, 257) if f[g - 1] >= SATURATION_SHARE * choice.limit)
    assert choice.saturation_G == sat and 16 < sat < 32 and choice.bound == "efficiency"


def test_rule_edge_cases():
    assert choose_G(np.zeros(16), 0.0) == (None, None, None, None)  # no G gives anything
    f = np.array([0.0, 0.5, 0.6, 0.61, 0.62])  # saturates (90% of 0.62) at G = 3; efficiency allows up to 4
    assert choose_G(f, 0.62) == (3, 2, 3, "saturation")
    f = np.array([0.0, 0.2, 0.3, 0.4])  # still efficient at the sweep's end
    assert choose_G(f, 1.0) == (4, 2, None, "sweep end")


# ---------------------------------------------------------------- the command


def test_plan_without_flags_recommends_one_G_with_its_price(capsys):
    code, out, err = run(capsys, "plan", ROLLOUTS, "-f", "json", "-q", "--bootstrap", "0")
    assert code == 0 and err == ""
    d = json.loads(out)
    assert d["recommended_G"] == 8 and d["objective"] == "signal"
    price = d["price"]
    assert (price["reference_G"], price["reference"], price["batch_prompts"]) == (8, "logged", 512)
    before, after = price["before"], price["after"]
    row8 = next(r for r in d["sweep"] if r["G"] == 8)
    assert before["silent_rate"] == pytest.approx(row8["silent"], rel=1e-12)
    assert before["rollouts_per_signal_prompt"] == pytest.approx(8 / (1 - row8["silent"]), rel=1e-12)
    assert before["informative_groups_per_step"] == pytest.approx(512 * (1 - row8["silent"]), rel=1e-12)
    assert before["rollouts_per_step"] == 4096 and after["G"] == 8
    detail = d["objective_detail"]
    assert detail["G_end"] == 256 and detail["best_per_rollout_G"] == 2 and 16 < detail["saturation_G"] < 32


def test_plan_table_names_objective_knee_cap_and_price(capsys):
    code, out, _ = run(capsys, "plan", ROLLOUTS, "--objective", "knapsack", "-q", "--bootstrap", "0")
    assert code == 0
    text = " ".join(out.split())
    assert "objective: knapsack (no target given; --objective)" in text
    assert "recommended G: 8 —" in text
    sat = choose(corpus_of(sigmaudit.load_counts([ROLLOUTS])), "knapsack", 256).saturation_G
    assert f"saturation cap (90% of the limit): G = {sat}" in text and 8 < sat < 16
    assert "G = 8 (logged)" in text and "G = 8 (recommended)" in text
    assert "predicted for these 200 prompts' pass rates (estimator bayes)" in text
    assert "Knapsack-RL value per step" in text


def test_price_against_g8_when_no_groups_are_logged(capsys, tmp_path):
    path = tmp_path / "counts.csv"
    path.write_text("prompt,n,k\n" + "".join(f"q{i},{n},{k}\n" for i, (n, k) in enumerate(zip(N, K, strict=True))))
    code, out, _ = run(capsys, "plan", str(path), "--objective", "informative", "-f", "json", "-q",
                       "--bootstrap", "0", "--batch-prompts", "100")
    d = json.loads(out)
    rec = d["recommended_G"]
    corpus = Corpus(np.array(N), np.array(K))
    assert rec == choose(corpus, "informative", 256).recommended_G
    assert d["price"]["reference"] == "default" and d["price"]["before"]["G"] == 8
    assert d["price"]["after"]["rollouts_per_step"] == 100 * rec
    f = objective_values(corpus, "informative", [rec])[0][0]
    assert d["price"]["after"]["informative_groups_per_step"] == pytest.approx(100 * f, rel=1e-12)


def test_targets_still_choose_and_are_priced(capsys):
    code, out, _ = run(capsys, "plan", ROLLOUTS, "--max-silent", "0.5", "-f", "json", "-q", "--bootstrap", "0")
    d = json.loads(out)
    assert code == 0 and d["objective"] == "targets" and d["objective_detail"] is None
    after = d["price"]["after"]
    assert after["G"] == d["recommended_G"] and after["silent_rate"] <= 0.5
    assert after["rollouts_per_signal_prompt"] > 2 * d["price"]["before"]["rollouts_per_signal_prompt"]


def test_objective_with_a_target_is_a_usage_error(capsys):
    code, out, err = run(capsys, "plan", ROLLOUTS, "--objective", "signal", "--max-silent", "0.5")
    assert code == 2 and out == "" and err.count("\n") == 1 and "--objective" in err


def test_library_plan_recommends_only_when_asked():
    corpus = Corpus(np.array(N), np.array(K))
    assert plan(corpus, [2, 4, 8, 16]).recommended_G is None  # the report's plan: no objective, no target
    res = plan(corpus, [2, 4, 8, 16], objective="signal")
    assert res.recommended_G == choose(corpus, "signal", 16).recommended_G and res.price is not None


@given(st.lists(st.floats(0.0, 1.0), min_size=1, max_size=40), st.floats(1.0, 3.0))
@settings(max_examples=300, deadline=None)
def test_rule_on_any_curve(increments, headroom):
    f = np.concatenate([[0.0], np.cumsum(increments)])  # f(1) = 0, non-decreasing, like every objective
    limit = headroom * f.max()  # the G → ∞ limit bounds every f(G)
    rec, best, sat, bound = choose_G(f, limit)
    per = f / np.arange(1, f.size + 1)
    if per.max() <= 0.0:  # nothing, or only values that underflow per rollout (5e-324 / 2 == 0)
        assert rec is None
        return
    assert per[best - 1] == per.max()
    assert rec >= best or sat < best  # a cap below the best per rollout (never on a real objective: best is 2 or 3)
    assert per[rec - 1] >= EFFICIENCY_FLOOR * per.max()
    assert sat is None or (rec <= sat and f[sat - 1] >= SATURATION_SHARE * limit)
    assert rec == brute_recommendation(f, limit)
    assert bound in ("efficiency", "saturation", "sweep end")


def test_informative_curve_is_the_sweep_silent_rate(capsys):
    code, out, _ = run(capsys, "plan", ROLLOUTS, "--objective", "informative", "-f", "json", "-q", "--bootstrap", "0")
    d = json.loads(out)
    silent = {r["G"]: r["silent"] for r in d["sweep"]}
    for point in d["objective_detail"]["curve"]:
        if point["G"] in silent:
            assert point["value"] == pytest.approx(1.0 - silent[point["G"]], rel=1e-12)


# ---------------------------------------------------------------- the current difficulty (issue 27 item 4)


@pytest.fixture(scope="module")
def drifting_log(tmp_path_factory):
    """A simulated GRPO run: every prompt's pass rate climbs over 60 steps (the drift test fires)."""
    from sigmaudit.cli import main

    path = tmp_path_factory.mktemp("drift") / "run.parquet"
    assert main(["simulate", "--prompts", "300", "--num-steps", "60", "--log-out", str(path), "-f", "json",
                 "-o", str(path.with_suffix(".json"))]) == 0
    return str(path)


def test_drifting_log_is_planned_on_its_last_steps(capsys, drifting_log):
    code, out, _ = run(capsys, "plan", drifting_log, "-G", "4", "-G", "8", "-G", "16", "-f", "json", "-q",
                       "--bootstrap", "0")
    d = json.loads(out)
    assert code == 0 and d["drift"] is not None
    assert d["window"] == {"first_step": 55, "last_step": 60, "steps": 6, "asked": "current difficulty"}
    assert d["difficulty"].startswith("the current difficulty: pass rates of the last 6 steps (steps 55–60")
    # the same figures as asking for that window by hand
    code, out, _ = run(capsys, "plan", drifting_log, "-G", "4", "-G", "8", "-G", "16", "-f", "json", "-q",
                       "--bootstrap", "0", "--last-steps", "6")
    by_hand = json.loads(out)
    assert by_hand["difficulty"].endswith("the window asked")
    assert d["recommended_G"] == by_hand["recommended_G"] and d["prompts"] == by_hand["prompts"]
    assert [r["silent"] for r in d["sweep"]] == [r["silent"] for r in by_hand["sweep"]]
    assert d["price"] == by_hand["price"]
    # and not the pooled log's: its pass rates are from earlier, harder steps
    whole = json.loads(run(capsys, "plan", drifting_log, "-G", "4", "-G", "8", "-G", "16", "-f", "json", "-q",
                           "--bootstrap", "0", "--steps", "1:60")[1])
    assert whole["sweep"][1]["silent"] != d["sweep"][1]["silent"]


def test_stationary_log_is_planned_whole_and_says_so(capsys):
    code, out, _ = run(capsys, "plan", ROLLOUTS, "-G", "8", "-f", "json", "-q", "--bootstrap", "0")
    d = json.loads(out)
    assert d["drift"] is None and d["window"]["asked"] is None
    assert "did not move detectably (drift test), so the whole log stands for the current difficulty" in d["difficulty"]
    text = " ".join(run(capsys, "plan", ROLLOUTS, "-G", "8", "-q", "--bootstrap", "0")[1].split())
    assert "read from pass rates of the whole log" in text


def test_counts_without_steps_have_no_difficulty_line(capsys, tmp_path):
    path = tmp_path / "counts.csv"
    path.write_text("prompt,n,k\n" + "".join(f"q{i},{n},{k}\n" for i, (n, k) in enumerate(zip(N, K, strict=True))))
    d = json.loads(run(capsys, "plan", str(path), "-G", "8", "-f", "json", "-q", "--bootstrap", "0")[1])
    assert d["difficulty"] is None and d["window"] is None
