"""The update a trainer's step computes from one group, per advantage estimator and std convention.

docs/theory.md, "Choosing G at a fixed rollout budget": a group of G binary rewards with k right
contributes ``G · c(k, G) · Δs`` to the sum of a batch-mean loss, ``Δs`` the difference of the mean
scores of its right and wrong answers, and ``a(k, G) = Σ_i A_i² / G`` to the rollout noise:

=====================  =====================  ==========================
estimator, std         gain c(k, G)           a(k, G)
=====================  =====================  ==========================
GRPO, sample           σ · sqrt((G−1)/G)      (G−1)/G · 1{0 < k < G}
GRPO, population       σ                      1{0 < k < G}
Dr. GRPO               σ²                     σ²
RLOO                   σ² · G/(G−1)           σ² · (G/(G−1))²
=====================  =====================  ==========================

with σ = sqrt(k(G − k))/G. "Sample" is the std TRL (``nanstd``, Bessel's count/(count − 1), TRL
f2cd57710ae345ea6428ae95363267fcf38a3dc8 ``trl/trainer/utils.py``) and verl (``torch.std``, unbiased by
default, verl b178a3cd56f58b2d502255daba591e92833930a7 ``compute_grpo_outcome_advantage``) divide by.
RLOO's A_i = (G/(G−1))(r_i − r̄) is verl's ``compute_rloo_outcome_advantage``. Expectations over
k ~ Binomial(G, p) are closed forms (E[σ²] = p(1−p)(G−1)/G, P(0 < k < G) = 1 − p^G − (1 − p)^G) or the
exact E[σ] sum (:func:`sigmaudit.core.posterior.sigma_on_grid`). At G = 1 every gain and moment is 0.

The step's signal-to-noise ratio (docs/theory.md, "The step's signal-to-noise ratio, with both noise
terms") also needs E[c² | p]: GRPO's c² is σ² times a constant, Dr. GRPO's and RLOO's need the exact
fourth moment E[σ⁴] (:func:`sigma_fourth`). With m1, m2, ma the corpus means of E[c], E[c²], E[a] and
N = ⌊R/G⌋ prompts per step, SNR²(G) ∝ N·m1² / (m2 + λ·ma/G) (:func:`step_snr`), λ the ratio of the
per-rollout to the between-prompt noise, set from the between-prompt share f at a reference G₀
(:func:`noise_ratio`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .posterior import sigma_on_grid

Advantage = Literal["grpo", "drgrpo", "rloo"]
StdConvention = Literal["sample", "population"]
ADVANTAGES: tuple[Advantage, ...] = ("grpo", "drgrpo", "rloo")
STD_CONVENTIONS: tuple[StdConvention, ...] = ("sample", "population")


def informative_chance(p: ArrayLike, Gs: Sequence[int]) -> NDArray[np.float64]:
    """P(0 < k < G) for each p (rows) and G (columns): 1 − p^G − (1 − p)^G, 0 at G = 1."""
    pa = np.asarray(p, dtype=np.float64)[:, None]
    G = np.asarray(Gs, dtype=np.float64)[None, :]
    with np.errstate(under="ignore"):
        out = 1.0 - pa**G - (1.0 - pa) ** G
    return np.where(G > 1, np.clip(out, 0.0, 1.0), 0.0)


def sigma_squared(p: ArrayLike, Gs: Sequence[int]) -> NDArray[np.float64]:
    """E[σ²] = p(1 − p)(G − 1)/G for each p (rows) and G (columns)."""
    pa = np.asarray(p, dtype=np.float64)[:, None]
    G = np.asarray(Gs, dtype=np.float64)[None, :]
    return pa * (1.0 - pa) * (G - 1.0) / G


def sigma_fourth(p: ArrayLike, Gs: Sequence[int]) -> NDArray[np.float64]:
    """E[σ⁴] over k ~ Binomial(G, p) for each p (rows) and G (columns), exactly:
    v² + v(1 − 6v)/G − 2v(1 − 4v)/G² + v(1 + 3(G − 2)v)/G³ with v = p(1 − p) (σ² = x(1 − x), x = k/G,
    expanded in the binomial's central moments; every term carries v, so it is accurate near p ∈ {0, 1})."""
    pa = np.asarray(p, dtype=np.float64)[:, None]
    G = np.asarray(Gs, dtype=np.float64)[None, :]
    v = pa * (1.0 - pa)
    out = v * v + v * (1.0 - 6.0 * v) / G - 2.0 * v * (1.0 - 4.0 * v) / G**2 + v * (1.0 + 3.0 * (G - 2.0) * v) / G**3
    return np.where(G > 1, np.maximum(out, 0.0), 0.0)


def snr_moments(p: NDArray[np.float64], Gs: Sequence[int], advantage: Advantage = "grpo",
                std: StdConvention = "sample") -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """(E[c | p], E[c² | p], E[a | p]) for each p (rows) and G (columns): the moments of the step's SNR."""
    c, a = gain_tables(p, Gs, advantage, std)
    G = np.asarray(Gs, dtype=np.float64)[None, :]
    if advantage == "grpo":
        return c, sigma_squared(p, Gs) * (np.where(G > 1, (G - 1.0) / G, 0.0) if std == "sample" else 1.0), a
    lift = np.where(G > 1, G / np.maximum(G - 1.0, 1.0), 0.0) if advantage == "rloo" else 1.0
    return c, sigma_fourth(p, Gs) * lift**2, a


def noise_ratio(share: float, m2_ref: float, ma_ref: float, G_ref: int) -> float:
    """λ = τ²/ν² from the between-prompt share f of a step's noise variance at G₀:
    f = m2(G₀) / (m2(G₀) + λ·ma(G₀)/G₀)  ⇔  λ = (1 − f)·G₀·m2(G₀) / (f·ma(G₀)) (0 < f ≤ 1)."""
    if not 0.0 < share <= 1.0:
        raise ValueError(f"between-prompt share must lie in (0, 1], got {share!r}")
    if ma_ref <= 0.0:
        return 0.0
    return (1.0 - share) * float(G_ref) * m2_ref / (share * ma_ref)


def step_snr(m1: ArrayLike, m2: ArrayLike, ma: ArrayLike, N: ArrayLike, G: ArrayLike, lam: float
             ) -> NDArray[np.float64]:
    """sqrt(N · m1² / (m2 + λ·ma/G)): the step's SNR up to the factor |Δμ|/ν common to every G (0 where
    no prompt fits a step or no group speaks)."""
    m1a, m2a, maa = (np.asarray(x, dtype=np.float64) for x in (m1, m2, ma))
    Na, Ga = np.asarray(N, dtype=np.float64), np.asarray(G, dtype=np.float64)
    den = m2a + lam * maa / np.maximum(Ga, 1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.sqrt(Na * m1a * m1a / den)
    return np.where((den > 0) & (Na > 0), out, 0.0)


def gain_tables(p: NDArray[np.float64], Gs: Sequence[int], advantage: Advantage = "grpo",
                std: StdConvention = "sample") -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """(E[c(k, G) | p], E[a(k, G) | p]) for each p (rows) and G (columns), by the module's table."""
    G = np.asarray(Gs, dtype=np.float64)[None, :]
    bessel = np.where(G > 1, (G - 1.0) / G, 0.0)
    if advantage == "grpo":
        inf = informative_chance(p, Gs)
        e_sigma = sigma_on_grid(np.asarray(p, dtype=np.float64), [int(g) for g in Gs])
        if std == "sample":
            return e_sigma * np.sqrt(bessel), inf * bessel
        return e_sigma, inf
    s2 = sigma_squared(p, Gs)
    if advantage == "drgrpo":
        return s2, s2
    if advantage == "rloo":
        with np.errstate(divide="ignore", invalid="ignore"):
            lift = np.where(G > 1, G / np.maximum(G - 1.0, 1.0), 0.0)
        return s2 * lift, s2 * lift**2
    raise ValueError(f"unknown advantage estimator {advantage!r}; choose one of {', '.join(ADVANTAGES)}")
