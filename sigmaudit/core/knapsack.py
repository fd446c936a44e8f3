"""Knapsack-RL's value of giving a prompt N rollouts.

Li, Chen, Yang, Ding, Sun, Zhang, Huang and Luo, "Knapsack RL: Unlocking Exploration of LLMs via
Optimizing Budget Allocation", arXiv:2509.25849 (2025), section 4: each (prompt, budget) pair is a
knapsack item of cost N and value

    Value(N, p) = ProbNonZeroGradient(N, p) × InfoGain(p)
                = (1 − p^N − (1 − p)^N) · p (1 − p)²

where 1 − p^N − (1 − p)^N is the chance that a GRPO group of N answers is not silent (docs/theory.md,
"Silent groups") and InfoGain(p) = p (1 − p)² is the paper's approximation of the rise in the
success rate after one gradient step on the prompt (largest at p = 1/3). The paper maximises
Σ_i Value(N_i, p_i) subject to Σ_i N_i ≤ budget; ``sigmaudit plan --objective knapsack`` uses the
same value for a uniform N. Value is 0 at p ∈ {0, 1} and for N = 1.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ._validate import as_group_size, as_prob, scalar_or_array
from .silent import _kept_rate


def info_gain(p: ArrayLike) -> NDArray[np.float64] | float:
    """Knapsack-RL's InfoGain(p) = p (1 − p)² (arXiv:2509.25849): largest, 4/27, at p = 1/3.

    Examples
    --------
    >>> round(info_gain(1 / 3), 6)
    0.148148
    """
    pa = as_prob(p)
    return scalar_or_array(pa * (1.0 - pa) ** 2, (p,))


def knapsack_value(p: ArrayLike, N: ArrayLike) -> NDArray[np.float64] | float:
    """Knapsack-RL's Value(N, p) = (1 − p^N − (1 − p)^N) · p (1 − p)² (arXiv:2509.25849, section 4).

    The non-silent chance is computed without cancellation (:func:`sigmaudit.core.silent._kept_rate`),
    so a tiny p keeps a tiny positive value; it is exactly 0 at N = 1 (rounding would leave about ±1e-19).

    Examples
    --------
    >>> round(knapsack_value(0.5, 8), 6)
    0.124023
    >>> knapsack_value(0.0, 8), knapsack_value(0.3, 1)
    (0.0, 0.0)
    """
    pa, Na = as_prob(p), as_group_size(N)
    kept = np.where(Na > 1, np.maximum(_kept_rate(pa, Na), 0.0), 0.0)
    return scalar_or_array(kept * pa * (1.0 - pa) ** 2, (p, N))
