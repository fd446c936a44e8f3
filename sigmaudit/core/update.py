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
