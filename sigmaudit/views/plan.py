"""The view of a :class:`~sigmaudit.audits.plan.PlanResult`: the G sweep, the recommendation and the
per-prompt allocation against uniform G."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..fmt import AMOUNT, RATE
from ..fmt import pct as pct_
from .labels import filtered_line
from .model import Section, Table, View

if TYPE_CHECKING:
    from ..audits.allocate import AllocationResult, AllocationStats
    from ..audits.plan import PlanResult


def plan_view(result: PlanResult) -> View:
    """Sweep table, recommendation lines, allocation comparison."""
    B = result.batch_prompts
    pct = pct_(result.level, 0)

    def ci(x: tuple[float, float] | None) -> tuple[float | None, float | None]:
        return (None, None) if x is None else x

    with_ci = result.replicates > 0
    rows = tuple(
        (r.G, r.silent, *(ci(r.silent_ci) if with_ci else ()), r.all_wrong, r.all_correct, r.fidelity,
         *(ci(r.fidelity_ci) if with_ci else ()), r.signal_prompts_per_batch,
         r.rollouts_per_signal_prompt, r.dapo_groups_per_kept_group, r.estimator)
        for r in result.sweep
    )
    cols = ("G", "silent", *(("silent lo", "silent hi") if with_ci else ()), "all-wrong", "all-correct",
            "fidelity φ", *(("φ lo", "φ hi") if with_ci else ()), f"signal prompts / {B}",
            "rollouts / signal prompt", "DAPO groups / kept", "estimator")
    note = (f"estimator rule: {result.estimator} (auto: unbiased where every prompt has n ≥ G, else bayes = "
            "posterior under the corpus prior); fidelity: posterior, weighted by GRPO mass"
            + (f"; lo–hi: {pct} bootstrap interval over prompts, {result.replicates:,} replicates" if with_ci else ""))
    digits = tuple(AMOUNT if c.startswith(("signal prompts", "rollouts /", "DAPO")) else RATE for c in cols)
    sweep = Table("G sweep", cols, rows, note=note, digits=digits)
    rec = "none" if result.recommended_G is None else f"{result.recommended_G:,}"
    if result.recommended_G_range is not None and result.targets.given:
        lo, hi = result.recommended_G_range
        rec += (f" ({pct} intervals allow G from {'—' if lo is None else f'{lo:,}'} to "
                f"{f'beyond {max(r.G for r in result.sweep):,}' if hi is None else f'{hi:,}'})")
    lines = (
        f"{result.prompts:,} prompts; targets: {result.targets.describe()}",
        f"recommended G: {rec} — {result.reason}",
        f"unreachable at any G: {pct_(result.unreachable_share)} of prompts "
        f"(never solved {pct_(result.unreachable_all_wrong)}, always solved "
        f"{pct_(result.unreachable_all_correct)}; posterior P(p ∈ {{0, 1}}))",
        *(f"warning: {w}" for w in result.warnings),
    )
    if result.filtered is not None:
        lines += (filtered_line(result.filtered, "pass rates lean toward mixed prompts, so silent rates are "
                                                 "understated"),)
    sections = [Section("G sweep", tables=(sweep,)), Section("recommendation", lines=lines)]
    if result.allocation is not None:
        sections.append(allocation_section(result.allocation))
    if result.by is not None:
        column = result.by.column
        rows = tuple((g.value, g.result.prompts, g.result.recommended_G, g.result.unreachable_share)
                     for g in result.by.groups)
        sections.append(Section(f"by {column}", tables=(Table(
            f"by {column}", (column, "prompts", "recommended G", "unreachable share"), rows,
            note="each value planned on its own (own prior fit); the sweep above is pooled"),)))
    return View("sigmaudit plan", tuple(sections), csv_table="G sweep")


def allocation_section(result: AllocationResult) -> Section:
    """The allocation block of the plan view."""
    head = (f"budget {result.budget:,} rollouts per pass" if result.mode == "budget" else f"ε = {result.eps:g}")
    lines = (
        f"{head}; G_i in [{result.min_g:,}, {result.max_g:,}]; {result.prompts_kept:,} prompts kept, "
        f"{result.prompts_dropped:,} dropped ({result.drop_rule})",
        f"objective: {result.objective}",
        f"method: {result.method}",
    )
    a, u = result.allocated, result.uniform
    uG = "—" if u is None else f"uniform G = {u.G:,}"

    def col(s: AllocationStats | None, name: str) -> Any:
        return None if s is None else getattr(s, name)

    measures = [
        ("rollouts used", "rollouts"),
        ("expected silent rate", "silent_rate"),
        ("rollouts in silent groups", "wasted_rollout_share"),
        ("mean fidelity φ", "fidelity"),
        ("total expected signal Σ E[σ]" + (" (objective)" if result.mode == "budget" else ""), "expected_signal"),
    ]
    if result.mode == "eps":
        measures.insert(1, (f"prompts with φ ≥ {1 - (result.eps or 0):g} (objective)", "eps_met"))
    rows = tuple((label, getattr(a, name), col(u, name)) for label, name in measures)
    uniform_rule = ("the best uniform G for the budget: every prompt (none dropped) at G = min(budget // prompts, "
                    "max-g); the allocation never delivers less Σ E[σ]" if result.mode == "budget" else
                    "every prompt (none dropped) at G = rollouts used // prompts: the same rollouts")
    table = Table("allocation vs uniform G", ("", "per-prompt G_i", uG), rows, note=f"uniform: {uniform_rule}",
                  row_digits=tuple(AMOUNT if name == "expected_signal" else None for _, name in measures))
    return Section("per-prompt allocation", lines=lines, tables=(table,))

