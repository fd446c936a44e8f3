"""What G buys at a fixed rollout budget R per step, and which G to recommend (``plan --objective``).

docs/theory.md, "Choosing G at a fixed rollout budget". A step of R rollouts holds N = ⌊R/G⌋ prompts
(N·G ≤ R < (N + 1)·G). Per step, for the advantage estimator (``--advantage``) and std convention
(``--std``) the trainer uses:

- ``informative``: informative groups, N · (1 − silent(G)) (silent share by the sweep's estimator rule);
- ``rollouts``: rollouts inside informative groups, N · G · (1 − silent(G));
- ``update``: the expected update size of the step under the batch-mean loss, mean_i E[c(k, G) | p_i]
  (:mod:`sigmaudit.core.update`; independent of N);
- ``snr``: the update's signal-to-noise ratio under per-rollout score noise,
  mean E[c] · sqrt(N·G) / sqrt(mean E[a]) (units |Δμ|/τ);
- ``knapsack``: Knapsack-RL's value, N · mean_i E[(1 − p^G − (1 − p)^G) p (1 − p)²].

``update``, ``snr`` and ``knapsack`` are posterior expectations under the corpus prior (at p̂ with
``--estimator plugin``). Each carries bootstrap replicates (each refits the prior) for its intervals.

**The rule** (:func:`recommend`), tolerance τ: the default ``update`` recommends the smallest G whose
update is within τ of the best update among the G whose SNR is within τ of the best SNR; any other
objective f recommends the smallest G with f(G) ≥ (1 − τ) max f. The search covers every whole G from 2
to 64 and a geometric grid (ratio 2^(1/16)) beyond, to the sweep's end, then bisects on whole numbers
where the rule's threshold is crossed (:func:`search_grid`).
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

ObjectiveName = Literal["update", "snr", "informative", "rollouts", "knapsack"]
OBJECTIVE_NAMES: tuple[ObjectiveName, ...] = ("update", "snr", "informative", "rollouts", "knapsack")
DEFAULT_OBJECTIVE: ObjectiveName = "update"
DEFAULT_TOLERANCE = 0.05
"""``--tolerance``: a G within 5 % of the best is as good (docs/theory.md gives the reason)."""
DEFAULT_REFERENCE_G = 8
"""The G a price is stated against when the log has no groups."""
DENSE_UP_TO = 64
"""Every whole G from 2 to this is searched; beyond, the geometric grid."""
GRID_RATIO = 2.0 ** (1.0 / 16.0)
"""Ratio between neighbouring searched G past :data:`DENSE_UP_TO` (at most 4.4 % apart)."""


@dataclass(frozen=True)
class Objective:
    """One objective's meaning."""

    name: str
    """``update``, ``snr``, ``informative``, ``rollouts`` or ``knapsack``."""
    noun: str
    """What it counts per step, in words."""
    definition: str
    """Its formula."""


OBJECTIVES: dict[str, Objective] = {
    "update": Objective("update", "expected update per step",
                        "mean_i E[c(k, G) | p_i]: the batch-mean update in units of a prompt's Δs"),
    "snr": Objective("snr", "update SNR",
                     "mean E[c] · sqrt(N·G) / sqrt(mean E[a]): per-rollout score noise, units |Δμ|/τ"),
    "informative": Objective("informative", "informative groups per step", "N · (1 − silent(G))"),
    "rollouts": Objective("rollouts", "rollouts in informative groups per step", "N · G · (1 − silent(G))"),
    "knapsack": Objective("knapsack", "Knapsack-RL value per step",
                          "N · mean_i E[(1 − p^G − (1 − p)^G) · p(1 − p)²] (arXiv:2509.25849)"),
}


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
    """Objective name -> value per G."""
    replicates: dict[str, NDArray[np.float64]]
    """Objective name -> (replicates, G) bootstrap values (no rows without replicates)."""

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
    with np.errstate(divide="ignore", invalid="ignore"):
        snr = np.where(m["a"] > 0, m["c"] * np.sqrt(Nf * Gf) / np.sqrt(m["a"]), 0.0)
    kept = 1.0 - silent
    return {"update": m["c"], "snr": np.where(Nf > 0, snr, 0.0), "informative": Nf * kept,
            "rollouts": Nf * Gf * kept, "knapsack": Nf * m["v"]}


def evaluate(corpus: Corpus, Gs: Sequence[int], R: int, *, advantage: Advantage = "grpo",
             std: StdConvention = "sample", estimator: str = "auto", replicates: int = 0,
             weights: NDArray[np.float64] | None = None) -> Curves:
    """Every objective at each G of ``Gs`` (whole numbers ≥ 1) for R rollouts per step; with ``weights``
    (one multiplicity per distinct pair, e.g. 0 for dropped prompts) over those prompts only, the prior and
    the posteriors staying the corpus's, and the silent share by the estimator the whole corpus uses at G."""
    from ..core.knapsack import knapsack_value
    from ..core.update import gain_tables

    G = np.asarray(sorted({int(g) for g in Gs}), dtype=np.int64)
    N = prompts_per_step(R, G)
    plugin = estimator == "plugin"
    p = corpus.p_hat if plugin else corpus.prior.grid
    c_tab, a_tab = gain_tables(p, [int(g) for g in G], advantage, std)
    tables = {"c": c_tab, "a": a_tab,
              "v": np.asarray(knapsack_value(p[:, None], np.maximum(G, 1)[None, :]), dtype=np.float64)}
    est = corpus.estimates(["silent_rate"], [int(g) for g in G], estimator,  # type: ignore[arg-type]
                           replicates=replicates if weights is None else 0)
    used = tuple(est.used("silent_rate", int(g)) for g in G)
    if weights is None:
        sil = np.array([np.nan if (v := est.value("silent_rate", int(g))) is None else v for g in G])
        mix = corpus.weight if plugin else corpus.mixture
    else:
        sil = _silent_of(corpus, G, used, weights)
        mix = weights if plugin else weights @ corpus.posterior
    point = _combine({k: v[0] for k, v in _means(tables, mix).items()}, sil, G, N)
    reps: dict[str, NDArray[np.float64]] = {}
    if replicates > 0 and weights is None:
        r = corpus.replicates(replicates)
        idx = [est.index("silent_rate", int(g)) for g in G]
        reps = _combine(_means(tables, r.draws if plugin else r.mixtures), est.replicates[:, idx], G, N)
    return Curves(G=G, N=N, silent=sil, silent_used=used, values=point, replicates=reps)


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
    snr_of_best: float | None
    """The SNR over the best SNR of the search (the default rule's guard)."""


@dataclass(frozen=True)
class ObjectiveChoice:
    """The G the rule recommends, the curve it read and how flat it is."""

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
    """How many G were evaluated (the grid plus the bisection)."""
    recommended_G: int | None
    """G* (None when no G ≥ 2 gives the objective anything)."""
    best_G: int | None
    """The searched G with the best value (the smallest among ties)."""
    best_snr_G: int | None
    """The searched G with the best SNR."""
    guarded: bool
    """The default rule: the candidates were the G with SNR within τ of its best."""
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
    snr_within: tuple[int, int] | None
    """Smallest and largest searched G whose SNR is within τ of the best SNR (None: no SNR anywhere)."""
    curve: tuple[CurvePoint, ...]
    """The objective at the G shown (the sweep's, the logged and the marked ones)."""
    rule: str | None = None
    """The rule in words, written by :func:`sigmaudit.views.plan.worded`."""


def threshold_first(values: NDArray[np.float64], limit: float) -> int | None:
    """Index of the first value ≥ limit (None when none is)."""
    hit = np.flatnonzero(np.nan_to_num(values, nan=-np.inf) >= limit)
    return int(hit[0]) if hit.size else None


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


def recommend(curves: Curves, name: str, tolerance: float, refine: Callable[[int], Curves] | None = None
              ) -> tuple[int | None, dict[str, object]]:
    """G* by the rule of the module docstring, on ``curves`` (G ≥ 2 only), and the rule's facts. For ``update``
    (a mean over prompts, free of N's rounding, and rising in G) the whole numbers between the grid point
    failing and the first passing are bisected with ``refine`` (G -> curves at that G alone); the objectives
    per step jump with ⌊R/G⌋, so for them G* is the smallest searched G."""
    keep = curves.G >= 2
    G = curves.G[keep]
    f = curves.values[name][keep]
    guarded = name == "update"
    best_snr_i, best_snr = _best(curves.values["snr"][keep])
    cand = _candidates(curves, name, tolerance)
    best_i, best = _best(np.where(cand, f, -np.inf))
    facts: dict[str, object] = {"guarded": guarded, "best_G": None if best_i is None else int(G[best_i]),
                                "best_snr_G": None if best_snr_i is None else int(G[best_snr_i])}
    if best_i is None:
        return None, facts
    limit = (1.0 - tolerance) * best
    ok_arr = cand & (np.nan_to_num(f, nan=-np.inf) >= limit)
    first = int(np.flatnonzero(ok_arr)[0])
    chosen = int(G[first])
    if refine is not None and name == "update" and first > 0 and G[first] - G[first - 1] > 1:
        snr_limit = (1.0 - tolerance) * best_snr

        def ok(g: int) -> bool:
            c = refine(g)
            good = (c.at(name, g) or 0.0) >= limit
            return good and (not guarded or (c.at("snr", g) or 0.0) >= snr_limit)

        chosen = _bisect(int(G[first - 1]), chosen, ok)
    return chosen, facts


def _candidates(curves: Curves, name: str, tolerance: float) -> NDArray[np.bool_]:
    """The G ≥ 2 the rule chooses among: for ``update``, those with SNR within τ of the best SNR."""
    G = curves.G[curves.G >= 2]
    cand = np.ones(G.size, dtype=bool)
    if name == "update":
        snr = curves.values["snr"][curves.G >= 2]
        i, best = _best(snr)
        if i is not None:
            cand = np.nan_to_num(snr, nan=-np.inf) >= (1.0 - tolerance) * best
    return cand


def flatness(curves: Curves, name: str, tolerance: float) -> dict[str, object]:
    """The range of searched G (among the rule's candidates) within τ of the best, and what the G below
    that range lose against the best."""
    keep = curves.G >= 2
    G, f = curves.G[keep], curves.values[name][keep]
    cand = _candidates(curves, name, tolerance)
    best_i, best = _best(np.where(cand, f, -np.inf))
    if best_i is None:
        return {"within_lo": None, "within_hi": None, "flat": False, "rising_at_end": False, "loss_below": None}
    within = np.flatnonzero(cand & (np.nan_to_num(f, nan=-np.inf) >= (1.0 - tolerance) * best))
    lo, hi = int(G[within[0]]), int(G[within[-1]])
    below = f[G < lo]
    loss = None if below.size == 0 else (float(1.0 - below.max() / best), float(1.0 - below.min() / best))
    end_i = G.size - 1
    return {"within_lo": lo, "within_hi": hi, "flat": bool(within.size == G.size),
            "rising_at_end": bool(best_i == end_i and G.size > 1 and f[end_i] > f[end_i - 1] * (1 + 1e-9)),
            "loss_below": loss}


def choose(corpus: Corpus, name: str, R: int, G_end: int, *, advantage: Advantage = "grpo",
           std: StdConvention = "sample", estimator: str = "auto", tolerance: float = DEFAULT_TOLERANCE,
           shown: Sequence[int] = ()) -> tuple[ObjectiveChoice, Curves]:
    """Search G in [2, G_end] (:func:`search_grid`) and recommend one by :func:`recommend`."""
    end = max(2, min(int(G_end), int(R)))
    base = search_grid(end, shown)
    grid = sorted({*base, *(min(end, int(R) // (int(R) // g)) for g in base)})  # and each N's largest G
    curves = evaluate(corpus, grid, R, advantage=advantage, std=std, estimator=estimator)
    searched = [len(grid)]

    def refine(g: int) -> Curves:
        searched[0] += 1
        return evaluate(corpus, [g], R, advantage=advantage, std=std, estimator=estimator)

    rec, facts = recommend(curves, name, tolerance, refine)
    flat = flatness(curves, name, tolerance)
    if rec is not None and flat["within_lo"] is not None and rec < flat["within_lo"]:  # type: ignore[operator]
        below = [float(v) for g, v in zip(curves.G, curves.values[name], strict=True) if 2 <= g < rec]
        top = float(curves.at(name, facts["best_G"]) or 0.0)  # type: ignore[arg-type]
        flat["within_lo"] = rec
        flat["loss_below"] = (1 - max(below) / top, 1 - min(below) / top) if below and top > 0 else None
    snr_flat = flatness(curves, "snr", tolerance)
    snr_within = (None if snr_flat["within_lo"] is None else
                  (int(snr_flat["within_lo"]), int(snr_flat["within_hi"])))  # type: ignore[call-overload]
    if rec is not None and rec not in set(curves.G.tolist()):
        curves = _merge(curves, refine(rec))
    f, snr = curves.values[name], curves.values["snr"]
    best = (curves.at(name, facts["best_G"]) or 0.0) if facts["best_G"] is not None else 0.0  # type: ignore[arg-type]
    best_snr = float(np.nanmax(np.where(curves.G >= 2, snr, np.nan))) if (curves.G >= 2).any() else 0.0
    marks = {int(g) for g in (*shown, rec, facts["best_G"], facts["best_snr_G"], flat["within_lo"],
                              flat["within_hi"]) if g is not None}
    curve = tuple(CurvePoint(G=int(g), prompts_per_step=int(n), value=float(v),
                             of_best=float(v / best) if best > 0 else None,
                             snr_of_best=float(s / best_snr) if best_snr > 0 else None)
                  for g, n, v, s in zip(curves.G, curves.N, f, snr, strict=True) if int(g) in marks)
    obj = OBJECTIVES[name]
    choice = ObjectiveChoice(
        name=name, noun=obj.noun, definition=obj.definition, advantage=advantage,
        std=std if advantage == "grpo" else "n/a", tolerance=float(tolerance), rollouts_per_step=int(R),
        G_end=end, searched=searched[0], recommended_G=rec, best_G=facts["best_G"],  # type: ignore[arg-type]
        best_snr_G=facts["best_snr_G"], guarded=bool(facts["guarded"]),  # type: ignore[arg-type]
        within_lo=flat["within_lo"], within_hi=flat["within_hi"], flat=bool(flat["flat"]),  # type: ignore[arg-type]
        rising_at_end=bool(flat["rising_at_end"]), loss_below=flat["loss_below"], snr_within=snr_within, curve=curve,  # type: ignore[arg-type]
    )
    return choice, curves


def _merge(a: Curves, b: Curves) -> Curves:
    """The union of two evaluations (same R, same conventions), sorted by G, without replicates."""
    G = np.concatenate([a.G, b.G])
    order = np.argsort(G, kind="stable")
    return Curves(G=G[order], N=np.concatenate([a.N, b.N])[order],
                  silent=np.concatenate([a.silent, b.silent])[order],
                  silent_used=tuple(np.array(a.silent_used + b.silent_used, dtype=object)[order].tolist()),
                  values={k: np.concatenate([a.values[k], b.values[k]])[order] for k in a.values}, replicates={})
