"""Silent groups: the chance that all G answers agree (σ = 0, zero update).

THEORY.md, "Silent groups": silent(p, G) = p^G + (1 − p)^G, split into the
all-correct branch p^G and the all-wrong branch (1 − p)^G. DAPO's dynamic
sampling redraws silent groups; with unlimited retries it draws 1 / (1 − silent)
groups per kept group.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ._validate import as_group_size, as_prob, scalar_or_array


def all_correct_rate(p: ArrayLike, G: ArrayLike) -> NDArray[np.float64] | float:
    """All-correct branch p^G."""
    pa, Ga = as_prob(p), as_group_size(G)
    return scalar_or_array(pa**Ga, (p, G))


def all_wrong_rate(p: ArrayLike, G: ArrayLike) -> NDArray[np.float64] | float:
    """All-wrong branch (1 − p)^G."""
    pa, Ga = as_prob(p), as_group_size(G)
    return scalar_or_array((1.0 - pa) ** Ga, (p, G))


def silent_rate(p: ArrayLike, G: ArrayLike) -> NDArray[np.float64] | float:
    """silent(p, G) = p^G + (1 − p)^G, the chance a group of G has σ = 0.

    Examples
    --------
    >>> round(silent_rate(0.05, 8), 4)
    0.6634
    """
    pa, Ga = as_prob(p), as_group_size(G)
    return scalar_or_array(pa**Ga + (1.0 - pa) ** Ga, (p, G))


def dapo_groups_per_kept_group(p: ArrayLike, G: ArrayLike) -> NDArray[np.float64] | float:
    """1 / (1 − silent(p, G)): groups DAPO draws per kept group; NaN when p ∈ {0, 1} (never kept).

    With a retry cap the ratio of groups drawn to groups kept is the same;
    see :func:`dapo_expected_draws` and :func:`dapo_keep_rate` for the capped
    per-prompt figures.
    """
    s = np.asarray(silent_rate(p, G), dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.where(s < 1.0, 1.0 / (1.0 - s), np.nan)
    return scalar_or_array(out, (p, G))


def _check_tries(max_tries: ArrayLike) -> NDArray[np.int64]:
    return as_group_size(max_tries, "max_tries")


def dapo_expected_draws(p: ArrayLike, G: ArrayLike, max_tries: ArrayLike) -> NDArray[np.float64] | float:
    """Expected groups drawn per prompt with at most ``max_tries`` draws: (1 − s^m) / (1 − s); m when s = 1."""
    s = np.asarray(silent_rate(p, G), dtype=np.float64)
    m = _check_tries(max_tries)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.where(s < 1.0, (1.0 - s**m) / (1.0 - s), m.astype(np.float64))
    return scalar_or_array(out, (p, G, max_tries))


def dapo_keep_rate(p: ArrayLike, G: ArrayLike, max_tries: ArrayLike) -> NDArray[np.float64] | float:
    """Chance that one of at most ``max_tries`` draws is kept: 1 − s^m."""
    s = np.asarray(silent_rate(p, G), dtype=np.float64)
    m = _check_tries(max_tries)
    return scalar_or_array(1.0 - s**m, (p, G, max_tries))
