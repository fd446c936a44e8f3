"""A bounded Newton minimiser for the prior fits (numpy only: scipy.optimize costs ~0.5 s of start-up).

The parametric priors of :mod:`sigmaudit.core.prior` have 4 or 7 parameters, an exact gradient and a
box. :func:`minimize_box` is a projected Newton method (Bertsekas 1982, "Projected Newton methods for
optimization problems with simple constraints"): at each iteration the variables at a bound whose
gradient pushes outwards are held there, the others take a Newton step on the exact Hessian when the
caller has one (else forward differences of the exact gradient), damped to be positive definite where
the likelihood is not convex, and an Armijo search along the projection arc keeps every iterate in the
box and every step downhill. It stops when the projected gradient vanishes (relative to the objective's
size), when a full Newton step would gain less than ``ftol`` · max(1, |f|), when no step along the arc
lowers f, or (given ``beat``) when its recent pace cannot take it below another run's optimum.

Against scipy's L-BFGS-B (default tolerances, the optimiser used before) it converges further: its
default stop, a relative gain below 2.2e-9 per step, leaves the parameters up to ~1e-4 from the
optimum in flat directions; tests/test_core_optimize.py checks that the objective found here is never
above L-BFGS-B's (up to 1e-9 · |f|) on random and real corpora.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

FunGrad = Callable[[NDArray[np.float64]], tuple[float, NDArray[np.float64]]]


@dataclass(frozen=True)
class BoxFit:
    """Where :func:`minimize_box` stopped."""

    x: NDArray[np.float64]
    """The minimiser found (inside the box)."""
    fun: float
    """The objective there."""
    nit: int
    """Newton iterations run."""


def fd_hessian(fun_grad: FunGrad, x: NDArray[np.float64], g: NDArray[np.float64] | None = None) -> NDArray[np.float64]:
    """Symmetrised forward-difference Hessian of an exact gradient at x."""
    dim = x.size
    g = fun_grad(x)[1] if g is None else g
    h = 1e-5 * np.maximum(1.0, np.abs(x))
    H = np.empty((dim, dim))
    for i in range(dim):
        e = np.zeros(dim)
        e[i] = h[i]
        H[:, i] = (fun_grad(x + e)[1] - g) / h[i]
    return 0.5 * (H + H.T)


def damped_cholesky(H: NDArray[np.float64]) -> NDArray[np.float64]:
    """Cholesky factor of H + λI with the smallest λ (0 or doubling from 1e-6 · max|H_ii|) that works."""
    dim = H.shape[0]
    lam = 0.0
    for _ in range(60):
        try:
            return np.linalg.cholesky(H + lam * np.eye(dim))
        except np.linalg.LinAlgError:
            lam = max(2.0 * lam, 1e-6 * (1.0 + float(np.abs(np.diag(H)).max(initial=0.0))))
    return np.eye(dim)  # pragma: no cover - hopeless curvature: gradient steps


def _newton_step(fun_grad: FunGrad, hessian: Callable[[NDArray[np.float64]], NDArray[np.float64] | None] | None,
                 x: NDArray[np.float64], g: NDArray[np.float64], free: NDArray[np.bool_]) -> NDArray[np.float64]:
    """The damped Newton step in the ``free`` coordinates (zero in the others)."""
    step = np.zeros_like(x)
    if np.any(free):
        H = hessian(x) if hessian is not None else None
        H = fd_hessian(fun_grad, x, g) if H is None else H
        L = damped_cholesky(H[np.ix_(free, free)])
        step[free] = -np.linalg.solve(L.T, np.linalg.solve(L, g[free]))
    return step


def minimize_box(
    fun_grad: FunGrad,
    x0: ArrayLike,
    lo: ArrayLike,
    hi: ArrayLike,
    *,
    max_iter: int = 200,
    ftol: float = 1e-13,
    gtol: float = 1e-9,
    max_step: float = np.inf,
    hessian: Callable[[NDArray[np.float64]], NDArray[np.float64] | None] | None = None,
    beat: float = np.inf,
) -> BoxFit:
    """Minimise ``fun_grad`` (returning f and its gradient) over the box [lo, hi] from ``x0``.

    ``gtol`` bounds the projected gradient's largest entry relative to max(1, |f|); ``ftol`` the
    predicted gain of a Newton step, relative to max(1, |f|); ``max_step`` caps a step's largest
    coordinate (the direction is kept); ``hessian`` (x ↦ the exact Hessian, or None) replaces the
    forward differences of the gradient. ``beat`` (the best objective another run reached) stops a
    run early once it cannot get below that value at the pace of its last ``PACE_WINDOW`` iterations
    (their largest gain, sustained for every iteration left): a start that has slid into a flat valley
    above a better optimum is not followed for the rest of ``max_iter``.
    """
    lo_a, hi_a = np.asarray(lo, dtype=np.float64), np.asarray(hi, dtype=np.float64)
    x = np.clip(np.asarray(x0, dtype=np.float64), lo_a, hi_a)
    f, g = fun_grad(x)
    it, gains = 0, []
    for it in range(1, max_iter + 1):  # noqa: B007 - the count is reported
        scale = max(1.0, abs(f))
        pg = x - np.clip(x - g, lo_a, hi_a)  # projected gradient
        if np.max(np.abs(pg), initial=0.0) <= gtol * scale:
            break
        # near a bound and pushed outwards: held at the bound this iteration
        eps = min(float(np.max(np.abs(pg))), 1e-3)
        held = ((x <= lo_a + eps) & (g > 0)) | ((x >= hi_a - eps) & (g < 0))
        free = ~held
        step = _newton_step(fun_grad, hessian, x, g, free)
        decrement = -float(g[free] @ step[free]) if np.any(free) else 0.0
        if decrement <= 2.0 * ftol * scale and not np.any(held & (np.abs(pg) > gtol * scale)):
            break
        # held variables move by their projected gradient (towards the bound they sit at)
        step[held] = -g[held]
        longest = float(np.max(np.abs(step[free]), initial=0.0))
        if longest > max_step:  # a step no longer than max_step in any free coordinate
            step[free] *= max_step / longest
        moved = _arc_search(fun_grad, x, f, g, step, lo_a, hi_a)
        if moved is None:
            break
        gains.append(f - moved[1])
        x, f, g = moved
        if len(gains) >= PACE_WINDOW and f - beat > max(gains[-PACE_WINDOW:]) * (max_iter - it):
            break  # at its best recent pace this run cannot get down to ``beat`` in the iterations left
    return BoxFit(x=x, fun=float(f), nit=it)


PACE_WINDOW = 10
"""Iterations whose largest gain sets a run's pace for ``minimize_box``'s ``beat``."""


Point = tuple[NDArray[np.float64], float, NDArray[np.float64]]


def _arc_search(fun_grad: FunGrad, x: NDArray[np.float64], f: float, g: NDArray[np.float64], step: NDArray[np.float64],
                lo: NDArray[np.float64], hi: NDArray[np.float64]) -> Point | None:
    """Armijo backtracking along the projection arc x(t) = clip(x + t·step): the first t = 1, 1/2, ...
    whose point lowers f by at least 1e-4 of the slope (x, f, gradient there), or None."""
    t = 1.0
    while t > 1e-12:
        x_new = np.clip(x + t * step, lo, hi)
        dx = x_new - x
        slope = float(g @ dx)
        if slope >= 0.0 or not np.any(dx):
            t *= 0.5
            continue
        f_new, g_new = fun_grad(x_new)
        if np.isfinite(f_new) and f_new <= f + 1e-4 * slope:
            return x_new, f_new, g_new
        t *= 0.5
    return None


# ----------------------------------------------------------------- many independent problems at once

RowsFunGrad = Callable[[NDArray[np.intp], NDArray[np.float64]], tuple[NDArray[np.float64], NDArray[np.float64]]]
"""(rows, X) ↦ (f, gradient) of problem ``rows[i]`` at ``X[i]``: shapes (len(rows),), (len(rows), dim)."""
RowsHessian = Callable[[NDArray[np.intp], NDArray[np.float64]], NDArray[np.float64]]
"""(rows, X) ↦ the exact Hessians, shape (len(rows), dim, dim)."""


@dataclass(frozen=True)
class BoxFits:
    """Where :func:`minimize_box_rows` stopped, one row per problem."""

    x: NDArray[np.float64]
    """The minimisers, shape (problems, dim)."""
    fun: NDArray[np.float64]
    """The objectives there."""
    nit: NDArray[np.int64]
    """Newton iterations run per problem."""


def minimize_box_rows(fun_grad: RowsFunGrad, hessian: RowsHessian, x0: ArrayLike, lo: ArrayLike, hi: ArrayLike, *,
                      max_iter: int = 200, ftol: float = 1e-13, gtol: float = 1e-9, max_step: float = np.inf,
                      beat_earlier: bool | NDArray[np.intp] = False) -> BoxFits:
    """:func:`minimize_box` (exact Hessian) on many problems of the same box at once: row r of ``x0`` starts
    problem r. Every problem takes the iterations :func:`minimize_box` would take (the same stops, held
    variables, damping, step cap and arc search), in lockstep with the others, so that each numpy operation
    serves every problem still running: a bootstrap's 200 refits cost a few times one refit.

    ``beat_earlier`` (starts of one problem, in order): row r stops as :func:`minimize_box` with ``beat`` does,
    against the best objective of the rows before it so far (their optimum once they have stopped). Several
    problems' starts at once: ``beat_earlier`` is each row's problem (its rows contiguous, its starts in order),
    and a row is compared with the earlier rows of its own problem only.
    """
    blocks = None if isinstance(beat_earlier, bool) else _blocks(np.asarray(beat_earlier))
    lo_a, hi_a = np.asarray(lo, dtype=np.float64), np.asarray(hi, dtype=np.float64)
    X = np.clip(np.asarray(x0, dtype=np.float64), lo_a, hi_a)
    F, Gr = fun_grad(np.arange(X.shape[0]), X)
    nit = np.zeros(X.shape[0], dtype=np.int64)
    gains = np.full((X.shape[0], max_iter), np.nan)
    active = np.arange(X.shape[0])
    for it in range(1, max_iter + 1):
        nit[active] = it
        x, f, g = X[active], F[active], Gr[active]
        scale = np.maximum(1.0, np.abs(f))
        pg = x - np.clip(x - g, lo_a, hi_a)
        pg_max = np.max(np.abs(pg), axis=1, initial=0.0)
        go = pg_max > gtol * scale
        active, x, g, scale, pg, pg_max = active[go], x[go], g[go], scale[go], pg[go], pg_max[go]
        if active.size == 0:
            break
        eps = np.minimum(pg_max, 1e-3)[:, None]
        held = ((x <= lo_a + eps) & (g > 0)) | ((x >= hi_a - eps) & (g < 0))
        step = _newton_steps(hessian(active, x), g, ~held)
        decrement = -np.sum(np.where(held, 0.0, g * step), axis=1)
        go = (decrement > 2.0 * ftol * scale) | np.any(held & (np.abs(pg) > gtol * scale[:, None]), axis=1)
        active, x, g, step, held = active[go], x[go], g[go], step[go], held[go]
        step[held] = -g[held]  # held variables move by their projected gradient (towards their bound)
        longest = np.max(np.abs(np.where(held, 0.0, step)), axis=1, initial=0.0)
        cap = np.where(longest > max_step, max_step / np.where(longest > 0, longest, 1.0), 1.0)
        step = np.where(held, step, step * cap[:, None])
        f_before = F[active]
        moved, x_new, f_new, g_new = _arc_search_rows(fun_grad, active, x, f_before, g, step, lo_a, hi_a)
        X[active[moved]], F[active[moved]], Gr[active[moved]] = x_new, f_new, g_new
        gains[active[moved], it - 1] = f_before[moved] - f_new
        active = active[moved]
        if beat_earlier is not False and active.size:
            active = _outpaced(active, F, gains, it, max_iter, blocks)
        if active.size == 0:
            break
    return BoxFits(x=X, fun=F, nit=nit)


def _blocks(problem: NDArray[np.intp]) -> list[slice]:
    """The rows of each problem (contiguous, in order) as slices."""
    edges = np.flatnonzero(np.diff(problem)) + 1
    bounds = [0, *edges.tolist(), problem.size]
    return [slice(a, b) for a, b in zip(bounds[:-1], bounds[1:], strict=True)]


def _outpaced(active: NDArray[np.intp], F: NDArray[np.float64], gains: NDArray[np.float64], it: int,
              max_iter: int, blocks: list[slice] | None = None) -> NDArray[np.intp]:
    """The rows of ``active`` that can still get below the best objective of the rows before them (of their own
    block: one problem's starts; every row one block when None) at the pace of their last :data:`PACE_WINDOW`
    gains (``minimize_box``'s ``beat``, against the earlier starts' values)."""
    best_before = np.empty(F.size)
    for block in [slice(0, F.size)] if blocks is None else blocks:
        best_before[block] = np.concatenate([[np.inf], np.minimum.accumulate(F[block])[:-1]])
    best_before = best_before[active]
    recent = gains[active, :it]
    recent = [row[~np.isnan(row)][-PACE_WINDOW:] for row in recent]
    pace = np.array([r.max() if r.size >= PACE_WINDOW else np.inf for r in recent])
    keep = ~(F[active] - best_before > pace * (max_iter - it))
    return active[keep]


def _newton_steps(H: NDArray[np.float64], g: NDArray[np.float64], free: NDArray[np.bool_]) -> NDArray[np.float64]:
    """Each row's damped Newton step in its ``free`` coordinates (zero in the others), as :func:`_newton_step`:
    the held coordinates' rows and columns of H are replaced by the identity's, which leaves the free block's
    Cholesky factor (and step) as it is and decouples the held coordinates (their gradient is set to 0)."""
    both = free[:, :, None] & free[:, None, :]
    eye = np.broadcast_to(np.eye(H.shape[1]), H.shape)
    Hf = np.where(both, H, eye)
    gf = np.where(free, g, 0.0)
    L = damped_cholesky_rows(Hf, np.max(np.abs(np.where(free, np.diagonal(H, axis1=1, axis2=2), 0.0)), axis=1))
    y = np.linalg.solve(L, gf[:, :, None])
    return -np.linalg.solve(np.swapaxes(L, 1, 2), y)[:, :, 0]


def damped_cholesky_rows(H: NDArray[np.float64], diag_max: NDArray[np.float64]) -> NDArray[np.float64]:
    """:func:`damped_cholesky` of each matrix of the stack H: the Cholesky factor of H + λI with the smallest
    λ (0, or doubling from 1e-6 · (1 + ``diag_max``)) for which the factorisation's pivots stay positive."""
    R, dim = H.shape[0], H.shape[1]
    lam = np.zeros(R)
    L = np.zeros_like(H)
    todo = np.arange(R)
    eye = np.eye(dim)
    for attempt in range(60):
        L_t, ok = _cholesky_rows(H[todo] + lam[todo, None, None] * eye)
        L[todo[ok]] = L_t[ok]
        todo = todo[~ok]
        if todo.size == 0:
            return L
        lam[todo] = np.maximum(2.0 * lam[todo], 1e-6 * (1.0 + diag_max[todo]))
        if attempt == 0:  # skip the doublings that cannot work: λ must exceed −(least eigenvalue)
            lam[todo] = _first_sufficient(lam[todo], -np.linalg.eigvalsh(H[todo])[:, 0])
    L[todo] = eye  # pragma: no cover - hopeless curvature: gradient steps
    return L


def _first_sufficient(lam0: NDArray[np.float64], need: NDArray[np.float64]) -> NDArray[np.float64]:
    """The first of λ0, 2λ0, 4λ0, ... that exceeds ``need`` (λ0 itself when need <= λ0): the damping the
    doubling reaches first for which H + λI can factorise (those before leave an eigenvalue <= 0)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        j = np.where(need > lam0, np.floor(np.log2(need / lam0)) + 1.0, 0.0)
    lam = lam0 * np.exp2(j)
    return np.where(lam > need, lam, 2.0 * lam)  # log2 rounding at a power of two


def _cholesky_rows(A: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.bool_]]:
    """Cholesky factors of a stack of small symmetric matrices, column by column (Cholesky–Banachiewicz), and
    which rows factorised (every pivot positive, as LAPACK's potrf requires); failed rows hold garbage."""
    R, dim = A.shape[0], A.shape[1]
    L = np.zeros_like(A)
    ok = np.ones(R, dtype=bool)
    for j in range(dim):
        pivot = A[:, j, j] - np.einsum("rk,rk->r", L[:, j, :j], L[:, j, :j])
        ok &= pivot > 0.0
        d = np.sqrt(np.where(pivot > 0.0, pivot, 1.0))
        L[:, j, j] = d
        if j + 1 < dim:
            L[:, j + 1 :, j] = (A[:, j + 1 :, j] - np.einsum("rik,rk->ri", L[:, j + 1 :, :j], L[:, j, :j])) / d[:, None]
    return L, ok


def _arc_search_rows(fun_grad: RowsFunGrad, rows: NDArray[np.intp], x: NDArray[np.float64], f: NDArray[np.float64],
                     g: NDArray[np.float64], step: NDArray[np.float64], lo: NDArray[np.float64],
                     hi: NDArray[np.float64]) -> tuple[NDArray[np.bool_], NDArray[np.float64], NDArray[np.float64],
                                                       NDArray[np.float64]]:
    """:func:`_arc_search` for each row: (which rows found a point, and those points' x, f, gradient)."""
    t = np.ones(rows.size)
    found = np.zeros(rows.size, dtype=bool)
    x_out, f_out, g_out = x.copy(), f.copy(), g.copy()
    pending = np.arange(rows.size)
    while pending.size:
        x_new = np.clip(x[pending] + t[pending, None] * step[pending], lo, hi)
        dx = x_new - x[pending]
        slope = np.sum(g[pending] * dx, axis=1)
        trial = (slope < 0.0) & np.any(dx != 0.0, axis=1)
        idx = pending[trial]
        if idx.size:
            f_new, g_new = fun_grad(rows[idx], x_new[trial])
            ok = np.isfinite(f_new) & (f_new <= f[idx] + 1e-4 * slope[trial])
            hit = idx[ok]
            found[hit] = True
            x_out[hit], f_out[hit], g_out[hit] = x_new[trial][ok], f_new[ok], g_new[ok]
        t[pending] *= 0.5
        pending = pending[~found[pending] & (t[pending] > 1e-12)]
    return found, x_out[found], f_out[found], g_out[found]
