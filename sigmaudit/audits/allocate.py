"""Per-prompt group sizes ("how many tries each prompt needs") under a rollout budget.

Stock verl and TRL sample one n for every prompt (``actor_rollout_ref.rollout.n``,
``num_generations``); a per-prompt n needs a custom sampler. docs/theory.md, "Per-prompt budgets".

Objective (``--budget N``): choose G_i ∈ {0} ∪ [min_g, max_g] with Σ G_i ≤ N maximising Σ_i f_i(G_i), f_i
the plan objective's per-prompt term (:func:`per_prompt_curves`), a posterior expectation under the
corpus prior computed once per distinct (n, k) pair:

- ``informative``: 1 − silent_i(G), the chance the prompt's group is informative;
- ``knapsack``: Knapsack-RL's Value(G, p_i) = (1 − p^G − (1 − p)^G) p (1 − p)² (Li et al.,
  arXiv:2509.25849, their own allocation);
- ``update``, ``snr``, ``rollouts``: the prompt's expected gain E[c_i(G)] for the advantage estimator and std
  convention (:mod:`sigmaudit.core.update`): its update with every group weighted alike (under the
  rollout-weighted batch mean the optimum would give every rollout to the prompts nearest p = 1/2).

Method: every kept prompt starts at min_g; the remaining budget goes, one rollout at a time,
to the largest marginal gain f_i(G + 1) − f_i(G) over all prompts (sorted once; prompts that
share (n, k) share a curve and are handled as one block). This greedy choice is exact when every
f_i is concave in G; the curves are checked at run time, and should one fail the greedy runs on its
upper concave envelope and reports the largest possible shortfall (``optimality_gap``).

**Prompts the samples cannot place get no budget** (G_i = 0): a prompt never or always solved in its n
samples (k ∈ {0, n}) cannot be told from p ∈ {0, 1} with them (what it would earn is the prior's
extrapolation, not evidence), and a prompt with posterior P(p ∈ {0, 1}) > ``drop_above`` is more likely
unreachable than not. They count 0 in every objective figure, the uniform baseline's too.

``--eps E`` instead gives each kept prompt the exact group size for φ ≥ 1 − ε at its
posterior-mean p (:func:`sigmaudit.core.group_size.group_size_exact`), clipped to [min_g, max_g]:
every kept prompt at that fidelity for the fewest rollouts, not a maximum of the objective. The result
reports, next to the uniform G with the same rollouts, how many prompts each leaves at φ ≥ 1 − ε
(``eps_met``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..errors import ConfigError
from . import check_eps

if TYPE_CHECKING:
    import polars as pl

    from ..core.corpus import Corpus

DROP_RULE = ("no budget for a prompt never or always solved in its samples (k ∈ {{0, n}}: they cannot tell p "
             "from 0 or 1) or with posterior P(p ∈ {{0, 1}}) > {drop_above:g}")
OBJECTIVES = {
    "informative": "maximise Σ_i P(group i informative) = Σ_i (1 − E[silent(p, G_i) | n_i, k_i])",
    "knapsack": "maximise Σ_i E[(1 − p^G_i − (1 − p)^G_i) p (1 − p)² | n_i, k_i] (Knapsack-RL, arXiv:2509.25849)",
    "update": "maximise Σ_i E[c(k, G_i) | n_i, k_i] (each prompt's expected update gain, {conv})",
}
"""The objective maximised, per plan objective (``snr`` and ``rollouts`` use ``update``'s term)."""
METHOD_GREEDY = "greedy on marginal gains (exact over the kept prompts: every curve checked concave in G)"
METHOD_EPS = "per-prompt group-size law: exact G for φ ≥ 1 − ε at the posterior-mean p, clipped to [min-g, max-g]"
OBJECTIVE_EPS = ("every kept prompt at fidelity φ(G_i, p̄_i) ≥ 1 − ε (p̄_i its posterior-mean p) at the fewest "
                 "rollouts: each prompt's own smallest such G; not a maximum of Σ E[σ] (--budget optimises that)")
_CONCAVE_TOL = 1e-13


# ---------------------------------------------------------------- the optimiser (pure, on curves)


def upper_concave_envelope(values: NDArray[np.float64]) -> NDArray[np.float64]:
    """The least concave majorant of the points (t, values[t]), t = 0..L−1, evaluated at each t."""
    L = values.size
    hull: list[int] = []
    for t in range(L):
        while len(hull) >= 2:
            a, b = hull[-2], hull[-1]
            # drop b when it lies on or below the chord from a to t
            if (values[b] - values[a]) * (t - a) <= (values[t] - values[a]) * (b - a):
                hull.pop()
            else:
                break
        hull.append(t)
    return np.interp(np.arange(L), np.asarray(hull, dtype=np.float64), values[hull])


def is_concave(curves: NDArray[np.float64], tol: float = _CONCAVE_TOL) -> NDArray[np.bool_]:
    """Per row: marginal gains non-increasing (up to ``tol``)."""
    if curves.shape[1] < 3:
        return np.ones(curves.shape[0], dtype=bool)
    d = np.diff(curves, axis=1)
    return np.all(d[:, 1:] <= d[:, :-1] + tol, axis=1)


@dataclass(frozen=True)
class GreedyResult:
    """Steps above the base level per curve: ``steps[j]`` for every copy, ``extra[j]`` copies one more."""

    steps: NDArray[np.int64]
    extra: NDArray[np.int64]
    concave: bool
    """Every curve was concave (the allocation is optimal)."""
    gap: float
    """Upper bound on the objective's shortfall from the optimum (0 when concave)."""
    threshold: float
    """Smallest marginal gain bought (the value of the last rollout); 0 when budget is left over."""


def greedy_allocate(curves: NDArray[np.float64], mult: ArrayLike, extra_budget: int) -> GreedyResult:
    """Spend ``extra_budget`` unit steps over curves (rows; column t = value after t steps), ``mult`` copies each.

    Takes the largest marginal gains first (ties: lower row, then fewer steps), skipping gains
    ≤ 0. Exact for concave rows; non-concave rows are replaced by their upper concave envelope and
    the shortfall bound Σ copies × (envelope − value) at the allocation is reported.
    """
    m = np.asarray(mult, dtype=np.int64)
    J, L = curves.shape
    concave_rows = is_concave(curves)
    work = curves.copy()
    for j in np.flatnonzero(~concave_rows):
        work[j] = upper_concave_envelope(curves[j])
    steps = np.zeros(J, dtype=np.int64)
    extra = np.zeros(J, dtype=np.int64)
    threshold = 0.0
    if L > 1 and extra_budget > 0:
        gains = np.diff(work, axis=1)  # (J, L-1)
        jj, tt = np.meshgrid(np.arange(J), np.arange(L - 1), indexing="ij")
        g, jj, tt = gains.ravel(), jj.ravel(), tt.ravel()
        keep = g > 0.0
        g, jj, tt = g[keep], jj[keep], tt[keep]
        order = np.lexsort((tt, jj, -g))
        cost = m[jj[order]]
        cum = np.cumsum(cost)
        n_full = int(np.searchsorted(cum, extra_budget, side="right"))
        taken = order[:n_full]
        np.add.at(steps, jj[taken], 1)
        left = extra_budget - (int(cum[n_full - 1]) if n_full else 0)
        if n_full < order.size and left > 0:
            extra[jj[order[n_full]]] = left
            threshold = float(g[order[n_full]])
        elif n_full < order.size:
            threshold = float(g[order[n_full - 1]]) if n_full else float(g[order[0]])
    gap = 0.0
    if not concave_rows.all():
        idx = np.arange(J)
        lo = (work[idx, steps] - curves[idx, steps]) * (m - extra)
        hi_steps = np.minimum(steps + 1, L - 1)
        hi = (work[idx, hi_steps] - curves[idx, hi_steps]) * extra
        gap = float(np.sum(lo + hi))
    return GreedyResult(steps=steps, extra=extra, concave=bool(concave_rows.all()), gap=gap, threshold=threshold)


# ---------------------------------------------------------------- result objects


@dataclass(frozen=True)
class AllocationStats:
    """Expected figures of one way to spend the rollouts."""

    G: int | None
    """The group size of a uniform allocation; None for a per-prompt allocation."""
    rollouts: int
    """Rollouts per pass over the corpus: Σ G_i."""
    silent_rate: float | None
    """Expected share of the drawn groups that are silent; None when no group is drawn."""
    wasted_rollout_share: float | None
    """Expected share of rollouts in silent groups: Σ G_i s_i / Σ G_i."""
    fidelity: float | None
    """Σ_i f_i(G_i) / Σ_i E[sqrt(p(1−p))] over all prompts (dropped ones deliver 0)."""
    objective_value: float
    """Σ_i f_i(G_i): the ``--budget`` objective (prompts without budget count 0)."""
    eps_met: int | None = None
    """``--eps`` objective: prompts with φ(G_i, p̄_i) ≥ 1 − ε at their posterior-mean p̄_i (None with --budget)."""


@dataclass(frozen=True)
class AllocationResult:
    """A per-prompt allocation, its summary and the uniform-G baseline with the same budget."""

    mode: Literal["budget", "eps"]
    """``budget``: optimise Σ signal under Σ G_i ≤ budget; ``eps``: the per-prompt group-size law."""
    budget: int | None
    """The budget N given (``budget`` mode)."""
    eps: float | None
    """The ε given (``eps`` mode)."""
    min_g: int
    """Smallest group size of a kept prompt."""
    max_g: int
    """Largest group size."""
    objective: str
    """The objective maximised."""
    method: str
    """How: exact greedy, envelope greedy with a gap bound, or the ε law."""
    drop_rule: str
    """Which prompts are dropped."""
    prompts: int
    """Prompts in the corpus."""
    prompts_kept: int
    """Prompts given a group (G_i >= min_g)."""
    prompts_dropped: int
    """Prompts dropped (G_i = 0)."""
    optimality_gap: float
    """Upper bound on the objective's shortfall from the optimum (0: optimal; eps mode: not optimised, 0)."""
    allocated: AllocationStats
    """The per-prompt allocation."""
    uniform: AllocationStats | None
    """The uniform baseline: with --budget every prompt at the best uniform G the budget buys,
    min(budget // prompts, max_g) (None below min_g); with --eps at G = rollouts used // prompts
    (None below 1)."""
    per_prompt: pl.DataFrame = field(repr=False)
    """One row per prompt: prompt, n, k, p_est, p_unreachable, G, silent_rate, fidelity, objective_term, drop."""

    def to_dict(self) -> dict[str, Any]:
        """Summary (the per-prompt rows go to ``--alloc-out``)."""
        from dataclasses import asdict

        return {
            "mode": self.mode, "budget": self.budget, "eps": self.eps, "min_g": self.min_g, "max_g": self.max_g,
            "objective": self.objective, "method": self.method, "drop_rule": self.drop_rule,
            "prompts": self.prompts, "prompts_kept": self.prompts_kept, "prompts_dropped": self.prompts_dropped,
            "optimality_gap": self.optimality_gap,
            "allocated": asdict(self.allocated),
            "uniform": None if self.uniform is None else asdict(self.uniform),
        }


# ---------------------------------------------------------------- the library call


def _stats(G: NDArray[np.int64], f: NDArray[np.float64], sig: NDArray[np.float64], s: NDArray[np.float64],
           den: float, uniform: int | None = None, eps_met: int | None = None) -> AllocationStats:
    """Figures of one allocation: ``f`` the objective term and ``sig`` E[σ] per prompt (0 without budget)."""
    drawn = G > 0
    rollouts = int(G.sum())
    n_drawn = int(drawn.sum())
    return AllocationStats(
        G=uniform,
        rollouts=rollouts,
        silent_rate=float(s[drawn].mean()) if n_drawn else None,
        wasted_rollout_share=float((G * s)[drawn].sum() / rollouts) if rollouts else None,
        fidelity=float(sig.sum() / den) if den > 0 else None,
        objective_value=float(f.sum()),
        eps_met=eps_met,
    )


def _silent_at(corpus: Corpus, pair: NDArray[np.int64], G: NDArray[np.int64]) -> NDArray[np.float64]:
    """Posterior E[silent] for prompts with pair index ``pair`` at group sizes ``G`` (NaN where G = 0)."""
    from ..core.estimators import silent_bayes

    out = np.full(pair.size, np.nan)
    combos = np.unique(np.stack([pair, G], axis=1), axis=0)
    for g in np.unique(combos[:, 1]):
        if g <= 0:
            continue
        js = combos[combos[:, 1] == g, 0]
        vals = silent_bayes(corpus.n[js], corpus.k[js], int(g), corpus.prior, corpus.posterior[js]).silent
        lookup = dict(zip(js.tolist(), vals.tolist(), strict=True))
        sel = G == g
        out[sel] = [lookup[j] for j in pair[sel].tolist()]
    return out


def validate_options(budget: int | None, eps: float | None, min_g: int, max_g: int) -> None:
    """ConfigError for impossible or contradictory allocation options (``location`` names the parameter)."""
    if budget is not None and eps is not None:
        raise ConfigError("budget and eps are alternatives", location="eps",
                          remedy="give one of them (budget optimises; eps applies the group-size law)")
    if min_g < 1:
        raise ConfigError(f"min_g must be at least 1, got {min_g}", location="min_g")
    if min_g > max_g:
        raise ConfigError(f"min_g {min_g} is larger than max_g {max_g}", location="min_g")
    from .arguments import MAX_PLAN_G

    if max_g > MAX_PLAN_G:  # the allocation's sums cost time in proportion to G (issue 44: 1e8 ran unbounded)
        raise ConfigError(f"max_g {max_g:,} is above {MAX_PLAN_G:,}, the largest G plan evaluates", location="max_g",
                          remedy=f"give max_g at most {MAX_PLAN_G:,}")
    if eps is not None:
        check_eps(eps)
    if budget is not None and budget < 1:
        raise ConfigError(f"budget must be at least 1, got {budget}", location="budget",
                          remedy="give rollouts per pass")


def per_prompt_curves(corpus: Corpus, Gs: Sequence[int], objective: str = "update", advantage: str = "grpo",
                      std: str = "sample") -> NDArray[np.float64]:
    """f_j(G) per distinct pair (rows) and G of ``Gs`` (columns): the objective's per-prompt term (module
    docstring), a posterior expectation under the corpus prior."""
    from ..core.knapsack import knapsack_value
    from ..core.update import gain_tables, informative_chance

    grid = corpus.prior.grid
    G = [int(g) for g in Gs]
    if objective == "informative":
        table = informative_chance(grid, G)
    elif objective == "knapsack":
        table = np.asarray(knapsack_value(grid[:, None], np.asarray(G)[None, :]), dtype=np.float64)
    else:
        table = gain_tables(grid, G, advantage, std)[0]  # type: ignore[arg-type]
    return corpus.posterior @ table


def allocate(
    corpus: Corpus,
    prompts: Sequence[Any] | NDArray[Any],
    *,
    budget: int | None = None,
    eps: float | None = None,
    min_g: int = 2,
    max_g: int = 256,
    objective: str = "update",
    drop_above: float = 0.5,
    advantage: str = "grpo",
    std: str = "sample",
) -> AllocationResult:
    """Allocate per-prompt group sizes (see the module docstring); ``prompts`` are the ids of the
    corpus's prompts, in the order its counts were given (:attr:`Corpus.index`).

    Raises ConfigError when the options contradict each other or the budget cannot give every
    kept prompt ``min_g`` rollouts (prompts without budget need none).
    """
    validate_options(budget, eps, min_g, max_g)
    if budget is None and eps is None:
        raise ConfigError("nothing to allocate", location="budget", remedy="give budget or eps")
    pair = corpus.index
    ids = np.asarray(prompts, dtype=object)
    if ids.size != pair.size:
        raise ValueError(f"allocate: {ids.size} prompt ids for {pair.size} counts")
    Gs = np.arange(min_g, max_g + 1)
    key = objective if objective in OBJECTIVES else "update"
    curves = per_prompt_curves(corpus, Gs, key, advantage, std)  # (pairs, L): f_j(G)
    p_est = corpus.posterior_mean_p()
    at0, at1 = corpus.unreachable_parts()
    p_unreach = at0 + at1
    drop_pair = (corpus.k == 0) | (corpus.k == corpus.n) | (p_unreach > drop_above)
    if eps is not None:
        G, gap, method = _eps_sizes(p_est, drop_pair, pair, eps, min_g, max_g), 0.0, METHOD_EPS
    else:
        assert budget is not None
        G, gap, method = _budget_sizes(curves, drop_pair, pair, budget, min_g)
    conv = advantage if advantage != "grpo" else f"grpo, {std} std"
    return _result(corpus, ids, G, curves, p_est, p_unreach, drop_pair, budget=budget, eps=eps, min_g=min_g,
                   max_g=max_g, gap=gap, method=method, objective=OBJECTIVES[key].format(conv=conv),
                   drop_rule=DROP_RULE.format(drop_above=drop_above))


def _eps_sizes(p_est: NDArray[np.float64], drop_pair: NDArray[np.bool_], pair: NDArray[np.int64], eps: float,
               min_g: int, max_g: int) -> NDArray[np.int64]:
    """--eps: each kept prompt at the exact group size for φ ≥ 1 − ε at its posterior-mean p."""
    from ..core.group_size import group_size_exact

    g_law = np.asarray(group_size_exact(np.clip(p_est, 1e-300, 1.0), eps), dtype=np.float64).reshape(-1)
    g_law = np.where(np.isnan(g_law), max_g, g_law)
    g_pair = np.clip(g_law, min_g, max_g).astype(np.int64)
    return np.where(drop_pair[pair], 0, g_pair[pair])


def _budget_sizes(curves: NDArray[np.float64], drop_pair: NDArray[np.bool_], pair: NDArray[np.int64],
                  budget: int, min_g: int) -> tuple[NDArray[np.int64], float, str]:
    """--budget: the greedy on marginal gains over the prompts with budget; (G per prompt, gap, method)."""
    mult = np.bincount(pair, minlength=curves.shape[0]).astype(np.int64)
    kept_mult = np.where(drop_pair, 0, mult)
    n_kept = int(kept_mult.sum())
    need = n_kept * min_g
    if budget < need:
        raise ConfigError(
            f"budget {budget} is below {need} = {n_kept} prompts with budget × min_g {min_g} "
            f"({int(mult.sum()) - n_kept} prompts the samples cannot place need none)",
            location="budget", remedy=f"give budget >= {need} or a smaller min_g")
    res = greedy_allocate(curves, kept_mult, budget - need)
    method = METHOD_GREEDY if res.concave else (
        f"greedy on the upper concave envelope (some curve not concave; within {res.gap:.3g} of the optimum)")
    # copies of pair j: the first extra[j] (in input order) take one more step
    G = np.where(drop_pair[pair], 0, (min_g + res.steps)[pair])
    for j in np.flatnonzero(res.extra):
        members = np.flatnonzero((pair == j) & ~drop_pair[pair])
        G[members[: int(res.extra[j])]] += 1
    return G, res.gap, method


def _eps_met(Gv: NDArray[np.int64], p_i: NDArray[np.float64], eps: float | None) -> int | None:
    """Prompts at φ(G_i, p̄_i) ≥ 1 − ε (the --eps objective); None with --budget."""
    if eps is None:
        return None
    from ..core.fidelity import fidelity as phi_at

    ok = (Gv > 0) & (p_i > 0) & (p_i < 1)
    vals = np.zeros(Gv.size)
    if ok.any():
        vals[ok] = np.asarray(phi_at(p_i[ok], Gv[ok]), dtype=np.float64)
    return int(np.sum(vals >= 1.0 - eps - 1e-12))


def _result(corpus: Corpus, ids: NDArray[Any], G: NDArray[np.int64], curves: NDArray[np.float64],
            p_est: NDArray[np.float64], p_unreach: NDArray[np.float64], drop_pair: NDArray[np.bool_], *,
            budget: int | None, eps: float | None, min_g: int, max_g: int, gap: float, method: str, objective: str,
            drop_rule: str) -> AllocationResult:
    """The allocation's summary against uniform G, and its per-prompt rows."""
    import polars as pl

    pair = corpus.index
    n_all = pair.size
    kept = G > 0
    sig_tab = corpus.posterior_sigma(np.arange(min_g, max_g + 1))
    f = np.zeros(n_all)
    sig = np.zeros(n_all)
    f[kept] = curves[pair[kept], G[kept] - min_g]
    sig[kept] = sig_tab[pair[kept], G[kept] - min_g]
    s = _silent_at(corpus, pair, G)
    sd_i = corpus.posterior_sd()[pair]
    with np.errstate(divide="ignore", invalid="ignore"):
        phi = np.where(kept & (sd_i > 0), sig / np.where(sd_i > 0, sd_i, 1.0), np.nan)
    den = float(sd_i.sum())
    p_i = p_est[pair]
    allocated = _stats(G, f, sig, np.nan_to_num(s), den, eps_met=_eps_met(G, p_i, eps))
    uniform = None
    # --budget: every prompt at the largest uniform G the budget buys (within max-g); --eps: the uniform G
    # with the rollouts the allocation used. Prompts the samples cannot place count 0 there too.
    g_u = min(budget // n_all, max_g) if budget is not None else allocated.rollouts // n_all
    if budget is not None and g_u < min_g:
        g_u = 0  # no uniform G within [min-g, max-g] fits the budget
    if g_u >= 1:
        G_u = np.full(n_all, g_u)
        placed = ~drop_pair[pair]
        inside = min_g <= g_u <= max_g
        f_u = np.where(placed, curves[pair, g_u - min_g], 0.0) if inside else np.zeros(n_all)
        sig_u = np.where(placed, corpus.posterior_sigma([g_u])[:, 0][pair], 0.0)
        uniform = _stats(G_u, f_u, sig_u, _silent_at(corpus, pair, G_u), den, uniform=g_u,
                         eps_met=_eps_met(G_u, p_i, eps))
    frame = pl.DataFrame({
        "prompt": [str(x) for x in ids.tolist()],
        "n": corpus.n[pair],
        "k": corpus.k[pair],
        "p_est": p_i,
        "p_unreachable": p_unreach[pair],
        "G": G,
        "silent_rate": s,
        "fidelity": np.clip(phi, 0.0, 1.0),
        "objective_term": f,
        "drop": ~kept,
    }).with_columns(pl.col("silent_rate", "fidelity").fill_nan(None))
    return AllocationResult(
        mode="eps" if eps is not None else "budget", budget=budget, eps=eps, min_g=min_g, max_g=max_g,
        objective=objective if eps is None else OBJECTIVE_EPS, method=method, drop_rule=drop_rule,
        prompts=n_all,
        prompts_kept=int(kept.sum()), prompts_dropped=int((~kept).sum()), optimality_gap=gap,
        allocated=allocated, uniform=uniform, per_prompt=frame,
    )
