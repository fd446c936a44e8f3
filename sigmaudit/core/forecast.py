"""One-step-ahead forecasts of silent groups from a prompt's visit history, and how to score them.

docs/theory.md, "Estimating from finite logs", model-based estimate, applied forward in time.
A prompt visited at steps s_1 < s_2 < ... (k_j right of n_j at visit j) is forecast at its
next visit, step t, from its earlier visits only:

- **Drift.** The pass rate moves as training goes on, so older visits count less: visit j
  enters the likelihood with weight w_j = 2^(−(t − s_j)/h) (half-life h in steps; h = ∞ is
  the static model). The decayed counts N = Σ w_j n_j, K = Σ w_j k_j give the power
  likelihood p^K (1 − p)^(N − K) (a discounted, "forgetting" Bayes update).
- **Prior.** A corpus prior over p (:func:`sigmaudit.core.prior.fit_corpus_prior`) fitted
  to the groups logged before step t: a prompt seen for the first time is forecast from it.
- **Forecast.** The posterior predictive chance that a group of G answers is silent,
  P(silent) = E[p^G | history] + E[(1 − p)^G | history] (all correct + all wrong), on the
  prior's grid.
- **Recalibration.** A drift with a direction (training raises most pass rates) makes any
  forecast from past visits lag; :func:`fit_recalibration` learns, on earlier steps' forecasts
  and outcomes, a logistic map of logit P(silent) and of which branch the silence would come
  from (Platt scaling), applied to later steps.

Skip rules scored by the backtest (:func:`frontier`, :func:`greso_skip_probability`):

- sigmaudit: skip a prompt when its forecast P(silent) is at least a threshold;
- GRESO (Zheng et al. 2025, "Act Only When It Pays: Efficient Reinforcement Learning for LLM
  Reasoning via Selective Rollouts", arXiv:2506.02177, Sec. 4, "probabilistic pre-rollout
  filtering"; the authors' code ``presampling_selector.py``): a prompt whose last z visits
  were all zero-variance of one kind (all correct: "easy", all wrong: "hard") is skipped with
  probability 1 − max(p_e^z, 0.01), the base p_e (exploration probability) kept separately for
  easy and hard prompts; the skip probability grows with the silent streak z;
- skip if silent last time (GRESO with p_e = 0, without the 1 % exploration floor).

Everything here is vectorised over visits; nothing reads files or prints.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .prior import GridPrior

HALF_LIFE_FACTORS: tuple[float, ...] = (0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0, float("inf"))
"""Half-lives tried by the backtest, in units of the typical revisit gap (median steps between
two consecutive visits of a prompt); ∞ means no down-weighting."""
GRESO_FLOOR = 0.01
"""GRESO keeps a prompt with probability at least this (``max(p ** count, 0.01)`` in its code)."""
LOG_LOSS_CLIP = 1e-12
"""Forecasts are clipped to [c, 1 − c] inside the logarithm of the log loss."""


@dataclass(frozen=True)
class History:
    """Each visit's history *before* the visit (visits sorted by prompt, then step)."""

    visits_before: NDArray[np.int64]
    """Earlier visits of the same prompt."""
    last_step: NDArray[np.float64]
    """Step of the previous visit (NaN for a first visit), as a float: exact up to 2^53 only (the
    audits take the previous step from the int64 steps themselves)."""
    n_eff: NDArray[np.float64]
    """Decayed sample counts Σ w_j n_j, shape (half-lives, visits)."""
    k_eff: NDArray[np.float64]
    """Decayed right-answer counts Σ w_j k_j, shape (half-lives, visits)."""
    streak_correct: NDArray[np.int64]
    """Consecutive all-correct visits just before this one."""
    streak_wrong: NDArray[np.int64]
    """Consecutive all-wrong visits just before this one."""


def _decay(dt: NDArray[np.float64], half_lives: NDArray[np.float64]) -> NDArray[np.float64]:
    """2^(−dt/h) for each half-life (rows) and gap (columns); 1 where h = ∞."""
    with np.errstate(divide="ignore"):
        rate = np.where(np.isinf(half_lives), 0.0, 1.0 / half_lives)
    return np.exp2(-np.multiply.outer(rate, dt))


def visit_history(
    prompt: ArrayLike, step: ArrayLike, n: ArrayLike, k: ArrayLike, half_lives: ArrayLike
) -> History:
    """The decayed history before each visit, for every half-life at once.

    ``prompt`` (integer codes), ``step``, ``n``, ``k`` describe one row per visit, sorted by
    prompt then step, with no repeated (prompt, step). The decayed counts follow the recursion
    N_i = (N_{i−1} + n_{i−1}) · 2^(−(s_i − s_{i−1})/h), one vectorised pass per visit rank (first
    visits, second visits, ...) over every prompt with that many visits: the visits are laid out
    rank by rank, the prompts with the most visits first, so that each rank's prompts are a prefix of
    the previous rank's and a pass is a few operations on contiguous slices (a log of 16 prompts at
    8,000 steps takes 8,000 passes). Its cost is visits × half-lives plus a small constant per rank.

    Examples
    --------
    >>> h = visit_history([0, 0, 0], [1, 2, 4], [8, 8, 8], [2, 4, 8], [1.0, float("inf")])
    >>> h.n_eff.tolist()  # half-life 1 step: 8·2^-1 = 4, then (4 + 8)·2^-2 = 3
    [[0.0, 4.0, 3.0], [0.0, 8.0, 16.0]]
    >>> h.streak_correct.tolist(), h.visits_before.tolist()
    ([0, 0, 0], [0, 1, 2])
    """
    p = np.asarray(prompt, dtype=np.int64)
    s = np.asarray(step)
    s = s.astype(np.int64) if s.dtype.kind in "iub" else s.astype(np.float64)  # int64 steps stay exact past 2^53
    nn = np.asarray(n, dtype=np.float64)
    kk = np.asarray(k, dtype=np.float64)
    hl = np.atleast_1d(np.asarray(half_lives, dtype=np.float64))
    if np.any(hl <= 0) or np.any(np.isnan(hl)):
        raise ValueError(f"half-lives must be > 0, got {hl.tolist()!r}")
    m = p.size
    if m and (np.any(np.diff(p) < 0) or np.any((np.diff(p) == 0) & (np.diff(s) <= 0))):
        raise ValueError("visits must be sorted by prompt, then by strictly increasing step")
    new = np.ones(m, dtype=bool)
    new[1:] = p[1:] != p[:-1]
    starts = np.flatnonzero(new)
    counts = np.diff(np.append(starts, m))
    rank = np.arange(m) - np.repeat(starts, counts)
    last = np.full(m, np.nan)
    last[~new] = s[:-1][~new[1:]]
    if m:
        n_eff, k_eff = _decayed_sums(s, nn, kk, hl, new, counts, rank)
    else:
        n_eff, k_eff = np.zeros((hl.size, 0)), np.zeros((hl.size, 0))
    sc, sw = _streak_before(kk == nn, new), _streak_before(kk == 0, new)
    return History(rank.astype(np.int64), last, n_eff, k_eff, sc, sw)


def _decayed_sums(
    s: NDArray[np.int64] | NDArray[np.float64], nn: NDArray[np.float64], kk: NDArray[np.float64],
    hl: NDArray[np.float64], first: NDArray[np.bool_], counts: NDArray[np.int64], rank: NDArray[np.int64],
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """(N, K) before each visit (visit order, one row per half-life): (N_prev + n_prev) · d rank after rank.

    The visits are laid out rank by rank and, within a rank, the prompts with the most visits first (ties
    in prompt order): rank r's block holds the A_r prompts with more than r visits, the first A_r of rank
    r − 1's block, so that each pass reads and writes contiguous slices."""
    by_count = np.argsort(-counts, kind="stable")
    place = np.empty(counts.size, dtype=np.int64)
    place[by_count] = np.arange(counts.size)  # each prompt's place within a rank's block
    width = np.bincount(counts - 1)[::-1].cumsum()[::-1]  # A_r: prompts with more than r visits
    offset = np.concatenate([[0], np.cumsum(width)[:-1]])
    slot = offset[rank] + np.repeat(place, counts)
    later = np.flatnonzero(~first)
    E = np.zeros((2, hl.size, s.size))  # each visit's decay since the previous one, then its N and K (first: 0)
    E[0][:, slot[later]] = _decay((s[later] - s[later - 1]).astype(np.float64), hl)  # the gap in int64, then float
    E[1] = E[0]
    counts_at = np.empty((2, 1, s.size))  # n and k, each visit's in its slot
    counts_at[0, 0, slot], counts_at[1, 0, slot] = nn, kk
    bounds = np.append(offset, s.size).tolist()
    for r in range(1, width.size):
        lo, a, before = bounds[r], bounds[r + 1] - bounds[r], bounds[r - 1]
        cur = E[:, :, lo:lo + a]
        np.multiply(np.add(E[:, :, before:before + a], counts_at[:, :, before:before + a]), cur, out=cur)
    for row in E.reshape(-1, s.size):  # back to visit order, one row at a time (no second full copy)
        row[:] = row[slot]
    return E[0], E[1]


def _streak_before(hit: NDArray[np.bool_], first: NDArray[np.bool_]) -> NDArray[np.int64]:
    """For each visit (sorted by prompt, then step; ``first`` marks a prompt's first visit), how many of the
    prompt's visits just before it are ``hit`` in a row."""
    m = hit.size
    idx = np.arange(m)
    mark = np.where(hit, -1, idx)  # a miss ends a run
    starts = np.flatnonzero(first)
    mark[starts] = np.maximum(mark[starts], starts - 1)  # runs do not cross into another prompt
    run = idx - np.maximum.accumulate(mark) if m else idx  # hits in a row ending at each visit
    out = np.zeros(m, dtype=np.int64)
    out[1:] = run[:-1]
    out[first] = 0
    return out


@dataclass(frozen=True)
class SilentForecast:
    """Posterior predictive of a group of G answers, per row."""

    p_mean: NDArray[np.float64]
    """Posterior mean of p."""
    all_wrong: NDArray[np.float64]
    """E[(1 − p)^G | history]."""
    all_correct: NDArray[np.float64]
    """E[p^G | history]."""

    @property
    def silent(self) -> NDArray[np.float64]:
        """P(silent) = all_wrong + all_correct."""
        return self.all_wrong + self.all_correct


CHUNK_ROWS = 4096
"""Rows of the (rows × grid) posterior matrix built at once."""


def silent_forecast(n_eff: ArrayLike, k_eff: ArrayLike, prior: GridPrior, G: ArrayLike) -> SilentForecast:
    """Posterior predictive silent chance at G given decayed (possibly fractional) counts.

    The posterior over ``prior.grid`` is ∝ prior · p^K (1 − p)^(N − K) (0 · log 0 = 0);
    ``G`` is one group size or one per row.

    Examples
    --------
    A flat prior on a fine grid and no history gives E[p^G] = 1/(G + 1):

    >>> from sigmaudit.core.prior import GridPrior, default_grid
    >>> g = default_grid(2001); w = np.gradient(g); w /= w.sum()
    >>> f = silent_forecast([0.0], [0.0], GridPrior(g, w, 0, 0.0), 4)
    >>> round(float(f.all_correct[0]), 3), round(float(f.silent[0]), 3)
    (0.2, 0.4)
    """
    N = np.atleast_1d(np.asarray(n_eff, dtype=np.float64))
    K = np.atleast_1d(np.asarray(k_eff, dtype=np.float64))
    if N.shape != K.shape:
        raise ValueError(f"n_eff and k_eff differ in shape: {N.shape} vs {K.shape}")
    if np.any(K < 0) or np.any(K > N + 1e-9 * np.maximum(N, 1.0)):
        raise ValueError("decayed counts must satisfy 0 <= k_eff <= n_eff")
    F = np.maximum(N - K, 0.0)
    Gs = np.broadcast_to(np.asarray(G, dtype=np.float64), N.shape)
    if np.any(Gs < 1) or np.any(Gs != np.round(Gs)):
        raise ValueError(f"G must be whole numbers >= 1, got {np.unique(Gs)[:5].tolist()!r}")
    grid = prior.grid
    with np.errstate(divide="ignore"):
        log_w = np.log(prior.weights)
        log_p, log_q = np.log(grid), np.log1p(-grid)
    # 0 · log 0 = 0: the ends of the grid get their terms separately
    end_p, end_q = ~np.isfinite(log_p), ~np.isfinite(log_q)
    terms = (np.where(end_p, 0.0, log_p), np.where(end_q, 0.0, log_q), log_w, end_p, end_q)
    powers = {float(g): (grid**g, (1.0 - grid) ** g) for g in np.unique(Gs)}
    mean = np.empty(N.size)
    aw = np.empty(N.size)
    ac = np.empty(N.size)
    rows_max = min(CHUNK_ROWS, N.size)
    buf, tmp = np.empty((rows_max, grid.size)), np.empty((rows_max, grid.size))  # reused by every chunk
    for lo in range(0, N.size, CHUNK_ROWS):
        sl = slice(lo, lo + CHUNK_ROWS)
        post = _posterior(K[sl], F[sl], terms, buf[: K[sl].size], tmp[: K[sl].size])
        mean[sl] = post @ grid
        g_chunk = Gs[sl]
        for g in np.unique(g_chunk):
            up, down = powers[float(g)]
            rows = np.flatnonzero(g_chunk == g)
            if rows.size == g_chunk.size:  # one size in the chunk: every row, without a copy
                ac[sl], aw[sl] = post @ up, post @ down
            else:
                ac[lo + rows], aw[lo + rows] = post[rows] @ up, post[rows] @ down
    return SilentForecast(mean, aw, ac)


def _posterior(
    K: NDArray[np.float64], F: NDArray[np.float64], terms: tuple[NDArray, ...], post: NDArray[np.float64],
    extra: NDArray[np.float64],
) -> NDArray[np.float64]:
    """The posterior over the grid of each row's counts (K right, F wrong), written into ``post`` (``extra``: a
    scratch array of its shape); ``terms`` are log p, log(1 − p) (0 at the ends), log prior weight and the ends."""
    log_p, log_q, log_w, end_p, end_q = terms
    np.multiply.outer(K, log_p, out=post)
    post += np.multiply.outer(F, log_q, out=extra)
    post += log_w[None, :]
    post[:, end_p] = np.where((K > 0)[:, None], -np.inf, post[:, end_p])
    post[:, end_q] = np.where((F > 0)[:, None], -np.inf, post[:, end_q])
    post -= post.max(axis=1, keepdims=True)
    np.exp(post, out=post)
    post /= post.sum(axis=1, keepdims=True)
    return post


def greso_skip_probability(
    streak_correct: ArrayLike, streak_wrong: ArrayLike, p_easy: float, p_hard: float, floor: float = GRESO_FLOOR
) -> NDArray[np.float64]:
    """GRESO's chance of skipping a prompt before rollout: 1 − max(p_e^z, floor), 0 without a streak.

    z is the prompt's current streak of all-correct (base ``p_easy``) or all-wrong (base
    ``p_hard``) visits; see the module docstring for the source.

    >>> greso_skip_probability([0, 2, 0], [0, 0, 1], 0.5, 0.25).tolist()
    [0.0, 0.75, 0.75]
    """
    zc = np.asarray(streak_correct, dtype=np.float64)
    zw = np.asarray(streak_wrong, dtype=np.float64)
    for name, v in (("p_easy", p_easy), ("p_hard", p_hard), ("floor", floor)):
        if not 0.0 <= v <= 1.0:
            raise ValueError(f"{name} must lie in [0, 1], got {v!r}")
    z = np.where(zc > 0, zc, zw)
    base = np.where(zc > 0, p_easy, p_hard)
    with np.errstate(invalid="ignore"):
        keep = np.maximum(np.where(z > 0, base**z, 1.0), floor)
    return np.where(z > 0, 1.0 - keep, 0.0)


def brier(forecast: ArrayLike, outcome: ArrayLike, weight: ArrayLike | None = None) -> float:
    """Mean squared difference between forecast probabilities and outcomes (0/1 or fractions)."""
    f, y = np.asarray(forecast, dtype=np.float64), np.asarray(outcome, dtype=np.float64)
    return float(np.average((f - y) ** 2, weights=weight))


def log_loss(forecast: ArrayLike, outcome: ArrayLike, weight: ArrayLike | None = None) -> float:
    """Mean of −[y log f + (1 − y) log(1 − f)], f clipped to [1e-12, 1 − 1e-12]."""
    f = np.clip(np.asarray(forecast, dtype=np.float64), LOG_LOSS_CLIP, 1.0 - LOG_LOSS_CLIP)
    y = np.asarray(outcome, dtype=np.float64)
    return float(np.average(-(y * np.log(f) + (1.0 - y) * np.log1p(-f)), weights=weight))


def log_losses(forecast: ArrayLike, outcome: ArrayLike) -> NDArray[np.float64]:
    """Per-row log loss (see :func:`log_loss`)."""
    f = np.clip(np.asarray(forecast, dtype=np.float64), LOG_LOSS_CLIP, 1.0 - LOG_LOSS_CLIP)
    y = np.asarray(outcome, dtype=np.float64)
    return -(y * np.log(f) + (1.0 - y) * np.log1p(-f))


@dataclass(frozen=True)
class CalibrationBin:
    """Forecasts falling in [lo, hi): their mean and the mean outcome."""

    bin: int
    """Bin index 0..bins−1 (bin b holds forecasts in [b/bins, (b+1)/bins); the last includes 1)."""
    predicted: float | None
    """Mean forecast in the bin (None when empty)."""
    observed: float | None
    """Mean outcome in the bin (None when empty)."""
    n: int
    """Forecasts in the bin."""


def calibration(forecast: ArrayLike, outcome: ArrayLike, bins: int = 10) -> tuple[CalibrationBin, ...]:
    """Reliability table: equal-width bins of the forecast, mean forecast vs mean outcome."""
    f, y = np.asarray(forecast, dtype=np.float64), np.asarray(outcome, dtype=np.float64)
    b = np.minimum((f * bins).astype(np.int64), bins - 1)
    cnt = np.bincount(b, minlength=bins)
    sf = np.bincount(b, weights=f, minlength=bins)
    sy = np.bincount(b, weights=y, minlength=bins)
    return tuple(
        CalibrationBin(i, float(sf[i] / cnt[i]) if cnt[i] else None, float(sy[i] / cnt[i]) if cnt[i] else None,
                       int(cnt[i]))
        for i in range(bins)
    )


def calibration_error(table: tuple[CalibrationBin, ...]) -> float:
    """Σ n_b |predicted_b − observed_b| / Σ n_b over the non-empty bins (weighted mean absolute gap)."""
    total = sum(c.n for c in table)
    gap = sum(c.n * abs(c.predicted - c.observed) for c in table if c.n)  # type: ignore[operator]
    return float(gap / total) if total else float("nan")


def tradeoff(skip: ArrayLike, outcome: ArrayLike) -> tuple[float, float]:
    """(silent groups avoided, informative groups lost) as shares, for skip probabilities ``skip``.

    ``outcome`` is each group's silent indicator (or chance); skipped mass is counted in expectation.
    """
    q, y = np.asarray(skip, dtype=np.float64), np.asarray(outcome, dtype=np.float64)
    silent, informative = y.sum(), (1.0 - y).sum()
    avoided = float(q @ y / silent) if silent > 0 else float("nan")
    lost = float(q @ (1.0 - y) / informative) if informative > 0 else float("nan")
    return avoided, lost


def avoided_at_lost(forecast: ArrayLike, outcome: ArrayLike, max_lost: float) -> float:
    """Largest share of silent groups a threshold rule on ``forecast`` avoids while losing at most
    ``max_lost`` of the informative groups (groups skipped in decreasing forecast order, ties together)."""
    f, y = np.asarray(forecast, dtype=np.float64), np.asarray(outcome, dtype=np.float64)
    silent, informative = y.sum(), (1.0 - y).sum()
    if silent <= 0:
        return float("nan")
    order = np.argsort(-f, kind="stable")
    fs = f[order]
    cs = np.cumsum(y[order])
    ci = np.cumsum(1.0 - y[order])
    last_of_tie = np.append(fs[1:] != fs[:-1], True)  # a threshold skips whole ties
    ok = last_of_tie & (ci <= max_lost * informative + 1e-12)
    return float(cs[ok].max() / silent) if ok.any() else 0.0


RECAL_RIDGE = 10.0
"""Ridge penalty pulling the recalibration towards the identity (a, b, c) = (1, 0, 0)."""


def recal_features(forecast: ArrayLike, skew: ArrayLike) -> NDArray[np.float64]:
    f = np.clip(np.asarray(forecast, dtype=np.float64), 1e-9, 1.0 - 1e-9)
    s = np.asarray(skew, dtype=np.float64)
    return np.stack([np.log(f) - np.log1p(-f), np.ones_like(f), s], axis=1)


def branch_skew(all_wrong: ArrayLike, all_correct: ArrayLike) -> NDArray[np.float64]:
    """(all_correct − all_wrong) / (all_correct + all_wrong): +1 when silence would be all correct,
    −1 when all wrong (0 when both are 0)."""
    aw, ac = np.asarray(all_wrong, dtype=np.float64), np.asarray(all_correct, dtype=np.float64)
    tot = aw + ac
    return np.divide(ac - aw, tot, out=np.zeros_like(tot), where=tot > 0)


def fit_recalibration(
    forecast: ArrayLike, skew: ArrayLike, outcome: ArrayLike, ridge: float = RECAL_RIDGE, iterations: int = 30
) -> NDArray[np.float64]:
    """Coefficients (a, b, c) of P = sigmoid(a · logit(forecast) + b + c · skew), by ridge-penalised
    logistic regression (Newton) towards the identity (1, 0, 0) (Platt scaling, Platt 1999).

    It corrects what a drifting pass rate does to a forecast from past visits: when training
    pushes most prompts one way, a history-based P(silent) lags behind, by an amount that
    depends on which branch (all correct, ``skew`` > 0, or all wrong) the silence would come from.
    """
    return fit_recalibration_rows(recal_features(forecast, skew), outcome, ridge, iterations)


def fit_recalibration_rows(
    X: NDArray[np.float64], outcome: ArrayLike, ridge: float = RECAL_RIDGE, iterations: int = 30
) -> NDArray[np.float64]:
    """:func:`fit_recalibration` on feature rows already built by :func:`recal_features` (the online
    backtest builds them once for every group and refits on growing subsets, bit for bit the same fit)."""
    return fit_recalibration_state(X, outcome, ridge, iterations).coef


@dataclass(frozen=True)
class RecalState:
    """A recalibration fit and what it leaves of its data: the coefficients and the penalised log
    likelihood's Hessian there (the data's curvature plus the ridge), the quadratic that stands for the
    rows already fitted when later rows are added (:func:`update_recalibration`)."""

    coef: NDArray[np.float64]
    hessian: NDArray[np.float64]


def fit_recalibration_state(
    X: NDArray[np.float64], outcome: ArrayLike, ridge: float = RECAL_RIDGE, iterations: int = 30
) -> RecalState:
    """:func:`fit_recalibration_rows` with the Hessian at its optimum (for :func:`update_recalibration`)."""
    return _penalised_newton(X, np.asarray(outcome, dtype=np.float64), np.array([1.0, 0.0, 0.0]),
                             ridge * np.eye(3), iterations)


def update_recalibration(
    state: RecalState, X: NDArray[np.float64], outcome: ArrayLike, iterations: int = 30
) -> RecalState:
    """The recalibration refitted after rows ``X`` (features of :func:`recal_features`) with ``outcome``s are
    added to the rows ``state`` was fitted on, at a cost that depends on the new rows only.

    The earlier rows' penalised log loss is replaced by its second-order expansion at ``state``'s optimum
    (½ (θ − θ₀)ᵀ H₀ (θ − θ₀): its gradient there is zero), the new rows' loss is exact (the Laplace, or
    assumed-density, update of a logistic regression; Opper 1998, "A Bayesian approach to on-line
    learning"). Exact when the earlier rows' loss is quadratic; otherwise it differs from a refit on all
    rows by the third-order terms of the earlier loss over the distance θ moves, which shrinks as the
    rows accumulate."""
    return _penalised_newton(X, np.asarray(outcome, dtype=np.float64), state.coef, state.hessian, iterations)


def _penalised_newton(
    X: NDArray[np.float64], y: NDArray[np.float64], theta0: NDArray[np.float64], hess0: NDArray[np.float64],
    iterations: int,
) -> RecalState:
    """Newton's method on Σ log loss(sigmoid(X θ), y) + ½ (θ − θ₀)ᵀ H₀ (θ − θ₀), started at θ₀; the
    optimum and the objective's Hessian there."""
    theta = theta0.copy()
    for _ in range(iterations):
        z = X @ theta
        p = 0.5 * (1.0 + np.tanh(0.5 * z))
        grad = X.T @ (p - y) + hess0 @ (theta - theta0)
        hess = (X * (p * (1.0 - p))[:, None]).T @ X + hess0
        step = np.linalg.solve(hess, grad)
        theta -= step
        if float(np.abs(step).max()) < 1e-8:
            break
    p = 0.5 * (1.0 + np.tanh(0.5 * (X @ theta)))
    return RecalState(theta, (X * (p * (1.0 - p))[:, None]).T @ X + hess0)


def recalibrate(forecast: ArrayLike, skew: ArrayLike, coef: ArrayLike) -> NDArray[np.float64]:
    """sigmoid(a · logit(forecast) + b + c · skew) for coefficients from :func:`fit_recalibration`."""
    return recalibrate_rows(recal_features(forecast, skew), coef)


def recalibrate_rows(X: NDArray[np.float64], coef: ArrayLike) -> NDArray[np.float64]:
    """:func:`recalibrate` on feature rows already built by :func:`recal_features`."""
    z = X @ np.asarray(coef, dtype=np.float64)
    return 0.5 * (1.0 + np.tanh(0.5 * z))
