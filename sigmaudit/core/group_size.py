"""The group-size law: how large G must be for fidelity φ ≥ 1 − ε.

THEORY.md, "Expected update, fidelity and the group-size law":

    closed form   G*(ε, p) = ceil(1 / (8 ε p (1 − p)))
    exact         the smallest G with φ(p, G) ≥ 1 − ε (search on the exact sum)

The closed form understates the need near p ∈ {0, 1}. For p ∈ {0, 1} no G
helps: both functions report such prompts as unreachable (``None`` for a scalar
input, ``NaN`` in an array), never as a number.

φ(p, G) is non-decreasing in G (the sample mean k/G falls in the convex order
as G grows and sqrt(x(1 − x)) is concave), so the exact search is a bisection,
vectorised over all distinct (p, ε) pairs at once.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ._validate import as_eps, as_prob
from .fidelity import expected_sigma_pairs

G_SEARCH_LIMIT = 2**50
"""Largest G the exact search considers; a prompt needing more is reported unreachable."""


def _scalar_or_none(x: NDArray, like: tuple[ArrayLike, ...]) -> NDArray | int | None:
    if all(np.ndim(v) == 0 for v in like):
        v = float(x)
        return None if np.isnan(v) else int(v)
    return x


def group_size_closed_form(p: ArrayLike, eps: ArrayLike) -> NDArray[np.float64] | int | None:
    """G*(ε, p) = ceil(1 / (8 ε p (1 − p))); None/NaN (unreachable) at p ∈ {0, 1}.

    Examples
    --------
    >>> group_size_closed_form(0.05, 0.05)
    53
    """
    pa, ea = as_prob(p), as_eps(eps)
    v = pa * (1.0 - pa)
    with np.errstate(divide="ignore", invalid="ignore"):
        raw = 1.0 / (8.0 * ea * np.where(v > 0, v, 1.0))
    # Shave a few ulps so a quotient that is an integer up to rounding (p = 0.5,
    # ε = 0.05 → 10) is not bumped up by one; a relative 1e-12 shave was too
    # coarse and understated large G (p = 1e-12, ε = 0.01 gave 12 too few).
    out = np.where(v > 0, np.ceil(raw * (1.0 - 8.0 * np.finfo(np.float64).eps)), np.nan)
    out = np.where(out > G_SEARCH_LIMIT, np.nan, out)
    return _scalar_or_none(out, (p, eps))


def _phi_pairs(p: NDArray[np.float64], G: NDArray[np.int64]) -> NDArray[np.float64]:
    return expected_sigma_pairs(p, G) / np.sqrt(p * (1.0 - p))


def _exact_distinct(p: NDArray[np.float64], eps: NDArray[np.float64]) -> NDArray[np.float64]:
    """Exact group size for 1-D arrays of distinct pairs with 0 < p < 1."""
    target = 1.0 - eps
    v = p * (1.0 - p)
    guess = np.maximum(np.ceil(1.0 / (8.0 * eps * v)), 2.0)
    guess = np.minimum(guess, float(G_SEARCH_LIMIT)).astype(np.int64)
    # Bracket: lo fails (φ(lo) < target), hi passes. φ(1) = 0 always fails.
    lo = np.ones_like(guess)
    hi = guess.copy()
    ok_hi = _phi_pairs(p, hi) >= target
    below = np.maximum(guess - 1, 1)
    fails_below = _phi_pairs(p, below) < target
    lo = np.where(ok_hi & fails_below, below, lo)
    # Grow hi by doubling where the guess itself fails.
    pending = ~ok_hi
    while np.any(pending):
        idx = np.flatnonzero(pending)
        lo[idx] = hi[idx]
        hi[idx] = np.minimum(hi[idx] * 2, G_SEARCH_LIMIT)
        passed = _phi_pairs(p[idx], hi[idx]) >= target[idx]
        stuck = ~passed & (hi[idx] >= G_SEARCH_LIMIT)
        hi[idx[stuck]] = -1  # unreachable within the search limit
        pending[idx[passed | stuck]] = False
    # Bisection on (lo, hi].
    active = (hi > 0) & (hi - lo > 1)
    while np.any(active):
        idx = np.flatnonzero(active)
        mid = (lo[idx] + hi[idx]) // 2
        passed = _phi_pairs(p[idx], mid) >= target[idx]
        hi[idx[passed]] = mid[passed]
        lo[idx[~passed]] = mid[~passed]
        active[idx] = hi[idx] - lo[idx] > 1
    return np.where(hi > 0, hi, np.nan).astype(np.float64)


def group_size_exact(p: ArrayLike, eps: ArrayLike) -> NDArray[np.float64] | int | None:
    """The smallest G with φ(p, G) ≥ 1 − ε; None/NaN (unreachable) at p ∈ {0, 1}.

    Evaluated once per distinct (p, ε) pair: 10,000 distinct p at ε = 0.01
    take well under two seconds.

    Examples
    --------
    >>> group_size_exact(0.5, 0.05)
    11
    """
    pa, ea = as_prob(p), as_eps(eps)
    pb, eb = np.broadcast_arrays(pa, ea)
    flat_p, flat_e = pb.ravel(), eb.ravel()
    out = np.full(flat_p.size, np.nan)
    inner = (flat_p > 0.0) & (flat_p < 1.0)
    if np.any(inner):
        pairs = np.stack([flat_p[inner], flat_e[inner]], axis=1)
        uniq, inverse = np.unique(pairs, axis=0, return_inverse=True)
        vals = _exact_distinct(uniq[:, 0], uniq[:, 1])
        out[inner] = vals[inverse.ravel()]
    return _scalar_or_none(out.reshape(pb.shape), (p, eps))
