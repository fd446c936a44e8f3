"""Exact E[σ], E[σ²], fidelity φ and its large-G attenuation (sigmaudit.core.fidelity)."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import binom

from sigmaudit.core.fidelity import attenuation, expected_sigma, expected_sigma_pairs, expected_sigma_squared, fidelity


def brute_expected_sigma(p: float, G: int) -> float:
    """Σ_k Binom(k; G, p) · sqrt(k (G − k)) / G over every k, with scipy's pmf."""
    k = np.arange(G + 1)
    return float(np.sum(binom.pmf(k, G, p) * np.sqrt(k * (G - k)) / G))


GRID_P = [1e-9, 1e-4, 0.01, 0.05, 0.3, 0.5, 0.77, 0.999, 0.999999]
GRID_G = [1, 2, 3, 8, 31, 100, 1000, 12_345, 100_000]


@pytest.mark.parametrize("G", GRID_G)
def test_expected_sigma_matches_brute_force_binomial_sum(G: int) -> None:
    """rtol 1e-9: scipy's pmf is accurate to ~1e-16 relative (checked against 40-digit mpmath at
    G = 1000); summing ~1e5 log-space terms may lose up to ~1e-10 relative at G = 100,000."""
    got = expected_sigma(np.array(GRID_P), G)
    ref = np.array([brute_expected_sigma(p, G) for p in GRID_P])
    np.testing.assert_allclose(got, ref, rtol=1e-9, atol=0.0)
    for p in (1e-9, 0.999999):  # scalar path agrees with the array path
        assert expected_sigma(p, G) == pytest.approx(brute_expected_sigma(p, G), rel=1e-9)


@pytest.mark.parametrize("p", [Fraction(1, 2), Fraction(1, 20), Fraction(3, 7), Fraction(999, 1000)])
@pytest.mark.parametrize("G", [1, 2, 5, 8, 40])
def test_expected_sigma_exact_weights(p: Fraction, G: int) -> None:
    """Binomial weights in exact rationals (math.comb), square roots in floats, summed with fsum."""
    terms = [
        float(math.comb(G, k) * p**k * (1 - p) ** (G - k)) * math.sqrt(k * (G - k)) / G
        for k in range(G + 1)
    ]
    assert expected_sigma(float(p), G) == pytest.approx(math.fsum(terms), rel=1e-12, abs=0.0)


@pytest.mark.parametrize("p", [Fraction(1, 2), Fraction(1, 20), Fraction(3, 7)])
@pytest.mark.parametrize("G", [1, 2, 5, 8, 40])
def test_expected_sigma_squared_closed_form_is_exact(p: Fraction, G: int) -> None:
    exact = sum(
        math.comb(G, k) * p**k * (1 - p) ** (G - k) * Fraction(k * (G - k), G * G) for k in range(G + 1)
    )
    assert exact == p * (1 - p) * (1 - Fraction(1, G))  # the THEORY identity itself
    assert expected_sigma_squared(float(p), G) == pytest.approx(float(exact), rel=1e-14, abs=0.0)


@pytest.mark.parametrize(("p", "G"), [(0.5, 8), (0.05, 8), (0.3, 3), (0.9, 32), (0.02, 100)])
def test_expected_sigma_and_sigma_squared_monte_carlo(p: float, G: int) -> None:
    rng = np.random.default_rng(12345)
    n_groups = 400_000
    k = rng.binomial(G, p, size=n_groups)
    sigma = np.sqrt(k * (G - k)) / G
    se1 = sigma.std(ddof=1) / math.sqrt(n_groups)
    se2 = (sigma**2).std(ddof=1) / math.sqrt(n_groups)
    # 5 standard errors: a false alarm has probability ~6e-7 per check
    assert abs(sigma.mean() - expected_sigma(p, G)) < 5 * se1
    assert abs((sigma**2).mean() - expected_sigma_squared(p, G)) < 5 * se2
    assert abs((sigma**2).mean() - p * (1 - p) * (1 - 1 / G)) < 5 * se2


def test_fidelity_reference_values() -> None:
    # API order is fidelity(p, G); docs/theory.md writes φ(G, p)
    assert round(fidelity(0.5, 8), 4) == 0.9278
    assert round(fidelity(0.05, 8), 4) == 0.5390
    assert fidelity(0.5, 2) == pytest.approx(0.5, rel=1e-14)  # E[σ] = 1/4 over sqrt(1/4)
    assert fidelity(0.3, 1) == 0.0  # one answer never moves GRPO
    assert fidelity(0.0, 8) == 0.0 and fidelity(1.0, 8) == 0.0
    assert round(expected_sigma(0.5, 8), 4) == 0.4639


@settings(max_examples=150, deadline=None)
@given(st.floats(0.0, 1.0), st.integers(1, 2000), st.integers(1, 2000))
def test_fidelity_in_unit_interval_and_non_decreasing_in_G(p: float, G: int, extra: int) -> None:
    phi = fidelity(p, G)
    assert 0.0 <= phi <= 1.0
    assert fidelity(p, G + 1) >= phi - 1e-12
    assert fidelity(p, G + extra) >= phi - 1e-12


@settings(max_examples=100, deadline=None)
@given(st.floats(1e-6, 1 - 1e-6))
def test_fidelity_curve_is_monotone_on_a_whole_range(p: float) -> None:
    phis = fidelity(p, np.arange(1, 300))
    assert np.all(np.diff(phis) >= -1e-12)
    assert fidelity(1 - p, 50) == pytest.approx(fidelity(p, 50), rel=1e-9)


def test_fidelity_tends_to_one() -> None:
    assert fidelity(0.5, 100_000) > 0.99999
    assert fidelity(0.01, 100_000) > 0.999


@pytest.mark.parametrize("p", [0.1, 0.3, 0.5, 0.8])
@pytest.mark.parametrize("G", [100, 1000, 10_000])
def test_attenuation_is_the_first_order_term(p: float, G: int) -> None:
    """φ − (1 − 1/(8 G v)) = O(1/(G v)²): the 1/(8 G v) term is right (a wrong constant would
    leave an O(1/G) gap). The measured second-order coefficient is ~0.02–0.05; bound it by 0.1."""
    v = p * (1 - p)
    gap = fidelity(p, G) - attenuation(p, G)
    assert abs(gap) <= 0.1 / (G * v) ** 2
    assert attenuation(p, G) == pytest.approx(1 - 1 / (8 * G * v), rel=1e-15)


def test_attenuation_nan_at_ends_and_unclipped() -> None:
    out = attenuation(np.array([0.0, 1.0, 0.5]), 1)
    assert np.isnan(out[0]) and np.isnan(out[1])
    assert out[2] == 0.5  # 1 − 1/(8 · 1 · 1/4)
    assert attenuation(0.01, 2) < 0  # far too small a G: reported, not clipped


def test_array_inputs_match_scalar_calls_and_deduplicate() -> None:
    ps = np.array([0.2, 0.7, 0.2, 0.0, 1.0, 0.7])
    Gs = np.array([8, 8, 8, 8, 8, 64])
    out = fidelity(ps, Gs)
    assert out.shape == ps.shape
    np.testing.assert_array_equal(out, [fidelity(float(p), int(G)) for p, G in zip(ps, Gs, strict=True)])
    grid = expected_sigma(np.array([[0.1], [0.5]]), np.array([2, 8]))
    assert grid.shape == (2, 2)
    assert grid[1, 0] == pytest.approx(0.25, rel=1e-14)
    assert isinstance(expected_sigma(0.5, 8), float)
    assert isinstance(fidelity(0.5, 8), float)


@pytest.mark.parametrize("G", [1, 2, 3, 8, 33, 64])
def test_dense_and_windowed_sums_agree(G: int) -> None:
    """The dense path (G <= 64) and the windowed path are two independent codings of one sum."""
    from sigmaudit.core.fidelity import _expected_sigma_dense, _expected_sigma_windowed

    p = np.array([1e-9, 1e-6, 0.01, 0.2, 0.5, 0.77, 0.999, 1 - 1e-9])
    Gs = np.full(p.size, G)
    np.testing.assert_allclose(_expected_sigma_dense(p, Gs), _expected_sigma_windowed(p, Gs), rtol=1e-11, atol=1e-300)


def _windowed_whole_chunks(p: np.ndarray, G: np.ndarray) -> np.ndarray:
    """The windowed sum as it was computed before issue 45: each chunk of ≤ 2^21 cells as one matrix."""
    from sigmaudit.core import fidelity as F

    Gf = G.astype(np.float64)
    sd = np.sqrt(Gf * p * (1.0 - p))
    lo = np.clip(np.floor(Gf * p - F._WINDOW_SD * sd) - F._WINDOW_PAD, 0, Gf)
    hi = np.clip(np.ceil(Gf * p + F._WINDOW_SD * sd) + F._WINDOW_PAD, 0, Gf)
    width = (hi - lo + 1).astype(np.int64)
    log_c_lo = F._log_binom_coef(Gf, lo)
    order = np.argsort(width, kind="stable")
    out, i, n = np.zeros(p.size), 0, p.size
    while i < n:
        j = min(n, i + max(1, F._CHUNK_ELEMENTS // int(width[order[i]])))
        while j - i > 1 and (j - i) * int(width[order[j - 1]]) > F._CHUNK_ELEMENTS:
            j = i + max(1, F._CHUNK_ELEMENTS // int(width[order[j - 1]]))
        idx = order[i:j]
        w = int(width[idx].max())
        g = Gf[idx, None]
        k = lo[idx, None] + np.arange(w, dtype=np.float64)[None, :]
        step = np.log(np.maximum(g - k, 1.0)) - np.log(k + 1.0)
        log_c = np.empty_like(k)
        log_c[:, 0] = log_c_lo[idx]
        if w > 1:
            log_c[:, 1:] = log_c_lo[idx, None] + np.cumsum(step[:, :-1], axis=1)
        log_pmf = log_c + k * np.log(p)[idx, None] + (g - k) * np.log1p(-p)[idx, None]
        sigma = np.sqrt(np.maximum(k * (g - k), 0.0)) / g
        out[idx] = np.sum(np.where(k <= hi[idx, None], np.exp(np.minimum(log_pmf, 0.0)) * sigma, 0.0), axis=1)
        i = j
    return out


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), pairs=st.integers(1, 3000), top=st.sampled_from([100, 2000, 20000]))
def test_windowed_sum_in_blocks_is_bit_for_bit_the_whole_chunk_sum(seed: int, pairs: int, top: int) -> None:
    """Computing a chunk's rows a block at a time (in the CPU's cache: 2x faster on plan's 211 G x 401 grid points)
    keeps every bit: each row is still summed over its chunk's width (issue 45: scan's JSON byte-identical)."""
    from sigmaudit.core.fidelity import _expected_sigma_windowed

    rng = np.random.default_rng(seed)
    p = np.where(rng.random(pairs) < 0.3, rng.random(pairs) ** 8, rng.random(pairs)).clip(1e-12, 1 - 1e-12)
    G = rng.integers(65, top, pairs)
    np.testing.assert_array_equal(_expected_sigma_windowed(p, G).view(np.int64),
                                  _windowed_whole_chunks(p, G).view(np.int64))


def test_windowed_sum_of_plans_grid_is_bit_for_bit_the_whole_chunk_sum() -> None:
    """The call plan's recommendation makes on a large corpus: the default grid x 211 G from 2 to 8,192."""
    from sigmaudit.core.fidelity import _expected_sigma_windowed
    from sigmaudit.core.prior import default_grid

    grid = default_grid()[1:-1]
    Gs = np.unique(np.round(np.geomspace(65, 8192, 148)).astype(np.int64))
    P, GG = np.meshgrid(grid, Gs, indexing="ij")
    np.testing.assert_array_equal(_expected_sigma_windowed(P.ravel(), GG.ravel()).view(np.int64),
                                  _windowed_whole_chunks(P.ravel(), GG.ravel()).view(np.int64))


@pytest.mark.parametrize("grid_kind", ["default", "asymmetric"])
def test_sigma_on_grid_evaluates_each_mirror_pair_once_and_agrees_with_the_direct_sum(grid_kind: str) -> None:
    """sigma_on_grid takes E[σ](p, G) at 1 − p for p > 1/2 (exact there; σ(k) = σ(G − k)): on the default grid, whose
    points mirror each other to the bit, half the pairs are summed; on any grid the values are the direct sums' and
    scipy's binomial pmf summed by brute force, to rounding."""
    from scipy.stats import binom

    from sigmaudit.core import posterior
    from sigmaudit.core.prior import default_grid

    grid = default_grid() if grid_kind == "default" else np.r_[0.0, np.sort(np.random.default_rng(3).random(57)), 1.0]
    Gs = [2, 8, 64, 65, 300, 4097]
    seen: list[int] = []

    def counting(p: np.ndarray, G: np.ndarray) -> np.ndarray:
        seen.append(p.size)
        return expected_sigma_pairs(p, G)

    posterior._SIGMA_CACHE.clear()
    original = posterior.expected_sigma_pairs
    posterior.expected_sigma_pairs = counting  # type: ignore[assignment]
    try:
        table = posterior.sigma_on_grid(grid, Gs)
    finally:
        posterior.expected_sigma_pairs = original  # type: ignore[assignment]
        posterior._SIGMA_CACHE.clear()
    inner = grid[1:-1]
    distinct = np.unique(np.where(inner > 0.5, 1.0 - inner, inner)).size
    assert seen == [distinct * len(Gs)]
    if grid_kind == "default":
        assert distinct == (inner.size + 1) // 2
    P, GG = np.meshgrid(inner, np.asarray(Gs), indexing="ij")
    direct = expected_sigma_pairs(P.ravel(), GG.ravel()).reshape(P.shape)
    np.testing.assert_allclose(table[1:-1], direct, rtol=1e-10)
    assert np.all(table[[0, -1]] == 0.0)
    for j, G in enumerate(Gs):
        k = np.arange(G + 1)
        brute = binom.pmf(k[None, :], G, inner[:, None]) @ (np.sqrt(k * (G - k)) / G)
        np.testing.assert_allclose(table[1:-1, j], brute, rtol=1e-9, atol=1e-300)
