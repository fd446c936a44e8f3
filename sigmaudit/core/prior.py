"""Corpus-level priors over the success probability p, fitted to (n, k) counts.

docs/theory.md, "Estimating from finite logs", model-based estimate. Two priors:

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

import os
from dataclasses import dataclass, replace

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ._validate import as_counts, as_group_size
from .optimize import BoxFit, minimize_box
from .rows import ATOM_SLACK, AtomsBetaProblem, AtomsBetaRows
from .special import beta_cell_masses as _cell_masses
from .special import betaln, digamma, gammaln

GRID_SIZE = 401
"""Interior-and-end grid points of the default prior (uniform in arcsin sqrt p)."""


def default_grid(size: int = GRID_SIZE) -> NDArray[np.float64]:
    """Grid of p on [0, 1], uniform in arcsin(sqrt p): denser near 0 and 1, ends included.

    Mirror-symmetric to the bit: ``grid[size - 1 - i] == 1 - grid[i]``. The points above 1/2 come from sin²
    and those below are 1 minus them, a subtraction floating point does exactly for p ∈ [1/2, 1] (Sterbenz),
    so 1 − p of a lower point is its mirror exactly and a function symmetric in p (E[σ](p, G),
    :func:`sigmaudit.core.posterior.sigma_on_grid`) is evaluated once per pair."""
    t = np.linspace(0.0, 1.0, size)
    grid = np.sin(0.5 * np.pi * t) ** 2
    half = size // 2
    grid[:half] = 1.0 - grid[size - half:][::-1]
    if size % 2:
        grid[half] = 0.5  # sin²(π/4), which sin rounds to 1/2 − 2⁻⁵⁴
    grid[0], grid[-1] = 0.0, 1.0
    return grid


def distinct_pairs(
    n: ArrayLike, k: ArrayLike
) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.float64], NDArray[np.int64]]:
    """Distinct (n, k) pairs in (n, k) order, their multiplicities, and the index mapping each input to its pair.

    Each pair is one integer key n·(m + 1) + k (m the largest n; 0 <= k <= n <= m, so the keys sort as the pairs
    do): counted by ``np.bincount`` when the keys' range is at most :data:`_BINCOUNT_SPAN` per pair (a log's
    groups share a handful of sizes), else by ``np.unique`` of the keys. The same arrays as ``np.unique`` of the
    (n, k) rows with ``axis=0``, at a quarter of its cost (512,000 groups of 16: 0.058 -> 0.015 s with the checks)."""
    n_arr, k_arr = as_counts(n, k)
    n_flat, k_flat = n_arr.ravel(), k_arr.ravel()
    span = int(n_flat.max()) + 1 if n_flat.size else 0
    if not n_flat.size or span > _KEY_SPAN_MAX:  # no pairs, or keys past int64: the rows themselves
        pairs = np.stack([n_flat, k_flat], axis=1)
        uniq, inverse, counts = np.unique(pairs, axis=0, return_inverse=True, return_counts=True)
        return uniq[:, 0], uniq[:, 1], counts.astype(np.float64), inverse.ravel()
    key = n_flat * span + k_flat
    if span * span <= _BINCOUNT_SPAN * n_flat.size + _BINCOUNT_FLOOR:
        tally = np.bincount(key, minlength=span * span)
        present = np.flatnonzero(tally)
        slot = np.zeros(tally.size, dtype=np.int64)
        slot[present] = np.arange(present.size)
        keys, counts, inverse = present, tally[present], slot[key]
    else:
        keys, inverse, counts = np.unique(key, return_inverse=True, return_counts=True)
    return keys // span, keys % span, counts.astype(np.float64), inverse.ravel().astype(np.intp)


_KEY_SPAN_MAX = 3_037_000_499
"""The largest n + 1 whose keys n·(n + 1) + k stay below 2^63 (⌊sqrt(2^63 − 1)⌋)."""
_BINCOUNT_SPAN = 4
"""``np.bincount``'s table may hold this many slots per pair (its memory and time stay a small multiple of the
input's) ..."""
_BINCOUNT_FLOOR = 1 << 16
"""... or this many in all (any log of groups up to 255 samples)."""


def _log_lik(n: NDArray[np.int64], k: NDArray[np.int64], grid: NDArray[np.float64]) -> NDArray[np.float64]:
    """log p^k (1 − p)^(n − k) for each pair (rows) and grid point (columns); the C(n, k) factor dropped.

    Outer products of the counts with log p and log(1 − p), taken once per grid point, with
    0 · log 0 = 0 (as ``scipy.special.xlogy``/``xlog1py``, to the last bit of the logarithm,
    at a fifth of their cost: two logarithms per grid point instead of per cell).
    """
    kk = k.astype(np.float64).ravel()
    ff = (n - k).astype(np.float64).ravel()
    g = np.asarray(grid, dtype=np.float64)
    with np.errstate(divide="ignore"):
        log_p, log_q = np.log(g), np.log1p(-g)
    with np.errstate(invalid="ignore"):
        out = np.multiply.outer(kk, log_p)
        out += np.multiply.outer(ff, log_q)
    # 0 · (−inf) gave NaN where a count is 0 at p = 0 or p = 1: that term is 0 (xlogy's rule).
    for j in np.flatnonzero(~np.isfinite(log_p) | ~np.isfinite(log_q)):
        with np.errstate(invalid="ignore"):
            out[:, j] = np.where(kk == 0, 0.0, kk * log_p[j]) + np.where(ff == 0, 0.0, ff * log_q[j])
    return out


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
    kind: str = "grid-em"
    """How it was fitted: ``grid-em`` (nonparametric EM on the grid) or ``beta+atoms``
    (point masses at 0 and 1 plus a Beta, discretised on the grid)."""
    theta: tuple[float, ...] = ()
    """A ``beta+atoms`` prior's fitted parameters on the optimiser's scale (log-odds weights, log
    shapes): the start of a refit to resampled counts (:func:`refit_prior`); empty for ``grid-em``."""
    bandwidth: float = 0.0
    """A ``smooth-grid`` prior's smoothing bandwidth (:func:`resolution_bandwidth`); 0 for the others."""
    selection: str = ""
    """How :func:`fit_corpus_prior` chose this prior, in words (empty when fitted directly)."""
    scores: tuple[tuple[str, float, float, float], ...] = ()
    """:func:`fit_corpus_prior`'s candidates: (kind, log-likelihood, parameters, AIC) each; empty otherwise."""

    @property
    def family(self) -> str:
        """``beta+atoms`` (point masses at 0 and 1 plus one or two Betas), ``smooth-grid`` or ``grid-em``."""
        return self.kind.split("/", 1)[0]

    def describe(self) -> dict[str, object]:
        """The prior for JSON: family, components (Betas), bandwidth, how it was chosen."""
        out: dict[str, object] = {"family": self.family}
        if self.family == "beta+atoms":
            out["components"] = int(self.kind.rsplit("/", 1)[1])
        if self.family == "smooth-grid":
            out["bandwidth"] = self.bandwidth
        out["selection"] = self.selection
        if self.scores:
            out["criterion"] = "AIC"
            out["scores"] = [{"prior": kind, "log_likelihood": ll, "parameters": params, "aic": aic}
                             for kind, ll, params, aic in self.scores]
        return out

    def posterior(self, n: ArrayLike, k: ArrayLike) -> NDArray[np.float64]:
        """Posterior masses over ``grid`` for each (n, k): shape (len(n), len(grid))."""
        n_arr, k_arr = as_counts(n, k)
        post = _log_lik(n_arr.ravel(), k_arr.ravel(), self.grid)  # updated in place from here on
        with np.errstate(divide="ignore"):
            post += np.log(self.weights)[None, :]
        post -= post.max(axis=1, keepdims=True)
        np.exp(post, out=post)
        post /= post.sum(axis=1, keepdims=True)
        return post


# long: one EM loop (SQUAREM steps and the monotone safeguard share w, its marginal and the likelihood)
def fit_grid_prior(
    n: ArrayLike,
    k: ArrayLike,
    weights: ArrayLike | None = None,
    *,
    grid: ArrayLike | None = None,
    max_iter: int = 3000,
    tol: float = 1e-10,
    start: ArrayLike | None = None,
) -> GridPrior:
    """Fit a :class:`GridPrior` by EM (nonparametric maximum likelihood on a grid).

    ``n``, ``k`` are counts per prompt (or distinct pairs with multiplicities
    ``weights``). Each EM step sets the prior to the average posterior
    (accelerated by SQUAREM, never lowering the likelihood); the loop stops
    when the mean log-likelihood per prompt gains less than ``tol`` over one
    accelerated cycle, or after ``max_iter`` EM steps. ``start`` gives the first prior
    weights (default uniform; a refit starts from the fitted prior).
    """
    n_u, k_u, c_u = _pairs(n, k, weights)
    g = default_grid() if grid is None else np.asarray(grid, dtype=np.float64)
    lik, shift = _scaled_lik(n_u, k_u, g)
    c_norm = c_u / c_u.sum()

    def marginal(w: NDArray[np.float64]) -> NDArray[np.float64]:
        return _matvec(lik, w)

    def em_step(w: NDArray[np.float64], marg: NDArray[np.float64]) -> NDArray[np.float64]:
        w = w * _rmatvec(lik, c_norm / marg)
        return w / w.sum()

    def mean_ll(marg: NDArray[np.float64]) -> float:
        return float(c_norm @ np.log(marg))

    # EM accelerated by SQUAREM (Varadhan & Roland 2008), with a monotone safeguard:
    # an extrapolated step is kept only when it does not lower the likelihood.
    # Each weight vector's marginal (lik @ w) is computed once and reused.
    if start is None:
        w = np.full(g.size, 1.0 / g.size)
    else:  # keep every point in the support: EM cannot revive a weight that is exactly 0
        w = np.asarray(start, dtype=np.float64) + 1e-12
        w = w / w.sum()
    m = marginal(w)
    ll = mean_ll(m)
    it = 0
    while it < max_iter:
        w1 = em_step(w, m)
        w2 = em_step(w1, marginal(w1))
        m2 = marginal(w2)
        it += 2
        r, v = w1 - w, w2 - 2.0 * w1 + w
        v_norm = float(np.sqrt(v @ v))
        alpha = -float(np.sqrt(r @ r)) / v_norm if v_norm > 0 else -1.0
        alpha = min(alpha, -1.0)
        w_new = np.maximum(w - 2.0 * alpha * r + alpha * alpha * v, 0.0)
        w_new /= w_new.sum()
        w_new = em_step(w_new, marginal(w_new))
        m_new = marginal(w_new)
        it += 1
        ll_new = mean_ll(m_new)
        ll_w2 = mean_ll(m2)
        if not np.isfinite(ll_new) or ll_new < ll_w2:
            w_new, m_new, ll_new = w2, m2, ll_w2
        gain = ll_new - ll
        w, m, ll = w_new, m_new, ll_new
        if gain < tol:
            break
    ll_total = float(c_u @ (np.log(m) + shift[:, 0]))
    return GridPrior(grid=g, weights=w, iterations=it, log_likelihood=ll_total)


def _pairs(
    n: ArrayLike, k: ArrayLike, weights: ArrayLike | None
) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.float64]]:
    if weights is None:
        n_u, k_u, c_u, _ = distinct_pairs(n, k)
    else:
        n_u, k_u = as_counts(n, k)
        n_u, k_u = n_u.ravel(), k_u.ravel()
        c_u = np.asarray(weights, dtype=np.float64).ravel()
    if n_u.size == 0:
        raise ValueError("cannot fit a prior to zero prompts")
    return n_u, k_u, c_u


def _scaled_lik(
    n: NDArray[np.int64], k: NDArray[np.int64], grid: NDArray[np.float64]
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Likelihood matrix with each row scaled to max 1, and the log scale per row.

    Subnormal entries (below 2.2e-308 of the row's maximum) are set to 0: they change no
    marginal at double precision but slow every product with them down several-fold.
    """
    lik = _log_lik(n, k, grid)
    shift = lik.max(axis=1, keepdims=True)
    lik -= shift  # in place: this matrix is the EM's largest allocation
    np.exp(lik, out=lik)
    lik[lik < np.finfo(np.float64).tiny] = 0.0
    return lik, shift


_BLAS_CELLS = 1 << 22
"""Matrices with at least this many cells are multiplied by BLAS, smaller ones by einsum
(unless BLAS runs one thread)."""

_ONE_THREAD_VARS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def _blas(a: NDArray[np.float64]) -> bool:
    """Whether BLAS should multiply ``a``: from :data:`_BLAS_CELLS` cells on, or at any size when BLAS runs
    one thread (the CLI sets ``OPENBLAS_NUM_THREADS=1``; single-threaded gemv is ~3.5x einsum's loop)."""
    return a.size >= _BLAS_CELLS or any(os.environ.get(v) == "1" for v in _ONE_THREAD_VARS)


def _matvec(a: NDArray[np.float64], x: NDArray[np.float64]) -> NDArray[np.float64]:
    """``a @ x`` for a C-contiguous matrix.

    The EM runs hundreds of matrix-vector products. On small matrices OpenBLAS's threaded
    gemv spends more time waiting for its helper threads than computing (on a loaded machine
    each product took ~10x longer, in wall and CPU time, than einsum's single-threaded loop);
    from a few million cells on, BLAS's threads pay off even on a loaded machine
    (benchmarks/README.md). With BLAS on one thread (as the CLI runs it) gemv wins at every size.
    """
    return a @ x if _blas(a) else np.einsum("ij,j->i", a, x)


def _rmatvec(a: NDArray[np.float64], y: NDArray[np.float64]) -> NDArray[np.float64]:
    """``a.T @ y`` for a C-contiguous matrix (see :func:`_matvec`)."""
    return y @ a if _blas(a) else np.einsum("ij,i->j", a, y)


def _grid_log_likelihood(
    lik: NDArray[np.float64], shift: NDArray[np.float64], c: NDArray[np.float64], w: NDArray[np.float64]
) -> float:
    return float(c @ (np.log(_matvec(lik, w)) + shift[:, 0]))


def beta_cell_masses(a: float, b: float, grid: NDArray[np.float64]) -> NDArray[np.float64]:
    """Beta(a, b) mass of the cell around each interior grid point (cells split at midpoints); 0 at the ends."""
    inner = grid[1:-1]
    edges = np.concatenate([[0.0], 0.5 * (inner[1:] + inner[:-1]), [1.0]])
    out = np.zeros(grid.size)
    out[1:-1] = _cell_masses(a, b, edges)
    return out


def fit_atoms_beta_prior(
    n: ArrayLike,
    k: ArrayLike,
    weights: ArrayLike | None = None,
    *,
    grid: ArrayLike | None = None,
    components: int = 1,
) -> tuple[GridPrior, dict[str, float]]:
    """Point masses at p = 0 and p = 1 plus a mixture of ``components`` Betas, by maximum likelihood.

    P(k | n) = w0·1{k=0} + w1·1{k=n} + Σ_j v_j·BetaBinom(k; n, a_j, b_j). The fitted
    prior is returned discretised on the grid (Beta mass per cell), with its
    parameters (``w0``, ``w1``, ``v1``, ``a1``, ``b1``, ...).
    """
    if components not in (1, 2):
        raise ValueError(f"components must be 1 or 2, got {components!r}")
    n_u, k_u, c_u = _pairs(n, k, weights)
    g = default_grid() if grid is None else np.asarray(grid, dtype=np.float64)
    return _fit_atoms_beta(n_u, k_u, c_u, g, components, None)


_RISING_MAX = 100_000
"""Largest n for which the beta-binomial terms are cumulative sums of logarithms (above: log-gammas)."""


@dataclass(frozen=True)
class AtomsBetaObjective(AtomsBetaProblem):
    """The negative log-likelihood of point masses at 0 and 1 plus ``components`` Betas, on the
    optimiser's scale θ = (log-odds of each weight against the last Beta's, log a_j, log b_j, ...),
    with its default start and box (what :func:`_fit_atoms_beta` minimises)."""

    def log_weights(self, theta: NDArray[np.float64]) -> NDArray[np.float64]:
        z = np.append(theta[: self.n_weights - 1], 0.0)
        return z - np.logaddexp.reduce(z)

    def shapes(self, theta: NDArray[np.float64]) -> NDArray[np.float64]:
        return np.exp(theta[self.n_weights - 1 :]).reshape(self.components, 2)

    def _rising(self, x: float, derivative: bool) -> tuple[NDArray[np.float64], NDArray[np.float64] | None]:
        """log Γ(x + j) − log Γ(x) = Σ_{i<j} log(x + i) for j = 0..max n (and ψ(x + j) − ψ(x) = Σ_{i<j} 1/(x + i)):
        the beta-binomial's gamma ratios at whole-number offsets, as sums of logarithms (no log-gamma
        of large arguments is subtracted from another). Above ``_RISING_MAX`` samples: log-gammas."""
        m = int(self.n.max())
        if m > _RISING_MAX:
            j = np.arange(m + 1, dtype=np.float64)
            return (gammaln(x + j) - gammaln(x),
                    digamma(x + j) - digamma(x) if derivative else None)
        t = x + np.arange(m, dtype=np.float64)
        log_r = np.zeros(m + 1)
        np.cumsum(np.log(t), out=log_r[1:])
        if not derivative:
            return log_r, None
        d = np.zeros(m + 1)
        np.cumsum(1.0 / t, out=d[1:])
        return log_r, d

    def _rising_curvature(self, x: float) -> NDArray[np.float64]:
        """ψ'(x) − ψ'(x + j) = Σ_{i<j} 1/(x + i)² for j = 0..max n (at most ``_RISING_MAX``)."""
        m = int(self.n.max())
        q = np.zeros(m + 1)
        np.cumsum((x + np.arange(m, dtype=np.float64)) ** -2.0, out=q[1:])
        return q

    def _terms(self, theta: NDArray[np.float64], derivative: bool = False):
        """Per pair: log weight + log P(k | n, component) for each component (C(n, k) dropped, as in
        the grid likelihood); with ``derivative`` also d/d(log a), d/d(log b) of each Beta's term."""
        lw = self.log_weights(theta)
        terms = [lw[0] + np.where(self.k == 0, 0.0, -np.inf), lw[1] + np.where(self.k == self.n, 0.0, -np.inf)]
        d_shape = []
        f = self.n - self.k
        for j, (a, b) in enumerate(self.shapes(theta)):
            la, da = self._rising(float(a), derivative)
            lb, db = self._rising(float(b), derivative)
            lab, dab = self._rising(float(a + b), derivative)
            # log B(a + k, b + n − k) − log B(a, b)
            terms.append(lw[2 + j] + la[self.k] + lb[f] - lab[self.n])
            if derivative:
                d_shape.append((a * (da[self.k] - dab[self.n]), b * (db[f] - dab[self.n])))  # type: ignore[index]
        return terms, d_shape

    def nll(self, theta: NDArray[np.float64]) -> float:
        terms, _ = self._terms(np.asarray(theta, dtype=np.float64))
        mix = np.logaddexp.reduce(np.stack(terms, axis=1), axis=1)
        return -float(self.c @ mix)

    def _responsibilities(self, theta: NDArray[np.float64]):
        """Per-pair log mixture density, each component's share of it, and d/d(log shape) terms; those of the
        last θ asked for are kept (the minimiser asks for the Hessian where it has just taken the gradient)."""
        last = self.__dict__.get("_last_responsibilities")
        if last is not None and last[0] == theta.tobytes():
            return last[1]
        terms, d_shape = self._terms(theta, derivative=True)
        T = np.stack(terms, axis=1)
        mix = np.logaddexp.reduce(T, axis=1)
        with np.errstate(invalid="ignore"):
            r = np.where(np.isfinite(T), np.exp(T - mix[:, None]), 0.0)
        self.__dict__["_last_responsibilities"] = (theta.tobytes(), (mix, r, d_shape))
        return mix, r, d_shape

    def nll_grad(self, theta: NDArray[np.float64]) -> tuple[float, NDArray[np.float64]]:
        """``nll`` and its exact gradient (responsibilities; digamma differences for the Beta shapes)."""
        theta = np.asarray(theta, dtype=np.float64)
        n_w, c_u = self.n_weights, self.c
        lw = self.log_weights(theta)
        mix, r, d_shape = self._responsibilities(theta)
        cr = c_u @ r
        grad = np.empty(theta.size)
        grad[: n_w - 1] = -(cr[: n_w - 1] - c_u.sum() * np.exp(lw[: n_w - 1]))
        for j, (da, db) in enumerate(d_shape):
            grad[n_w - 1 + 2 * j] = -float(c_u @ (r[:, 2 + j] * da))
            grad[n_w + 2 * j] = -float(c_u @ (r[:, 2 + j] * db))
        return -float(c_u @ mix), grad

    def nll_hessian(self, theta: NDArray[np.float64]) -> NDArray[np.float64] | None:
        """The exact Hessian of ``nll`` (None above ``_RISING_MAX`` samples: use differences).

        With T_ij = log w_j + log P(k_i | n_i, component j), r_ij its responsibility and
        g_ij = ∂T_ij/∂θ: ∂² log Σ_j e^{T_ij} = Σ_j r_ij (∂²T_ij + g_ij g_ijᵀ) − m_i m_iᵀ, m_i = Σ_j r_ij g_ij.
        ∂²T_ij is −(diag(w) − w wᵀ) in the weight logits and the beta-binomial's second derivatives
        (trigamma differences, as sums of 1/(x + i)²) in the log shapes.
        """
        if int(self.n.max()) > _RISING_MAX:
            return None
        theta = np.asarray(theta, dtype=np.float64)
        n_w, c_u, dim = self.n_weights, self.c, theta.size
        w = np.exp(self.log_weights(theta))
        _, r, d_shape = self._responsibilities(theta)
        cr = c_u[:, None] * r
        u = np.eye(n_w)[:, : n_w - 1] - w[: n_w - 1]  # g_ij in the weight logits: row j, every pair
        m = np.zeros((self.n.size, dim))  # m_i = Σ_j r_ij g_ij
        m[:, : n_w - 1] = r[:, : n_w - 1] - w[: n_w - 1]
        H = np.zeros((dim, dim))  # Σ_i c_i Σ_j r_ij (∂²T_ij + g_ij g_ijᵀ)
        H[: n_w - 1, : n_w - 1] = u.T @ (cr.sum(axis=0)[:, None] * u) - c_u.sum() * (
            np.diag(w[: n_w - 1]) - np.outer(w[: n_w - 1], w[: n_w - 1]))
        f = self.n - self.k
        for j, ((a, b), (da, db)) in enumerate(zip(self.shapes(theta), d_shape, strict=True)):
            cols = slice(n_w - 1 + 2 * j, n_w + 1 + 2 * j)
            s_ij, crj = np.stack([da, db], axis=1), cr[:, 2 + j]
            m[:, cols] = r[:, 2 + j, None] * s_ij
            v = crj @ s_ij
            H[: n_w - 1, cols] += np.outer(u[2 + j], v)
            H[cols, : n_w - 1] += np.outer(v, u[2 + j])
            qa, qb, qab = (self._rising_curvature(float(x)) for x in (a, b, a + b))
            q_ab = crj @ qab[self.n]
            H[cols, cols] += s_ij.T @ (crj[:, None] * s_ij) + np.array([
                [v[0] + a * a * (q_ab - crj @ qa[self.k]), a * b * q_ab],
                [a * b * q_ab, v[1] + b * b * (q_ab - crj @ qb[f])]])
        H -= m.T @ (c_u[:, None] * m)
        return -0.5 * (H + H.T)  # exactly symmetric (a BLAS product need not be)

    def start(self) -> NDArray[np.float64]:
        """The observed never/always-solved shares and flat (or low/high) Betas."""
        c_u, k_u, n_u, components = self.c, self.k, self.n, self.components
        share0 = float(c_u[k_u == 0].sum() / c_u.sum())
        share1 = float(c_u[k_u == n_u].sum() / c_u.sum())
        rest = max(1.0 - share0 - share1, 0.05) / components
        start = [np.log(max(share0, 1e-3) / rest), np.log(max(share1, 1e-3) / rest)]
        start += [0.0] * (components - 1)
        start += [0.0, 0.0] if components == 1 else [0.0, np.log(4.0), np.log(4.0), 0.0]
        return np.array(start)

    def bounds(self) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """(lower, upper): log-odds in [−30, 30], log shapes in [−7, 7]."""
        lo = np.array([-30.0] * (self.n_weights - 1) + [-7.0] * (2 * self.components))
        return lo, -lo


def _fit_atoms_beta(
    n_u: NDArray[np.int64],
    k_u: NDArray[np.int64],
    c_u: NDArray[np.float64],
    g: NDArray[np.float64],
    components: int,
    scaled: tuple[NDArray[np.float64], NDArray[np.float64]] | None,
    x0: ArrayLike | None = None,
    log_likelihood: bool = True,
    one_beta: tuple[float, ...] | None = None,
) -> tuple[GridPrior, dict[str, float]]:
    """:func:`fit_atoms_beta_prior` on distinct pairs; ``scaled`` is ``_scaled_lik(n_u, k_u, g)``
    when the caller already has it (it costs as much as the optimisation on many pairs).
    ``x0`` starts the optimiser (a refit); ``log_likelihood=False`` skips the grid likelihood
    (NaN in the result), which a bootstrap replicate does not need. ``one_beta`` (two Betas only): the
    ``theta`` of the one-Beta fit to the same pairs, which the two-Beta starts are built from (:func:`_starts`
    fits it otherwise)."""
    objective = AtomsBetaObjective(n_u, k_u, c_u, components)
    lo_b, hi_b = objective.bounds()
    if x0 is not None:
        # a refit starts at the optimum of similar data: projected Newton steps on the exact Hessian,
        # converged as tightly as a fresh fit (quasi-Newton steps stopped at a 1e-6 decrement left
        # bootstrap interval ends up to 7e-3 off and moving with the last bits of the arithmetic)
        best = minimize_box(objective.nll_grad, np.asarray(x0, dtype=np.float64), lo_b, hi_b,
                            hessian=objective.nll_hessian)
    else:
        best = _minimize_from_starts(objective, one_beta)
    return _atoms_beta_fit(objective, best, g, scaled, log_likelihood)


def _atoms_beta_fit(
    objective: AtomsBetaObjective, best: BoxFit, g: NDArray[np.float64],
    scaled: tuple[NDArray[np.float64], NDArray[np.float64]] | None, log_likelihood: bool = True,
) -> tuple[GridPrior, dict[str, float]]:
    """The prior and parameters of :func:`_fit_atoms_beta` where the optimiser stopped at ``best``."""
    # the weights from the optimum with atoms settled (AtomsBetaRows.settled); refits start from where the optimiser
    # stopped, from which an atom the resampled counts call for can still grow (from the bound it could not)
    theta = AtomsBetaRows(objective.n, objective.k, objective.c[None, :], objective.components).settled(
        best.x[None, :])[0]
    prior, params = atoms_beta_prior(objective, theta, int(best.nit), g, scaled, log_likelihood)
    return replace(prior, theta=tuple(float(x) for x in best.x)), params


MAX_STEP = 0.3
"""Longest Newton step (in any coordinate of θ) of a fit from the default starts: short steps follow
the descent from each start into its own basin instead of jumping across the likelihood's ridges."""


TIE = 1e-9
"""Runs whose objectives differ by less than this (relative) reached equally good optima: the one with the
smallest parameters (rounded to 3 decimals, in order) wins, whichever start got there first."""


def _starts(objective: AtomsBetaObjective, one_beta: tuple[float, ...] | None = None) -> list[NDArray[np.float64]]:
    """The default start and, with two Betas (whose likelihood has several local optima), the one-Beta
    optimum with a second Beta added low, high and in the middle (weight 0.2 of the Betas), and with a
    sharper Beta of the same mean added. ``one_beta``: that optimum, where the caller has fitted it already
    (:func:`fit_corpus_prior` fits one Beta first, by the very call made here: the same point, fitted once)."""
    starts = [objective.start()]
    if objective.components == 2:
        x1 = _one_beta_optimum(objective) if one_beta is None else np.asarray(one_beta, dtype=np.float64)
        low, high, middle = [0.0, np.log(4.0)], [np.log(4.0), 0.0], [np.log(4.0), np.log(4.0)]
        starts += [np.array([x1[0] + np.log(0.2), x1[1] + np.log(0.2), np.log(4.0), x1[2], x1[3], *second])
                   for second in (low, high, middle)]
        # the one-Beta optimum plus a sharper Beta of the same mean (two equal Betas are a saddle point
        # that Newton steps from a symmetric start do not leave)
        starts.append(np.array([x1[0], x1[1], 0.0, x1[2], x1[3], x1[2] + 1.0, x1[3] + 1.0]))
    return starts


def _one_beta_optimum(objective: AtomsBetaObjective) -> NDArray[np.float64]:
    """Where :func:`_minimize_from_starts` stops on ``objective``'s pairs with one Beta (its one start)."""
    one = AtomsBetaObjective(objective.n, objective.k, objective.c, 1)
    lo1, hi1 = one.bounds()
    return minimize_box(one.nll_grad, one.start(), lo1, hi1, max_step=MAX_STEP, hessian=one.nll_hessian).x


def _minimize_from_starts(objective: AtomsBetaObjective, one_beta: tuple[float, ...] | None = None) -> BoxFit:
    """The best of :func:`minimize_box` runs from :func:`_starts` (``one_beta``: see there); among runs within
    :data:`TIE` of the best objective, a fixed rule (:data:`TIE`) picks one: equally good optima are chosen the
    same way whatever the order of the starts or the last bits of the arithmetic."""
    return _minimize_many([objective], [one_beta])[0]


def _minimize_many(objectives: list[AtomsBetaObjective], one_betas: list[tuple[float, ...] | None]) -> list[BoxFit]:
    """:func:`_minimize_from_starts` of each objective (all on the same pairs, with the same number of Betas): with
    several starts each, every objective's starts run in one lockstep :func:`minimize_box_rows` (a row's iterations
    are its own: each problem's fit is the one it gets alone, at a fraction of the cost of one call each)."""
    from .optimize import minimize_box_rows

    lo, hi = objectives[0].bounds()
    starts = [_starts(o) if b is None else _starts(o, b) for o, b in zip(objectives, one_betas, strict=True)]
    if all(len(s) == 1 for s in starts):
        return [minimize_box(o.nll_grad, s[0], lo, hi, max_step=MAX_STEP, hessian=o.nll_hessian)
                for o, s in zip(objectives, starts, strict=True)]
    # the starts in lockstep; one that cannot reach the best of its problem's earlier ones at its pace stops early
    problem = np.repeat(np.arange(len(objectives)), [len(s) for s in starts])
    c = np.concatenate([np.tile(o.c, (len(s), 1)) for o, s in zip(objectives, starts, strict=True)])
    rows = AtomsBetaRows(objectives[0].n, objectives[0].k, c, objectives[0].components)
    runs = minimize_box_rows(rows.fun_grad, rows.hessian, np.concatenate([np.array(s) for s in starts]), lo, hi,
                             max_step=MAX_STEP, beat_earlier=problem)
    out = []
    for j in range(len(objectives)):
        fits = [BoxFit(x=runs.x[i], fun=float(runs.fun[i]), nit=int(runs.nit[i])) for i in np.flatnonzero(problem == j)]
        best = min(f.fun for f in fits)
        tied = [f for f in fits if f.fun <= best + TIE * max(1.0, abs(best))]
        out.append(min(tied, key=lambda f: tuple(np.round(f.x, 3))))
    return out


def atoms_beta_prior(
    objective: AtomsBetaObjective,
    theta: NDArray[np.float64],
    iterations: int,
    g: NDArray[np.float64],
    scaled: tuple[NDArray[np.float64], NDArray[np.float64]] | None = None,
    log_likelihood: bool = True,
) -> tuple[GridPrior, dict[str, float]]:
    """The ``beta+atoms`` prior at parameters ``theta``, discretised on the grid ``g``, and its parameters."""
    wts = np.exp(objective.log_weights(theta))
    w = np.zeros(g.size)
    params = {"w0": float(wts[0]), "w1": float(wts[1])}
    for j, (a, b) in enumerate(objective.shapes(theta)):
        w += wts[2 + j] * beta_cell_masses(float(a), float(b), g)
        params |= {f"v{j + 1}": float(wts[2 + j]), f"a{j + 1}": float(a), f"b{j + 1}": float(b)}
    w[0] += wts[0]
    w[-1] += wts[1]
    ll = float("nan")
    if log_likelihood:
        lik, shift = _scaled_lik(objective.n, objective.k, g) if scaled is None else scaled
        ll = _grid_log_likelihood(lik, shift, objective.c, w)
    prior = GridPrior(grid=g, weights=w, iterations=iterations, kind=f"beta+atoms/{objective.components}",
                      log_likelihood=ll, theta=tuple(float(x) for x in theta))
    return prior, params


THIN_N = 256
"""Prompts with more samples than this enter the prior fit thinned to THIN_N samples (more than
any G the estimators are usually asked about, so the fit keeps its power to reject a prior)."""


THIN_CHUNK = 2048
"""Prompts thinned per block in :func:`thin_pairs` (a block's arrays are THIN_CHUNK × (THIN_N + 1))."""


def thin_pairs(
    n: NDArray[np.int64], k: NDArray[np.int64], c: NDArray[np.float64], cap: int = THIN_N
) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.float64]]:
    """Distinct (n, k) pairs with weights, prompts with n > cap replaced by ``cap`` of their samples.

    A prompt with n > cap samples, k right, becomes the pairs (cap, j), j = 0..cap, weighted by
    the hypergeometric chance that ``cap`` samples drawn without replacement hold j right ones.
    Marginally j ~ Binomial(cap, p), exactly as if only ``cap`` samples had been logged, so a
    prior fitted to the thinned pairs estimates the same distribution of p; it just costs a
    bounded number of distinct pairs (at most sum over distinct n <= cap of n + 1, plus cap + 1)
    however many prompts and sample counts the corpus has. Pairs with n <= cap pass unchanged.
    """
    big = n > cap
    if not np.any(big):
        return n, k, c
    n_big, k_big, c_big = n[big].astype(np.int64), k[big].astype(np.int64), c[big].astype(np.float64)
    top = int(n_big.max())
    if top <= 1 << 22:  # log m! = gammaln(m + 1), tabled once (the same values the function gives)
        table = gammaln(np.arange(top + 1, dtype=np.float64) + 1.0)

        def log_fact(m: NDArray[np.int64]) -> NDArray[np.float64]:
            return table[m]
    else:  # a prompt with millions of samples: no table that large

        def log_fact(m: NDArray[np.int64]) -> NDArray[np.float64]:
            return gammaln(np.asarray(m, dtype=np.float64) + 1.0)
    j = np.arange(cap + 1, dtype=np.int64)[None, :]
    thinned_k = np.zeros(cap + 1)
    for start in range(0, n_big.size, THIN_CHUNK):  # rows by blocks: (rows, cap + 1) arrays stay small
        nb, kb = n_big[start:start + THIN_CHUNK, None], k_big[start:start + THIN_CHUNK, None]
        possible = (j <= kb) & (cap - j <= nb - kb)
        jj, rest = np.where(possible, j, 0), np.where(possible, cap - j, 0)
        log_pmf = (log_fact(kb) - log_fact(jj) - log_fact(kb - jj)
                   + log_fact(nb - kb) - log_fact(rest) - log_fact(nb - kb - rest)
                   - log_fact(nb) + log_fact(np.int64(cap)) + log_fact(nb - cap))
        w = np.where(possible, np.exp(log_pmf), 0.0) * c_big[start:start + THIN_CHUNK, None]
        thinned_k += np.bincount(np.broadcast_to(j, w.shape).ravel(), weights=w.ravel(), minlength=cap + 1)
    keep = thinned_k > 0
    n_out = np.concatenate([n[~big], np.full(int(keep.sum()), cap, dtype=np.int64)])
    k_out = np.concatenate([k[~big], np.flatnonzero(keep).astype(np.int64)])
    c_out = np.concatenate([c[~big], thinned_k[keep]])
    pairs = np.stack([n_out, k_out], axis=1)
    uniq, inverse = np.unique(pairs, axis=0, return_inverse=True)
    weights = np.bincount(inverse.ravel(), weights=c_out, minlength=len(uniq)).astype(np.float64)
    return uniq[:, 0].astype(np.int64), uniq[:, 1].astype(np.int64), weights


AIC_MARGIN = 2.0
"""Candidate priors whose AIC is within this of the lowest are equally supported by the counts (Burnham &
Anderson's "substantial support"): :func:`fit_corpus_prior` takes the one-Beta prior among them if it is there,
else the one with the fewest parameters (the smoothed grid counted by its effective parameters)."""


RESOLUTION = 0.5
"""The smoothed grid prior's bandwidth, in binomial spreads: n samples place a pass rate to about
1/(pi sqrt n) in t = arcsin(sqrt p)/(pi/2) units, and features of the prior narrower than about half
of that are not identified by the counts (:func:`resolution_bandwidth`)."""
EMS_TOL = 1e-13
"""A smoothed-EM fit stops when one step moves the prior weights by less than this (L1)."""
EMS_MAX_ITER = 20000


def smoothing_matrix(grid: NDArray[np.float64], bandwidth: float) -> NDArray[np.float64]:
    """Gaussian smoothing of the interior grid weights in t = arcsin(sqrt p)/(pi/2) (the scale on which a
    binomial's spread is the same at every p): column j spreads point j's mass, columns sum to 1."""
    t = np.arcsin(np.sqrt(grid[1:-1])) / (0.5 * np.pi)
    K = np.exp(-0.5 * ((t[:, None] - t[None, :]) / bandwidth) ** 2)
    return K / K.sum(axis=0, keepdims=True)


def fit_smooth_prior(
    lik: NDArray[np.float64], c: NDArray[np.float64], K: NDArray[np.float64], start: NDArray[np.float64] | None = None
) -> tuple[NDArray[np.float64], int]:
    """Smoothed EM (EMS: Silverman, Jones, Wilson & Nychka 1990) on a grid prior: each EM step is followed
    by smoothing the interior weights with ``K`` (the point masses at p = 0 and 1 are not smoothed).

    The smoothed EM map is a contraction with a unique fixed point, which is returned once a step moves the
    weights by less than :data:`EMS_TOL`: the answer is that fixed point, not wherever a tolerance on the
    likelihood stopped a flat climb, so it does not depend on the last bits of the arithmetic.
    ``lik`` is :func:`_scaled_lik`'s matrix, ``c`` the pairs' multiplicities (rows with c = 0 are ignored).
    """
    m = lik.shape[1]
    w = np.full(m, 1.0 / m) if start is None else np.asarray(start, dtype=np.float64).copy()
    use = c > 0
    lik_u, c_u = (lik, c) if use.all() else (lik[use], c[use])
    total = float(c_u.sum())

    def ems(v: NDArray[np.float64]) -> NDArray[np.float64]:
        out = v * _rmatvec(lik_u, c_u / _matvec(lik_u, v)) / total
        out[1:-1] = K @ out[1:-1]
        return out / out.sum()

    w, it = _ems_fixed_point(ems, w)
    # The end points are not smoothed: each EMS step multiplies an end's weight by its EM factor D, so at the fixed
    # point the weight is 0 or D = 1. Where D is clearly below 1 (and the weight below ATOM_SLACK) the weight only
    # decays geometrically, and the stop
    # leaves it anywhere from 1e-12 to 1e-50 depending on the path (the never/always-solved shares print it): it is
    # set to its fixed point, 0, and the fit finished from there (EM keeps a zero weight at zero).
    ends = np.array([0, m - 1])
    factor = (c_u / _matvec(lik_u, w)) @ lik_u[:, ends] / total
    drop = ends[(factor < 1.0 - ATOM_SLACK) & (w[ends] > 0.0) & (w[ends] < ATOM_SLACK)]
    if drop.size:
        w0 = w.copy()
        w0[drop] = 0.0
        w, more = _ems_fixed_point(ems, w0 / w0.sum())
        it += more
    return w, it


def _ems_fixed_point(ems, w: NDArray[np.float64]) -> tuple[NDArray[np.float64], int]:
    """The fixed point of the map ``ems`` from ``w``, by SQUAREM (Varadhan & Roland 2008): from w, two plain steps
    w1, w2, an extrapolation along them and a plain step from there, kept when its next step is shorter than
    w1 -> w2 (else w2 is taken). The loop ends on plain EMS's test (one plain step w -> w1 moving the weights by less
    than :data:`EMS_TOL`) and returns w1, as plain EMS does: the same fixed point, in a fraction of the steps."""
    w1 = ems(w)
    it = 1
    while float(np.abs(w1 - w).sum()) >= EMS_TOL and it < EMS_MAX_ITER:
        w2 = ems(w1)
        r, v = w1 - w, w2 - 2.0 * w1 + w
        v_norm = float(np.sqrt(v @ v))
        alpha = min(-float(np.sqrt(r @ r)) / v_norm, -1.0) if v_norm > 0 else -1.0
        wx = np.maximum(w - 2.0 * alpha * r + alpha * alpha * v, 0.0)
        wx = ems(wx / wx.sum())
        wx1 = ems(wx)
        it += 3
        if float(np.abs(wx1 - wx).sum()) <= float(np.abs(w2 - w1).sum()):
            w, w1 = wx, wx1
        else:
            w, w1 = w2, ems(w2)
            it += 1
    return w1, it


def _smooth_map_terms(
    lik: NDArray[np.float64], c: NDArray[np.float64], w: NDArray[np.float64], bandwidth: float,
    grid: NDArray[np.float64],
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """(S, f, D, S diag(w) Q) of the smoothed EM map at ``w``: S the smoothing (identity at the end points),
    f = Lw, D = Lᵀ(c/f) and Q = Lᵀ diag(c/f²) L, the one product over the pairs that both ∂T/∂w and the
    leave-one-out trace need (:func:`_smooth_jacobians`, :func:`smooth_effective_parameters`)."""
    S = np.eye(w.size)
    S[1:-1, 1:-1] = smoothing_matrix(grid, bandwidth)
    f = lik @ w
    D = lik.T @ (c / f)
    X = lik * (np.sqrt(c) / f)[:, None]
    Q = X.T @ X  # symmetric: BLAS's syrk
    return S, f, D, S @ (w[:, None] * Q)


def _smooth_jacobians(
    lik: NDArray[np.float64], c: NDArray[np.float64], w: NDArray[np.float64], bandwidth: float,
    grid: NDArray[np.float64],
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """(A, B, f) of the smoothed EM map T(w, c) at its fixed point ``w``: A = ∂T/∂w, B = ∂T/∂c, f = Lw
    (:func:`refit_smooth_linear`)."""
    total = float(c.sum())
    S, f, D, SwQ = _smooth_map_terms(lik, c, w, bandwidth, grid)
    A = (S * D[None, :] - SwQ) / total
    B = (S @ (w[:, None] * lik.T / f[None, :]) - w[:, None]) / total
    return A, B, f


def refit_smooth_linear(prior: GridPrior, n: NDArray[np.int64], k: NDArray[np.int64], c: NDArray[np.float64],
                        draws: NDArray[np.float64]) -> NDArray[np.float64]:
    """The smoothed grid prior refitted to each row of ``draws`` (new multiplicities of the pairs ``n``, ``k``,
    whose own are ``c``; every n <= :data:`THIN_N`), to first order: shape (rows, grid).

    The fit is the fixed point w = T(w, c) of the smoothed EM map T(w, c) = S (w ⊙ Lᵀ(c / Lw)) / Σc
    (:func:`fit_smooth_prior`). By the implicit-function theorem a change dc of the multiplicities moves it by
    dw = (I − ∂T/∂w)⁻¹ ∂T/∂c dc, with ∂T/∂w = S (diag(Lᵀ(c/f)) − diag(w) Lᵀ diag(c/f²) L) / Σc and
    ∂T/∂c = (S diag(w) Lᵀ diag(1/f) − T 1ᵀ) / Σc at f = Lw: one linear solve for every replicate at once,
    instead of a refit each. Negative weights are cut to 0 and each row renormalised.
    """
    lik, _ = _scaled_lik(n, k, prior.grid)
    w = prior.weights
    A, B, _ = _smooth_jacobians(lik, c, w, prior.bandwidth, prior.grid)
    dW = np.linalg.solve(np.eye(w.size) - A, B @ (draws - c[None, :]).T).T
    W = np.maximum(w[None, :] + dW, 0.0)
    return W / W.sum(axis=1, keepdims=True)


def smooth_effective_parameters(lik: NDArray[np.float64], c: NDArray[np.float64], w: NDArray[np.float64],
                                bandwidth: float, grid: NDArray[np.float64]) -> float:
    """The smoothed grid prior's effective number of parameters: how much the fit's log-likelihood exceeds its
    leave-one-out log-likelihood, to first order. Leaving one prompt of pair j out (dc = −e_j) moves the fixed
    point by −M e_j, M = (I − A)⁻¹ B (:func:`_smooth_jacobians`), so that prompt's marginal falls from f_j to
    f_j − L_j M e_j; summed over prompts, Σ_j c_j L_j M e_j / f_j = trace((I − A)⁻¹ B diag(c/f) L). With it the
    smoothed grid enters AIC as the parametric priors do with their parameter counts (TIC, Takeuchi 1976)."""
    if lik.shape[0] <= w.size:  # few pairs: M = (I − A)⁻¹ B, then Σ_j R_j M e_j
        A, B, f = _smooth_jacobians(lik, c, w, bandwidth, grid)
        M = np.linalg.solve(np.eye(w.size) - A, B)
        return float(np.einsum("jm,mj->", (c / f)[:, None] * lik, M))
    total = float(c.sum())
    S, _, D, SwQ = _smooth_map_terms(lik, c, w, bandwidth, grid)
    A = (S * D[None, :] - SwQ) / total
    BR = (SwQ - np.outer(w, D)) / total  # B diag(c/f) L, by B's definition: (S diag(w) Q − w Dᵀ) / Σc
    return float(np.trace(np.linalg.solve(np.eye(w.size) - A, BR)))


def resolution_bandwidth(n: NDArray[np.int64], c: NDArray[np.float64]) -> float:
    """:data:`RESOLUTION` binomial spreads at the prompts' median sample count, in t units (the default
    grid's spacing is 1/400): the finest detail of the distribution of p that the counts resolve."""
    order = np.argsort(n, kind="stable")
    cum = np.cumsum(c[order])
    median = float(n[order][np.searchsorted(cum, 0.5 * cum[-1])])
    return RESOLUTION / (np.pi * np.sqrt(median))


def fit_corpus_prior(n: ArrayLike, k: ArrayLike, weights: ArrayLike | None = None) -> GridPrior:
    """The prior the model-based estimator uses, chosen by AIC among point masses at 0 and 1 plus one Beta
    (4 parameters), plus two Betas (7), and the smoothed grid prior (:func:`fit_smooth_prior` at the bandwidth
    the counts resolve, :func:`resolution_bandwidth`; its effective parameters by
    :func:`smooth_effective_parameters`). Of the candidates within :data:`AIC_MARGIN` of the lowest AIC, the
    one-Beta prior is taken when it is among them (one hump and two atoms extrapolate to G beyond the logged n
    with the least variance and put never-solved prompts exactly at p = 0), else the one with the fewest
    parameters (two Betas fitted to a few dozen prompts make spikes). The result's ``scores`` hold every
    candidate's log-likelihood, parameters and AIC.

    Prompts with more than :data:`THIN_N` samples enter the fit thinned to that many (:func:`thin_pairs`),
    which bounds its cost.
    """
    return fit_corpus_priors([(n, k, weights)])[0]


FIT_FAILURES = (ValueError, FloatingPointError)
"""An optimiser failing so leaves its candidate out of :func:`fit_corpus_prior`'s choice."""


def fit_corpus_priors(problems: list[tuple[ArrayLike, ArrayLike, ArrayLike | None]]) -> list[GridPrior]:
    """:func:`fit_corpus_prior` of each (n, k, weights), the same priors: the two-Beta fits of the problems with the
    same distinct pairs (after thinning) run their starts in one lockstep optimisation (:func:`_minimize_many`), so
    a forecast's replay, a dozen fits to the growing history of a log on 9 pairs, pays about one fit's overhead."""
    pairs = [thin_pairs(*_pairs(n, k, w)) for n, k, w in problems]
    ones = [_optimum_or_none(lambda p=p: _minimize_from_starts(AtomsBetaObjective(*p, 1))) for p in pairs]
    twos = _two_beta_optima(pairs, ones)
    return [_corpus_prior_of(p, one, two) for p, one, two in zip(pairs, ones, twos, strict=True)]


def _optimum_or_none(fit) -> BoxFit | None:  # noqa: ANN001
    try:
        return fit()
    except FIT_FAILURES:  # pragma: no cover - optimiser failure: not a candidate
        return None


def _two_beta_optima(pairs: list[tuple[NDArray, NDArray, NDArray]], ones: list[BoxFit | None]) -> list[BoxFit | None]:
    """The two-Beta optimum of each problem, its starts grown from its one-Beta optimum (``ones``: fitted once), the
    problems on the same pairs in one lockstep run (one at a time if that run fails)."""
    groups: dict[tuple[bytes, bytes], list[int]] = {}
    for i, (n_u, k_u, _) in enumerate(pairs):
        groups.setdefault((n_u.tobytes(), k_u.tobytes()), []).append(i)
    out: list[BoxFit | None] = [None] * len(pairs)
    for members in groups.values():
        objectives = [AtomsBetaObjective(*pairs[i], 2) for i in members]
        one_betas = [None if ones[i] is None else tuple(float(x) for x in ones[i].x) for i in members]
        fits = _optimum_or_none(lambda o=objectives, b=one_betas: _minimize_many(o, b))
        for j, i in enumerate(members):
            out[i] = fits[j] if fits is not None else _optimum_or_none(
                lambda j=j, o=objectives, b=one_betas: _minimize_from_starts(o[j], b[j]))
    return out


def _corpus_prior_of(pair: tuple[NDArray, NDArray, NDArray], one: BoxFit | None, two: BoxFit | None) -> GridPrior:
    """:func:`fit_corpus_prior`'s choice among the one- and two-Beta priors where their optimisers stopped (None:
    failed) and the smoothed grid prior, on the thinned pairs ``pair``."""
    n_u, k_u, c_u = pair
    g = default_grid()
    scaled = _scaled_lik(n_u, k_u, g)  # the likelihood matrix, computed once for every candidate
    fits: list[tuple[GridPrior, float]] = []
    for components, best in ((1, one), (2, two)):
        if best is None:  # pragma: no cover - optimiser failure: not a candidate
            continue
        try:
            candidate, _ = _atoms_beta_fit(AtomsBetaObjective(n_u, k_u, c_u, components), best, g, scaled)
        except FIT_FAILURES:  # pragma: no cover - optimiser failure: not a candidate
            continue
        fits.append((candidate, float(len(candidate.theta))))
    lik, shift = scaled
    h = resolution_bandwidth(n_u, c_u)
    w, it = fit_smooth_prior(lik, c_u, smoothing_matrix(g, h))
    smooth = GridPrior(grid=g, weights=w, iterations=it, log_likelihood=_grid_log_likelihood(lik, shift, c_u, w),
                       kind="smooth-grid", bandwidth=float(h))
    fits.append((smooth, smooth_effective_parameters(lik, c_u, w, h, g)))
    return _choose_by_aic(fits)


def _choose_by_aic(fits: list[tuple[GridPrior, float]]) -> GridPrior:
    """Of ``fits`` (prior, parameters) within :data:`AIC_MARGIN` of the lowest AIC = 2 (parameters − log-likelihood),
    the one-Beta prior if there, else the fewest parameters; every candidate's scores attached."""
    scores = tuple((p.kind, p.log_likelihood, params, 2.0 * (params - p.log_likelihood)) for p, params in fits)
    best = min(s[3] for s in scores)
    near = [i for i, s in enumerate(scores) if s[3] <= best + AIC_MARGIN]
    pick = min(near, key=lambda i: (scores[i][0] != "beta+atoms/1", scores[i][2], i))
    why = (f"AIC = 2 x (parameters - log-likelihood), the smoothed grid's parameters its effective number (first-order "
           f"leave-one-out); within {AIC_MARGIN:g} of the lowest: one Beta if there, else the fewest parameters")
    return replace(fits[pick][0], selection=why, scores=scores)


REFIT_MAX_ITER = 300
"""EM steps of a grid prior's refit (it starts from the fitted prior, so it needs few)."""


def refit_prior(prior: GridPrior, n: ArrayLike, k: ArrayLike, weights: ArrayLike) -> GridPrior:
    """The same kind of prior as ``prior``, refitted to new multiplicities of (n, k) pairs.

    For a bootstrap over prompts: the family that :func:`fit_corpus_prior` chose for the whole
    corpus is kept (its choice is not repeated per replicate) and the fit starts from ``prior``'s
    parameters, which makes a refit several times cheaper than a fresh fit. Pairs are thinned
    as in :func:`fit_corpus_prior`.
    """
    n_u, k_u, c_u = _pairs(n, k, weights)
    keep = c_u > 0
    n_u, k_u, c_u = thin_pairs(n_u[keep], k_u[keep], c_u[keep])
    if prior.kind.startswith("beta+atoms/") and prior.theta:
        components = int(prior.kind.rsplit("/", 1)[1])
        refit, _ = _fit_atoms_beta(n_u, k_u, c_u, prior.grid, components, None, x0=prior.theta,
                                   log_likelihood=False)
        return refit
    if prior.family == "smooth-grid":
        lik, _ = _scaled_lik(n_u, k_u, prior.grid)
        w, it = fit_smooth_prior(lik, c_u, smoothing_matrix(prior.grid, prior.bandwidth), prior.weights)
        return replace(prior, weights=w, iterations=it, log_likelihood=float("nan"))
    return fit_grid_prior(n_u, k_u, c_u, grid=prior.grid, max_iter=REFIT_MAX_ITER, start=prior.weights)


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
        """Posterior E[p^G + (1 − p)^G | k, n] (docs/theory.md's closed form)."""
        a_all, b_all = self.branch_rates(n, k, G)
        return a_all + b_all

    def branch_rates(self, n: ArrayLike, k: ArrayLike, G: ArrayLike) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """Posterior (E[p^G], E[(1 − p)^G]) given (n, k)."""
        n_arr, k_arr = as_counts(n, k)
        G_arr = as_group_size(G).astype(np.float64)
        a = self.a + k_arr
        b = self.b + n_arr - k_arr
        base = betaln(a, b)
        return np.exp(betaln(a + G_arr, b) - base), np.exp(betaln(a, b + G_arr) - base)


def fit_beta_prior(n: ArrayLike, k: ArrayLike) -> BetaPrior:
    """Fit Beta(a, b) by maximum beta-binomial likelihood over the distinct (n, k) pairs."""
    from scipy.optimize import minimize

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
