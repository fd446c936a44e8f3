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

import numpy as np
from numpy.typing import NDArray

from ..render import Section, Table, View

if TYPE_CHECKING:
    from ..core.corpus import Corpus
    from .allocate import AllocationResult

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


# ---------------------------------------------------------------- posterior helpers (shared with allocate, gate)

_SIGMA_CACHE: dict[int, NDArray[np.float64]] = {}


def sigma_on_grid(grid: NDArray[np.float64], Gs: Sequence[int]) -> NDArray[np.float64]:
    """E[σ](p, G) for every grid point p (rows) and G in ``Gs`` (columns); 0 at p ∈ {0, 1}.

    Evaluated once per (grid point, G) with :func:`sigmaudit.core.fidelity._expected_sigma_pairs`;
    columns for the default prior grid are cached across calls.
    """
    from ..core.fidelity import _expected_sigma_pairs
    from ..core.prior import default_grid

    Gs_arr = np.asarray(Gs, dtype=np.int64)
    cacheable = grid.shape == (len(default_grid()),) and np.array_equal(grid, default_grid())
    inner = (grid > 0.0) & (grid < 1.0)
    missing = sorted({int(g) for g in Gs_arr if not (cacheable and int(g) in _SIGMA_CACHE)})
    fresh: dict[int, NDArray[np.float64]] = {}
    if missing:
        p_in = grid[inner]
        P, GG = np.meshgrid(p_in, np.asarray(missing, dtype=np.int64), indexing="ij")
        vals = _expected_sigma_pairs(P.ravel(), GG.ravel()).reshape(P.shape)
        for col, g in enumerate(missing):
            full = np.zeros(grid.size)
            full[inner] = vals[:, col]
            fresh[g] = full
        if cacheable:
            _SIGMA_CACHE.update(fresh)
    cols = [fresh[int(g)] if int(g) in fresh else _SIGMA_CACHE[int(g)] for g in Gs_arr]
    return np.stack(cols, axis=1) if cols else np.zeros((grid.size, 0))


def posterior(corpus: Corpus) -> NDArray[np.float64]:
    """Posterior masses over the prior grid for each distinct (n, k) pair of ``corpus`` (cached there)."""
    return corpus.posterior


def posterior_sigma(corpus: Corpus, Gs: Sequence[int], post: NDArray[np.float64] | None = None) -> NDArray[np.float64]:
    """E[E[σ](p, G) | n, k] per distinct pair (rows) and G (columns)."""
    post = posterior(corpus) if post is None else post
    return post @ sigma_on_grid(corpus.prior.grid, Gs)


def posterior_sd(corpus: Corpus, post: NDArray[np.float64] | None = None) -> NDArray[np.float64]:
    """E[sqrt(p (1 − p)) | n, k] per distinct pair: the large-G GRPO gradient mass."""
    post = posterior(corpus) if post is None else post
    g = corpus.prior.grid
    return post @ np.sqrt(g * (1.0 - g))


def corpus_fidelity(corpus: Corpus, Gs: Sequence[int]) -> list[float | None]:
    """Mean fidelity per G, weighted by GRPO mass (see the module docstring); None when no prompt has mass."""
    post = posterior(corpus)
    den = float(corpus.weight @ posterior_sd(corpus, post))
    if den <= 0.0:
        return [None for _ in Gs]
    num = corpus.weight @ posterior_sigma(corpus, Gs, post)
    return [float(min(max(v / den, 0.0), 1.0)) for v in num]


def unreachable_parts(corpus: Corpus) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Posterior P(p = 0 | n, k) and P(p = 1 | n, k) per distinct pair (the prior grid's end points)."""
    post = posterior(corpus)
    grid = corpus.prior.grid
    at0 = post[:, grid == 0.0].sum(axis=1)
    at1 = post[:, grid == 1.0].sum(axis=1)
    return at0, at1


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


def _pct(x: float) -> str:
    return f"{100.0 * x:.1f}%"


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

    @property
    def target_failed(self) -> bool:
        """A target was given and no G of the sweep meets it (exit code 1)."""
        return self.targets.given and self.recommended_G is None

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
        }

    def view(self) -> View:
        """Sweep table, recommendation lines, allocation comparison."""
        B = self.batch_prompts
        rows = tuple(
            (r.G, r.silent, r.all_wrong, r.all_correct, r.fidelity, r.signal_prompts_per_batch,
             r.rollouts_per_signal_prompt, r.dapo_groups_per_kept_group)
            for r in self.sweep
        )
        cols = ("G", "silent", "all-wrong", "all-correct", "fidelity φ", f"signal prompts / {B}",
                "rollouts / signal prompt", "DAPO groups / kept")
        note = (f"estimator: {self.estimator} (posterior expectations under the corpus prior, every G); "
                "fidelity weighted by GRPO mass")
        sweep = Table("G sweep", cols, rows, note=note)
        rec = "none" if self.recommended_G is None else str(self.recommended_G)
        lines = (
            f"{self.prompts} prompts; targets: {self.targets.describe()}",
            f"recommended G: {rec} — {self.reason}",
            f"unreachable at any G: {_pct(self.unreachable_share)} of prompts "
            f"(never solved {_pct(self.unreachable_all_wrong)}, always solved "
            f"{_pct(self.unreachable_all_correct)}; posterior P(p ∈ {{0, 1}}))",
        )
        sections = [Section("G sweep", tables=(sweep,)), Section("recommendation", lines=lines)]
        if self.allocation is not None:
            sections.append(self.allocation.section())
        return View("sigmaudit plan", tuple(sections), csv_table="G sweep")


def _reason(sweep: Sequence[SweepRow], targets: Targets, chosen: int | None, unreachable: float) -> str:
    if not targets.given:
        return "no target given (--max-silent, --min-fidelity), so no recommendation"
    if chosen is not None:
        return f"the smallest G on the grid with {targets.describe()}"
    if targets.max_silent is not None and unreachable >= targets.max_silent:
        return (f"no G meets silent ≤ {targets.max_silent:g}: never- or always-solved prompts alone make up "
                f"{_pct(unreachable)} of the corpus, the silent rate's floor as G → ∞")
    last = max(sweep, key=lambda r: r.G)
    phi = "—" if last.fidelity is None else f"{last.fidelity:.4f}"
    return (f"no G on the grid meets {targets.describe()}; the largest, G = {last.G}, gives silent "
            f"{last.silent:.4f} and fidelity {phi}; try larger -G values")


def sweep(corpus: Corpus, Gs: Sequence[int], batch_prompts: int = DEFAULT_BATCH_PROMPTS) -> tuple[SweepRow, ...]:
    """One :class:`SweepRow` per G (sorted, de-duplicated), all with the model-based estimator."""
    G_sorted = sorted({int(g) for g in Gs})
    if not G_sorted or G_sorted[0] < 1:
        raise ValueError(f"group sizes must be whole numbers >= 1, got {list(Gs)!r}")
    fid = corpus_fidelity(corpus, G_sorted)
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
) -> PlanResult:
    """Sweep G over ``Gs`` (default :data:`DEFAULT_G_GRID`) and recommend the smallest G meeting ``targets``."""
    targets = targets or Targets()
    rows = sweep(corpus, Gs or DEFAULT_G_GRID, batch_prompts)
    at0, at1 = unreachable_parts(corpus)
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
    )
