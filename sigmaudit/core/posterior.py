"""Posterior expectations under a grid prior over p: the pieces :class:`~sigmaudit.core.corpus.Corpus`
assembles into corpus-level figures.

Every figure here is a posterior mass vector (one row per distinct (n, k) pair, over the prior's
grid) times a function of p evaluated once per grid point: E[σ](p, G) for each G, sqrt(p(1−p)),
the masses at p = 0 and p = 1. See docs/theory.md, "Estimating from finite logs".
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from .fidelity import expected_sigma_pairs
from .prior import default_grid

_SIGMA_CACHE: dict[int, NDArray[np.float64]] = {}


def sigma_on_grid(grid: NDArray[np.float64], Gs: Sequence[int]) -> NDArray[np.float64]:
    """E[σ](p, G) for every grid point p (rows) and G in ``Gs`` (columns); 0 at p ∈ {0, 1}.

    Evaluated once per (grid point, G) with :func:`sigmaudit.core.fidelity.expected_sigma_pairs`;
    columns for the default prior grid are cached across calls.
    """
    Gs_arr = np.asarray(Gs, dtype=np.int64)
    cacheable = grid.shape == (len(default_grid()),) and np.array_equal(grid, default_grid())
    inner = (grid > 0.0) & (grid < 1.0)
    missing = sorted({int(g) for g in Gs_arr if not (cacheable and int(g) in _SIGMA_CACHE)})
    fresh: dict[int, NDArray[np.float64]] = {}
    if missing:
        # E[σ](p, G) = E[σ](1 − p, G) (σ(k) = σ(G − k)), and 1 − p is exact for p ≥ 1/2: each p above 1/2 is
        # evaluated at its mirror, once per distinct value (half the work on the mirror-symmetric default grid)
        p_in = grid[inner]
        distinct, where = np.unique(np.where(p_in > 0.5, 1.0 - p_in, p_in), return_inverse=True)
        P, GG = np.meshgrid(distinct, np.asarray(missing, dtype=np.int64), indexing="ij")
        vals = expected_sigma_pairs(P.ravel(), GG.ravel()).reshape(P.shape)[where]
        for col, g in enumerate(missing):
            full = np.zeros(grid.size)
            full[inner] = vals[:, col]
            fresh[g] = full
        if cacheable:
            _SIGMA_CACHE.update(fresh)
    cols = [fresh[int(g)] if int(g) in fresh else _SIGMA_CACHE[int(g)] for g in Gs_arr]
    return np.stack(cols, axis=1) if cols else np.zeros((grid.size, 0))


def linear_quantiles(values: NDArray[np.float64], qs: Sequence[float]) -> list[float]:
    """``np.quantile(values, qs)`` (its default, linear method) to the bit, for a non-empty 1-D array of finite
    values: numpy's virtual index (n − 1)·q, the partition of a copy at the same positions (0, the last, and each
    index's two neighbours: which of two equal values, 0.0 and −0.0, lands where depends on it), from index n − 1
    on both neighbours the last value with the weight counted from −1, and numpy's ``_lerp``, which interpolates
    from the nearer end. numpy ≥ 2.3's np.quantile calls np.unique, which imports ``numpy.ma`` (~45M
    instructions, 10–15 ms CPU): a gate's bootstrap interval paid that on every run."""
    s = np.array(values, dtype=np.float64)
    n = s.size
    spots = []
    for q in qs:
        h = (n - 1) * q
        lo = -1 if h >= n - 1 else math.floor(h)
        spots.append((h, lo, -1 if lo == -1 else lo + 1))
    s.partition(np.array(sorted({0, -1, *(lo for _, lo, _ in spots), *(hi for _, _, hi in spots)}), dtype=np.intp))
    out = []
    for h, lo, hi in spots:
        a, b, t = s[lo], s[hi], h - lo
        d = b - a
        out.append(float(b - d * (1 - t)) if t >= 0.5 else float(a + d * t))
    return out


def weighted_quantile(values: NDArray[np.float64], weights: NDArray[np.float64], q: float) -> float:
    """np.quantile (linear) of ``values`` repeated ``weights`` times, without expanding them."""
    order = np.argsort(values, kind="stable")
    v, w = values[order], weights[order]
    cum = np.cumsum(w)
    h = (cum[-1] - 1.0) * q
    lo, hi = math.floor(h), math.ceil(h)
    v_lo = v[np.searchsorted(cum, lo, side="right")]
    v_hi = v[np.searchsorted(cum, hi, side="right")]
    return float(v_lo + (h - lo) * (v_hi - v_lo))
