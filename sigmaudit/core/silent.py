"""Silent groups: the chance that all G answers agree (σ = 0, zero update).

docs/theory.md, "Silent groups": silent(p, G) = p^G + (1 − p)^G, split into the
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


def _kept_rate(pa: NDArray[np.float64], Ga: NDArray[np.int64]) -> NDArray[np.float64]:
    """1 − silent(p, G) without cancellation: 1 − (1 − q)^G − q^G with q = min(p, 1 − p).

    Computing ``1 - silent_rate`` directly rounds to 0 once (1 − p)^G rounds
    to 1 (p below ~1e-16), which would make tiny-but-positive p look like p = 0.
    """
    q = np.minimum(pa, 1.0 - pa)
    return -np.expm1(Ga * np.log1p(-q)) - q**Ga


def dapo_groups_per_kept_group(p: ArrayLike, G: ArrayLike) -> NDArray[np.float64] | float:
    """1 / (1 − silent(p, G)): groups DAPO draws per kept group; NaN when p ∈ {0, 1} (never kept).

    With a retry cap the ratio of groups drawn to groups kept is the same;
    see :func:`dapo_expected_draws` and :func:`dapo_keep_rate` for the capped
    per-prompt figures.
    """
    kept = _kept_rate(as_prob(p), as_group_size(G))
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.where(kept > 0.0, 1.0 / kept, np.nan)
    return scalar_or_array(out, (p, G))


def _check_tries(max_tries: ArrayLike) -> NDArray[np.int64]:
    return as_group_size(max_tries, "max_tries")


def dapo_expected_draws(p: ArrayLike, G: ArrayLike, max_tries: ArrayLike) -> NDArray[np.float64] | float:
    """Expected groups drawn per prompt with at most ``max_tries`` draws: (1 − s^m) / (1 − s); m when s = 1."""
    kept = _kept_rate(as_prob(p), as_group_size(G))
    m = _check_tries(max_tries)
    keep_any = -np.expm1(m * np.log1p(-kept))  # 1 − s^m
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.where(kept > 0.0, keep_any / kept, m.astype(np.float64))
    return scalar_or_array(out, (p, G, max_tries))


def dapo_keep_rate(p: ArrayLike, G: ArrayLike, max_tries: ArrayLike) -> NDArray[np.float64] | float:
    """Chance that one of at most ``max_tries`` draws is kept: 1 − s^m."""
    kept = _kept_rate(as_prob(p), as_group_size(G))
    m = _check_tries(max_tries)
    return scalar_or_array(-np.expm1(m * np.log1p(-kept)), (p, G, max_tries))
