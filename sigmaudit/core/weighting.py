"""Difficulty weighting: where GRPO and Dr. GRPO spend their gradient.

docs/theory.md, "Difficulty weighting": in the large-G limit GRPO ascends
2·arcsin(sqrt p) and Dr. GRPO ascends p, so GRPO puts the extra weight
w(p) = 1 / sqrt(p (1 − p)) on a prompt. Per-prompt gradient mass:

    large G    GRPO ∝ sqrt(p (1 − p))      Dr. GRPO ∝ p (1 − p)
    finite G   GRPO ∝ E[σ](p, G)           Dr. GRPO ∝ p (1 − p) (1 − 1/G)

The share of a corpus's total mass falling on a band of p shows where each
rule spends its learning signal.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ._validate import as_group_size, as_prob, scalar_or_array
from .bands import EXTREME, MIDDLE, Band  # noqa: F401 - the bands are part of this module's API
from .fidelity import expected_sigma


def difficulty_weight(p: ArrayLike) -> NDArray[np.float64] | float:
    """w(p) = 1 / sqrt(p (1 − p)) = d/dp 2·arcsin(sqrt p); +inf at p ∈ {0, 1}; w(1/2) = 2."""
    pa = as_prob(p)
    v = pa * (1.0 - pa)
    with np.errstate(divide="ignore"):
        out = np.where(v > 0, 1.0 / np.sqrt(np.where(v > 0, v, 1.0)), np.inf)
    return scalar_or_array(out, (p,))


Rule = Literal["grpo", "drgrpo"]


def gradient_mass(p: ArrayLike, rule: Rule = "grpo", G: ArrayLike | None = None) -> NDArray[np.float64] | float:
    """Per-prompt gradient mass of a rule, large-G (``G=None``) or at finite G.

    GRPO: sqrt(p (1 − p)) or E[σ](p, G). Dr. GRPO: p (1 − p) or p (1 − p)(1 − 1/G).
    """
    pa = as_prob(p)
    v = pa * (1.0 - pa)
    if rule == "grpo":
        out = np.sqrt(v) if G is None else np.asarray(expected_sigma(pa, G), dtype=np.float64)
    elif rule == "drgrpo":
        out = v if G is None else v * (1.0 - 1.0 / as_group_size(G))
    else:
        raise ValueError(f"rule must be 'grpo' or 'drgrpo', got {rule!r}")
    like = (p,) if G is None else (p, G)
    return scalar_or_array(np.asarray(out, dtype=np.float64), like)


def band_share(p: ArrayLike, mass: ArrayLike, band: Band) -> float:
    """Share of the total mass Σ mass_i that falls on prompts with p_i in ``band``; NaN if total is 0."""
    pa = as_prob(p)
    m = np.broadcast_to(np.asarray(mass, dtype=np.float64), pa.shape)
    inside = band.contains(pa)
    mass_in, mass_out = float(m[inside].sum()), float(m[~inside].sum())
    total = mass_in + mass_out
    if total <= 0:
        return float("nan")
    # in / (in + out), not in / m.sum(): the two sums round differently, which gave
    # shares like 1.0000000000000002 when the band held all the mass
    return mass_in / total


def bin_index(p: ArrayLike, bins: int = 10) -> NDArray[np.int64]:
    """Bin of each p among ``bins`` equal-width bins on [0, 1]: i/bins <= p < (i+1)/bins, the last
    bin closed (a 1e-9 allowance so k/n exactly on an edge, e.g. 3/10, lands in the upper bin)."""
    pa = np.asarray(p, dtype=np.float64)
    return np.minimum(np.floor(pa * bins + 1e-9).astype(np.int64), bins - 1)


def bin_shares(p: ArrayLike, mass: ArrayLike, bins: int = 10) -> NDArray[np.float64]:
    """Share of the total mass in each of ``bins`` equal-width bins of p on [0, 1] (last bin closed)."""
    pa = as_prob(p)
    m = np.broadcast_to(np.asarray(mass, dtype=np.float64), pa.shape)
    sums = np.bincount(bin_index(pa, bins).ravel(), weights=m.ravel(), minlength=bins)
    total = sums.sum()
    return sums / total if total > 0 else np.full(bins, np.nan)
