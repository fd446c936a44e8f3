"""Corpus-level priors over the success probability p, fitted to (n, k) counts.

THEORY.md, "Estimating from finite logs", model-based estimate. Two priors:

- :class:`GridPrior` (the default): a discrete prior on a fine grid of p that
  includes the point masses p = 0 and p = 1, fitted by EM to maximise the
  binomial marginal likelihood (a nonparametric maximum-likelihood prior).
  It follows corpora that mix never-solved, always-solved and in-between
  prompts, which a single Beta cannot.
- :class:`BetaPrior`: Beta(a, b) fitted by maximum beta-binomial likelihood,
  with the closed-form posterior expectation of p^G + (1 − p)^G.

Fitting runs on the distinct (n, k) pairs with their multiplicities, so its
cost does not grow with the number of prompts.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ._validate import as_counts, as_group_size

GRID_SIZE = 401
"""Interior-and-end grid points of the default prior (uniform in arcsin sqrt p)."""


def default_grid(size: int = GRID_SIZE) -> NDArray[np.float64]:
    """Grid of p on [0, 1], uniform in arcsin(sqrt p): denser near 0 and 1, ends included."""
    t = np.linspace(0.0, 1.0, size)
    grid = np.sin(0.5 * np.pi * t) ** 2
    grid[0], grid[-1] = 0.0, 1.0
    return grid


def distinct_pairs(
    n: ArrayLike, k: ArrayLike
) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.float64], NDArray[np.int64]]:
    """Distinct (n, k) pairs, their multiplicities, and the index mapping each input to its pair."""
    n_arr, k_arr = as_counts(n, k)
    pairs = np.stack([n_arr.ravel(), k_arr.ravel()], axis=1)
    uniq, inverse, counts = np.unique(pairs, axis=0, return_inverse=True, return_counts=True)
    return uniq[:, 0], uniq[:, 1], counts.astype(np.float64), inverse.ravel()


def _log_lik(n: NDArray[np.int64], k: NDArray[np.int64], grid: NDArray[np.float64]) -> NDArray[np.float64]:
    """log p^k (1 − p)^(n − k) for each pair (rows) and grid point (columns); the C(n, k) factor dropped."""
    from scipy.special import xlog1py, xlogy

    kk = k[:, None].astype(np.float64)
    ff = (n - k)[:, None].astype(np.float64)
    return xlogy(kk, grid[None, :]) + xlog1py(ff, -grid[None, :])


@dataclass(frozen=True)
class GridPrior:
    """A discrete prior over p: ``weights[m]`` is the prior mass at ``grid[m]``."""

    grid: NDArray[np.float64]
    """Support points in [0, 1], including 0 and 1."""
    weights: NDArray[np.float64]
    """Prior masses, non-negative, summing to 1."""
    iterations: int
    """EM iterations run."""
    log_likelihood: float
    """Marginal log-likelihood of the counts (without the C(n, k) constants)."""

    def posterior(self, n: ArrayLike, k: ArrayLike) -> NDArray[np.float64]:
        """Posterior masses over ``grid`` for each (n, k): shape (len(n), len(grid))."""
        n_arr, k_arr = as_counts(n, k)
        log_post = _log_lik(n_arr.ravel(), k_arr.ravel(), self.grid)
        with np.errstate(divide="ignore"):
            log_post = log_post + np.log(self.weights)[None, :]
        log_post -= log_post.max(axis=1, keepdims=True)
        post = np.exp(log_post)
        return post / post.sum(axis=1, keepdims=True)

    def posterior_mean(self, n: ArrayLike, k: ArrayLike, values: ArrayLike) -> NDArray[np.float64]:
        """E[f(p) | n, k] for f given by its ``values`` on the grid (shape (len(grid),) or (len(grid), m))."""
        return self.posterior(n, k) @ np.asarray(values, dtype=np.float64)


def fit_grid_prior(
    n: ArrayLike,
    k: ArrayLike,
    weights: ArrayLike | None = None,
    *,
    grid: ArrayLike | None = None,
    max_iter: int = 3000,
    tol: float = 1e-7,
) -> GridPrior:
    """Fit a :class:`GridPrior` by EM (nonparametric maximum likelihood on a grid).

    ``n``, ``k`` are counts per prompt (or distinct pairs with multiplicities
    ``weights``). Each EM step sets the prior to the average posterior; the loop
    stops when the log-likelihood gains less than ``tol`` per prompt over a
    step, or after ``max_iter`` steps.
    """
    if weights is None:
        n_u, k_u, c_u, _ = distinct_pairs(n, k)
    else:
        n_u, k_u = as_counts(n, k)
        n_u, k_u = n_u.ravel(), k_u.ravel()
        c_u = np.asarray(weights, dtype=np.float64).ravel()
    g = default_grid() if grid is None else np.asarray(grid, dtype=np.float64)
    if n_u.size == 0:
        raise ValueError("cannot fit a prior to zero prompts")
    log_l = _log_lik(n_u, k_u, g)
    shift = log_l.max(axis=1, keepdims=True)
    lik = np.exp(log_l - shift)  # rows scaled to max 1
    total = c_u.sum()
    c_norm = c_u / total
    w = np.full(g.size, 1.0 / g.size)
    prev = -np.inf
    it = 0
    for it in range(1, max_iter + 1):  # noqa: B007 - iteration count is reported
        marg = lik @ w
        ll = float(c_norm @ np.log(marg))
        w = w * (lik.T @ (c_norm / marg))
        w /= w.sum()
        if ll - prev < tol:
            break
        prev = ll
    marg = lik @ w
    ll_total = float(c_u @ (np.log(marg) + shift[:, 0]))
    return GridPrior(grid=g, weights=w, iterations=it, log_likelihood=ll_total)


@dataclass(frozen=True)
class BetaPrior:
    """Beta(a, b) prior over p."""

    a: float
    """First shape parameter (> 0)."""
    b: float
    """Second shape parameter (> 0)."""
    log_likelihood: float
    """Beta-binomial log-likelihood of the counts at (a, b)."""

    def silent_rate(self, n: ArrayLike, k: ArrayLike, G: ArrayLike) -> NDArray[np.float64]:
        """Posterior E[p^G + (1 − p)^G | k, n] (THEORY.md's closed form)."""
        a_all, b_all = self.branch_rates(n, k, G)
        return a_all + b_all

    def branch_rates(self, n: ArrayLike, k: ArrayLike, G: ArrayLike) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """Posterior (E[p^G], E[(1 − p)^G]) given (n, k)."""
        from scipy.special import betaln

        n_arr, k_arr = as_counts(n, k)
        G_arr = as_group_size(G).astype(np.float64)
        a = self.a + k_arr
        b = self.b + n_arr - k_arr
        base = betaln(a, b)
        return np.exp(betaln(a + G_arr, b) - base), np.exp(betaln(a, b + G_arr) - base)


def fit_beta_prior(n: ArrayLike, k: ArrayLike) -> BetaPrior:
    """Fit Beta(a, b) by maximum beta-binomial likelihood over the distinct (n, k) pairs."""
    from scipy.optimize import minimize
    from scipy.special import betaln

    n_u, k_u, c_u, _ = distinct_pairs(n, k)

    def nll(theta: NDArray[np.float64]) -> float:
        a, b = np.exp(theta)
        return -float(c_u @ (betaln(a + k_u, b + n_u - k_u) - betaln(a, b)))

    p_hat = float((c_u @ (k_u / n_u)) / c_u.sum())
    p_hat = min(max(p_hat, 0.01), 0.99)
    x0 = np.log([p_hat * 2.0, (1.0 - p_hat) * 2.0])
    res = minimize(nll, x0, method="Nelder-Mead", options={"xatol": 1e-8, "fatol": 1e-10, "maxiter": 4000})
    a, b = np.exp(res.x)
    return BetaPrior(a=float(a), b=float(b), log_likelihood=-float(res.fun))
