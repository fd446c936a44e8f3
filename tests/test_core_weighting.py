"""Difficulty weight and where each rule spends its gradient (sigmaudit.core.weighting)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from sigmaudit.core.fidelity import expected_sigma
from sigmaudit.core.weighting import (
    EXTREME,
    MIDDLE,
    Band,
    band_share,
    bin_shares,
    difficulty_weight,
    gradient_mass,
)

unit = st.floats(0.0, 1.0)


def test_weight_at_one_half_is_two() -> None:
    assert difficulty_weight(0.5) == 2.0


@settings(max_examples=200, deadline=None)
@given(st.floats(0.01, 0.99))
def test_weight_is_derivative_of_2_arcsin_sqrt_p(p: float) -> None:
    """Central difference, h = 1e-6: truncation ~h² w''' ≲ 1e-8 and rounding ~1e-16/h = 1e-10
    relative to w >= 2 on [0.01, 0.99], so rtol 1e-6 has a wide margin."""
    h = 1e-6
    f = lambda x: 2 * math.asin(math.sqrt(x))  # noqa: E731
    numeric = (f(p + h) - f(p - h)) / (2 * h)
    assert difficulty_weight(p) == pytest.approx(numeric, rel=1e-6)


def test_weight_is_infinite_at_the_ends_and_symmetric() -> None:
    out = difficulty_weight(np.array([0.0, 1.0, 0.2, 0.8]))
    assert np.isinf(out[0]) and np.isinf(out[1])
    assert out[2] == pytest.approx(out[3], rel=1e-14)
    assert out[2] == pytest.approx(1 / math.sqrt(0.16), rel=1e-14)


@settings(max_examples=100, deadline=None)
@given(st.floats(1e-6, 1 - 1e-6))
def test_grpo_mass_over_drgrpo_mass_is_the_weight(p: float) -> None:
    ratio = gradient_mass(p, "grpo") / gradient_mass(p, "drgrpo")
    assert ratio == pytest.approx(difficulty_weight(p), rel=1e-12)


@pytest.mark.parametrize("G", [2, 8, 64])
def test_gradient_mass_finite_G(G: int) -> None:
    ps = np.array([0.0, 0.05, 0.3, 0.5, 1.0])
    np.testing.assert_array_equal(gradient_mass(ps, "grpo", G), expected_sigma(ps, G))
    np.testing.assert_allclose(gradient_mass(ps, "drgrpo", G), ps * (1 - ps) * (1 - 1 / G), rtol=1e-15)


def test_gradient_mass_large_G_limit() -> None:
    ps = np.array([0.05, 0.3, 0.5])
    np.testing.assert_allclose(gradient_mass(ps, "grpo"), np.sqrt(ps * (1 - ps)), rtol=1e-15)
    np.testing.assert_allclose(gradient_mass(ps, "drgrpo"), ps * (1 - ps), rtol=1e-15)
    # finite G approaches the limit: relative gap ≈ 1/(8 G p(1-p)) <= 2.7e-5 here
    np.testing.assert_allclose(gradient_mass(ps, "grpo", 100_000), gradient_mass(ps, "grpo"), rtol=5e-5)
    assert isinstance(gradient_mass(0.3), float)
    assert isinstance(gradient_mass(0.3, "drgrpo", 8), float)


def test_unknown_rule_is_rejected() -> None:
    with pytest.raises(ValueError, match="'rloo'"):
        gradient_mass(0.3, "rloo")  # type: ignore[arg-type]


def test_bands_bounds() -> None:
    np.testing.assert_array_equal(
        MIDDLE.contains([0.39, 0.4, 0.5, 0.6, 0.61]), [False, True, True, True, False]
    )
    np.testing.assert_array_equal(
        EXTREME.contains([0.0, 0.09, 0.1, 0.5, 0.9, 0.91, 1.0]),
        [True, True, False, False, False, True, True],
    )


def test_band_share_hand_example() -> None:
    p = np.array([0.05, 0.5, 0.95, 0.3])
    mass = np.array([1.0, 2.0, 3.0, 4.0])
    assert band_share(p, mass, EXTREME) == pytest.approx(0.4, rel=1e-15)
    assert band_share(p, mass, MIDDLE) == pytest.approx(0.2, rel=1e-15)
    assert math.isnan(band_share(p, np.zeros(4), MIDDLE))
    # a scalar mass broadcasts: every prompt counts once
    assert band_share(p, 1.0, EXTREME) == 0.5


def test_band_holding_all_the_mass_has_share_exactly_one() -> None:
    # used to return 1.0000000000000002: the in-band and total sums rounded differently
    p = np.array([0.0] + [0.375] * 56)
    assert band_share(p, gradient_mass(p, "grpo"), Band("all", 0.0, 0.0, outside=True)) == 1.0
    assert band_share(p, gradient_mass(p, "grpo"), Band("none", 0.0, 0.0)) == 0.0


@settings(max_examples=150, deadline=None)
@given(
    arrays(np.float64, st.integers(1, 60), elements=unit),
    st.floats(0.0, 1.0),
    st.floats(0.0, 1.0),
    st.sampled_from(["grpo", "drgrpo"]),
)
def test_band_shares_of_complementary_bands_sum_to_one(p, a: float, b: float, rule) -> None:
    lo, hi = min(a, b), max(a, b)
    mass = gradient_mass(p, rule)
    inside, outside = Band("in", lo, hi), Band("out", lo, hi, outside=True)
    s_in, s_out = band_share(p, mass, inside), band_share(p, mass, outside)
    if mass.sum() == 0:
        assert math.isnan(s_in) and math.isnan(s_out)
        return
    assert 0.0 <= s_in <= 1.0 and 0.0 <= s_out <= 1.0
    assert s_in + s_out == pytest.approx(1.0, rel=1e-12)
    assert band_share(p, mass, Band("all", 0.0, 1.0)) == pytest.approx(1.0, rel=1e-12)


@settings(max_examples=150, deadline=None)
@given(
    arrays(np.float64, st.integers(1, 60), elements=unit),
    arrays(np.float64, 60, elements=st.floats(0.0, 10.0)),
    st.integers(1, 20),
)
def test_bin_shares_sum_to_one(p, mass, bins: int) -> None:
    m = mass[: p.size]
    out = bin_shares(p, m, bins)
    assert out.shape == (bins,)
    if m.sum() == 0:
        assert np.all(np.isnan(out))
        return
    assert np.all(out >= 0)
    assert out.sum() == pytest.approx(1.0, rel=1e-12)


def test_bin_shares_hand_example() -> None:
    p = np.array([0.0, 0.1, 0.15, 0.5, 0.99, 1.0])
    out = bin_shares(p, np.ones(6), bins=10)
    expected = np.zeros(10)
    np.add.at(expected, [0, 1, 1, 5, 9, 9], 1 / 6)  # p = 0.1 opens bin 1; p = 1 falls in the closed last bin
    np.testing.assert_allclose(out, expected, rtol=1e-15)


def test_grpo_spends_more_of_its_mass_on_extreme_prompts_than_drgrpo() -> None:
    p = np.linspace(0.0, 1.0, 101)
    grpo = band_share(p, gradient_mass(p, "grpo"), EXTREME)
    drgrpo = band_share(p, gradient_mass(p, "drgrpo"), EXTREME)
    assert grpo > drgrpo > 0
