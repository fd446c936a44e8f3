"""Which G without a target: the most useful signal for the rollouts spent (``plan --objective``).

A group of G answers per prompt earns f(G), a mean over the corpus's prompts, and costs G
rollouts. Three objectives f (``--objective``):

- ``signal`` (default): f(G) = mean_i E[E[σ](p, G) | n_i, k_i], the expected GRPO update size of a
  group (docs/theory.md, "Expected update"); its G → ∞ limit is mean_i E[sqrt(p (1 − p))].
- ``informative``: f(G) = 1 − silent(G), the chance a group is informative (σ > 0: DAPO keeps it),
  by the estimator rule of the sweep's silent column; limit 1 − mean_i P(p ∈ {0, 1}).
- ``knapsack``: f(G) = mean_i E[Value(G, p)], Knapsack-RL's value of G rollouts,
  (1 − p^G − (1 − p)^G) · p (1 − p)² (Li et al., arXiv:2509.25849, section 4;
  :func:`sigmaudit.core.knapsack.knapsack_value`); limit mean_i E[p (1 − p)²].

``signal`` and ``knapsack`` are posterior expectations under the corpus prior (at p̂ = k/n with
``--estimator plugin``).

**The rule.** Per rollout, every objective is best at G = 2 or 3 (f(G)/G falls as G grows: a
group of 2 is the cheapest way to see any signal, and the noisiest), so "most signal per rollout"
alone would always say G = 2. What a user buys with a larger G is more signal per step, at a
falling return per rollout. The recommendation is the G that gives the most signal per step, f(G),
among the G ≤ the sweep's end whose return per rollout f(G)/G is still at least
:data:`EFFICIENCY_FLOOR` (half) of the best return per rollout of any G, and that do not pass the
saturation cap: the smallest G at which f reaches :data:`SATURATION_SHARE` (90 %) of its G → ∞
limit (beyond it no G can add more than a tenth). Ties go to the smaller G. On the sample logs
and the published pass-rate files this lands between G = 7 and G = 11: the knee of the curve,
where doubling G still costs twice the rollouts but no longer buys close to twice the signal.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

import numpy as np
from numpy.typing import NDArray

if TYPE_CHECKING:
    from ..core.corpus import Corpus

ObjectiveName = Literal["signal", "informative", "knapsack"]
OBJECTIVE_NAMES: tuple[ObjectiveName, ...] = ("signal", "informative", "knapsack")
DEFAULT_OBJECTIVE: ObjectiveName = "signal"
EFFICIENCY_FLOOR = 0.5
"""A recommended G returns at least this share of the best return per rollout of any G."""
SATURATION_SHARE = 0.9
"""Returns saturate at the smallest G reaching this share of the objective's G → ∞ limit."""
DEFAULT_REFERENCE_G = 8
"""The G a price is stated against when the log has no groups."""


@dataclass(frozen=True)
class Objective:
    """One objective's meaning."""

    name: str
    """``signal``, ``informative`` or ``knapsack``."""
    noun: str
    """What is counted, in words (``informative groups``)."""
    per_group: str
    """What one group earns, in words."""
    definition: str
    """f(G), the mean over prompts."""
    limit: str
    """Its G → ∞ limit."""


OBJECTIVES: dict[str, Objective] = {
    "signal": Objective("signal", "signal", "expected GRPO update size E[σ] of a group",
                        "f(G) = mean_i E[E[σ](p, G) | n_i, k_i]", "mean_i E[sqrt(p(1 − p))]"),
    "informative": Objective("informative", "informative groups",
                             "chance a group is informative (σ > 0, DAPO keeps it)",
                             "f(G) = 1 − silent(G)", "1 − mean_i P(p ∈ {0, 1})"),
    "knapsack": Objective("knapsack", "Knapsack-RL value",
                          "Knapsack-RL value of a group (Li et al. 2025, arXiv:2509.25849)",
                          "f(G) = mean_i E[(1 − p^G − (1 − p)^G) · p(1 − p)²]", "mean_i E[p(1 − p)²]"),
}


def objective_values(corpus: Corpus, name: str, Gs: Sequence[int], estimator: str = "auto"
                     ) -> tuple[NDArray[np.float64], str]:
    """f(G) for each G of ``Gs`` (mean over prompts) and the estimator(s) behind it, in words."""
    from ..core.knapsack import knapsack_value
    from ..core.posterior import sigma_on_grid

    G = np.asarray(Gs, dtype=np.int64)
    if name == "informative":
        est = corpus.estimates(["silent_rate"], [int(g) for g in G], estimator)  # type: ignore[arg-type]
        vals = np.array([np.nan if (v := est.value("silent_rate", int(g))) is None else 1.0 - v for g in G])
        return vals, _used_words(G, [est.used("silent_rate", int(g)) for g in G])
    plugin = estimator == "plugin"
    p = corpus.p_hat if plugin else corpus.prior.grid
    if name == "signal":
        table = sigma_on_grid(p, [int(g) for g in G])
    elif name == "knapsack":
        table = np.asarray(knapsack_value(p[:, None], G[None, :]), dtype=np.float64)
    else:
        raise ValueError(f"unknown objective {name!r}; choose one of {', '.join(OBJECTIVE_NAMES)}")
    weights = corpus.weight if plugin else corpus.mixture
    return weights @ table / float(weights.sum()), ("plugin" if plugin else "bayes")


def objective_limit(corpus: Corpus, name: str, estimator: str = "auto") -> float:
    """The objective's G → ∞ limit (no G gives more)."""
    plugin = estimator == "plugin"
    p = corpus.p_hat if plugin else corpus.prior.grid
    weights = corpus.weight if plugin else corpus.mixture
    inner = ((p > 0.0) & (p < 1.0)).astype(np.float64)
    per = {"signal": np.sqrt(p * (1.0 - p)), "informative": inner, "knapsack": p * (1.0 - p) ** 2}[name]
    return float(weights @ per / float(weights.sum()))


def _used_words(G: NDArray[np.int64], used: Sequence[str]) -> str:
    """``unbiased (G ≤ 160), bayes (G > 160)`` or the single estimator used."""
    kinds = list(dict.fromkeys(used))
    if len(kinds) == 1:
        return kinds[0]
    parts = []
    for kind in kinds:
        gs = [int(g) for g, u in zip(G, used, strict=True) if u == kind]
        parts.append(f"{kind} (G {min(gs):,}–{max(gs):,})")
    return ", ".join(parts)


# ---------------------------------------------------------------- the choice


@dataclass(frozen=True)
class CurvePoint:
    """The objective at one G."""

    G: int
    """Group size."""
    value: float
    """f(G): what a group of G earns, mean over prompts."""
    per_rollout: float
    """f(G) / G."""
    efficiency: float
    """``per_rollout`` over the best per-rollout value of any G up to the sweep's end."""
    share_of_limit: float | None
    """f(G) over its G → ∞ limit (None when the limit is 0)."""


@dataclass(frozen=True)
class ObjectiveChoice:
    """The G an objective recommends, the curve it was read from and why."""

    name: str
    """The objective (``--objective``)."""
    noun: str
    """What it counts, in words."""
    per_group: str
    """What one group earns, in words."""
    definition: str
    """f(G)."""
    estimator: str
    """Estimator(s) behind f (the sweep's rule for ``informative``; posterior or plug-in otherwise)."""
    limit: float
    """f's G → ∞ limit."""
    limit_definition: str
    """How the limit is computed."""
    rule: str | None
    """The rule, in words: written by :func:`sigmaudit.views.plan.worded` from the numbers below (the
    audit returns numbers); None until then."""
    efficiency_floor: float
    """:data:`EFFICIENCY_FLOOR`."""
    saturation_share: float
    """:data:`SATURATION_SHARE`."""
    G_end: int
    """The largest G searched (the sweep's end); every whole G from 1 to it is evaluated."""
    best_per_rollout_G: int | None
    """The G with the most f per rollout (None when no G up to ``G_end`` gives any)."""
    saturation_G: int | None
    """The cap: smallest G with f ≥ ``saturation_share`` × limit; None when no G up to ``G_end`` reaches it."""
    recommended_G: int | None
    """The most f per step among G ≤ min(G_end, saturation_G) with efficiency ≥ the floor."""
    bound: str | None
    """What stopped G from growing: ``efficiency``, ``saturation`` or ``sweep end`` (None: no recommendation)."""
    curve: tuple[CurvePoint, ...]
    """f at the swept G, the logged/reference G and the marked G, ascending."""


def choose_G(values: NDArray[np.float64], limit: float) -> tuple[int | None, int | None, int | None, str | None]:
    """(recommended, best per rollout, saturation cap, bound) from f at G = 1, 2, …, len(values)
    (``values[G − 1]``; NaN where undefined), by the rule of the module docstring."""
    G = np.arange(1, values.size + 1)
    f = np.where(np.isfinite(values), values, -np.inf)
    per = f / G
    if not np.isfinite(per).any() or per.max() <= 0.0:
        return None, None, None, None
    best = int(G[int(np.argmax(per))])
    reached = np.flatnonzero(f >= SATURATION_SHARE * limit) if limit > 0 else np.array([], dtype=np.int64)
    sat = int(G[reached[0]]) if reached.size else None
    feasible = per >= EFFICIENCY_FLOOR * per.max()
    if sat is not None:
        feasible &= G <= sat
    idx = np.flatnonzero(feasible)
    rec = int(G[idx[int(np.argmax(f[idx]))]])  # argmax takes the first: ties go to the smaller G
    beyond = per[rec:] >= EFFICIENCY_FLOOR * per.max() if rec < G.size else np.array([], dtype=bool)
    bound = ("saturation" if sat is not None and rec == sat and beyond.any() else
             "sweep end" if rec == G.size else "efficiency")
    return rec, best, sat, bound


def choose(corpus: Corpus, name: str, G_end: int, *, estimator: str = "auto", shown: Sequence[int] = ()
           ) -> ObjectiveChoice:
    """Evaluate ``name`` at every whole G in [1, G_end] and recommend one (module docstring);
    ``shown`` are the G the curve keeps besides the marked ones."""
    obj = OBJECTIVES[name]
    values, used = objective_values(corpus, name, range(1, int(G_end) + 1), estimator)
    limit = objective_limit(corpus, name, estimator)
    rec, best, sat, bound = choose_G(values, limit)
    per = values / np.arange(1, values.size + 1)
    top = float(np.nanmax(per)) if np.isfinite(per).any() else 0.0
    keep = sorted({int(g) for g in (*shown, rec, best, sat) if g is not None and 1 <= int(g) <= G_end})
    curve = tuple(CurvePoint(
        G=g, value=float(values[g - 1]), per_rollout=float(per[g - 1]),
        efficiency=float(per[g - 1] / top) if top > 0 else 0.0,
        share_of_limit=float(values[g - 1] / limit) if limit > 0 else None,
    ) for g in keep if np.isfinite(values[g - 1]))
    return ObjectiveChoice(
        name=name, noun=obj.noun, per_group=obj.per_group, definition=obj.definition, estimator=used, limit=limit,
        limit_definition=obj.limit, rule=None, efficiency_floor=EFFICIENCY_FLOOR,
        saturation_share=SATURATION_SHARE, G_end=int(G_end), best_per_rollout_G=best, saturation_G=sat,
        recommended_G=rec, bound=bound, curve=curve,
    )
