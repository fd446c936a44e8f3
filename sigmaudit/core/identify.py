"""What a log with few samples per prompt can and cannot say about silent groups at G.

With n samples of a prompt, the counts k identify at most the first n moments of the
distribution of p across prompts (E[p], E[p²], ..., E[pⁿ]: the chance that m given samples
are all right is E[pᵐ]). The corpus silent rate at G, E[p^G + (1 − p)^G], needs more when
G > n: one sample per prompt gives only E[p], which fits "every p = 0.3" (silent rate at
G = 8: 0.3⁸ + 0.7⁸ = 0.0577) and "30% of prompts always right, 70% never" (silent rate 1)
equally well. A prior fitted to such counts still returns a number, but the data did not
choose it. When every prompt has n ≥ G the silent rate at G is a combination of moments the log
holds (its unbiased estimate exists) and no check is needed.

:func:`silent_interval` gives the sharp range of the corpus silent rate over every
distribution of p (on a fine grid) whose first moments lie in the joint confidence region of the
log's unbiased moment estimates: the ellipsoid (m̂ − μ)ᵀ Σ̂⁻¹ (m̂ − μ) ≤ χ²_d(:data:`COVERAGE`), with Σ̂
the estimates' covariance (they are strongly correlated: a box of ±3 SE on each lets E[p] high and
E[p²] low at once, which no corpus does). A linear programme over the grid, the ellipsoid met by
cutting planes (docs/theory.md, "Thin logs"). :func:`thin_corpus` says when the check is needed: when
most prompts have fewer samples than the corpus prior's parameters (point masses at 0 and 1 plus a
Beta: four), so the fitted prior is not identified either. Well-sampled corpora extrapolate through
the fitted prior, as docs/theory.md describes.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ._validate import as_counts, as_group_size


class NotIdentifiedError(ValueError):
    """The logs cannot determine the quantity asked for (a refusal, never a guess); its message is
    one line: what is not identified, why, and what would work. ``G``, ``low``, ``high``: the group size
    and the range of silent rates the logs leave open; ``reason``: why, as a clause (what the counts fix)."""

    def __init__(self, message: str, G: int = 0, low: float = 0.0, high: float = 1.0, reason: str = ""):
        super().__init__(message)
        self.G, self.low, self.high, self.reason = G, low, high, reason


RICH_SAMPLES = 4
"""Samples per prompt from which the corpus prior (atoms at 0 and 1 plus a Beta: four parameters)
is identified; a corpus where fewer than half the prompts have this many is *thin*."""
MAX_MOMENTS = 3
"""Moments used by the interval (a thin corpus identifies at most E[p], E[p²], E[p³] well)."""
COVERAGE = math.erf(3.0 / math.sqrt(2.0))
"""Joint coverage of the moments' confidence region: the coverage of ±3 standard errors for one moment
(2Φ(3) − 1), kept for all of them together (χ² with one degree of freedom per moment)."""
MAX_WIDTH = 0.05
"""Widest identified range of the corpus silent rate for which a thin corpus still gets a number."""
GRID_POINTS = 2001
NOT_IDENTIFIED = "not identified by these logs"
"""The words of every refusal and note about a figure the logs do not determine."""
MAX_CUTS = 80
"""Cutting planes per end of the range (each one linear programme); the ellipsoid is met well before."""


def thin_corpus(n: ArrayLike, weight: ArrayLike) -> bool:
    """Fewer than half the prompts (by ``weight``) have :data:`RICH_SAMPLES` or more samples."""
    n_arr = np.asarray(n, dtype=np.int64).ravel()
    w = np.asarray(weight, dtype=np.float64).ravel()
    return float(w[n_arr >= RICH_SAMPLES].sum()) < 0.5 * float(w.sum())


def _falling(x: NDArray[np.float64], m: int) -> NDArray[np.float64]:
    out = np.ones_like(x)
    for j in range(m):
        out = out * (x - j)
    return out


def _unbiased_powers(nf: NDArray[np.float64], kf: NDArray[np.float64], moments: int,
                     w: NDArray[np.float64]) -> list[NDArray[np.float64]]:
    """Each prompt's unbiased estimate of pᵐ, k(k−1)…(k−m+1) / n(n−1)…(n−m+1) (NaN where n < m), for each
    m ≤ ``moments`` that at least two prompts with n ≥ m inform."""
    out = []
    for m in range(1, moments + 1):
        use = nf >= m
        if float(w[use].sum()) < 2:
            break
        u = np.full(nf.shape, np.nan)
        u[use] = _falling(kf[use], m) / _falling(nf[use], m)
        out.append(u)
    return out


def moment_estimates(
    n: ArrayLike, k: ArrayLike, weight: ArrayLike, moments: int = MAX_MOMENTS
) -> list[tuple[int, float, float]]:
    """(m, estimate of E[pᵐ], its standard error) for each m ≤ ``moments`` that at least two prompts
    with n ≥ m inform. Each prompt's unbiased estimate of pᵐ is k(k−1)…(k−m+1) / n(n−1)…(n−m+1)."""
    means, cov = moment_covariance(n, k, weight, moments)
    return [(m + 1, float(means[m]), float(np.sqrt(cov[m, m]))) for m in range(means.size)]


def moment_covariance(n: ArrayLike, k: ArrayLike, weight: ArrayLike,
                      moments: int = MAX_MOMENTS) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """(estimates of E[p], …, E[pᵈ], their covariance matrix) with d the moments :func:`moment_estimates`
    gives. The m-th estimate is the mean ū_m of the prompts' unbiased estimates over the W_m prompts with
    n ≥ m; for m ≤ m′ the prompts with n ≥ m′ inform both, and Cov(ū_m, ū_m′) = c_mm′ / W_m with c_mm′ their
    sample covariance over those prompts (prompts independent; ``weight`` counts copies of a pair)."""
    n_arr, k_arr = as_counts(n, k)
    nf, kf = n_arr.ravel().astype(np.float64), k_arr.ravel().astype(np.float64)
    w = np.asarray(weight, dtype=np.float64).ravel()
    powers = _unbiased_powers(nf, kf, moments, w)
    d = len(powers)
    means = np.zeros(d)
    cov = np.zeros((d, d))
    for a in range(d):
        use = ~np.isnan(powers[a])
        means[a] = float(w[use] @ powers[a][use] / w[use].sum())
    for a in range(d):
        for b in range(a, d):
            both = ~np.isnan(powers[b])  # n >= b + 1 >= a + 1
            wb = w[both]
            ua, ub = powers[a][both], powers[b][both]
            c = float(wb @ ((ua - wb @ ua / wb.sum()) * (ub - wb @ ub / wb.sum())) / (wb.sum() - 1))
            cov[a, b] = cov[b, a] = c / float(w[~np.isnan(powers[a])].sum())
    return means, cov


def _directions(d: int) -> NDArray[np.float64]:
    """Unit vectors spread over the sphere in d ≤ 3 dimensions: both signs of each axis, and (d ≥ 2) of each
    diagonal. Their tangent planes make a polytope somewhat wider than the sphere, which the cutting planes
    then close (few rows: each row of the linear programme costs as much as the rest)."""
    axes = np.eye(d)
    diagonals = np.array(np.meshgrid(*[[-1.0, 1.0]] * d)).reshape(d, -1).T / np.sqrt(d) if d > 1 else np.zeros((0, d))
    return np.vstack([axes, -axes, diagonals])


def _range_ends(f: NDArray[np.float64], grid: NDArray[np.float64], means: NDArray[np.float64],
                cov: NDArray[np.float64], radius2: float) -> tuple[float, float] | None:
    """(min, max) of Σ q f over distributions q on ``grid`` whose moments μ = Σ q gridᵐ satisfy
    (μ − m̂)ᵀ Σ⁻¹ (μ − m̂) ≤ ``radius2``; None when no distribution does. The tangent planes of the ellipsoid in
    the :func:`_directions` of its whitened space first; then, while the optimum's moments lie outside it,
    the tangent plane in that direction (each cut removes the optimum and keeps the ellipsoid: Kelley's
    cutting planes), until they are within 1% of its radius² (0.5% of its radius)."""
    from scipy.optimize import linprog

    d = means.size
    if d == 0:
        return float(f.min()), float(f.max())
    powers = np.vstack([grid ** (m + 1) for m in range(d)])
    cov = cov + np.eye(d) * 1e-18  # a moment every prompt fixes exactly (all k = 0) has no spread
    inv = np.linalg.inv(cov)
    chol = np.linalg.cholesky(cov)

    def plane(u: NDArray[np.float64]) -> tuple[NDArray[np.float64], float]:
        return u @ powers, float(u @ means + np.sqrt(radius2 * float(u @ cov @ u)) + 1e-9)

    start = [plane(u) for u in np.linalg.solve(chol.T, _directions(d).T).T]
    eq = np.ones((1, grid.size))
    ends = []
    for sign in (1.0, -1.0):
        rows, upper = [r for r, _ in start], [b for _, b in start]
        for _ in range(MAX_CUTS):
            res = linprog(sign * f, A_ub=np.vstack(rows), b_ub=np.array(upper), A_eq=eq, b_eq=[1.0],
                          bounds=(0.0, None), method="highs")
            if not res.success:
                return None
            delta = powers @ res.x - means
            if float(delta @ inv @ delta) <= radius2 * (1.0 + 1e-2) + 1e-12:
                break
            row, bound = plane(inv @ delta)
            rows.append(row)
            upper.append(bound)
        ends.append(float(np.clip(sign * res.fun, 0.0, 1.0)))
    return ends[0], ends[1]


SINGULAR = 1e-9
"""Smallest eigenvalue of the moments' covariance, relative to its largest, below which the estimates are
collinear (fewer distinct prompts than moments): their ellipsoid is flat, not a confidence region, and the
highest moment is left out."""


def _degenerate(cov: NDArray[np.float64]) -> bool:
    eig = np.linalg.eigvalsh(cov)
    return bool(eig[0] <= SINGULAR * max(float(eig[-1]), 0.0))


def silent_interval(n: ArrayLike, k: ArrayLike, weight: ArrayLike, G: int) -> tuple[float, float]:
    """(lowest, highest) corpus silent rate E[p^G + (1 − p)^G] over the distributions of p whose
    moments lie in the joint confidence region of :func:`moment_covariance` (coverage :data:`COVERAGE`).

    The true distribution satisfies the constraint (up to the region's coverage), so the true
    silent rate lies in the interval; its width is what the log leaves open.

    >>> lo, hi = silent_interval([1] * 1000, [0] * 700 + [1] * 300, [1] * 1000, 8)
    >>> round(lo, 3), round(hi, 3)   # every p = 0.3 (0.058, less the slack) ... 30% always right, 70% never
    (0.035, 1.0)
    """
    from scipy.special import gammaincinv

    g = int(as_group_size(G))
    grid = np.linspace(0.0, 1.0, GRID_POINTS)
    f = grid**g + (1.0 - grid) ** g
    means, cov = moment_covariance(n, k, weight)
    while means.size > 1 and _degenerate(cov):  # e.g. two prompts: their moment estimates lie on a line
        means, cov = means[:-1], cov[:-1, :-1]
    radius2 = 2.0 * float(gammaincinv(max(means.size, 1) / 2.0, COVERAGE))  # χ²_d quantile
    for widen in (1.0, 4.0, 16.0, 64.0):  # moments from different prompt subsets may clash: widen
        ends = _range_ends(f, grid, means, cov, widen * radius2)
        if ends is not None:
            return ends
    return 0.0, 1.0


def require_identified(n: ArrayLike, k: ArrayLike, weight: ArrayLike, G: int) -> None:
    """Raise :class:`NotIdentifiedError` when a thin corpus (:func:`thin_corpus`)
    leaves the silent rate at G open by more than :data:`MAX_WIDTH` (:func:`silent_interval`).

    A corpus where every prompt has n ≥ G never needs this (the unbiased estimate exists), and a
    well-sampled corpus extrapolates through its fitted prior.
    """
    n_arr = np.asarray(n).ravel()
    w = np.asarray(weight, dtype=np.float64).ravel()
    if n_arr.size and int(n_arr.min()) >= int(G):
        return  # every prompt has n >= G: the silent rate at G is a combination of moments the log holds
    if not thin_corpus(n_arr, w):
        return
    lo, hi = silent_interval(n_arr, k, w, G)
    if hi - lo <= MAX_WIDTH:
        return
    order = np.argsort(n_arr)
    cum = np.cumsum(w[order])
    median = int(n_arr[order][np.searchsorted(cum, 0.5 * cum[-1])])
    known = len(moment_estimates(n_arr, k, w))
    which = "E[p]" if known <= 1 else ", ".join(f"E[p{'²³'[m - 2]}]" if m > 1 else "E[p]"
                                                  for m in range(1, known + 1))
    reason = (f"{int(round(w.sum())):,} prompts with a median of {median} sample{'s' if median != 1 else ''} each "
              f"fix only {which}")
    raise NotIdentifiedError(
        f"the silent rate at G = {int(G)} is {NOT_IDENTIFIED}: {reason}, and every silent rate "
        f"from {lo:.4f} to {hi:.4f} fits them; log at least {RICH_SAMPLES} samples per prompt ({int(G)} for the "
        "unbiased estimate), or give a pass-rate file over more samples (--rate-col with --samples N or --n-col)",
        int(G), lo, hi, reason)
