"""Advantages of each rule and the identity g = σ · (s̄₊ − s̄₋) (sigmaudit.core.advantages)."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from sigmaudit.core.advantages import (
    centered_rewards,
    dapo_advantages,
    dapo_keep_mask,
    drgrpo_advantages,
    grpo_advantages,
    policy_update,
    rloo_advantages,
    sign_advantages,
)
from sigmaudit.core.fidelity import expected_sigma

finite = st.floats(-10.0, 10.0, allow_nan=False, allow_infinity=False)


@st.composite
def binary_group_with_scores(draw, min_G: int = 1):
    """A binary reward group of random size and per-sample score vectors of random dimension."""
    G = draw(st.integers(min_G, 40))
    d = draw(st.integers(1, 6))
    rewards = draw(arrays(np.float64, G, elements=st.sampled_from([0.0, 1.0])))
    scores = draw(arrays(np.float64, (G, d), elements=finite))
    return rewards, scores


def _split_means(rewards: np.ndarray, scores: np.ndarray) -> tuple[float, np.ndarray]:
    """(σ, s̄₊ − s̄₋) computed directly from the definitions (Δs = 0 on a unanimous group)."""
    G = rewards.size
    k = int(rewards.sum())
    sigma = math.sqrt(k * (G - k)) / G
    if 0 < k < G:
        delta = scores[rewards == 1].mean(axis=0) - scores[rewards == 0].mean(axis=0)
    else:
        delta = np.zeros(scores.shape[1])
    return sigma, delta


def _close(a: np.ndarray, b: np.ndarray, scores: np.ndarray) -> None:
    # every term is a few flops on scores of size <= 10, so the error is a few ulps of 10
    np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12 * (1.0 + np.abs(scores).max()))


@settings(max_examples=300, deadline=None)
@given(binary_group_with_scores())
def test_grpo_update_equals_sigma_times_score_gap(data) -> None:
    rewards, scores = data
    sigma, delta = _split_means(rewards, scores)
    _close(policy_update(grpo_advantages(rewards), scores), sigma * delta, scores)


@settings(max_examples=200, deadline=None)
@given(binary_group_with_scores())
def test_drgrpo_update_equals_sigma_squared_times_score_gap(data) -> None:
    rewards, scores = data
    sigma, delta = _split_means(rewards, scores)
    _close(policy_update(drgrpo_advantages(rewards), scores), sigma**2 * delta, scores)


@settings(max_examples=200, deadline=None)
@given(binary_group_with_scores(min_G=2))
def test_rloo_update_equals_sigma_squared_G_over_G_minus_1(data) -> None:
    rewards, scores = data
    G = rewards.size
    sigma, delta = _split_means(rewards, scores)
    _close(policy_update(rloo_advantages(rewards), scores), sigma**2 * G / (G - 1) * delta, scores)


@settings(max_examples=200, deadline=None)
@given(binary_group_with_scores())
def test_dapo_update_is_grpo_on_kept_groups_and_zero_on_dropped(data) -> None:
    rewards, scores = data
    sigma, delta = _split_means(rewards, scores)
    keep = bool(dapo_keep_mask(rewards))
    assert keep == (0 < rewards.sum() < rewards.size)
    _close(policy_update(dapo_advantages(rewards), scores), keep * sigma * delta, scores)


@settings(max_examples=200, deadline=None)
@given(
    binary_group_with_scores(),
    st.floats(-5.0, 5.0),
    st.floats(0.1, 10.0),
)
def test_reward_shift_and_scale_cancel_in_grpo(data, shift, scale) -> None:
    rewards, _ = data
    a = grpo_advantages(rewards)
    np.testing.assert_allclose(grpo_advantages(scale * rewards + shift), a, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(drgrpo_advantages(rewards + shift), drgrpo_advantages(rewards), atol=1e-12)


@settings(max_examples=200, deadline=None)
@given(binary_group_with_scores(min_G=2), st.floats(-3.0, 3.0))
def test_any_constant_baseline_cancels(data, baseline) -> None:
    """Replacing the group mean by any constant b changes g by (mean − b)/σ · Σ s_i / G.

    So the baseline cancels exactly when the scores sum to zero (as ∇log π does
    in expectation), and the update is still σ · (s̄₊ − s̄₋).
    """
    rewards, scores = data
    G = rewards.size
    sigma, delta = _split_means(rewards, scores)
    if sigma == 0:
        return
    a_const = (rewards - baseline) / sigma
    shift = (rewards.mean() - baseline) / sigma * scores.sum(axis=0) / G
    _close(policy_update(a_const, scores), sigma * delta + shift, scores)
    zero_sum = scores - scores.mean(axis=0)
    _close(policy_update(a_const, zero_sum), sigma * delta, scores)


@settings(max_examples=200, deadline=None)
@given(arrays(np.float64, st.integers(2, 30), elements=finite))
def test_group_mean_centering_is_leave_one_out_times_G_minus_1_over_G(rewards) -> None:
    G = rewards.size
    loo = rloo_advantages(rewards)
    np.testing.assert_allclose(centered_rewards(rewards), (G - 1) / G * loo, rtol=1e-9, atol=1e-9)
    # and the leave-one-out advantage is r_i minus the mean of the others, by brute force
    brute = np.array([rewards[i] - np.delete(rewards, i).mean() for i in range(G)])
    np.testing.assert_allclose(loo, brute, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize(
    "rewards",
    [[0.0] * 8, [1.0] * 8, [1.0], [0.1, 0.1, 0.1], [0.3] * 7, [-2.5] * 5],
)
def test_zero_sigma_group_gives_zeros_not_nan(rewards) -> None:
    # [0.1, 0.1, 0.1] used to give [-1, -1, -1]: r.std() was 1.4e-17, not 0
    for fn in (grpo_advantages, dapo_advantages):
        out = fn(rewards)
        assert not np.any(np.isnan(out))
        np.testing.assert_array_equal(out, np.zeros(len(rewards)))
    np.testing.assert_array_equal(grpo_advantages(rewards, eps=1e-6), np.zeros(len(rewards)))
    assert not dapo_keep_mask(rewards)


def test_batch_of_groups_mixes_silent_and_informative() -> None:
    batch = np.array([[1.0, 1.0, 1.0, 1.0], [1.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0]])
    out = grpo_advantages(batch)
    assert out.shape == batch.shape
    np.testing.assert_array_equal(out[0], 0.0)
    np.testing.assert_array_equal(out[2], 0.0)
    # k = 1 of 4: mean 1/4, σ = sqrt(3)/4
    np.testing.assert_allclose(out[1], np.array([3, -1, -1, -1]) / math.sqrt(3), rtol=1e-14)
    np.testing.assert_array_equal(dapo_keep_mask(batch), [False, True, False])
    assert np.all(np.abs(out.mean(axis=-1)) < 1e-15)


def test_grpo_eps_is_added_to_sigma() -> None:
    r = np.array([1.0, 0.0])  # mean 1/2, σ = 1/2
    np.testing.assert_allclose(grpo_advantages(r, eps=0.5), [0.5, -0.5], rtol=1e-15)
    np.testing.assert_allclose(grpo_advantages(r), [1.0, -1.0], rtol=1e-15)


def test_rloo_single_sample_is_zero() -> None:
    np.testing.assert_array_equal(rloo_advantages([1.0]), [0.0])
    np.testing.assert_array_equal(rloo_advantages([[1.0], [0.0]]), [[0.0], [0.0]])


def test_sign_advantage_is_not_mean_zero() -> None:
    np.testing.assert_array_equal(sign_advantages([1, 0, 1]), [1.0, -1.0, 1.0])
    unanimous = sign_advantages([1.0] * 4)
    assert unanimous.mean() == 1.0  # moves the policy on a silent group
    assert sign_advantages([0.0] * 4).mean() == -1.0


@pytest.mark.parametrize("p", [Fraction(1, 2), Fraction(1, 10), Fraction(7, 9)])
@pytest.mark.parametrize("G", [1, 2, 5, 8])
def test_sign_advantage_expected_update_is_2p_1_minus_p(p: Fraction, G: int) -> None:
    """Bernoulli-logit prompt: score of answer y is y − p; exact sum over k ~ Binom(G, p)."""
    total = Fraction(0)
    for k in range(G + 1):
        weight = math.comb(G, k) * p**k * (1 - p) ** (G - k)
        y = [1] * k + [0] * (G - k)
        g = sum(Fraction(2 * yi - 1) * (yi - p) for yi in y) / G
        # the module computes the same per-group update in floating point
        got = policy_update(sign_advantages(y), np.array([[float(yi - p)] for yi in y]))
        assert got[0] == pytest.approx(float(g), rel=1e-12, abs=1e-15)
        total += weight * g
    assert total == 2 * p * (1 - p)
    if G > 1:  # a unanimous all-correct group still moves the policy by 1 − p
        all_right = policy_update(sign_advantages([1.0] * G), np.full((G, 1), float(1 - p)))
        assert all_right[0] == pytest.approx(float(1 - p), rel=1e-14)


@pytest.mark.parametrize(("p", "G"), [(0.5, 8), (0.05, 8), (0.3, 3), (0.9, 16)])
def test_grpo_expected_update_on_a_bernoulli_logit_prompt_is_expected_sigma(p, G) -> None:
    """Score y − p gives s̄₊ − s̄₋ = 1, so E[g] = E[σ](p, G); exact enumeration over k."""
    total = 0.0
    for k in range(G + 1):
        y = np.array([1.0] * k + [0.0] * (G - k))
        g = policy_update(grpo_advantages(y), (y - p)[:, None])[0]
        total += math.comb(G, k) * p**k * (1 - p) ** (G - k) * g
    assert total == pytest.approx(expected_sigma(p, G), rel=1e-12)


def test_policy_update_shapes() -> None:
    a = np.ones((3, 4))
    s = np.arange(3 * 4 * 2, dtype=float).reshape(3, 4, 2)
    out = policy_update(a, s)
    assert out.shape == (3, 2)
    np.testing.assert_allclose(out, s.mean(axis=1))


@pytest.mark.parametrize(
    ("rewards", "match"),
    [
        (1.0, "group axis"),
        (np.zeros((2, 0)), "group axis"),
        ([1.0, float("nan")], "finite"),
        ([1.0, float("inf")], "finite"),
    ],
)
def test_bad_rewards_are_rejected(rewards, match) -> None:
    for fn in (grpo_advantages, drgrpo_advantages, rloo_advantages, sign_advantages, dapo_keep_mask):
        with pytest.raises(ValueError, match=match):
            fn(rewards)
