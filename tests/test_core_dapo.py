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

from sigmaudit.core.dapo import FiniteDataset, binomial_pmf, dapo_cost, poisson_binomial_pmf, step_law


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
    assert never.gen_batches_per_step is None and not never.trains
    with pytest.raises(ValueError, match="train_batch"):
        dapo_cost(0.5, train_batch=0, gen_batch=7, n=8)


@settings(max_examples=60, deadline=None)
@given(B=st.integers(1, 80), M=st.integers(1, 60), s=st.floats(0.0, 0.97), K=st.integers(0, 9), n=st.integers(2, 8))
def test_closed_form_equals_the_chunk_programme(B: int, M: int, s: float, K: int, n: int) -> None:
    """dapo_cost's closed form (binomial marginals, sums over chunk counts) against step_law's exact dynamic
    programme over chunks: P(a step raises), E[J | J ≤ K] and the truncated surplus."""
    cost = dapo_cost(s, train_batch=B, gen_batch=M, n=n, max_gen_batches=K)
    law = step_law(binomial_pmf(M, 1 - s), B, K)
    assert cost.p_step_raises == pytest.approx(law.p_raises, abs=1e-9)
    if law.chunks is None or (K > 0 and law.p_raises > 1 - 1e-6):
        return
    assert cost.gen_batches_per_step == pytest.approx(law.chunks, rel=1e-6)
    assert cost.discarded_informative_rollouts == pytest.approx(law.surplus_groups * n, rel=1e-6, abs=1e-6 * B * n)


@settings(max_examples=30, deadline=None)
@given(B=st.integers(1, 500), M=st.integers(1, 300), s=st.floats(0.0, 0.97), K=st.integers(0, 30),
       D=st.integers(300, 5000))
def test_no_spread_no_correction(B: int, M: int, s: float, K: int, D: int) -> None:
    """ρ = 0 (every prompt kept with the same chance): drawing without replacement changes nothing."""
    plain = dapo_cost(s, train_batch=B, gen_batch=M, n=8, max_gen_batches=K)
    finite = dapo_cost(s, train_batch=B, gen_batch=M, n=8, max_gen_batches=K, dataset=FiniteDataset(D, 0.0))
    assert finite.p_step_raises == pytest.approx(plain.p_step_raises, abs=1e-12)
    assert finite.gen_batches_per_step == plain.gen_batches_per_step


def finite_corpus(D: int, seed: int) -> np.ndarray:
    """85 % never-solved prompts, the rest with p uniform in [0.2, 0.8]: q spread ρ ≈ 0.8 at n = 4."""
    rng = np.random.default_rng(seed)
    return np.where(rng.random(D) < 0.85, 0.0, rng.uniform(0.2, 0.8, D))


def spread_of(p: np.ndarray, n: int) -> float:
    q = 1 - p**n - (1 - p) ** n
    return float(q.var() / (q.mean() * (1 - q.mean())))


@pytest.mark.slow
def test_finite_dataset_against_verls_loop_without_replacement() -> None:
    """A step reading 80 % of a 3,000-prompt dataset (M = 200, K = 12, 15 chunks an epoch): verl's loop, run
    as the first step of 3,000 runs (a fresh permutation, drop_last, the np.std filter, the raise), against
    the corrected model within its Monte Carlo error; the uncorrected model (a dataset much larger than a
    step reads) is outside it (the issue: 27.9 % where verl's loop gave 16.2 %)."""
    n, B, M, K = 4, 265, 200, 12
    p = finite_corpus(3000, 3)
    s, rho = silent_mean(p, n), spread_of(p, n)
    runs = [verl_loop(p, B=B, M=M, n=n, K=K, steps=1, seed=1000 + i) for i in range(3000)]
    raised = np.array([r["raised"][0] for r in runs], dtype=np.float64)
    fixed = dapo_cost(s, train_batch=B, gen_batch=M, n=n, max_gen_batches=K, dataset=FiniteDataset(p.size, rho))
    plain = dapo_cost(s, train_batch=B, gen_batch=M, n=n, max_gen_batches=K)
    assert_within(raised, fixed.p_step_raises, share=True)
    assert abs(raised.mean() - plain.p_step_raises) > 6 * math.sqrt(plain.p_step_raises * (1 - plain.p_step_raises)
                                                                  / raised.size)
    trained = raised == 0
    chunks = np.array([r["chunks"][0] for r in runs], dtype=np.float64)[trained]
    surplus = np.array([r["surplus"][0] for r in runs], dtype=np.float64)[trained]
    assert_within(chunks, fixed.gen_batches_per_step)
    assert_within(surplus * n, fixed.discarded_informative_rollouts)


@pytest.mark.slow
def test_finite_dataset_over_epochs_against_verls_loop() -> None:
    """No chunk limit on a hard 1,000-prompt dataset read in 4 chunks an epoch (M = 250): a step of several
    epochs (each a fresh permutation); chunks and surplus within the Monte Carlo error of first steps."""
    n, B, M = 4, 300, 250
    p = finite_corpus(1000, 5)
    s, rho = silent_mean(p, n), spread_of(p, n)
    runs = [verl_loop(p, B=B, M=M, n=n, K=0, steps=1, seed=50 + i) for i in range(1500)]
    fixed = dapo_cost(s, train_batch=B, gen_batch=M, n=n, dataset=FiniteDataset(p.size, rho))
    assert_within(np.array([r["chunks"][0] for r in runs], dtype=np.float64), fixed.gen_batches_per_step)
    assert_within(np.array([r["surplus"][0] for r in runs], dtype=np.float64) * n, fixed.discarded_informative_rollouts)
    assert fixed.gen_batches_per_step > 4  # the step reads more than one epoch


def test_a_generation_batch_larger_than_the_dataset_is_refused() -> None:
    with pytest.raises(ValueError, match="larger than the dataset"):
        dapo_cost(0.5, train_batch=10, gen_batch=101, n=8, dataset=FiniteDataset(100, 0.5))


@pytest.mark.parametrize(("B", "M", "K"), [(10**9, 10**9, 0), (10**9, 3, 0), (512, 1536, 10**8),
                                           (10**9, 1, 10**8), (10**9, 10**9, 10**8), (3, 10**9, 0)])
def test_sizes_answer_at_once(B: int, M: int, K: int) -> None:
    """Any B, M, K: the closed form's work does not grow with them (issue 44: --train-batch 10^9 took 20 GB).
    The figures against the normal limit: E[J] ≈ B / (M q) + 1/2 and P(raise) ≈ Φ((B − KMq) / sd) when the
    transition spans many chunk counts, else exact endpoints."""
    import time

    from scipy.stats import norm

    q = 0.05
    t0 = time.process_time()
    c = dapo_cost(1 - q, train_batch=B, gen_batch=M, n=8, max_gen_batches=K, dataset=None)
    d = dapo_cost(1 - q, train_batch=B, gen_batch=M, n=8, max_gen_batches=K,
                  dataset=FiniteDataset(max(M, 10**9), 0.5))
    assert time.process_time() - t0 < 5.0
    if K > 0:
        mean, sd = K * M * q, math.sqrt(K * M * q * (1 - q))
        assert c.p_step_raises == pytest.approx(norm.cdf((B - 0.5 - mean) / sd), abs=0.02)
    if c.gen_batches_per_step is not None and K <= 0:
        ej = B / (M * q)
        assert ej <= c.gen_batches_per_step <= max(ej, 1.0) + 1.0
        # drawing without replacement moves E[J] by less than a chunk at these sizes (Wald's E[S_J] = E[J]·M·q
        # no longer holds: a step still short has drawn few kept prompts, and the rest of its epoch holds more)
        assert d.gen_batches_per_step == pytest.approx(c.gen_batches_per_step, abs=2.0)


@pytest.mark.slow
def test_whole_chunks_beat_the_ideal_refill_only_under_a_limit() -> None:
    """docs/theory.md: E[J]·M/B ≥ 1/q without a limit (Wald), but the steps that train under a limit are the
    lucky ones: B = 20, M = 10, q = 0.1, K = 20 gives 8.64 against 10 (verl's loop agrees, first steps)."""
    free = dapo_cost(0.9, train_batch=20, gen_batch=10, n=8)
    capped = dapo_cost(0.9, train_batch=20, gen_batch=10, n=8, max_gen_batches=20)
    assert free.generated_per_trained >= 10.0
    assert capped.generated_per_trained == pytest.approx(8.641, abs=1e-3)
    assert capped.p_step_raises == pytest.approx(binom.cdf(19, 200, 0.1), rel=1e-9)
    mc = verl_loop(hard(50_000, 1 - 0.1 / (1 - 2 / 256), 9), B=20, M=10, n=8, K=20, steps=3000, seed=3)
    trained = mc["raised"] == 0
    assert_within(mc["chunks"][trained] * 10 / 20, capped.generated_per_trained)


@pytest.mark.parametrize("keepers", [560, 595, 620])
def test_all_or_nothing_prompts_against_the_hypergeometric(keepers: int) -> None:
    """ρ = 1 (every prompt always or never kept) and K chunks within one epoch: the kept count is exactly
    hypergeometric; the moment-matched binomial agrees to a few per cent of the figure (the issue's sizes:
    17,398 prompts, B 512, M 1536, K 10; 3.95 % against 3.92 % at 595 keepers, where the binomial says 27.1 %)."""
    from scipy.stats import hypergeom

    D = 17_398
    q = keepers / D
    c = dapo_cost(1 - q, train_batch=512, gen_batch=1536, n=8, max_gen_batches=10, dataset=FiniteDataset(D, 1.0))
    exact = hypergeom.cdf(511, D, keepers, 10 * 1536)
    assert c.p_step_raises == pytest.approx(exact, rel=0.1, abs=1e-5)
