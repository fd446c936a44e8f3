"""The group standard deviation σ(k, G) and each rule's per-prompt update gain.

docs/theory.md, "The group-standard-deviation identity": for binary rewards the
GRPO update of a prompt is exactly σ · (s̄₊ − s̄₋), so σ *is* the update size.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ._validate import as_counts, scalar_or_array

Rule = Literal["grpo", "drgrpo", "dapo", "rloo"]
RULES: tuple[Rule, ...] = ("grpo", "drgrpo", "dapo", "rloo")


def group_sigma(k: ArrayLike, G: ArrayLike) -> NDArray[np.float64] | float:
    """σ(k, G) = sqrt(k (G − k)) / G, the population std of G binary rewards with k right."""
    G_arr, k_arr = as_counts(G, k, "G")
    sigma = np.sqrt(k_arr * (G_arr - k_arr)) / G_arr
    return scalar_or_array(sigma, (k, G))


def update_gain(k: ArrayLike, G: ArrayLike, rule: Rule = "grpo") -> NDArray[np.float64] | float:
    """Per-prompt update size of a rule: GRPO σ, Dr. GRPO σ², DAPO 1{0<k<G}·σ, RLOO σ²·G/(G−1).

    RLOO with G = 1 has no leave-one-out baseline; its gain is 0 (σ = 0 there).
    """
    G_arr, k_arr = as_counts(G, k, "G")
    sigma = np.sqrt(k_arr * (G_arr - k_arr)) / G_arr
    if rule == "grpo":
        gain = sigma
    elif rule == "drgrpo":
        gain = sigma**2
    elif rule == "dapo":
        gain = np.where((k_arr > 0) & (k_arr < G_arr), sigma, 0.0)
    elif rule == "rloo":
        with np.errstate(divide="ignore", invalid="ignore"):
            gain = np.where(G_arr > 1, sigma**2 * G_arr / np.maximum(G_arr - 1, 1), 0.0)
    else:
        raise ValueError(f"rule must be one of {', '.join(RULES)}, got {rule!r}")
    return scalar_or_array(gain, (k, G))
