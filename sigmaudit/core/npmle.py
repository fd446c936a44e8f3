"""The nonparametric maximum-likelihood prior on a grid (Kiefer–Wolfowitz), solved to its maximum.

    maximise  Σ_i c_i log (L w)_i  over prior weights w ≥ 0, Σ w = 1,

where L[i, j] is the likelihood of pair i's counts at grid point j. The objective is concave, so its
maximum value is unique (the maximising weights need not be). :func:`fit_npmle` solves it by sequential
quadratic programming over the non-negative orthant (mix-SQP: Kim, Carbonetto, Stephens & Anitescu 2020,
"A fast algorithm for maximum likelihood estimation of mixture proportions using sequential quadratic
programming"): with v = c / Σc it minimises φ(x) = −Σ_i v_i log (L x)_i + Σ_j x_j over x ≥ 0, whose
minimiser lies on the simplex; each iteration solves the quadratic model of φ by an active-set method
restricted to a few grid points (the maximum-likelihood prior is a handful of point masses) and takes an
Armijo step towards its solution. It stops on the optimality condition itself: max_j Σ_i v_i L_ij / (L x)_i
≤ 1 + ``tol``, which bounds the log-likelihood left below the maximum by Σc · log(1 + tol)
(:func:`gap_bound`). EM (:func:`sigmaudit.core.prior.fit_grid_prior`) climbs the same objective but
slows to a crawl on its flat ridge: after 3,000 steps it stood 1e-4 to 1e-2 below the maximum on the
evalperf corpora (and where it stopped moved with the last bits of the arithmetic).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

TOL = 1e-8
"""Stop when no grid point's gradient exceeds the optimum's by more than this (relative): the log-likelihood
is then within Σc · 1e-8 of the maximum."""
MAX_ITER = 200
"""SQP iterations at most (a few dozen are usual)."""
RIDGE = 1e-10
"""Added to the working set's Hessian (relative to each diagonal entry, and at least this fraction of the largest
one), whose rank is at most the number of pairs."""


def gap_bound(lik: NDArray[np.float64], c: NDArray[np.float64], w: NDArray[np.float64]) -> float:
    """An upper bound on max log-likelihood − log-likelihood at ``w`` (a prior on the grid): Σc · log max_j D_j with
    D_j = Σ_i c_i L_ij / (L w)_i / Σc (concavity: the directional derivative towards the best point mass)."""
    f = lik @ w
    d = lik.T @ (c / f) / c.sum()
    return float(c.sum() * np.log(max(float(d.max()), 1.0)))


def fit_npmle(lik: NDArray[np.float64], c: NDArray[np.float64]) -> tuple[NDArray[np.float64], int]:
    """Prior weights on the grid that maximise Σ_i c_i log (lik @ w)_i, and the SQP iterations taken.

    ``lik`` is (pairs, grid), each row with a positive entry; ``c`` the pairs' multiplicities (> 0)."""
    used = np.flatnonzero(lik.max(axis=0) > 0.0)  # a grid point no pair can have come from gets no weight
    w, it = _solve(np.ascontiguousarray(lik[:, used]), c / c.sum())
    out = np.zeros(lik.shape[1])
    out[used] = w
    return out, it


def _solve(lik: NDArray[np.float64], v: NDArray[np.float64]) -> tuple[NDArray[np.float64], int]:
    x = _start(lik)
    lik_t = np.ascontiguousarray(lik.T)
    it = 0
    for it in range(1, MAX_ITER + 1):  # noqa: B007 - the count is reported
        f = lik @ x
        g = 1.0 - lik.T @ (v / f)  # ∇φ
        if g.min() >= -TOL:
            break
        y = _qp(lik, lik_t, v / f**2, 2.0 * g - 1.0, x)  # the model's minimiser: b = g − H x, H x = 1 − g
        x_new = _armijo(lik, v, x, f, g, y)
        if x_new is None:  # the model misled (ill-conditioned where some pair's likelihood is nearly lost): EM
            x_new = x * (1.0 - g) / float(x @ (1.0 - g))
            if _phi(lik, v, x_new) >= _phi(lik, v, x):
                break
        x = x_new
    x = np.maximum(x, 0.0)
    return x / x.sum(), it


def _start(lik: NDArray[np.float64]) -> NDArray[np.float64]:
    """Uniform on every tenth grid point and both ends (sparse, so the working sets stay small), or on the
    whole grid when that leaves some pair with no likelihood."""
    m = lik.shape[1]
    x = np.zeros(m)
    x[np.unique(np.r_[np.arange(0, m, 10), m - 1])] = 1.0
    if not np.all(lik @ x > 0.0):
        x[:] = 1.0
    return x / x.sum()


def _phi(lik: NDArray[np.float64], v: NDArray[np.float64], x: NDArray[np.float64]) -> float:
    with np.errstate(divide="ignore"):
        return float(-(v @ np.log(lik @ x)) + x.sum())


def _armijo(lik: NDArray[np.float64], v: NDArray[np.float64], x: NDArray[np.float64], f: NDArray[np.float64],
            g: NDArray[np.float64], y: NDArray[np.float64]) -> NDArray[np.float64] | None:
    """x + α(y − x) for the first α = 1, 1/2, ... that lowers φ by 1e-2 of the slope (None when none does)."""
    d = y - x
    slope = float(g @ d)
    phi0 = float(-(v @ np.log(f)) + x.sum())
    alpha = 1.0
    while alpha > 1e-10:
        x_new = x + alpha * d
        if _phi(lik, v, x_new) <= phi0 + 1e-2 * alpha * slope:
            return x_new
        alpha *= 0.5
    return None


def _qp(lik: NDArray[np.float64], lik_t: NDArray[np.float64], h: NDArray[np.float64], b: NDArray[np.float64],
        x: NDArray[np.float64]) -> NDArray[np.float64]:
    """min ½ yᵀ H y + bᵀ y over y ≥ 0 with H = Lᵀ diag(h) L, by a primal active-set method from y = x
    (Nocedal & Wright, Algorithm 16.3): solve on the working set S; step back to feasibility when the
    solution leaves the orthant (dropping the index that hits 0); otherwise add the index whose gradient
    is most negative, until none is. H is never formed: its columns are computed as indices enter S (the
    starting set's in one product, then one product with L each; ``lik_t`` is Lᵀ stored by rows) and kept,
    so an iteration costs O(grid · |S|)."""
    m = lik.shape[1]
    S = x > 0.0
    Hc = np.empty((m, m))  # H[:, j], filled as j enters the working set
    known = S.copy()
    Hc[:, S] = lik_t @ (h[:, None] * lik[:, S])
    y = x.copy()
    added = -1
    for _ in range(4 * m):
        idx = np.flatnonzero(S)
        for j in idx[~known[idx]]:
            Hc[:, j] = lik_t @ (h * lik_t[j])
            known[j] = True
        HcS = Hc[:, idx]
        HS = HcS[idx]
        d = HS.diagonal() * (1.0 + RIDGE)  # a grid point far from every pair can have H_jj underflow to 0:
        HS[np.diag_indices_from(HS)] = np.maximum(d, RIDGE * max(float(d.max()), 1e-300))  # floored, not singular
        z = np.zeros(m)
        try:
            z[idx] = np.linalg.solve(HS, -b[idx])
        except np.linalg.LinAlgError:  # pragma: no cover - exactly singular despite the ridge
            z[idx] = np.linalg.lstsq(HS, -b[idx], rcond=None)[0]
        if np.all(z[idx] > 0.0):
            y = z
            q = HcS @ y[idx] + b
            q[S] = np.inf
            j = int(np.argmin(q))
            if q[j] >= -TOL * max(1.0, float(np.abs(b).max())):
                return y
            S[j] = True
            added = j
            continue
        neg = idx[z[idx] <= 0.0]
        ratio = y[neg] / np.maximum(y[neg] - z[neg], 1e-300)
        alpha = float(ratio.min())
        if alpha <= 0.0 and added in neg:  # the index just added cannot enter (rounding in a nearly singular
            return y                       # working set): no step from y, which was optimal before it
        added = -1
        y = y + alpha * (z - y)
        y[neg[ratio <= alpha]] = 0.0
        y[~S] = 0.0
        S = y > 0.0
        if not S.any():  # pragma: no cover - degenerate: keep the best index
            S[int(np.argmin(b))] = True
    return y  # pragma: no cover - the loop ends by returning


EXACT_CELLS = 200_000
"""Likelihood matrices with fewer cells than this are solved to the maximum at once; larger ones first get
a bracket from a bounded EM run (:class:`GridMaximum`), which usually decides the test alone."""


class GridMaximum:
    """The grid maximum's log-likelihood for a likelihood-ratio test, computed only as precisely as the test
    needs: a lower bound (a prior's log-likelihood) and an upper bound (plus :func:`gap_bound`) decide
    whether the maximum exceeds a value; when they straddle it, :func:`fit_npmle` gives the maximum itself.
    Every answer is the one the exact maximum gives."""

    def __init__(self, lik: NDArray[np.float64], shift: NDArray[np.float64], c: NDArray[np.float64],
                 rough: NDArray[np.float64] | None = None) -> None:
        self.lik, self.shift, self.c = lik, shift, c
        self.exact = False
        if rough is None or lik.size < EXACT_CELLS:
            self._solve()
        else:
            self.lower = self._ll(rough)
            self.upper = self.lower + gap_bound(lik, c, rough)

    def _ll(self, w: NDArray[np.float64]) -> float:
        return float(self.c @ (np.log(self.lik @ w) + self.shift[:, 0]))

    def _solve(self) -> None:
        w, _ = fit_npmle(self.lik, self.c)
        self.lower = self.upper = self._ll(w)
        self.exact = True

    def exceeds(self, value: float) -> bool:
        """Whether the maximum log-likelihood is above ``value``."""
        if self.lower <= value < self.upper and not self.exact:
            self._solve()
        return self.lower > value
