"""The group-size law, closed form and exact search (sigmaudit.core.group_size)."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sigmaudit.core.fidelity import fidelity
from sigmaudit.core.group_size import group_size_closed_form, group_size_exact

inner_p = st.floats(0.02, 0.98)
loose_eps = st.floats(0.02, 0.5)


def linear_scan(p: float, eps: float, block: int = 128, limit: int = 5000) -> int:
    """Smallest G with φ(p, G) >= 1 − ε, evaluating φ at G = 1, 2, 3, ... (in blocks)."""
    for start in range(1, limit + 1, block):
        Gs = np.arange(start, start + block)
        ok = np.flatnonzero(fidelity(p, Gs) >= 1 - eps)
        if ok.size:
            return int(Gs[ok[0]])
    raise AssertionError(f"no G <= {limit} reaches 1 - {eps} at p = {p}")


@settings(max_examples=150, deadline=None)
@given(inner_p, loose_eps)
def test_exact_equals_linear_scan(p: float, eps: float) -> None:
    assert group_size_exact(p, eps) == linear_scan(p, eps)


@settings(max_examples=100, deadline=None)
@given(st.floats(1e-4, 1 - 1e-4), st.floats(1e-3, 0.9))
def test_exact_is_minimal(p: float, eps: float) -> None:
    G = group_size_exact(p, eps)
    assert isinstance(G, int)
    assert fidelity(p, G) >= 1 - eps
    assert fidelity(p, G - 1) < 1 - eps


@settings(max_examples=100, deadline=None)
@given(inner_p, loose_eps)
def test_closed_form_understates_the_exact_need(p: float, eps: float) -> None:
    assert group_size_exact(p, eps) >= group_size_closed_form(p, eps)


def test_reference_values() -> None:
    assert group_size_exact(0.5, 0.05) == 11
    assert group_size_closed_form(0.5, 0.05) == 10
    assert group_size_closed_form(0.05, 0.05) == 53
    # near the ends the closed form understates the need a lot
    assert group_size_exact(0.01, 0.1) == 205
    assert group_size_closed_form(0.01, 0.1) == 127


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 999), st.integers(1, 999))
def test_closed_form_is_exact_ceiling(i: int, j: int) -> None:
    """ceil(1/(8 ε p (1 − p))) in exact rationals for decimal p = i/1000, ε = j/1000."""
    p, eps = Fraction(i, 1000), Fraction(j, 1000)
    exact = math.ceil(1 / (8 * eps * p * (1 - p)))
    assert group_size_closed_form(i / 1000, j / 1000) == exact


def test_closed_form_large_G_is_not_understated() -> None:
    # 1/(8 · 0.01 · 1e-12 · (1 − 1e-12)) = 12_500_000_000_012.5...; a 1e-12 relative shave gave ...001
    assert group_size_closed_form(1e-12, 0.01) == 12_500_000_000_013


@pytest.mark.parametrize("fn", [group_size_exact, group_size_closed_form])
def test_unreachable_prompts(fn) -> None:
    assert fn(0.0, 0.05) is None
    assert fn(1.0, 0.05) is None
    out = fn(np.array([0.0, 0.5, 1.0]), 0.05)
    assert isinstance(out, np.ndarray) and out.dtype == np.float64
    assert np.isnan(out[0]) and np.isnan(out[2])
    assert out[1] == fn(0.5, 0.05)


def test_arrays_broadcast_and_match_scalars() -> None:
    ps = np.array([[0.1], [0.5], [0.9]])
    eps = np.array([0.01, 0.1])
    out = group_size_exact(ps, eps)
    assert out.shape == (3, 2)
    for i, p in enumerate(ps[:, 0]):
        for j, e in enumerate(eps):
            assert out[i, j] == group_size_exact(float(p), float(e))
    np.testing.assert_array_equal(out[0], out[2])  # symmetric in p ↔ 1 − p


def test_many_distinct_p_in_one_call() -> None:
    """The vectorised search over many distinct p (the 10,000-p case, run here at 1,000)."""
    ps = np.random.default_rng(3).uniform(0.001, 0.999, size=1000)
    out = group_size_exact(ps, 0.01)
    assert out.shape == ps.shape and np.all(np.isfinite(out))
    for i in range(0, 1000, 97):
        G = int(out[i])
        assert fidelity(ps[i], G) >= 0.99 > fidelity(ps[i], G - 1)
    # repeated p are answered from one search
    np.testing.assert_array_equal(group_size_exact(np.repeat(ps[:5], 3), 0.01), np.repeat(out[:5], 3))


def test_extreme_p_exact_search_is_minimal() -> None:
    G = group_size_exact(1e-6, 0.05)
    assert G > group_size_closed_form(1e-6, 0.05)
    assert fidelity(1e-6, G) >= 0.95 > fidelity(1e-6, G - 1)
