"""What G buys at a fixed rollout budget R per step, and which G to recommend (``plan``).

docs/theory.md, "Choosing G at a fixed rollout budget". A step of R rollouts holds N = ⌊R/G⌋ prompts
(N·G ≤ R < (N + 1)·G). For the advantage estimator (``--advantage``) and std convention (``--std``) the
trainer uses:

- **the step's signal-to-noise ratio** (the default, :func:`choose_snr`), with between-prompt and per-rollout
  noise: SNR²(G) ∝ N·m1² / (m2 + λ·ma/G), m1, m2, ma the corpus means of E[c], E[c²], E[a]
  (:func:`sigmaudit.core.update.snr_moments`), λ = τ²/ν² set by the between-prompt share f at a reference G₀
  (:class:`Band`). The flat range F is the G within ``--tolerance`` of the best SNR for every f of the band;
  the run's G is kept when in F, else the member of F nearest to it (:func:`snr_rule`);
- views (``--objective``), each recommending the smallest G within τ of its best (:func:`recommend`):
  ``informative`` (informative groups, N · (1 − silent(G))), ``rollouts`` (rollouts inside informative
  groups, N · G · (1 − silent(G))), ``knapsack`` (Knapsack-RL's value, N · mean_i E[(1 − p^G − (1 − p)^G)
  p (1 − p)²]).

The expected update size m1 (``update``) is the step size under SGD at a fixed learning rate: shown, never
an objective (AdamW, verl's and TRL's default, divides a constant rescaling out).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

import numpy as np
from numpy.typing import NDArray

if TYPE_CHECKING:
    from ..core.corpus import Corpus
    from ..core.update import Advantage, StdConvention

ObjectiveName = Literal["snr", "informative", "rollouts", "knapsack"]
OBJECTIVE_NAMES: tuple[ObjectiveName, ...] = ("snr", "informative", "rollouts", "knapsack")
DEFAULT_OBJECTIVE: ObjectiveName = "snr"
DEFAULT_TOLERANCE = 0.05
"""``--tolerance``: the share of the best a user accepts to give up (a user default, docs/theory.md)."""
DEFAULT_REFERENCE_G = 8
"""The G a price is stated against when the log has no groups, and the band's reference G₀."""
DEFAULT_SHARES: tuple[float, ...] = (0.02, 0.05, 0.1, 0.2)
"""The default band of between-prompt shares f at G₀ = :data:`DEFAULT_REFERENCE_G` (a default, not a
measurement: ``--between-prompt-share`` replaces it)."""
DENSE_UP_TO = 64
"""Every whole G from 2 to this is searched; beyond, the geometric grid."""
GRID_RATIO = 2.0 ** (1.0 / 16.0)
"""Ratio between neighbouring searched G past :data:`DENSE_UP_TO` (at most 4.4 % apart)."""
DENSIFY_BUDGET = 400_000
"""Σ G of the whole numbers evaluated to make the flat range's ends exact (each costs O(G) per grid point);
past it a range is stated on the searched grid and says so."""


@dataclass(frozen=True)
class Objective:
    """One objective's meaning."""

    name: str
    """``snr``, ``informative``, ``rollouts`` or ``knapsack``."""
    noun: str
    """What it counts per step, in words."""
    definition: str
    """Its formula."""


OBJECTIVES: dict[str, Objective] = {
    "snr": Objective("snr", "step SNR",
                     "sqrt(N · m1² / (m2 + λ·ma/G)): between-prompt and per-rollout noise, units |Δμ|/ν"),
    "update": Objective("update", "step size under SGD at a fixed learning rate",
                        "m1 = mean_i E[c(k, G) | p_i]: the batch-mean update in units of a prompt's Δs (not an "
                        "objective: AdamW divides a constant rescaling out)"),
    "informative": Objective("informative", "informative groups per step (a view: counts groups, not the step's SNR)",
                             "N · (1 − silent(G))"),
    "rollouts": Objective("rollouts", "rollouts in informative groups per step (a view: counts rollouts, not the "
                                      "step's SNR)", "N · G · (1 − silent(G))"),
    "knapsack": Objective("knapsack", "Knapsack-RL value per step (a view: Knapsack-RL's per-prompt value)",
                          "N · mean_i E[(1 − p^G − (1 − p)^G) · p(1 − p)²] (arXiv:2509.25849)"),
}


@dataclass(frozen=True)
class Band:
    """The between-prompt shares f the rule must hold for, at the reference G₀ (docs/theory.md)."""

    shares: tuple[float, ...] = DEFAULT_SHARES
    """f values, each in (0, 1]."""
    G_ref: int = DEFAULT_REFERENCE_G
    """G₀: the G each f was measured at."""
    given: bool = False
    """``--between-prompt-share`` set it (False: the default band)."""

    def describe(self) -> str:
        """``2–20 % at G = 8`` or ``10 % at G = 16``."""
        lo, hi = min(self.shares), max(self.shares)
        span = _pct(lo) if lo == hi else f"{100 * lo:.3g}–{_pct(hi)}"
        return f"{span} at G = {self.G_ref:,}"


def _pct(x: float) -> str:
    return f"{100 * x:.3g}%"


def prompts_per_step(R: int, G: NDArray[np.int64]) -> NDArray[np.int64]:
    """N = ⌊R / G⌋."""
    return np.asarray(R, dtype=np.int64) // np.asarray(G, dtype=np.int64)


def search_grid(G_end: int, extra: Sequence[int] = ()) -> list[int]:
    """Every whole G in [2, min(G_end, 64)], then G rounded from a geometric grid of ratio 2^(1/16) up
    to ``G_end`` (included), plus ``extra`` within [1, G_end]; sorted, distinct. (:func:`choose` adds, for
    each, the largest G with the same N = ⌊R/G⌋: the G that spends the most of the budget for that N.)"""
    out = set(range(2, min(int(G_end), DENSE_UP_TO) + 1))
    g = float(DENSE_UP_TO)
    while g < G_end:
        g *= GRID_RATIO
        out.add(min(int(round(g)), int(G_end)))
    out.add(int(G_end))
    out.update(int(x) for x in extra if 1 <= int(x) <= G_end)
    return sorted(out)


# ---------------------------------------------------------------- values per G


@dataclass(frozen=True)
class Curves:
    """Every objective at each G of ``G`` for a budget of ``R`` rollouts per step."""

    G: NDArray[np.int64]
    N: NDArray[np.int64]
    silent: NDArray[np.float64]
    """Silent share by the estimator rule (NaN where undefined)."""
    silent_used: tuple[str, ...]
    """Estimator behind each silent share."""
    values: dict[str, NDArray[np.float64]]
    """Objective name (and ``update``) -> value per G."""
    replicates: dict[str, NDArray[np.float64]]
    """Objective name -> (replicates, G) bootstrap values (no rows without replicates)."""
    moments: dict[str, NDArray[np.float64]]
    """``m1``, ``m2``, ``ma`` per G: the corpus means of E[c], E[c²], E[a] (the SNR's moments)."""

    def snr(self, noise_ratio: float) -> NDArray[np.float64]:
        """The step's SNR per G at λ = ``noise_ratio`` (units |Δμ|/ν; 0 where no prompt fits a step)."""
        from ..core.update import step_snr

        m = self.moments
        return step_snr(m["m1"], m["m2"], m["ma"], self.N, self.G, noise_ratio)

    def at(self, name: str, G: int) -> float | None:
        """The objective at G (None where undefined or G not evaluated)."""
        idx = np.flatnonzero(self.G == G)
        if not idx.size:
            return None
        v = float(self.values[name][idx[0]])
        return v if np.isfinite(v) else None

    def interval(self, name: str, G: int, level: float) -> tuple[float, float] | None:
        """Percentile interval of the bootstrap replicates at G."""
        reps = self.replicates.get(name)
        idx = np.flatnonzero(self.G == G)
        if reps is None or reps.shape[0] == 0 or not idx.size:
            return None
        col = reps[:, idx[0]]
        col = col[np.isfinite(col)]
        if col.size == 0:
            return None
        return float(np.quantile(col, (1 - level) / 2)), float(np.quantile(col, (1 + level) / 2))


def _means(tables: dict[str, NDArray[np.float64]], weights: NDArray[np.float64]) -> dict[str, NDArray[np.float64]]:
    """Weighted means over rows: ``weights`` (rows,) or (replicates, rows)."""
    w = np.atleast_2d(weights)
    tot = w.sum(axis=1, keepdims=True)
    return {k: (w @ t) / tot for k, t in tables.items()}


def _combine(m: dict[str, NDArray[np.float64]], silent: NDArray[np.float64], G: NDArray[np.int64],
             N: NDArray[np.int64]) -> dict[str, NDArray[np.float64]]:
    """The objectives from the per-G means (rows: point or replicates)."""
    Gf, Nf = G.astype(np.float64), N.astype(np.float64)
    kept = 1.0 - silent
    return {"update": m["c"], "informative": Nf * kept, "rollouts": Nf * Gf * kept, "knapsack": Nf * m["v"]}


def evaluate(corpus: Corpus, Gs: Sequence[int], R: int, *, advantage: Advantage = "grpo",
             std: StdConvention = "sample", estimator: str = "auto", replicates: int = 0,
             weights: NDArray[np.float64] | None = None, with_silent: bool = True) -> Curves:
    """Every objective and the SNR's moments at each G of ``Gs`` (whole numbers ≥ 1) for R rollouts per step;
    with ``weights`` (one multiplicity per distinct pair, e.g. 0 for dropped prompts) over those prompts only,
    the prior and the posteriors staying the corpus's. The silent share uses one estimator for every G of
    ``Gs`` (:func:`sigmaudit.core.estimates.sweep_estimator`); ``with_silent`` False leaves it (and the views
    built on it) NaN: the SNR's moments alone, at a G the logs need not identify."""
    from ..core.estimates import sweep_estimator
    from ..core.knapsack import knapsack_value
    from ..core.update import snr_moments

    G = np.asarray(sorted({int(g) for g in Gs}), dtype=np.int64)
    N = prompts_per_step(R, G)
    plugin = estimator == "plugin"
    rule = sweep_estimator(estimator, [int(g) for g in G], corpus.min_samples)  # type: ignore[arg-type]
    p = corpus.p_hat if plugin else corpus.prior.grid
    c_tab, c2_tab, a_tab = snr_moments(p, [int(g) for g in G], advantage, std)
    tables = {"c": c_tab, "c2": c2_tab, "a": a_tab,
              "v": np.asarray(knapsack_value(p[:, None], np.maximum(G, 1)[None, :]), dtype=np.float64)}
    if not with_silent:
        nan = np.full(G.size, np.nan)
        mix = corpus.weight if plugin else corpus.mixture
        means = {k: v[0] for k, v in _means(tables, mix).items()}
        return Curves(G=G, N=N, silent=nan, silent_used=("none",) * G.size, values=_combine(means, nan, G, N),
                      replicates={}, moments={"m1": means["c"], "m2": means["c2"], "ma": means["a"]})
    est = corpus.estimates(["silent_rate"], [int(g) for g in G], rule,  # type: ignore[arg-type]
                           replicates=replicates if weights is None else 0)
    used = tuple(est.used("silent_rate", int(g)) for g in G)
    if weights is None:
        sil = np.array([np.nan if (v := est.value("silent_rate", int(g))) is None else v for g in G])
        mix = corpus.weight if plugin else corpus.mixture
    else:
        sil = _silent_of(corpus, G, used, weights)
        mix = weights if plugin else weights @ corpus.posterior
    means = {k: v[0] for k, v in _means(tables, mix).items()}
    point = _combine(means, sil, G, N)
    reps: dict[str, NDArray[np.float64]] = {}
    if replicates > 0 and weights is None:
        r = corpus.replicates(replicates)
        idx = [est.index("silent_rate", int(g)) for g in G]
        reps = _combine(_means(tables, r.draws if plugin else r.mixtures), est.replicates[:, idx], G, N)
    return Curves(G=G, N=N, silent=sil, silent_used=used, values=point, replicates=reps,
                  moments={"m1": means["c"], "m2": means["c2"], "ma": means["a"]})


def _silent_of(corpus: Corpus, G: NDArray[np.int64], used: Sequence[str], weights: NDArray[np.float64]
               ) -> NDArray[np.float64]:
    """The silent share of the prompts weighted by ``weights``, each G by its estimator."""
    from ..core.estimators import silent_estimate

    out = np.full(G.size, np.nan)
    tot = float(weights.sum())
    for i, (g, est) in enumerate(zip(G.tolist(), used, strict=True)):
        if tot <= 0 or (est == "unbiased" and corpus.min_samples < g):
            continue
        s = silent_estimate(corpus.n, corpus.k, g, est, corpus.prior if est == "bayes" else None).silent  # type: ignore[arg-type]
        out[i] = float(np.asarray(s, dtype=np.float64) @ weights / tot)
    return out


# ---------------------------------------------------------------- the rule


@dataclass(frozen=True)
class CurvePoint:
    """One searched G."""

    G: int
    """Group size."""
    prompts_per_step: int
    """N = ⌊R/G⌋."""
    value: float
    """The objective."""
    of_best: float | None
    """``value`` over the best value of the search (None when the best is 0)."""


@dataclass(frozen=True)
class ObjectiveChoice:
    """A view's G (``--objective informative|rollouts|knapsack``), the curve it read and how flat it is."""

    name: str
    """The objective (``--objective``)."""
    noun: str
    """What it counts, in words."""
    definition: str
    """Its formula."""
    advantage: str
    """``--advantage``: grpo, drgrpo or rloo."""
    std: str
    """``--std``: sample or population (GRPO only)."""
    tolerance: float
    """``--tolerance`` τ."""
    rollouts_per_step: int
    """R."""
    G_end: int
    """The largest G searched: every G that fits a step, min(R, 65,536)."""
    searched: int
    """How many G were evaluated."""
    recommended_G: int | None
    """G* (None when no G ≥ 2 gives the objective anything)."""
    best_G: int | None
    """The searched G with the best value (the smallest among ties)."""
    within_lo: int | None
    """Smallest searched G within τ of the best (the flat range's start)."""
    within_hi: int | None
    """Largest searched G within τ of the best (the flat range's end)."""
    flat: bool
    """Every searched G ≥ 2 is within τ of the best."""
    rising_at_end: bool
    """The best is at the search's end (R, or the cap): the objective still rises where no larger G fits."""
    loss_below: tuple[float, float] | None
    """(smallest, largest) loss against the best of the searched G below ``within_lo`` (None: none below)."""
    curve: tuple[CurvePoint, ...]
    """The objective at the G shown (the sweep's, the logged and the marked ones)."""
    rule: str | None = None
    """The rule in words, written by :func:`sigmaudit.views.plan.worded`."""


def _bisect(lo: int, hi: int, ok: Callable[[int], bool]) -> int:
    """Smallest whole G in (lo, hi] with ok(G), given ok(hi) and not ok(lo)."""
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if ok(mid):
            hi = mid
        else:
            lo = mid
    return hi


def _best(values: NDArray[np.float64]) -> tuple[int | None, float]:
    """(index of the largest finite value, the value); (None, 0) when none is positive."""
    v = np.nan_to_num(values, nan=-np.inf)
    if not np.isfinite(v).any() or v.max() <= 0.0:
        return None, 0.0
    i = int(np.argmax(v))
    return i, float(v[i])


def recommend(curves: Curves, name: str, tolerance: float) -> tuple[int | None, int | None]:
    """(G*, the best G) of a view on ``curves`` (G ≥ 2 only): the smallest searched G with
    f(G) ≥ (1 − τ) max f (the per-step views jump with ⌊R/G⌋, so G* is a searched G)."""
    keep = curves.G >= 2
    G, f = curves.G[keep], curves.values[name][keep]
    best_i, best = _best(f)
    if best_i is None:
        return None, None
    ok = np.nan_to_num(f, nan=-np.inf) >= (1.0 - tolerance) * best
    return int(G[int(np.flatnonzero(ok)[0])]), int(G[best_i])


def flatness(curves: Curves, name: str, tolerance: float) -> dict[str, object]:
    """The range of searched G within τ of the best, and what the G below that range lose against the best."""
    keep = curves.G >= 2
    G, f = curves.G[keep], curves.values[name][keep]
    best_i, best = _best(f)
    if best_i is None:
        return {"within_lo": None, "within_hi": None, "flat": False, "rising_at_end": False, "loss_below": None}
    within = np.flatnonzero(np.nan_to_num(f, nan=-np.inf) >= (1.0 - tolerance) * best)
    lo, hi = int(G[within[0]]), int(G[within[-1]])
    below = f[G < lo]
    loss = None if below.size == 0 else (float(1.0 - below.max() / best), float(1.0 - below.min() / best))
    end_i = G.size - 1
    return {"within_lo": lo, "within_hi": hi, "flat": bool(within.size == G.size),
            "rising_at_end": bool(best_i == end_i and G.size > 1 and f[end_i] > f[end_i - 1] * (1 + 1e-9)),
            "loss_below": loss}


def full_grid(R: int, end: int, extra: Sequence[int] = ()) -> list[int]:
    """:func:`search_grid` up to ``end`` with ``extra``, plus for each G the largest G with the same
    N = ⌊R/G⌋ (the G that spends the most of the budget for that N)."""
    base = search_grid(end, extra)
    return sorted({*base, *(min(end, int(R) // (int(R) // g)) for g in base if g <= R)})


def choose(corpus: Corpus, name: str, R: int, G_end: int, *, advantage: Advantage = "grpo",
           std: StdConvention = "sample", estimator: str = "auto", tolerance: float = DEFAULT_TOLERANCE,
           shown: Sequence[int] = ()) -> tuple[ObjectiveChoice, Curves]:
    """A view's G: search G in [2, G_end] (:func:`full_grid`) and recommend one by :func:`recommend`."""
    end = max(2, min(int(G_end), int(R)))
    grid = full_grid(R, end, shown)
    curves = evaluate(corpus, grid, R, advantage=advantage, std=std, estimator=estimator)
    rec, best_G = recommend(curves, name, tolerance)
    flat = flatness(curves, name, tolerance)
    f = curves.values[name]
    best = (curves.at(name, best_G) or 0.0) if best_G is not None else 0.0
    marks = {int(g) for g in (*shown, rec, best_G, flat["within_lo"], flat["within_hi"]) if g is not None}
    curve = tuple(CurvePoint(G=int(g), prompts_per_step=int(n), value=float(v),
                             of_best=float(v / best) if best > 0 else None)
                  for g, n, v in zip(curves.G, curves.N, f, strict=True) if int(g) in marks)
    obj = OBJECTIVES[name]
    choice = ObjectiveChoice(
        name=name, noun=obj.noun, definition=obj.definition, advantage=advantage,
        std=std if advantage == "grpo" else "n/a", tolerance=float(tolerance), rollouts_per_step=int(R),
        G_end=end, searched=len(grid), recommended_G=rec, best_G=best_G,
        within_lo=flat["within_lo"], within_hi=flat["within_hi"], flat=bool(flat["flat"]),  # type: ignore[arg-type]
        rising_at_end=bool(flat["rising_at_end"]), loss_below=flat["loss_below"], curve=curve,  # type: ignore[arg-type]
    )
    return choice, curves


def merge(a: Curves, b: Curves) -> Curves:
    """The union of two evaluations (same R, same conventions), sorted by G, without replicates."""
    G = np.concatenate([a.G, b.G])
    order = np.argsort(G, kind="stable")
    return Curves(G=G[order], N=np.concatenate([a.N, b.N])[order],
                  silent=np.concatenate([a.silent, b.silent])[order],
                  silent_used=tuple(np.array(a.silent_used + b.silent_used, dtype=object)[order].tolist()),
                  values={k: np.concatenate([a.values[k], b.values[k]])[order] for k in a.values}, replicates={},
                  moments={k: np.concatenate([a.moments[k], b.moments[k]])[order] for k in a.moments})
