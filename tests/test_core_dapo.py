"""DAPO's generation loop as verl runs it (sigmaudit.core.dapo), against a Monte Carlo of verl's loop.

The Monte Carlo (:func:`verl_loop`) is written from ``RayDAPOTrainer.fit`` (verl-project/verl-recipe
48ea0a797fa29867ea0ad92aff7d284eec7d4be3, ``dapo/dapo_ray_trainer.py``) and verl's dataloader
(verl-project/verl 1dda039b9c6311889a9c9a26040677e1254814f9: ``RandomSampler`` over the dataset, a fresh
permutation per epoch, chunks of ``gen_batch_size`` with ``drop_last=True``): prompts drawn as verl draws
them, groups kept when ``np.std(metric) > 0`` or the group has one rollout, counters carried across
epochs, ``batch[:train_batch_size * n]``, and "Generated too many" when ``num_gen_batches`` reaches
``max_num_gen_batches`` > 0 with too few prompts kept.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import binom

from sigmaudit.core.dapo import binomial_pmf, dapo_cost, poisson_binomial_pmf, step_law


def verl_loop(p: np.ndarray, *, B: int, M: int, n: int, K: int, steps: int, seed: int) -> dict[str, np.ndarray]:
    """Run verl's DAPO generation loop on a dataset of prompts with pass rates ``p`` until ``steps`` steps
    ended (trained or raised). Returns per step: chunks, surplus kept groups, raised (0/1)."""
    rng = np.random.default_rng(seed)
    chunks, surplus, raised = [], [], []
    num_prompt_in_batch = num_gen_batches = 0
    while len(chunks) < steps:
        order = rng.permutation(p.size)  # RandomSampler: one permutation per epoch
        for start in range(0, p.size - M + 1, M):  # drop_last=True
            chunk = order[start:start + M]
            num_gen_batches += 1
            acc = (rng.random((M, n)) < p[chunk, None]).astype(np.float64)  # one row per uid
            std = np.std(acc, axis=1)
            kept = (std > 0) | (n == 1)
            num_prompt_in_batch += int(kept.sum())
            if num_prompt_in_batch < B:
                if K <= 0 or num_gen_batches < K:
                    continue
                chunks.append(num_gen_batches)
                surplus.append(0)
                raised.append(1)  # "Generated too many"
            else:
                chunks.append(num_gen_batches)
                surplus.append(num_prompt_in_batch - B)  # batch[:traj_bsz] drops the rest
                raised.append(0)
            num_prompt_in_batch = num_gen_batches = 0
            if len(chunks) == steps:
                break
    return {"chunks": np.array(chunks), "surplus": np.array(surplus), "raised": np.array(raised)}


def dataset(size: int, seed: int) -> np.ndarray:
    """Pass rates with never-solved, always-solved and in-between prompts."""
    rng = np.random.default_rng(seed)
    p = rng.beta(0.6, 0.6, size)
    p[rng.random(size) < 0.3] = 0.0
    p[rng.random(size) < 0.3] = 1.0
    return p


def silent_mean(p: np.ndarray, n: int) -> float:
    return float(np.mean(p**n + (1 - p) ** n))


def assert_within(mc: np.ndarray, model: float, z: float = 4.5, share: bool = False) -> None:
    """The MC mean within z standard errors of the model (a share's error from the model's p: an MC that
    raised at every step has no spread of its own)."""
    se = (math.sqrt(model * (1 - model) / mc.size) if share else
          mc.std(ddof=1) / math.sqrt(mc.size) if mc.size > 1 else 0.0)
    assert abs(mc.mean() - model) <= z * se + 1e-12, (mc.mean(), model, se)


def hard(size: int, never: float, seed: int) -> np.ndarray:
    """A share ``never`` of never-solved prompts, the rest at p = 0.5."""
    return np.where(np.random.default_rng(seed).random(size) < never, 0.0, 0.5)


@pytest.mark.parametrize(("B", "M", "n", "K", "seed"), [
    (64, 96, 8, 0, 1),     # a step of one or two chunks
    (64, 64, 4, 0, 2),     # gen = train (verl's default): several chunks per step
    (40, 120, 8, 5, 3),    # a chunk limit hit in about 3 steps of 10 (s ≈ 0.928)
    (30, 20, 2, 6, 4),     # gen < train, never one chunk; the limit bites (s ≈ 0.73)
])
def test_model_matches_monte_carlo_of_verls_loop(B: int, M: int, n: int, K: int, seed: int) -> None:
    p = dataset(200_000, seed) if K <= 0 else hard(200_000, {8: 0.928, 2: 0.465}[n], seed)
    mc = verl_loop(p, B=B, M=M, n=n, K=K, steps=3000, seed=seed + 10)
    cost = dapo_cost(silent_mean(p, n), train_batch=B, gen_batch=M, n=n, max_gen_batches=K)
    raised = mc["raised"].astype(np.float64)
    assert_within(raised, cost.p_step_raises, share=True)
    trained = mc["raised"] == 0
    assert_within(mc["chunks"][trained].astype(np.float64), cost.gen_batches_per_step)
    assert_within(mc["surplus"][trained].astype(np.float64) * n, cost.discarded_informative_rollouts)
    if K > 0:
        assert 0.02 < cost.p_step_raises < 0.98  # the limit was meant to bite


def test_monte_carlo_at_the_issues_cliff() -> None:
    """train 512, gen 1536, n = 8, K = 6 at s = 0.94 and 0.95: the model's P(step raises) within the MC's
    standard error (every slot kept with probability 1 − s, as a large dataset gives)."""
    for s, steps in ((0.94, 600), (0.95, 150)):
        p = hard(100_000, s, 7)
        s_true = silent_mean(p, 8)
        mc = verl_loop(p, B=512, M=1536, n=8, K=6, steps=steps, seed=11)
        cost = dapo_cost(s_true, train_batch=512, gen_batch=1536, n=8, max_gen_batches=6)
        assert_within(mc["raised"].astype(np.float64), cost.p_step_raises, share=True)


def test_issue_figures_recomputed() -> None:
    """Whole chunks: 3.00x at s = 0.599 where the ideal refill says 2.49; the K = 6 cliff between s = 0.94 and
    0.95 (P(raise) = P(Binomial(6·1536, 1 − s) < 512), scipy's cdf)."""
    c = dapo_cost(0.599, train_batch=512, gen_batch=1536, n=8)
    assert c.generated_per_trained == pytest.approx(3.0, abs=1e-6)
    assert c.ideal_groups_per_kept == pytest.approx(1 / 0.401)
    for s in (0.94, 0.95):
        c = dapo_cost(s, train_batch=512, gen_batch=1536, n=8, max_gen_batches=6, run_steps=10)
        want = binom.cdf(511, 6 * 1536, 1 - s)
        assert c.p_step_raises == pytest.approx(want, rel=1e-9)
        assert c.p_run_raises == pytest.approx(1 - (1 - want) ** 10, rel=1e-9)
    assert dapo_cost(0.94, train_batch=512, gen_batch=1536, n=8, max_gen_batches=6).p_step_raises < 0.05
    assert dapo_cost(0.95, train_batch=512, gen_batch=1536, n=8, max_gen_batches=6).p_step_raises > 0.98


@settings(max_examples=40, deadline=None)
@given(B=st.integers(1, 60), M=st.integers(1, 50), q=st.floats(0.05, 1.0), K=st.integers(0, 8))
def test_step_law_against_binomial_closed_forms(B: int, M: int, q: float, K: int) -> None:
    """P(J > j) = P(Binomial(jM, q) < B); unlimited: E[J] = Σ_j P(J > j) and Wald's E[S_J] = E[J]·M·q."""
    law = step_law(binomial_pmf(M, q), B, K)
    tail = [1.0, *binom.cdf(B - 1, np.arange(1, (K if K > 0 else 4000) + 1) * M, q).tolist()]
    if K > 0:
        assert law.p_raises == pytest.approx(tail[K], abs=1e-10)
        if law.chunks is not None and law.p_raises < 1 - 1e-6:
            ej = sum(j * (tail[j - 1] - tail[j]) for j in range(1, K + 1)) / (1 - tail[K])
            assert law.chunks == pytest.approx(ej, rel=1e-6)
    else:
        assert law.converged and law.p_raises == 0.0
        ej = sum(tail)  # E[J] = Σ_{j ≥ 0} P(J > j)
        assert law.chunks == pytest.approx(ej, rel=1e-8)
        assert law.surplus_groups == pytest.approx(ej * M * q - B, abs=1e-6 * (B + M))


def test_poisson_binomial_against_enumeration() -> None:
    q = [0.1, 0.5, 0.93, 0.0, 1.0, 0.37]
    want = np.zeros(len(q) + 1)
    for bits in itertools.product((0, 1), repeat=len(q)):
        want[sum(bits)] += math.prod(qi if b else 1 - qi for qi, b in zip(q, bits, strict=True))
    np.testing.assert_allclose(poisson_binomial_pmf(q), want, atol=1e-15)


def test_binomial_pmf_against_scipy() -> None:
    for m, q in ((1536, 0.06), (10, 0.5), (5, 0.0), (5, 1.0), (300, 1e-4)):
        np.testing.assert_allclose(binomial_pmf(m, q), binom.pmf(np.arange(m + 1), m, q), atol=1e-13)


def test_edges() -> None:
    one = dapo_cost(1.0, train_batch=10, gen_batch=7, n=1)  # n = 1: verl keeps single-rollout groups
    assert one.gen_batches_per_step == 2 and one.discarded_informative_rollouts == 4
    dead = dapo_cost(1.0, train_batch=10, gen_batch=7, n=8, max_gen_batches=3)
    assert dead.p_step_raises == 1.0 and dead.gen_batches_per_step is None and dead.p_run_raises == 1.0
    never = dapo_cost(1.0, train_batch=10, gen_batch=7, n=8)
    assert never.gen_batches_per_step is None and not never.law.converged
    with pytest.raises(ValueError, match="train_batch"):
        dapo_cost(0.5, train_batch=0, gen_batch=7, n=8)
