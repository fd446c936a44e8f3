"""σ(k, G) and each rule's per-prompt update gain (sigmaudit.core.sigma)."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sigmaudit.core.advantages import (
    dapo_advantages,
    drgrpo_advantages,
    grpo_advantages,
    policy_update,
    rloo_advantages,
)
from sigmaudit.core.sigma import RULES, group_sigma, update_gain


@st.composite
def k_and_G(draw, max_G: int = 200) -> tuple[int, int]:
    G = draw(st.integers(1, max_G))
    return draw(st.integers(0, G)), G


def test_sigma_reference_values() -> None:
    assert group_sigma(4, 8) == 0.5
    assert group_sigma(1, 4) == pytest.approx(math.sqrt(3) / 4, rel=1e-15)
    assert group_sigma(0, 8) == 0.0
    assert group_sigma(8, 8) == 0.0
    assert group_sigma(0, 1) == 0.0 and group_sigma(1, 1) == 0.0


@settings(max_examples=200, deadline=None)
@given(k_and_G())
def test_sigma_squared_is_exact_rational(kG: tuple[int, int]) -> None:
    k, G = kG
    exact = Fraction(k * (G - k), G * G)
    assert group_sigma(k, G) ** 2 == pytest.approx(float(exact), rel=1e-14, abs=0.0)
    # symmetric in right/wrong and never above 1/2
    assert group_sigma(k, G) == group_sigma(G - k, G)
    assert 0.0 <= group_sigma(k, G) <= 0.5


@settings(max_examples=100, deadline=None)
@given(k_and_G(max_G=64))
def test_sigma_is_population_std_of_the_rewards(kG: tuple[int, int]) -> None:
    k, G = kG
    rewards = np.array([1.0] * k + [0.0] * (G - k))
    assert group_sigma(k, G) == pytest.approx(float(rewards.std()), rel=1e-12, abs=1e-15)


def test_sigma_vectorised_and_scalar_types() -> None:
    out = group_sigma(np.array([0, 1, 2, 3, 4]), 4)
    assert isinstance(out, np.ndarray)
    np.testing.assert_allclose(out, np.sqrt([0, 3, 4, 3, 0]) / 4, rtol=1e-15)
    assert isinstance(group_sigma(2, 4), float)
    grid = group_sigma(np.array([[1], [2]]), np.array([2, 4, 8]))
    assert grid.shape == (2, 3)
    np.testing.assert_allclose(grid[1], [0.0, 0.5, math.sqrt(12) / 8], rtol=1e-15)


@settings(max_examples=200, deadline=None)
@given(k_and_G())
def test_update_gain_table(kG: tuple[int, int]) -> None:
    k, G = kG
    s = math.sqrt(k * (G - k)) / G
    assert update_gain(k, G, "grpo") == pytest.approx(s, rel=1e-14, abs=0.0)
    assert update_gain(k, G, "drgrpo") == pytest.approx(s * s, rel=1e-14, abs=0.0)
    assert update_gain(k, G, "dapo") == pytest.approx(s if 0 < k < G else 0.0, rel=1e-14, abs=0.0)
    rloo = s * s * G / (G - 1) if G > 1 else 0.0
    assert update_gain(k, G, "rloo") == pytest.approx(rloo, rel=1e-14, abs=0.0)


def test_rloo_gain_with_one_sample_is_zero_not_nan() -> None:
    assert update_gain(0, 1, "rloo") == 0.0
    assert update_gain(1, 1, "rloo") == 0.0
    out = update_gain(np.array([0, 1, 1]), np.array([1, 1, 2]), "rloo")
    np.testing.assert_array_equal(out, [0.0, 0.0, 0.5])


@pytest.mark.parametrize(
    ("rule", "advantages"),
    [
        ("grpo", grpo_advantages),
        ("drgrpo", drgrpo_advantages),
        ("dapo", dapo_advantages),
        ("rloo", rloo_advantages),
    ],
)
def test_gain_is_the_update_of_the_rules_advantages(rule, advantages) -> None:
    """With scores s = 1 on right answers and 0 on wrong ones, Δs = 1 and g = gain(k, G)."""
    for G in (1, 2, 3, 8, 17):
        for k in range(G + 1):
            rewards = np.array([1.0] * k + [0.0] * (G - k))
            scores = rewards[:, None]
            g = policy_update(advantages(rewards), scores)
            assert g.shape == (1,)
            expected = update_gain(k, G, rule) if 0 < k < G else 0.0
            assert g[0] == pytest.approx(expected, rel=1e-12, abs=1e-15), (rule, k, G)


def test_rules_constant_lists_every_rule() -> None:
    assert set(RULES) == {"grpo", "drgrpo", "dapo", "rloo"}


def test_unknown_rule_is_rejected_by_name() -> None:
    with pytest.raises(ValueError, match="'ppo'"):
        update_gain(1, 4, "ppo")  # type: ignore[arg-type]
