"""``sigmaudit plan``: what each group size G would do on this corpus, and the smallest G meeting targets.

Every column uses the estimator rule that scan, check, report and trend share
(:mod:`sigmaudit.core.estimates`; default ``auto``: silent rates unbiased where every prompt has
n ≥ G, else posterior expectations under the corpus prior; fidelity from the posterior), so the
recommended G is exactly the smallest G at which ``sigmaudit check -G <that G>`` passes the same
targets: it is searched over every whole number up to the largest swept G, not just the swept
ones, with the very computation ``check`` runs.

Per G (means over prompts):

- ``silent`` = mean_i of the silent-chance estimate, split into all-wrong and all-correct;
- ``fidelity`` = Σ_i E[E[σ](p, G) | n_i, k_i] / Σ_i E[sqrt(p (1 − p)) | n_i, k_i]: the mean of
  φ(p, G) weighted by each prompt's (large-G) GRPO gradient mass, under the posterior;
- ``signal_prompts_per_batch`` = B (1 − silent): prompts of a batch of B with a non-silent group;
- ``dapo_groups_per_kept_group`` = 1 / (1 − silent): groups DAPO draws (prompts taken at random
  from the corpus) per kept group; ``rollouts_per_signal_prompt`` = G / (1 − silent).

With bootstrap replicates (:meth:`Corpus.replicates`) the silent rate and fidelity carry
intervals, and the recommendation carries the range of G those intervals allow: from the
smallest G whose optimistic bound meets the targets to the smallest G whose pessimistic bound does.

As G → ∞ the silent rate falls to the prior's mass at p ∈ {0, 1} (``unreachable_share``): the
posterior probability, averaged over prompts, that a prompt is never or always solved.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from ..loaders.options import Filtered, Window
from .by import ByGroup, ByResult
from .drift import Drift, context_json

if TYPE_CHECKING:
    from ..core.corpus import Corpus
    from ..loaders import LoadedCounts
    from .allocate import AllocationResult  # the plan carries an allocation; allocate never imports plan
    from .dapo import DapoResult, DapoSettings
    from .objective import ObjectiveChoice

DEFAULT_G_GRID: tuple[int, ...] = (2, 4, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256)
"""Group sizes swept when ``-G`` is not given."""
DEFAULT_BATCH_PROMPTS = 512
"""Prompts per batch B for ``signal_prompts_per_batch``."""
ESTIMATOR = "auto"
"""The default estimator rule (:data:`sigmaudit.core.estimates.DEFAULT_ESTIMATOR`)."""
FIDELITY_DEFINITION = (
    "Σ_i E[E[σ](p, G) | n_i, k_i] / Σ_i E[sqrt(p(1−p)) | n_i, k_i]: mean φ weighted by GRPO mass, "
    "posterior expectations under the corpus prior"
)


# ---------------------------------------------------------------- result objects


@dataclass(frozen=True)
class SweepRow:
    """Predictions at one group size G (means over prompts, model-based estimator)."""

    G: int
    """Group size."""
    silent: float | None
    """Estimated corpus silent-group rate (None where the estimator is undefined: unbiased, n < G)."""
    all_wrong: float | None
    """All-wrong part of ``silent``."""
    all_correct: float | None
    """All-correct part of ``silent``."""
    fidelity: float | None
    """GRPO-mass-weighted mean fidelity φ (None when no prompt has gradient mass)."""
    estimator: str
    """Estimator of the silent rates at this G: unbiased, bayes or plugin."""
    silent_ci: tuple[float, float] | None
    """Bootstrap interval of ``silent`` (None without replicates)."""
    fidelity_ci: tuple[float, float] | None
    """Bootstrap interval of ``fidelity`` (None without replicates)."""
    signal_prompts_per_batch: float | None
    """Expected prompts with a non-silent group in a batch of B prompts: B (1 − silent)."""
    rollouts_per_signal_prompt: float | None
    """Rollouts spent per prompt that has signal: G / (1 − silent); None when every group is silent."""
    dapo_groups_per_kept_group: float | None
    """Groups DAPO draws per kept group: 1 / (1 − silent); None when every group is silent."""


@dataclass(frozen=True)
class Targets:
    """What the user asked of G; None = no target."""

    max_silent: float | None = None
    """Largest acceptable silent rate."""
    min_fidelity: float | None = None
    """Smallest acceptable mean fidelity."""

    @property
    def given(self) -> bool:
        """At least one target is set."""
        return self.max_silent is not None or self.min_fidelity is not None

    def met_by(self, row: SweepRow) -> bool:
        """Every set target holds at this row (a missing value never meets a target)."""
        return self.met(row.silent, row.fidelity)

    def met(self, silent: float | None, fidelity: float | None) -> bool:
        """Every set target holds for these values, by ``check``'s own rule (:func:`passes`)."""
        from .check import passes

        if self.max_silent is not None and not passes(silent, "max", self.max_silent):
            return False
        return self.min_fidelity is None or passes(fidelity, "min", self.min_fidelity)

    def describe(self) -> str:
        """``silent ≤ 0.3 and fidelity ≥ 0.9``."""
        parts = []
        if self.max_silent is not None:
            parts.append(f"silent ≤ {self.max_silent:g}")
        if self.min_fidelity is not None:
            parts.append(f"fidelity ≥ {self.min_fidelity:g}")
        return " and ".join(parts) if parts else "no target"


def recommend(sweep: Sequence[SweepRow], targets: Targets) -> int | None:
    """The smallest G *of the sweep* meeting every target; None when none does or no target is set
    (:func:`smallest_G` searches every whole number)."""
    if not targets.given:
        return None
    for row in sorted(sweep, key=lambda r: r.G):
        if targets.met_by(row):
            return row.G
    return None


@dataclass(frozen=True)
class PriceAt:
    """Predicted cost and yield of one step at one G (a batch of ``batch_prompts`` prompts)."""

    G: int
    """Group size."""
    rollouts_per_step: int
    """B × G."""
    silent_rate: float | None
    """Predicted silent-group share (the sweep's estimator rule)."""
    informative_groups_per_step: float | None
    """B × (1 − silent): groups with σ > 0 in a step."""
    rollouts_per_signal_prompt: float | None
    """G / (1 − silent): rollouts spent per prompt that teaches something."""
    objective_per_step: float | None
    """B × f(G) for the plan's objective (None when targets chose G)."""
    estimator: str
    """Estimator of the silent share at this G."""


@dataclass(frozen=True)
class Price:
    """What the recommendation costs against the logged G (or G = 8 when no groups are logged)."""

    reference_G: int
    """The logged group size, else :data:`~sigmaudit.audits.objective.DEFAULT_REFERENCE_G`."""
    reference: str
    """``logged`` (the log's most common group size) or ``default`` (no groups logged)."""
    batch_prompts: int
    """Prompts per step B."""
    before: PriceAt
    """At ``reference_G``."""
    after: PriceAt
    """At the recommended G."""


@dataclass(frozen=True)
class PlanResult:
    """The G sweep, the recommendation and (optionally) a per-prompt allocation."""

    sweep: tuple[SweepRow, ...]
    """One row per G, ascending."""
    recommended_G: int | None
    """Smallest G of the sweep meeting every target; None when none does or no target was given."""
    targets: Targets
    """The targets given."""
    unreachable_share: float
    """Limit of the silent rate as G → ∞: mean posterior P(p ∈ {0, 1}); no G brings it lower."""
    unreachable_all_wrong: float
    """Never-solved part of ``unreachable_share`` (posterior P(p = 0))."""
    unreachable_all_correct: float
    """Always-solved part of ``unreachable_share`` (posterior P(p = 1))."""
    prompts: int
    """Number of prompts."""
    batch_prompts: int
    """Prompts per batch B used for ``signal_prompts_per_batch``."""
    estimator: str = ESTIMATOR
    """The estimator rule of every column (``--estimator``; each row names the one used at its G)."""
    fidelity_definition: str = FIDELITY_DEFINITION
    """How the ``fidelity`` column is computed."""
    allocation: AllocationResult | None = None
    """Per-prompt allocation summary when ``--budget`` or ``--eps`` was given."""
    filtered: Filtered | None = None
    """Set when the log is a post-filter dump (its pass rates lean toward mixed prompts)."""
    by: ByResult | None = None
    """With ``--by COLUMN``: each value's own sweep and recommendation (this one is pooled)."""
    recommended_G_range: tuple[int | None, int | None] | None = None
    """The G the intervals allow: (smallest G whose optimistic bound meets the targets, smallest G whose
    pessimistic bound does; None when none up to the largest swept G does); None without replicates."""
    level: float = 0.9
    """Two-sided level of the intervals."""
    replicates: int = 0
    """Bootstrap replicates behind the intervals (0: none)."""
    warnings: tuple[str, ...] = ()
    """Why the figures may deserve less trust (few prompts, extrapolation past the logged samples)."""
    objective: str = "none"
    """What chose ``recommended_G``: ``targets``, an objective (``signal``, ``informative``,
    ``knapsack``: :mod:`.objective`) or ``none``."""
    objective_choice: ObjectiveChoice | None = None
    """The objective's curve, knee, saturation cap and reasoning (None when targets chose G)."""
    reason: str | None = None
    """One sentence explaining ``recommended_G``, written by :func:`sigmaudit.views.plan.worded` from the
    fields above (the audit returns numbers); None until then."""
    price: Price | None = None
    """The recommendation against the logged G (or G = 8): None without a recommendation."""
    window: Window | None = None
    """The training steps the figures cover (``--steps``/``--last-steps``, else the whole log); None without steps."""
    drift: Drift | None = None
    """Set when pass rates moved within the window (:mod:`sigmaudit.audits.drift`): pooled-count figures understate."""
    difficulty: str | None = None
    """Which steps' pass rates the sweep, the recommendation and its price read, and why (None without
    steps): on a drifting log, the last tenth of the steps (:func:`current_difficulty`)."""
    dapo: DapoResult | None = None
    """With ``--train-batch``/``--gen-batch``: DAPO's loop as verl runs it (:mod:`.dapo`)."""

    @property
    def target_failed(self) -> bool:
        """A target was given and no G of the sweep meets it (exit code 1)."""
        return self.targets.given and self.recommended_G is None

    @property
    def failed_groups(self) -> tuple[str, ...]:
        """Values of the ``--by`` column for which no G meets the targets."""
        return () if self.by is None else tuple(g.value for g in self.by.groups if g.result.target_failed)

    def to_dict(self) -> dict[str, Any]:
        """JSON contract (see README): sweep rows, recommended_G, targets, unreachable share, allocation."""
        return {
            "sweep": [asdict(r) for r in self.sweep],
            "recommended_G": self.recommended_G,
            "objective": self.objective,
            "objective_detail": None if self.objective_choice is None else asdict(self.objective_choice),
            "price": None if self.price is None else asdict(self.price),
            "recommended_G_range": None if self.recommended_G_range is None else list(self.recommended_G_range),
            "reason": self.reason,
            "level": self.level,
            "replicates": self.replicates,
            "warnings": list(self.warnings),
            "estimator": self.estimator,
            "fidelity_definition": self.fidelity_definition,
            "targets": {"max_silent": self.targets.max_silent, "min_fidelity": self.targets.min_fidelity},
            "unreachable_share": self.unreachable_share,
            "unreachable_all_wrong": self.unreachable_all_wrong,
            "unreachable_all_correct": self.unreachable_all_correct,
            "prompts": self.prompts,
            "batch_prompts": self.batch_prompts,
            "allocation": None if self.allocation is None else self.allocation.to_dict(),
            "filtered": None if self.filtered is None else asdict(self.filtered),
            "by": None if self.by is None else self.by.to_dict(),
            **context_json(self.window, self.drift),
            "difficulty": self.difficulty,
            "dapo": None if self.dapo is None else self.dapo.to_dict(),
        }

SWEEP_QUANTITIES = ("silent_rate", "all_wrong_rate", "all_correct_rate", "fidelity")


def sweep(corpus: Corpus, Gs: Sequence[int], batch_prompts: int = DEFAULT_BATCH_PROMPTS, *,
          estimator: str = ESTIMATOR, replicates: int = 0, level: float = 0.9) -> tuple[SweepRow, ...]:
    """One :class:`SweepRow` per G (sorted, de-duplicated), all by one estimator rule."""
    G_sorted = sorted({int(g) for g in Gs})
    if not G_sorted or G_sorted[0] < 1:
        raise ValueError(f"group sizes must be whole numbers >= 1, got {list(Gs)!r}")
    est = corpus.estimates(SWEEP_QUANTITIES, G_sorted, estimator, replicates=replicates)  # type: ignore[arg-type]
    rows = []
    for g in G_sorted:
        silent = est.value("silent_rate", g)
        kept = None if silent is None else 1.0 - silent
        rows.append(SweepRow(
            G=g,
            silent=silent,
            all_wrong=est.value("all_wrong_rate", g),
            all_correct=est.value("all_correct_rate", g),
            fidelity=est.value("fidelity", g),
            estimator=est.used("silent_rate", g),
            silent_ci=est.interval("silent_rate", g, level) if replicates else None,
            fidelity_ci=est.interval("fidelity", g, level) if replicates else None,
            signal_prompts_per_batch=None if kept is None else batch_prompts * kept,
            rollouts_per_signal_prompt=g / kept if kept and kept > 1e-12 else None,  # G = 1: kept is 0 up to rounding
            dapo_groups_per_kept_group=1.0 / kept if kept and kept > 1e-12 else None,
        ))
    return tuple(rows)


def _curves(corpus: Corpus, targets: Targets, Gs: Sequence[int], estimator: str, replicates: int,
            qs: Sequence[float]) -> dict[str, tuple[NDArray[np.float64], NDArray[np.float64]]]:
    """Per targeted quantity: (point per G, replicate quantiles per G and q) on the whole numbers ``Gs``."""
    names = [n for n, t in (("silent_rate", targets.max_silent), ("fidelity", targets.min_fidelity)) if t is not None]
    out = {}
    for name in names:
        est = corpus.estimates([name], Gs, estimator, replicates=replicates)  # type: ignore[arg-type]
        point = np.array([np.nan if (v := est.value(name, g)) is None else v for g in Gs])
        quant = np.full((len(Gs), len(qs)), np.nan)
        if replicates:
            idx = [est.index(name, g) for g in Gs]
            with np.errstate(invalid="ignore"):
                quant = np.nanquantile(est.replicates[:, idx], qs, axis=0).T
            quant[np.isnan(point)] = np.nan
        out[name] = (point, quant)
    return out


def _first(met: NDArray[np.bool_], Gs: Sequence[int]) -> int | None:
    idx = np.flatnonzero(met)
    return int(Gs[int(idx[0])]) if idx.size else None


def smallest_G(corpus: Corpus, targets: Targets, G_max: int, *, estimator: str = ESTIMATOR, replicates: int = 0,
               level: float = 0.9) -> tuple[int | None, tuple[int | None, int | None] | None]:
    """The smallest whole G in [1, G_max] meeting every target, with check's own values and rule
    (:func:`sigmaudit.audits.check.estimate_metrics`, :func:`passes`), and with replicates the range
    (optimistic, pessimistic) of such G that the ``level`` intervals allow.

    Every whole G is evaluated (the ``auto`` rule's switch from unbiased to bayes at G = min n can
    break monotonicity, so no bisection); the answer is then confirmed by evaluating G alone and
    G − 1 alone exactly as ``check`` does.
    """
    from .check import estimate_metrics

    if not targets.given:
        return None, None
    Gs = list(range(1, int(G_max) + 1))
    lo_q, hi_q = (1.0 - level) / 2.0, (1.0 + level) / 2.0
    curves = _curves(corpus, targets, Gs, estimator, replicates, (lo_q, hi_q))
    n = len(Gs)

    def met(which: int) -> NDArray[np.bool_]:  # 0 point, 1 optimistic, 2 pessimistic
        ok = np.ones(n, dtype=bool)
        for name, (point, quant) in curves.items():
            kind, limit = ("max", targets.max_silent) if name == "silent_rate" else ("min", targets.min_fidelity)
            if which == 0:
                v = point
            else:
                optimistic_col = 0 if kind == "max" else 1
                v = quant[:, optimistic_col if which == 1 else 1 - optimistic_col]
            with np.errstate(invalid="ignore"):
                ok &= (v <= limit) if kind == "max" else (v >= limit)
        return ok

    def exact(g: int) -> bool:
        vals = estimate_metrics(corpus, g, list(curves), estimator)
        return targets.met(vals.value("silent_rate", g) if "silent_rate" in curves else None,
                           vals.value("fidelity", g) if "fidelity" in curves else None)

    chosen = _first(met(0), Gs)
    # confirm with check's computation (a batch and a single G can differ in the last bit)
    while chosen is not None and not exact(chosen):
        nxt = [g for g in Gs if g > chosen and met(0)[g - 1]]
        chosen = nxt[0] if nxt else None
    while chosen is not None and chosen > 1 and exact(chosen - 1):
        chosen -= 1
    rng = (_first(met(1), Gs), _first(met(2), Gs)) if replicates else None
    return chosen, rng


def plan(
    corpus: Corpus,
    Gs: Sequence[int] | None = None,
    *,
    batch_prompts: int = DEFAULT_BATCH_PROMPTS,
    targets: Targets | None = None,
    objective: str | None = None,
    reference_G: int | None = None,
    allocation: AllocationResult | None = None,
    filtered: Filtered | None = None,
    by: ByResult | None = None,
    estimator: str = ESTIMATOR,
    replicates: int = 0,
    level: float = 0.9,
) -> PlanResult:
    """Sweep G over ``Gs`` (default :data:`DEFAULT_G_GRID`); recommend the smallest whole G meeting ``targets``
    (searched up to the largest swept G), else the G ``objective`` chooses (:mod:`.objective`; None: none),
    priced against ``reference_G`` (the logged group size; None: G = 8)."""
    from ..core.estimates import warnings as fit_warnings
    from .objective import choose

    targets = targets or Targets()  # the library default: no target and no objective, so no recommendation
    Gs, thin, ref = _grid(corpus, Gs, reference_G)
    rows = sweep(corpus, Gs, batch_prompts, estimator=estimator, replicates=replicates, level=level)
    at0, at1 = corpus.unreachable_parts()
    u0, u1 = corpus.mean(at0), corpus.mean(at1)
    G_max = max(r.G for r in rows)
    chosen, g_range = smallest_G(corpus, targets, G_max, estimator=estimator, replicates=replicates, level=level)
    choice = None if targets.given or objective is None else choose(
        corpus, objective, G_max, estimator=estimator, shown=[*(r.G for r in rows), ref])
    chosen = chosen if choice is None else choice.recommended_G
    if chosen is not None and chosen not in {r.G for r in rows}:
        extra = sweep(corpus, [chosen], batch_prompts, estimator=estimator, replicates=replicates, level=level)
        rows = tuple(sorted((*rows, *extra), key=lambda r: r.G))
    warns = [*fit_warnings(corpus.n_prompts, int(corpus.n.max()), [r.G for r in rows], None,
                           tuple({r.estimator for r in rows} | {"bayes"}), level), *filter(None, [thin])]
    price = None if chosen is None else _price(corpus, chosen, ref, reference_G is not None, batch_prompts,
                                               None if choice is None else choice.name, estimator)
    return PlanResult(
        sweep=rows,
        recommended_G=chosen,
        targets=targets,
        unreachable_share=u0 + u1,
        unreachable_all_wrong=u0,
        unreachable_all_correct=u1,
        prompts=corpus.n_prompts,
        batch_prompts=int(batch_prompts),
        allocation=allocation,
        filtered=filtered,
        by=by,
        estimator=estimator,
        recommended_G_range=g_range,
        level=level,
        replicates=int(replicates),
        warnings=tuple(warns),
        objective="targets" if targets.given else (objective or "none"),
        objective_choice=choice,
        price=price,
    )


def _grid(corpus: Corpus, Gs: Sequence[int] | None, reference_G: int | None) -> tuple[Sequence[int], str | None, int]:
    """The sizes swept (``Gs``, else :data:`DEFAULT_G_GRID` less what a thin log does not identify, with the
    note saying so: :func:`~sigmaudit.audits.identified_sizes`) and the reference G of the price (the logged
    group size, else G = 8; on a thin log that does not identify it, the largest G swept)."""
    from . import identified_sizes
    from .objective import DEFAULT_REFERENCE_G

    Gs, thin = (Gs, None) if Gs else identified_sizes(corpus, DEFAULT_G_GRID)
    ref = DEFAULT_REFERENCE_G if reference_G is None else int(reference_G)
    if thin is not None and corpus.identification(ref) is not None:
        ref = max(Gs)
    return Gs, thin, ref


def _price(corpus: Corpus, chosen: int, ref: int, logged: bool, batch_prompts: int, objective: str | None,
           estimator: str) -> Price:
    """The recommendation's cost and yield per step at the reference G and at ``chosen``."""
    from .objective import objective_values

    B = int(batch_prompts)
    rows = {r.G: r for r in sweep(corpus, sorted({ref, chosen}), B, estimator=estimator)}
    f = (dict(zip([ref, chosen], objective_values(corpus, objective, [ref, chosen], estimator)[0].tolist(),
                  strict=True)) if objective is not None else {})

    def at(g: int) -> PriceAt:
        r = rows[g]
        return PriceAt(G=g, rollouts_per_step=B * g, silent_rate=r.silent,
                       informative_groups_per_step=r.signal_prompts_per_batch,
                       rollouts_per_signal_prompt=r.rollouts_per_signal_prompt,
                       objective_per_step=B * f[g] if g in f else None, estimator=r.estimator)

    return Price(reference_G=ref, reference="logged" if logged else "default", batch_prompts=B,
                 before=at(ref), after=at(chosen))


def plan_logs(
    loaded: LoadedCounts,
    Gs: Sequence[int] | None = None,
    *,
    batch_prompts: int = DEFAULT_BATCH_PROMPTS,
    targets: Targets | None = None,
    objective: str | None = "signal",
    budget: int | None = None,
    eps: float | None = None,
    min_g: int = 2,
    max_g: int = 256,
    post_filter: bool = False,
    estimator: str = ESTIMATOR,
    replicates: int = 0,
    level: float = 0.9,
    dapo: DapoSettings | None = None,
) -> PlanResult:
    """:func:`plan` on loaded logs, with a per-prompt allocation when ``budget`` or ``eps`` is given
    (:func:`sigmaudit.audits.allocate.allocate`; its rows are ``result.allocation.per_prompt``),
    the post-filter state (:mod:`.filtered`) and, with ``--by``, one plan per value (the
    allocation is for the pooled log only). Without targets ``objective`` (default ``signal``;
    None: none) chooses G; prices are against the log's most common group size (else G = 8)."""
    import functools
    from dataclasses import replace

    from . import corpus_of, logged_group_size
    from .allocate import allocate
    from .filtered import resolve
    from .scan import statistical_filter

    basis, drift, difficulty = current_difficulty(loaded)
    corpus = corpus_of(basis)
    alloc = None
    if budget is not None or eps is not None:
        alloc = allocate(corpus, basis.per_prompt["prompt"].to_list(), budget=budget, eps=eps,
                         min_g=min_g, max_g=max_g)
    by = None
    if loaded.by is not None:
        by = ByResult(loaded.by, tuple(
            ByGroup(value, plan_logs(part, Gs, batch_prompts=batch_prompts, targets=targets, objective=objective,
                                     post_filter=post_filter, estimator=estimator, replicates=replicates,
                                     level=level))
            for value, part in loaded.parts))
    result = plan(corpus, Gs, batch_prompts=batch_prompts, targets=targets, objective=objective,
                  reference_G=logged_group_size(loaded), allocation=alloc,
                  filtered=resolve(loaded, post_filter, functools.partial(statistical_filter, loaded)), by=by,
                  estimator=estimator, replicates=replicates, level=level)
    if dapo is not None:
        from .dapo import dapo_of

        result = replace(result, dapo=dapo_of(loaded, corpus, dapo, estimator=estimator,
                                              filtered=result.filtered is not None))
    return replace(result, window=basis.window, drift=drift, difficulty=difficulty)


def current_difficulty(loaded: LoadedCounts) -> tuple[LoadedCounts, Drift | None, str | None]:
    """The counts a plan reads on a training log, the drift found over what was asked, and why, in words.

    A run moves, so G is chosen for where it is now: when the pass rates moved within the window asked
    (:func:`sigmaudit.audits.drift.drift_of`) and no window was given, the plan reads the last tenth of
    the steps (:func:`sigmaudit.audits.drift.current_window`); without drift the whole window stands for
    the current difficulty; a window given with --steps/--last-steps is used as it is. No steps: no words.
    """
    import dataclasses

    from .drift import CURRENT_MIN_STEPS, current_window, drift_of

    drift = drift_of(loaded)
    window = loaded.window
    if window is None:
        return loaded, drift, None
    if window.asked is not None:
        return loaded, drift, f"pass rates of {window.describe()}, the window asked"
    if drift is None:
        return loaded, None, (f"pass rates of the whole log ({window.describe()}): they did not move detectably "
                              "(drift test), so the whole log stands for the current difficulty")
    basis = current_window(loaded)
    if basis is loaded:
        return loaded, drift, (f"pass rates moved, but the log has only {window.steps:,} steps (at most "
                               f"{CURRENT_MIN_STEPS}), so the plan pools them all; the current difficulty is "
                               "likely different")
    cut = dataclasses.replace(basis.window, asked="current difficulty")  # type: ignore[arg-type]
    return dataclasses.replace(basis, window=cut), drift, (
        f"the current difficulty: pass rates of the last {cut.steps:,} steps ({cut.span()}, the last tenth of "
        f"{window.span()}), because pass rates moved within the log (drift); --steps/--last-steps chooses "
        "another window")
