"""``sigmaudit plan``: which G at a fixed rollout budget per step, and which prompts to drop first.

docs/theory.md, "Choosing G at a fixed rollout budget" and "Curating the data". A step of R rollouts
(:class:`Budget`: ``--rollouts-per-step``, else the log's own, else ``--batch-prompts`` × the logged G)
holds N = ⌊R/G⌋ prompts. Per G of the sweep (``-G``, default :data:`DEFAULT_G_GRID`):

- the silent share (all-wrong and all-correct parts) and the GRPO-mass-weighted fidelity, by the estimator
  rule scan, check, report and trend share (:mod:`sigmaudit.core.estimates`);
- N and every objective of :mod:`.objective` per step (informative groups, rollouts inside informative
  groups, the expected update under the batch-mean loss, its SNR, Knapsack-RL's value), for the advantage
  estimator and std convention given, each with its bootstrap interval.

Without a target, the objective's rule (:func:`.objective.recommend`) chooses G; with ``--max-silent`` /
``--min-fidelity`` the smallest whole G meeting them, exactly the smallest G ``check`` passes. The
curation (:mod:`.curation`) is shown at the logged and the recommended G. As G → ∞ the silent share falls
to the mean posterior P(p ∈ {0, 1}) (``unreachable_share``): the floor no G passes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ..loaders.options import Filtered, Window
from .arguments import MAX_PLAN_G
from .by import ByGroup, ByResult
from .drift import Drift, context_json

if TYPE_CHECKING:
    from ..core.corpus import Corpus
    from ..loaders import LoadedCounts
    from .allocate import AllocationResult  # the plan carries an allocation; allocate never imports plan
    from .curation import Curation
    from .dapo import DapoResult, DapoSettings
    from .objective import Band, Curves, ObjectiveChoice
    from .snr_choice import SnrChoice

DEFAULT_G_GRID: tuple[int, ...] = (2, 4, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256)
"""Group sizes swept when ``-G`` is not given."""
DEFAULT_BATCH_PROMPTS = 512
"""Prompts per step B when neither ``--rollouts-per-step`` nor the log's steps give R (R = B × logged G)."""
ESTIMATOR = "auto"
MIN_ROLLOUTS_PER_STEP = 2
"""Smallest R a plan can search: one group of two rollouts (a group of one is always silent)."""
"""The default estimator rule (:data:`sigmaudit.core.estimates.DEFAULT_ESTIMATOR`)."""
FIDELITY_DEFINITION = (
    "Σ_i E[E[σ](p, G) | n_i, k_i] / Σ_i E[sqrt(p(1−p)) | n_i, k_i]: mean φ weighted by GRPO mass, "
    "posterior expectations under the corpus prior"
)
OBJECTIVE_COLUMNS = ("informative", "rollouts", "update", "knapsack")


# ---------------------------------------------------------------- result objects


@dataclass(frozen=True)
class SweepRow:
    """Predictions at one group size G for a step of R rollouts (means over prompts)."""

    G: int
    """Group size."""
    prompts_per_step: int
    """N = ⌊R/G⌋."""
    silent: float | None
    """Estimated corpus silent-group share (None where the estimator is undefined: unbiased, n < G)."""
    all_wrong: float | None
    """All-wrong part of ``silent``."""
    all_correct: float | None
    """All-correct part of ``silent``."""
    fidelity: float | None
    """GRPO-mass-weighted mean fidelity φ (None when no prompt has gradient mass)."""
    estimator: str
    """Estimator of the silent shares at this G: unbiased, bayes or plugin."""
    silent_ci: tuple[float, float] | None
    """Bootstrap interval of ``silent`` (None without replicates)."""
    fidelity_ci: tuple[float, float] | None
    """Bootstrap interval of ``fidelity``."""
    informative_groups: float | None
    """Informative groups per step: N (1 − silent)."""
    informative_groups_ci: tuple[float, float] | None
    """Its bootstrap interval."""
    informative_rollouts: float | None
    """Rollouts inside informative groups per step: N G (1 − silent)."""
    informative_rollouts_ci: tuple[float, float] | None
    """Its bootstrap interval."""
    update: float | None
    """Step size under SGD at a fixed learning rate: the expected batch-mean update, mean E[c(k, G)] (units of
    a prompt's Δs); not an objective."""
    update_ci: tuple[float, float] | None
    """Its bootstrap interval."""
    snr_vs_best: tuple[float, ...] | None
    """The step's SNR over its best, one per between-prompt share of the band (None: no band)."""
    snr_moments: dict[str, float]
    """``m1``, ``m2``, ``ma``: the corpus means of E[c], E[c²], E[a] at this G (docs/theory.md)."""
    knapsack: float | None
    """Knapsack-RL's value per step, N · mean E[Value(G, p)]."""
    knapsack_ci: tuple[float, float] | None
    """Its bootstrap interval."""
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
class Budget:
    """The rollouts per step R the sweep holds fixed, and where it came from."""

    rollouts_per_step: int
    """R."""
    source: str
    """``given`` (--rollouts-per-step), ``log`` (the log's median rollouts per step) or ``batch``
    (--batch-prompts × the logged G, else × G = 8)."""
    description: str
    """Where R came from, in words."""


@dataclass(frozen=True)
class PriceAt:
    """One step at one G, at the budget R."""

    G: int
    """Group size."""
    prompts_per_step: int
    """N = ⌊R/G⌋."""
    rollouts_used: int
    """N · G (≤ R)."""
    silent_rate: float | None
    """Predicted silent share."""
    informative_groups: float | None
    """Informative groups per step."""
    update: float | None
    """Step size under SGD at a fixed learning rate."""
    snr_vs_best: tuple[float, ...] | None
    """The step's SNR over its best, per share of the band."""
    objective: float | None
    """The plan's objective (None when targets chose G)."""
    estimator: str
    """Estimator of the silent share at this G."""


@dataclass(frozen=True)
class Price:
    """The recommendation against the logged G (or G = 8 when no groups are logged), at the same R."""

    reference_G: int
    """The logged group size, else :data:`~sigmaudit.audits.objective.DEFAULT_REFERENCE_G`."""
    reference: str
    """``logged`` (the log's most common group size) or ``default`` (no groups logged)."""
    rollouts_per_step: int
    """R."""
    before: PriceAt
    """At ``reference_G``."""
    after: PriceAt
    """At the recommended G."""

    @property
    def same(self) -> bool:
        """The recommendation is the reference G (nothing to price)."""
        return self.before.G == self.after.G


@dataclass(frozen=True)
class Floor:
    """A ``--max-silent`` target no swept G meets: how far off it is and what curation does."""

    target: float
    """The target."""
    unreachable_share: float
    """The corpus's floor: mean posterior P(p ∈ {0, 1})."""
    below_floor: bool
    """The target is at or under the floor: no G meets it."""
    needed_G: int | None
    """With the target above the floor: the smallest G up to :data:`MAX_PLAN_G` (and R) meeting it
    (None: none does)."""
    needed_prompts_per_step: int | None
    """⌊R / needed_G⌋."""
    curated_rule: str
    """The curation quoted (``posterior``)."""
    curated_G: int
    """The G of the curated figure (the logged G)."""
    curated_silent: float | None
    """The silent share at ``curated_G`` after that curation."""
    curated_dropped_share: float
    """The share of prompts that curation drops."""
    drop_above: float = 0.5
    """The curation's threshold on posterior P(p ∈ {0, 1}) (``--drop-above``)."""


@dataclass(frozen=True)
class PlanResult:
    """The G sweep at a fixed rollout budget, the recommendation, the curation and (optionally) a
    per-prompt allocation."""

    sweep: tuple[SweepRow, ...]
    """One row per G, ascending."""
    recommended_G: int | None
    """The objective's G, or the smallest G meeting the targets; None when none does."""
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
    budget: Budget | None = None
    """The rollouts per step R of every per-step figure."""
    advantage: str = "grpo"
    """``--advantage``: grpo, drgrpo or rloo."""
    std: str = "sample"
    """``--std``: sample (TRL, verl) or population (GRPO only)."""
    estimator: str = ESTIMATOR
    """The estimator rule of the silent and fidelity columns."""
    fidelity_definition: str = FIDELITY_DEFINITION
    """How the ``fidelity`` column is computed."""
    allocation: AllocationResult | None = None
    """Per-prompt allocation summary when ``--budget`` or ``--eps`` was given."""
    filtered: Filtered | None = None
    """Set when the log is a post-filter dump (its pass rates lean toward mixed prompts)."""
    by: ByResult | None = None
    """With ``--by COLUMN``: each value's own sweep and recommendation (this one is pooled)."""
    recommended_G_range: tuple[int | None, int | None] | None = None
    """With targets: (smallest G whose optimistic bound meets them, smallest G whose pessimistic bound
    does), on the searched G; None without replicates."""
    level: float = 0.9
    """Two-sided level of the intervals."""
    replicates: int = 0
    """Bootstrap replicates behind the intervals (0: none)."""
    warnings: tuple[str, ...] = ()
    """Why the figures may deserve less trust (few prompts, extrapolation past the logged samples)."""
    max_samples: int = 0
    """The most samples any prompt has: G above it extrapolate through the fitted prior."""
    min_samples: int = 0
    """The fewest samples any prompt has."""
    extrapolation_warning: str | None = None
    """The warning of ``warnings`` about G past ``max_samples`` (None: no shown G extrapolates)."""
    objective: str = "none"
    """What chose ``recommended_G``: ``targets``, an objective (:data:`.objective.OBJECTIVE_NAMES`) or ``none``."""
    objective_choice: ObjectiveChoice | None = None
    """A view's rule, flatness and curve (``--objective informative|rollouts|knapsack``; None otherwise)."""
    snr_choice: SnrChoice | None = None
    """The default rule: the flat range of the step's SNR over the band and the verdict (None when targets or a
    view chose G)."""
    reason: str | None = None
    """One sentence explaining ``recommended_G``, written by :func:`sigmaudit.views.plan.worded`."""
    price: Price | None = None
    """The recommendation against the logged G (or G = 8): None without a recommendation."""
    curation: Curation | None = None
    """What dropping prompts does at the logged and the recommended G."""
    floor: Floor | None = None
    """Set when a --max-silent target fails: the floor, the G it would need, the curated figure."""
    window: Window | None = None
    """The training steps the figures cover; None without steps."""
    drift: Drift | None = None
    """Set when pass rates moved within the window (:mod:`sigmaudit.audits.drift`)."""
    difficulty: str | None = None
    """Which steps' pass rates the plan read, and why (None without steps)."""
    dapo: DapoResult | None = None
    """With ``--train-batch``/``--gen-batch``: DAPO's loop as verl runs it (:mod:`.dapo`)."""
    sections: tuple[tuple[str, Any], ...] = ()
    """Further sections a plan carries, by name (each an object with ``to_dict``; the views draw the
    ones they know): the place a new part of the plan joins without changing the fields above."""

    @property
    def target_failed(self) -> bool:
        """A target was given and no G of the sweep meets it (exit code 1)."""
        return self.targets.given and self.recommended_G is None

    @property
    def failed_groups(self) -> tuple[str, ...]:
        """Values of the ``--by`` column for which no G meets the targets."""
        return () if self.by is None else tuple(g.value for g in self.by.groups if g.result.target_failed)

    @property
    def rollouts_per_step(self) -> int | None:
        """R."""
        return None if self.budget is None else self.budget.rollouts_per_step

    def to_dict(self) -> dict[str, Any]:
        """JSON contract (docs/json.md)."""
        return {
            "recommended_G": self.recommended_G,
            "reason": self.reason,
            "objective": self.objective,
            "objective_detail": None if self.objective_choice is None else asdict(self.objective_choice),
            "snr_choice": None if self.snr_choice is None else {
                **asdict(self.snr_choice), "flat_runs": [list(r) for r in self.snr_choice.flat_runs],
                "band": {**asdict(self.snr_choice.band), "shares": list(self.snr_choice.band.shares)}},
            "budget": None if self.budget is None else asdict(self.budget),
            "advantage": self.advantage,
            "std": self.std,
            "sweep": [asdict(r) for r in self.sweep],
            "price": None if self.price is None else asdict(self.price),
            "curation": None if self.curation is None else asdict(self.curation),
            "floor": None if self.floor is None else asdict(self.floor),
            "recommended_G_range": None if self.recommended_G_range is None else list(self.recommended_G_range),
            "level": self.level,
            "replicates": self.replicates,
            "warnings": list(self.warnings),
            "max_samples": self.max_samples,
            "min_samples": self.min_samples,
            "estimator": self.estimator,
            "fidelity_definition": self.fidelity_definition,
            "targets": {"max_silent": self.targets.max_silent, "min_fidelity": self.targets.min_fidelity},
            "unreachable_share": self.unreachable_share,
            "unreachable_all_wrong": self.unreachable_all_wrong,
            "unreachable_all_correct": self.unreachable_all_correct,
            "prompts": self.prompts,
            "allocation": None if self.allocation is None else self.allocation.to_dict(),
            "filtered": None if self.filtered is None else asdict(self.filtered),
            "by": None if self.by is None else self.by.to_dict(),
            **context_json(self.window, self.drift),
            "difficulty": self.difficulty,
            "dapo": None if self.dapo is None else self.dapo.to_dict(),
            **{name: part.to_dict() for name, part in self.sections},
        }


# ---------------------------------------------------------------- the sweep

SWEEP_QUANTITIES = ("silent_rate", "all_wrong_rate", "all_correct_rate", "fidelity")


def check_group_sizes(Gs: Sequence[int], R: int | None = None) -> list[int]:
    """The sweep's G, sorted and distinct; ConfigError naming ``group_sizes`` for a G below 1, above
    :data:`MAX_PLAN_G` or above R (no prompt would fit a step)."""
    from ..errors import ConfigError

    G_sorted = sorted({int(g) for g in Gs})
    if not G_sorted or G_sorted[0] < 1:
        raise ConfigError(f"group sizes must be whole numbers >= 1, got {list(Gs)!r}", location="group_sizes")
    top = G_sorted[-1]
    if top > MAX_PLAN_G:
        raise ConfigError(f"group_sizes {top:,} is above {MAX_PLAN_G:,}, the largest plan evaluates (no trainer "
                          "samples more answers per prompt in a step)", location="group_sizes",
                          remedy=f"give group sizes up to {MAX_PLAN_G:,}")
    if R is not None and top > R:
        raise ConfigError(f"group_sizes {top:,} is above the rollouts per step R = {R:,}: no prompt fits a step",
                          location="group_sizes",
                          remedy=f"give group sizes up to {R:,} or a larger --rollouts-per-step")
    return G_sorted


def sweep(corpus: Corpus, Gs: Sequence[int], R: int, *, advantage: str = "grpo", std: str = "sample",
          estimator: str = ESTIMATOR, replicates: int = 0, level: float = 0.9,
          snr_scale: Sequence[tuple[float, float]] = ()) -> tuple[SweepRow, ...]:
    """One :class:`SweepRow` per G (sorted, de-duplicated) for R rollouts per step, one estimator for every G
    (:func:`sigmaudit.core.estimates.sweep_estimator`); ``snr_scale`` = (λ, best SNR) per share of the band."""
    from ..core.estimates import sweep_estimator
    from .objective import evaluate

    G_sorted = check_group_sizes(Gs, R)
    rule = sweep_estimator(estimator, G_sorted, corpus.min_samples)  # type: ignore[arg-type]
    est = corpus.estimates(SWEEP_QUANTITIES, G_sorted, rule, replicates=replicates)  # type: ignore[arg-type]
    cur = evaluate(corpus, G_sorted, R, advantage=advantage, std=std,  # type: ignore[arg-type]
                   estimator=rule, replicates=replicates)
    ratios = [cur.snr(lam) / best if best > 0 else np.zeros(cur.G.size) for lam, best in snr_scale]

    def obj(name: str, g: int) -> tuple[float | None, tuple[float, float] | None]:
        return cur.at(name, g), cur.interval(name, g, level) if replicates else None

    rows = []
    for i, g in enumerate(G_sorted):
        silent = est.value("silent_rate", g)
        kept = None if silent is None else 1.0 - silent
        (ig, ig_ci), (ir, ir_ci), (up, up_ci), (kn, kn_ci) = (obj(n, g) for n in OBJECTIVE_COLUMNS)
        rows.append(SweepRow(
            G=g, prompts_per_step=int(cur.N[i]), silent=silent,
            all_wrong=est.value("all_wrong_rate", g), all_correct=est.value("all_correct_rate", g),
            fidelity=est.value("fidelity", g), estimator=est.used("silent_rate", g),
            silent_ci=est.interval("silent_rate", g, level) if replicates else None,
            fidelity_ci=est.interval("fidelity", g, level) if replicates else None,
            informative_groups=None if silent is None else ig, informative_groups_ci=ig_ci,
            informative_rollouts=None if silent is None else ir, informative_rollouts_ci=ir_ci,
            update=up, update_ci=up_ci, knapsack=kn, knapsack_ci=kn_ci,
            snr_vs_best=tuple(float(r[i]) for r in ratios) if ratios else None,
            snr_moments={k: float(v[i]) for k, v in cur.moments.items()},
            dapo_groups_per_kept_group=1.0 / kept if kept and kept > 1e-12 else None,
        ))
    return tuple(rows)


# ---------------------------------------------------------------- targets


def target_grid(G_max: int, min_n: int) -> list[int]:
    """The G searched for targets: :func:`.objective.search_grid` plus G = 1 and the estimator rule's switch
    (min n, min n + 1), so that between neighbours one estimator holds and the silent share (decreasing in G)
    and the fidelity (increasing) are monotone."""
    from .objective import search_grid

    return search_grid(G_max, [1, min_n, min_n + 1]) if G_max >= 2 else [1]


def smallest_G(corpus: Corpus, targets: Targets, G_max: int, *, estimator: str = ESTIMATOR, replicates: int = 0,
               level: float = 0.9) -> tuple[int | None, tuple[int | None, int | None] | None]:
    """The smallest whole G in [1, G_max] meeting every target with check's own values and rule
    (:func:`sigmaudit.audits.check.estimate_metrics`, :func:`passes`), and with replicates the range
    (optimistic, pessimistic) of such G that the ``level`` intervals allow, on the searched G.

    The search grid (:func:`target_grid`) is evaluated at once, then the whole numbers between the last
    grid point failing and the first meeting the targets are bisected with check's computation (one
    estimator holds between neighbours, so the quantities are monotone there); the answer is confirmed by
    evaluating G and G − 1 alone exactly as ``check`` does.
    """
    from .check import estimate_metrics

    if not targets.given:
        return None, None
    names = [n for n, t in (("silent_rate", targets.max_silent), ("fidelity", targets.min_fidelity)) if t is not None]
    grid = target_grid(int(G_max), corpus.min_samples)
    est = corpus.estimates(names, grid, estimator, replicates=replicates)  # type: ignore[arg-type]

    def exact(g: int) -> bool:
        vals = estimate_metrics(corpus, g, names, estimator)
        return targets.met(vals.value("silent_rate", g) if "silent_rate" in names else None,
                           vals.value("fidelity", g) if "fidelity" in names else None)

    point = [targets.met(est.value("silent_rate", g) if "silent_rate" in names else None,
                         est.value("fidelity", g) if "fidelity" in names else None) for g in grid]
    chosen = _first_met(grid, point, exact)
    rng = None
    if replicates:
        lo_q, hi_q = (1.0 - level) / 2.0, (1.0 + level) / 2.0
        rng = (_first_bound(est, names, targets, grid, lo_q, hi_q, optimistic=True),
               _first_bound(est, names, targets, grid, lo_q, hi_q, optimistic=False))
    return chosen, rng


def _first_met(grid: Sequence[int], point: Sequence[bool], exact: Callable[[int], bool]) -> int | None:
    """The smallest whole G meeting the targets by check's computation, from the grid's verdicts."""
    from .objective import _bisect

    for i, ok in enumerate(point):
        if not ok:
            continue
        g = grid[i]
        if i > 0 and g - grid[i - 1] > 1:
            g = _bisect(grid[i - 1], g, exact) if exact(g) else g
        while not exact(g):  # a batch and a single G can differ in the last bit
            later = [x for x, o in zip(grid, point, strict=True) if o and x > g]
            if not later:
                return None
            g = later[0]
        while g > 1 and exact(g - 1):
            g -= 1
        return g
    return None


def _first_bound(est: Any, names: Sequence[str], targets: Targets, grid: Sequence[int], lo_q: float, hi_q: float,
                 *, optimistic: bool) -> int | None:
    """The smallest searched G whose interval bound (optimistic or pessimistic) meets every target."""
    for g in grid:
        ok = True
        for name in names:
            if name == "silent_rate":
                v = est.quantile(name, g, lo_q if optimistic else hi_q)
                ok &= v is not None and v <= targets.max_silent
            else:
                v = est.quantile(name, g, hi_q if optimistic else lo_q)
                ok &= v is not None and v >= targets.min_fidelity
        if ok:
            return g
    return None


def _floor(corpus: Corpus, target: float, R: int, end: int, unreachable: float, curated_G: int, estimator: str,
           drop_above: float) -> Floor:
    """A failed --max-silent target: the floor, the G it needs up to the cap, the curated figure."""
    from .curation import curate

    needed = None
    if unreachable < target:
        needed, _ = smallest_G(corpus, Targets(max_silent=target), end, estimator=estimator)
    cur = curate(corpus, [curated_G], R, "update", estimator=estimator, drop_above=drop_above)
    row = cur.row("posterior")
    assert row is not None
    return Floor(target=target, unreachable_share=unreachable, below_floor=unreachable >= target,
                 needed_G=needed, needed_prompts_per_step=None if needed is None else R // needed,
                 curated_rule="posterior", curated_G=curated_G, curated_silent=row.at[0].silent_after,
                 curated_dropped_share=row.dropped_share, drop_above=drop_above)


# ---------------------------------------------------------------- the plan


@dataclass(frozen=True)
class PlanOptions:
    """How to plan: the conventions of the trainer, the rule and the curation."""

    objective: str | None = None
    """Without targets: the objective choosing G (None: no recommendation)."""
    advantage: str = "grpo"
    """Advantage estimator."""
    std: str = "sample"
    """Std convention (GRPO)."""
    tolerance: float = 0.05
    """The rule's τ."""
    drop_above: float = 0.5
    """Curation: posterior P(p ∈ {0, 1}) above which a prompt is dropped."""
    keep_band: tuple[float, float] | None = None
    """Curation: the p̂ band kept."""
    band: Band | None = None
    """The between-prompt shares of the SNR rule (None: the default band, :data:`.objective.DEFAULT_SHARES`)."""


# long: assembles the sweep, the rule, the price, the curation and the floor in one result
def plan(
    corpus: Corpus,
    Gs: Sequence[int] | None = None,
    *,
    rollouts_per_step: int | None = None,
    budget: Budget | None = None,
    targets: Targets | None = None,
    objective: str | None = None,
    options: PlanOptions | None = None,
    reference_G: int | None = None,
    run_G: int | None = None,
    allocation: AllocationResult | None = None,
    filtered: Filtered | None = None,
    by: ByResult | None = None,
    estimator: str = ESTIMATOR,
    replicates: int = 0,
    level: float = 0.9,
) -> PlanResult:
    """Sweep G over ``Gs`` (default :data:`DEFAULT_G_GRID`) at R rollouts per step (``budget``, else
    ``rollouts_per_step``, else :data:`DEFAULT_BATCH_PROMPTS` × the reference G); recommend the smallest
    whole G meeting ``targets``, else the G ``objective`` chooses (:mod:`.objective`; None: none), priced
    against the run's G (``run_G``: -G given once; else ``reference_G``, the logged group size; None: G = 8),
    with the curation beside it."""
    import dataclasses

    from ..core.estimates import warnings as fit_warnings
    from .curation import curate
    from .objective import DEFAULT_REFERENCE_G, choose

    opts = options or PlanOptions(objective=objective)
    if objective is not None and opts.objective is None:
        opts = dataclasses.replace(opts, objective=objective)
    targets = targets or Targets()
    ref0 = DEFAULT_REFERENCE_G if reference_G is None else int(reference_G)
    if budget is None:
        R = int(rollouts_per_step) if rollouts_per_step is not None else DEFAULT_BATCH_PROMPTS * ref0
        budget = Budget(R, "given" if rollouts_per_step is not None else "batch",
                        "given" if rollouts_per_step is not None else
                        f"--batch-prompts {DEFAULT_BATCH_PROMPTS} × G = {ref0}")
    R = budget.rollouts_per_step
    if R < MIN_ROLLOUTS_PER_STEP:
        from ..errors import ConfigError

        raise ConfigError(f"rollouts per step R = {R:,} ({budget.description}): a step holds no group of "
                          f"G >= {MIN_ROLLOUTS_PER_STEP}, the smallest whose answers can disagree",
                          location="--rollouts-per-step",
                          remedy=f"give --rollouts-per-step R with R >= {MIN_ROLLOUTS_PER_STEP}")
    conv = {"advantage": opts.advantage, "std": opts.std}
    run, run_source = (run_G, "given") if run_G is not None else (reference_G, "logged")
    shown, thin, ref = _grid(corpus, Gs, run, R)
    G_max = shown[-1]
    end = search_end(corpus, min(R, MAX_PLAN_G))
    chosen, g_range = smallest_G(corpus, targets, G_max, estimator=estimator, replicates=replicates, level=level)
    choice = snr = None
    scale: list[tuple[float, float]] = []
    if not targets.given and opts.objective == "snr":
        snr, cur = snr_rule(corpus, R, run, run_source, opts, estimator)
        chosen = snr.recommended_G
        scale = _snr_scale(cur, snr)
    elif not targets.given and opts.objective is not None:
        choice, _ = choose(corpus, opts.objective, R, end, estimator=estimator, tolerance=opts.tolerance,
                           shown=[*shown, ref if ref <= R else shown[0]], **conv)  # type: ignore[arg-type]
        chosen = choice.recommended_G
    ends = () if snr is None or not snr.flat_runs else (snr.flat_runs[0][0], snr.flat_runs[-1][1])
    rows_G = sorted({*shown, *(() if chosen is None else (chosen,)), *((ref,) if ref <= end else ()), *ends})
    rows = sweep(corpus, rows_G, R, estimator=estimator, replicates=replicates, level=level, snr_scale=scale,
                 **conv)
    at0, at1 = corpus.unreachable_parts()
    u0, u1 = corpus.mean(at0), corpus.mean(at1)
    used = tuple({r.estimator for r in rows} | {"bayes"})
    warns = [*fit_warnings(corpus.n_prompts, int(corpus.n.max()), [r.G for r in rows], None, used, level),
             *filter(None, [thin])]
    plain = fit_warnings(corpus.n_prompts, int(corpus.n.max()), [], None, used, level)
    by_G = {r.G: r for r in rows}
    name = "snr" if snr is not None else (None if choice is None else choice.name)
    price = None if chosen is None or ref not in by_G else _price(by_G[ref], by_G[chosen], name, budget,
                                                                  run is not None)
    cur_G = sorted({g for g in (ref, chosen) if g is not None and g <= R})
    curation = curate(corpus, cur_G, R, name if name in ("informative", "rollouts", "knapsack") else "update",
                      estimator=estimator, drop_above=opts.drop_above, keep_band=opts.keep_band,
                      value_G=chosen if chosen is not None else ref, **conv) if cur_G else None  # type: ignore[arg-type]
    floor = None
    if targets.max_silent is not None and chosen is None:
        floor = _floor(corpus, targets.max_silent, R, end, u0 + u1, cur_G[0] if cur_G else 2, estimator,
                       opts.drop_above)
    return PlanResult(
        sweep=rows, recommended_G=chosen, targets=targets, unreachable_share=u0 + u1, unreachable_all_wrong=u0,
        unreachable_all_correct=u1, prompts=corpus.n_prompts, budget=budget, advantage=opts.advantage,
        std=opts.std if opts.advantage == "grpo" else "n/a", allocation=allocation, filtered=filtered, by=by,
        estimator=estimator, recommended_G_range=g_range, level=level, replicates=int(replicates),
        warnings=tuple(warns), max_samples=int(corpus.n.max()), min_samples=int(corpus.n.min()),
        extrapolation_warning=next((w for w in warns if w not in plain), None),
        objective="targets" if targets.given else (opts.objective or "none"),
        objective_choice=choice, snr_choice=snr, price=price, curation=curation, floor=floor,
    )


def snr_rule(corpus: Corpus, R: int, run_G: int | None, run_source: str, options: PlanOptions,
             estimator: str = ESTIMATOR) -> tuple[SnrChoice, Curves]:
    """The one recommendation of ``plan``, ``scan`` and ``report``: :func:`.snr_choice.choose_snr` on
    ``corpus`` at R over every G the logs determine up to min(R, :data:`MAX_PLAN_G`) (:func:`search_end`),
    keeping ``run_G`` when it can."""
    from .snr_choice import choose_snr

    end = search_end(corpus, min(R, MAX_PLAN_G))
    return choose_snr(corpus, R, end, band=options.band, tolerance=options.tolerance, run_G=run_G,
                      run_G_source=run_source if run_G is not None else None, estimator=estimator,
                      advantage=options.advantage, std=options.std)  # type: ignore[arg-type]


@dataclass(frozen=True)
class Recommendation:
    """The plan's recommendation on its own (what ``scan`` shows under "what to do")."""

    budget: Budget
    """R and where it came from (:func:`log_budget`)."""
    choice: SnrChoice
    """The flat range and the verdict (:func:`snr_rule`)."""
    max_samples: int
    """The most samples any prompt has (G above it extrapolate)."""

    def to_dict(self) -> dict[str, Any]:
        """JSON: budget, choice (as plan's ``snr_choice``), max_samples."""
        c = self.choice
        return {"budget": asdict(self.budget), "max_samples": self.max_samples,
                "choice": {**asdict(c), "flat_runs": [list(r) for r in c.flat_runs],
                           "band": {**asdict(c.band), "shares": list(c.band.shares)}}}


def recommendation_of(loaded: LoadedCounts, *, rollouts_per_step: int | None = None,
                      batch_prompts: int = DEFAULT_BATCH_PROMPTS, run_G: int | None = None,
                      options: PlanOptions | None = None, estimator: str = ESTIMATOR) -> Recommendation:
    """:func:`plan_logs`'s recommendation without its sweep: the same counts (:func:`current_difficulty`), the
    same R rule (:func:`log_budget`), the same run G (``run_G``, else the logged group size) and the same rule
    (:func:`snr_rule`)."""
    from . import corpus_of, logged_group_size
    from .objective import DEFAULT_REFERENCE_G

    opts = options or PlanOptions(objective="snr")
    basis = current_difficulty(loaded)[0]
    corpus = corpus_of(basis)
    logged = logged_group_size(loaded)
    budget = log_budget(basis, rollouts_per_step, batch_prompts, logged or DEFAULT_REFERENCE_G)
    run, source = (run_G, "given") if run_G is not None else (logged, "logged")
    choice, _ = snr_rule(corpus, budget.rollouts_per_step, run, source, opts, estimator)
    return Recommendation(budget=budget, choice=choice, max_samples=int(corpus.n.max()))


def _snr_scale(curves: Curves, choice: SnrChoice) -> list[tuple[float, float]]:
    """(λ, best SNR) per share of the choice's band, the best over every G the rule evaluated."""
    out = []
    for facts in choice.shares:
        snr = curves.snr(facts.noise_ratio)
        fits = (curves.G >= 2) & (curves.N >= 1) & (curves.G <= choice.G_end)
        out.append((facts.noise_ratio, float(np.max(np.where(fits, snr, 0.0)))))
    return out


def _grid(corpus: Corpus, Gs: Sequence[int] | None, reference_G: int | None, R: int
          ) -> tuple[list[int], str | None, int]:
    """The sizes shown (``Gs``, else :data:`DEFAULT_G_GRID` up to R less what a thin log does not identify, with
    the note saying so: :func:`~sigmaudit.audits.identified_sizes`) and the reference G of the price (the logged
    group size, else G = 8; on a thin log that does not identify it, the largest G shown)."""
    from . import identified_sizes
    from .objective import DEFAULT_REFERENCE_G

    default = tuple(g for g in DEFAULT_G_GRID if g <= R) or (min(R, MAX_PLAN_G),)
    shown, thin = (Gs, None) if Gs else identified_sizes(corpus, default)
    shown = check_group_sizes(shown, R)
    ref = DEFAULT_REFERENCE_G if reference_G is None else int(reference_G)
    if thin is not None and corpus.identification(ref) is not None:
        ref = max(shown)
    return shown, thin, ref


def search_end(corpus: Corpus, end: int) -> int:
    """The largest G up to ``end`` the logs determine (:meth:`~sigmaudit.core.corpus.Corpus.identification`):
    ``end`` on any corpus but a thin one, where the identified range only narrows as G grows (bisection)."""
    if end < 2 or corpus.identification(end) is None:
        return end
    lo, hi = 1, end  # lo identified (G = 1 always is), hi not
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if corpus.identification(mid) is None else (lo, mid)
    return lo


def _price(before: SweepRow, after: SweepRow, objective: str | None, budget: Budget, logged: bool) -> Price:
    """The recommendation's step at the reference G and at the recommended G."""

    def at(r: SweepRow) -> PriceAt:
        names = {"informative": "informative_groups", "rollouts": "informative_rollouts"}
        value = (None if objective is None else min(r.snr_vs_best or (0.0,)) if objective == "snr" else
                 getattr(r, names.get(objective, objective)))
        return PriceAt(G=r.G, prompts_per_step=r.prompts_per_step, rollouts_used=r.prompts_per_step * r.G,
                       silent_rate=r.silent, informative_groups=r.informative_groups, update=r.update,
                       snr_vs_best=r.snr_vs_best, objective=value, estimator=r.estimator)

    return Price(reference_G=before.G, reference="logged" if logged else "default",
                 rollouts_per_step=budget.rollouts_per_step, before=at(before), after=at(after))


def log_budget(loaded: LoadedCounts, given: int | None, batch_prompts: int, reference_G: int) -> Budget:
    """R: ``--rollouts-per-step`` when given; else the log's median rollouts per step (a log with steps);
    else ``--batch-prompts`` × the logged G (× G = 8 without groups)."""
    if given is not None:
        return Budget(int(given), "given", "--rollouts-per-step")
    groups = loaded.per_group
    if loaded.has_steps and groups is not None and groups.height and groups["step"].null_count() < groups.height:
        import polars as pl

        per_step = groups.filter(pl.col("step").is_not_null()).group_by("step").agg(pl.col("n").sum())["n"].to_numpy()
        R = int(np.median(per_step))
        if R >= 1:
            return Budget(R, "log", f"the log's median per step, {per_step.size:,} steps")
    return Budget(int(batch_prompts) * int(reference_G), "batch",
                  f"--batch-prompts {batch_prompts:,} × G = {reference_G:,}"
                  f"{' (logged)' if groups is not None and groups.height else ' (none logged)'}")


# long: one plan of loaded logs: the budget, the allocation, the --by plans and the DAPO loop, passed through
def plan_logs(
    loaded: LoadedCounts,
    Gs: Sequence[int] | None = None,
    *,
    batch_prompts: int = DEFAULT_BATCH_PROMPTS,
    rollouts_per_step: int | None = None,
    targets: Targets | None = None,
    objective: str | None = "snr",
    options: PlanOptions | None = None,
    run_G: int | None = None,
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
    """:func:`plan` on loaded logs at the budget :func:`log_budget` resolves, with a per-prompt allocation
    when ``budget`` or ``eps`` is given (:func:`sigmaudit.audits.allocate.allocate`; its rows are
    ``result.allocation.per_prompt``), the post-filter state (:mod:`.filtered`) and, with ``--by``, one plan
    per value (the allocation is for the pooled log only)."""
    import functools
    from dataclasses import replace

    from . import corpus_of, logged_group_size
    from .allocate import allocate
    from .filtered import resolve
    from .objective import DEFAULT_REFERENCE_G
    from .observed import statistical_filter

    opts = options or PlanOptions(objective=objective)
    basis, drift, difficulty = current_difficulty(loaded)
    corpus = corpus_of(basis)
    logged = logged_group_size(loaded)
    R = log_budget(basis, rollouts_per_step, batch_prompts, logged or DEFAULT_REFERENCE_G)
    alloc = None
    if budget is not None or eps is not None:
        alloc = allocate(corpus, basis.per_prompt["prompt"].to_list(), budget=budget, eps=eps, min_g=min_g,
                         max_g=max_g, objective=opts.objective if opts.objective in ("informative", "knapsack")
                         else "update", drop_above=opts.drop_above,
                         advantage=opts.advantage, std=opts.std)  # type: ignore[arg-type]
    by = None
    if loaded.by is not None:
        by = ByResult(loaded.by, tuple(
            ByGroup(value, plan_logs(part, Gs, batch_prompts=batch_prompts, rollouts_per_step=R.rollouts_per_step,
                                     targets=targets, options=opts, post_filter=post_filter, estimator=estimator,
                                     replicates=replicates, level=level))
            for value, part in loaded.parts))
    result = plan(corpus, Gs, budget=R, targets=targets, options=opts, reference_G=logged, run_G=run_G,
                  allocation=alloc,
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


def with_recommendation(report: Any, loaded: LoadedCounts, estimator: str = ESTIMATOR) -> Any:
    """A scan's report with plan's recommendation on the same logs (its R rule, rule and the logged G: scan's
    "what to do", the CLI's and the API's alike), left as it is where the logs cannot be planned on (a corpus the
    prior does not identify, a step of fewer than two rollouts: scan says the rest)."""
    from dataclasses import replace

    from ..core.identify import NotIdentifiedError
    from ..errors import ConfigError

    try:
        rec = recommendation_of(loaded, estimator=estimator)
    except (ConfigError, NotIdentifiedError):
        return report
    return report if rec.budget.rollouts_per_step < MIN_ROLLOUTS_PER_STEP else replace(report, recommendation=rec)
