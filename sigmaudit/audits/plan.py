"""``sigmaudit plan``: what each group size G would do on this corpus, and the smallest G meeting targets.

One estimator across the whole sweep: the model-based (``bayes``) one, i.e.
posterior expectations under the corpus's grid prior (:attr:`Corpus.prior`,
THEORY.md "Estimating from finite logs"). It exists for every G, so the curve
is smooth, and because each prompt's posterior does not depend on G while
p^G + (1 − p)^G falls and E[σ](p, G) rises with G for every p, the silent rate
is non-increasing and the fidelity non-decreasing along the sweep.

Per G (means over prompts):

- ``silent`` = mean_i E[p^G + (1 − p)^G | n_i, k_i], split into all-wrong and all-correct;
- ``fidelity`` = Σ_i E[E[σ](p, G) | n_i, k_i] / Σ_i E[sqrt(p (1 − p)) | n_i, k_i]: the mean of
  φ(p, G) weighted by each prompt's (large-G) GRPO gradient mass, under the posterior;
- ``signal_prompts_per_batch`` = B (1 − silent): prompts of a batch of B with a non-silent group;
- ``dapo_groups_per_kept_group`` = 1 / (1 − silent): groups DAPO draws (prompts taken at random
  from the corpus) per kept group; ``rollouts_per_signal_prompt`` = G / (1 − silent).

As G → ∞ the silent rate falls to the prior's mass at p ∈ {0, 1} (``unreachable_share``): the
posterior probability, averaged over prompts, that a prompt is never or always solved.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from ..fmt import pct
from ..loaders.options import Filtered
from .by import ByGroup, ByResult

if TYPE_CHECKING:
    from ..core.corpus import Corpus
    from ..loaders import LoadedCounts
    from .allocate import AllocationResult  # the plan carries an allocation; allocate never imports plan

DEFAULT_G_GRID: tuple[int, ...] = (2, 4, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256)
"""Group sizes swept when ``-G`` is not given."""
DEFAULT_BATCH_PROMPTS = 512
"""Prompts per batch B for ``signal_prompts_per_batch``."""
ESTIMATOR = "bayes"
"""The sweep's estimator: posterior expectations under the corpus prior."""
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
    silent: float
    """Predicted corpus silent-group rate: mean over prompts of E[p^G + (1 − p)^G | n, k]."""
    all_wrong: float
    """All-wrong part of ``silent``."""
    all_correct: float
    """All-correct part of ``silent``."""
    fidelity: float | None
    """GRPO-mass-weighted mean fidelity φ (None when no prompt has gradient mass)."""
    signal_prompts_per_batch: float
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
        """Every set target holds at this row (a missing fidelity never meets a fidelity target)."""
        if self.max_silent is not None and not row.silent <= self.max_silent:
            return False
        return self.min_fidelity is None or (row.fidelity is not None and row.fidelity >= self.min_fidelity)

    def describe(self) -> str:
        """``silent ≤ 0.3 and fidelity ≥ 0.9``."""
        parts = []
        if self.max_silent is not None:
            parts.append(f"silent ≤ {self.max_silent:g}")
        if self.min_fidelity is not None:
            parts.append(f"fidelity ≥ {self.min_fidelity:g}")
        return " and ".join(parts) if parts else "no target"


def recommend(sweep: Sequence[SweepRow], targets: Targets) -> int | None:
    """The smallest G of the sweep meeting every target; None when none does or no target is set."""
    if not targets.given:
        return None
    for row in sorted(sweep, key=lambda r: r.G):
        if targets.met_by(row):
            return row.G
    return None


@dataclass(frozen=True)
class PlanResult:
    """The G sweep, the recommendation and (optionally) a per-prompt allocation."""

    sweep: tuple[SweepRow, ...]
    """One row per G, ascending."""
    recommended_G: int | None
    """Smallest G of the sweep meeting every target; None when none does or no target was given."""
    reason: str
    """One sentence explaining ``recommended_G``."""
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
    """Estimator of every sweep column: ``bayes`` (posterior expectations under the corpus prior)."""
    fidelity_definition: str = FIDELITY_DEFINITION
    """How the ``fidelity`` column is computed."""
    allocation: AllocationResult | None = None
    """Per-prompt allocation summary when ``--budget`` or ``--eps`` was given."""
    filtered: Filtered | None = None
    """Set when the log is a post-filter dump (its pass rates lean toward mixed prompts)."""
    by: ByResult | None = None
    """With ``--by COLUMN``: each value's own sweep and recommendation (this one is pooled)."""

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
            "reason": self.reason,
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
        }


def _reason(sweep: Sequence[SweepRow], targets: Targets, chosen: int | None, unreachable: float) -> str:
    if not targets.given:
        return "no target given (--max-silent, --min-fidelity), so no recommendation"
    if chosen is not None:
        return f"the smallest G on the grid with {targets.describe()}"
    if targets.max_silent is not None and unreachable >= targets.max_silent:
        return (f"no G meets silent ≤ {targets.max_silent:g}: never- or always-solved prompts alone make up "
                f"{pct(unreachable)} of the corpus, the silent rate's floor as G → ∞")
    last = max(sweep, key=lambda r: r.G)
    phi = "—" if last.fidelity is None else f"{last.fidelity:.4f}"
    return (f"no G on the grid meets {targets.describe()}; the largest, G = {last.G}, gives silent "
            f"{last.silent:.4f} and fidelity {phi}; try larger -G values")


def sweep(corpus: Corpus, Gs: Sequence[int], batch_prompts: int = DEFAULT_BATCH_PROMPTS) -> tuple[SweepRow, ...]:
    """One :class:`SweepRow` per G (sorted, de-duplicated), all with the model-based estimator."""
    G_sorted = sorted({int(g) for g in Gs})
    if not G_sorted or G_sorted[0] < 1:
        raise ValueError(f"group sizes must be whole numbers >= 1, got {list(Gs)!r}")
    fid = corpus.fidelity(G_sorted)
    rows = []
    for g, phi in zip(G_sorted, fid, strict=True):
        s = corpus.silent(g, ESTIMATOR)
        silent = float(s.silent_rate or 0.0)
        kept = 1.0 - silent
        rows.append(SweepRow(
            G=g,
            silent=silent,
            all_wrong=float(s.all_wrong_rate or 0.0),
            all_correct=float(s.all_correct_rate or 0.0),
            fidelity=phi,
            signal_prompts_per_batch=batch_prompts * kept,
            rollouts_per_signal_prompt=g / kept if kept > 0 else None,
            dapo_groups_per_kept_group=1.0 / kept if kept > 0 else None,
        ))
    return tuple(rows)


def plan(
    corpus: Corpus,
    Gs: Sequence[int] | None = None,
    *,
    batch_prompts: int = DEFAULT_BATCH_PROMPTS,
    targets: Targets | None = None,
    allocation: AllocationResult | None = None,
    filtered: Filtered | None = None,
    by: ByResult | None = None,
) -> PlanResult:
    """Sweep G over ``Gs`` (default :data:`DEFAULT_G_GRID`) and recommend the smallest G meeting ``targets``."""
    targets = targets or Targets()
    rows = sweep(corpus, Gs or DEFAULT_G_GRID, batch_prompts)
    at0, at1 = corpus.unreachable_parts()
    u0, u1 = corpus.mean(at0), corpus.mean(at1)
    chosen = recommend(rows, targets)
    return PlanResult(
        sweep=rows,
        recommended_G=chosen,
        reason=_reason(rows, targets, chosen, u0 + u1),
        targets=targets,
        unreachable_share=u0 + u1,
        unreachable_all_wrong=u0,
        unreachable_all_correct=u1,
        prompts=corpus.n_prompts,
        batch_prompts=int(batch_prompts),
        allocation=allocation,
        filtered=filtered,
        by=by,
    )


def plan_logs(
    loaded: LoadedCounts,
    Gs: Sequence[int] | None = None,
    *,
    batch_prompts: int = DEFAULT_BATCH_PROMPTS,
    targets: Targets | None = None,
    budget: int | None = None,
    eps: float | None = None,
    min_g: int = 2,
    max_g: int = 256,
    post_filter: bool = False,
) -> PlanResult:
    """:func:`plan` on loaded logs, with a per-prompt allocation when ``budget`` or ``eps`` is given
    (:func:`sigmaudit.audits.allocate.allocate`; its rows are ``result.allocation.per_prompt``),
    the post-filter state (:mod:`.filtered`) and, with ``--by``, one plan per value (the
    allocation is for the pooled log only)."""
    import functools

    from . import corpus_of
    from .allocate import allocate
    from .filtered import resolve
    from .scan import statistical_filter

    corpus = corpus_of(loaded)
    alloc = None
    if budget is not None or eps is not None:
        alloc = allocate(corpus, loaded.per_prompt["prompt"].to_list(), budget=budget, eps=eps,
                         min_g=min_g, max_g=max_g)
    by = None
    if loaded.by is not None:
        by = ByResult(loaded.by, tuple(
            ByGroup(value, plan_logs(part, Gs, batch_prompts=batch_prompts, targets=targets, post_filter=post_filter))
            for value, part in loaded.parts))
    return plan(corpus, Gs, batch_prompts=batch_prompts, targets=targets, allocation=alloc,
                filtered=resolve(loaded, post_filter, functools.partial(statistical_filter, loaded)), by=by)
