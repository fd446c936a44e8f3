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
        p_in = grid[inner]
        P, GG = np.meshgrid(p_in, np.asarray(missing, dtype=np.int64), indexing="ij")
        vals = expected_sigma_pairs(P.ravel(), GG.ravel()).reshape(P.shape)
        for col, g in enumerate(missing):
            full = np.zeros(grid.size)
            full[inner] = vals[:, col]
            fresh[g] = full
        if cacheable:
            _SIGMA_CACHE.update(fresh)
    cols = [fresh[int(g)] if int(g) in fresh else _SIGMA_CACHE[int(g)] for g in Gs_arr]
    return np.stack(cols, axis=1) if cols else np.zeros((grid.size, 0))


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
