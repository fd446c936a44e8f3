"""The view of a :class:`~sigmaudit.audits.plan.PlanResult`: the G sweep, the recommendation and the
per-prompt allocation against uniform G."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

from ..audits.by import ByGroup, ByResult
from ..fmt import AMOUNT, RATE
from ..fmt import pct as pct_
from .dapo import dapo_section
from .labels import filtered_line
from .model import Section, Table, View

if TYPE_CHECKING:
    from ..audits.allocate import AllocationResult, AllocationStats
    from ..audits.objective import ObjectiveChoice
    from ..audits.plan import PlanResult, Price


def reason(result: PlanResult) -> str:
    """One sentence explaining ``recommended_G``: how the targets or the objective chose it, or why no G."""
    if result.objective_choice is not None:
        return _objective_reason(result.objective_choice)
    targets, chosen, sweep = result.targets, result.recommended_G, result.sweep
    if not targets.given:
        return "no target given (--max-silent, --min-fidelity), so no recommendation"
    if chosen is not None:
        return (f"the smallest G with {targets.describe()} (every whole G up to {max(r.G for r in sweep)} "
                f"searched; 'sigmaudit check -G {chosen}' passes these targets, -G {chosen - 1} does not)")
    unreachable = result.unreachable_share
    if targets.max_silent is not None and unreachable >= targets.max_silent:
        return (f"no G meets silent ≤ {targets.max_silent:g}: never- or always-solved prompts alone make up "
                f"{pct_(unreachable)} of the corpus, the silent rate's floor as G → ∞")
    last = max(sweep, key=lambda r: r.G)
    phi = "—" if last.fidelity is None else f"{last.fidelity:.4f}"
    sil = "—" if last.silent is None else f"{last.silent:.4f}"
    return (f"no G up to {last.G} meets {targets.describe()}; G = {last.G} gives silent "
            f"{sil} and fidelity {phi}; try larger -G values")


def _objective_reason(choice: ObjectiveChoice) -> str:
    """Why the objective chose its G (or none)."""
    rec, name = choice.recommended_G, choice.noun
    if rec is None:
        return f"no G up to {choice.G_end:,} gives any {name}: every prompt looks never or always solved"
    point = {c.G: c for c in choice.curve}[rec]
    why = (f"the most {name} per step while a rollout still returns {point.efficiency:.1%} (≥ "
           f"{choice.efficiency_floor:.0%}) of the best per-rollout value, at G = {choice.best_per_rollout_G}")
    cap = ("returns saturate beyond the sweep's end, so the cap is G = "
           f"{choice.G_end:,}" if choice.saturation_G is None else
           f"returns saturate at G = {choice.saturation_G:,} ({choice.saturation_share:.0%} of the G → ∞ limit), "
           "the cap")
    stop = {"efficiency": "a larger G returns less than that per rollout",
            "saturation": "capped where returns saturate",
            "sweep end": f"the sweep ends at G = {choice.G_end:,}: give larger -G to search further",
            }[choice.bound or ""]
    return f"{why}; {stop}; {cap}"


def objective_rule(choice: ObjectiveChoice) -> str:
    """How the objective chooses G, in words."""
    return (f"the most {choice.noun} per step among G whose {choice.noun} per rollout is at least "
            f"{choice.efficiency_floor:.0%} of the best any G gives, capped where returns saturate "
            f"({choice.saturation_share:.0%} of the G → ∞ limit); every whole G up to {choice.G_end:,} searched")


def worded(result: PlanResult) -> PlanResult:
    """``result`` with its :attr:`~sigmaudit.audits.plan.PlanResult.reason` and its objective's rule
    written (and each ``--by`` value's): the words of its JSON contract."""
    by = None if result.by is None else ByResult(result.by.column, tuple(
        ByGroup(g.value, worded(g.result)) for g in result.by.groups))
    choice = result.objective_choice
    choice = None if choice is None else replace(choice, rule=objective_rule(choice))
    return replace(result, reason=reason(result), by=by, objective_choice=choice)


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
    chooser = (f"targets: {result.targets.describe()}" if result.objective in ("targets", "none") else
               f"objective: {result.objective} (no target given; --objective)")
    lines = (
        f"{result.prompts:,} prompts; {chooser}",
        f"recommended G: {rec} — {reason(result)}",
        *(() if result.difficulty is None else (f"read from {result.difficulty}",)),
        f"unreachable at any G: {pct_(result.unreachable_share)} of prompts "
        f"(never solved {pct_(result.unreachable_all_wrong)}, always solved "
        f"{pct_(result.unreachable_all_correct)}; posterior P(p ∈ {{0, 1}}))",
        *(f"warning: {w}" for w in result.warnings),
    )
    if result.filtered is not None:
        lines += (filtered_line(result.filtered, "pass rates lean toward mixed prompts, so silent rates are "
                                                 "understated"),)
    sections = [Section("G sweep", tables=(sweep,)), Section("recommendation", lines=lines)]
    if result.objective_choice is not None:
        sections.append(objective_section(result.objective_choice, result.batch_prompts, result.prompts,
                                          result.price.reference_G if result.price else None))
    if result.price is not None:
        sections.append(price_section(result.price, result.prompts, result.objective))
    if result.allocation is not None:
        sections.append(allocation_section(result.allocation))
    if result.dapo is not None:
        sections.append(dapo_section(result.dapo))
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



def objective_section(choice: ObjectiveChoice, B: int, prompts: int, reference_G: int | None) -> Section:
    """The objective's curve, its knee and its saturation cap."""
    named = ((choice.recommended_G, "recommended"), (choice.best_per_rollout_G, "best per rollout"),
             (choice.saturation_G, "saturation cap"), (reference_G, "reference"))
    marks = {c.G: ", ".join(m for g, m in named if g == c.G) for c in choice.curve}
    rows = tuple((c.G, marks.get(c.G, ""), c.value, B * c.value, c.per_rollout, c.efficiency, c.share_of_limit)
                 for c in choice.curve)
    cols = ("G", "", "per group", f"per step of {B:,}", "per rollout", "vs best", "of limit")
    digits = (RATE, RATE, RATE, AMOUNT, RATE, RATE, RATE)
    sat = (f"not reached by G = {choice.G_end:,} (the sweep's end caps the search)" if choice.saturation_G is None
           else f"G = {choice.saturation_G:,}")
    lines = (
        f"objective {choice.name}: {choice.per_group}; {choice.definition}",
        f"predicted for these {prompts:,} prompts' pass rates (estimator {choice.estimator}); "
        f"G → ∞ limit {choice.limit:.4f} = {choice.limit_definition}",
        f"rule: {objective_rule(choice)}",
        f"knee: G = {'—' if choice.recommended_G is None else f'{choice.recommended_G:,}'}; most per rollout at "
        f"G = {'—' if choice.best_per_rollout_G is None else choice.best_per_rollout_G} (a per-rollout objective "
        "alone always favours the smallest groups, the noisiest updates)",
        f"saturation cap ({choice.saturation_share:.0%} of the limit): {sat}",
    )
    table = Table(f"objective curve: {choice.noun}", cols, rows, digits=digits,
                  note="per group: mean over prompts; vs best: this G's value per rollout over the best of any G; "
                       "of limit: over the G → ∞ limit")
    return Section("objective", lines=lines, tables=(table,))


def price_section(price: Price, prompts: int, objective: str) -> Section:
    """The recommendation's cost and yield per step against the reference G."""
    b, a = price.before, price.after
    ref = "logged" if price.reference == "logged" else "default: none logged"
    measures = [
        ("rollouts per step", "rollouts_per_step"),
        ("silent share", "silent_rate"),
        ("informative groups per step", "informative_groups_per_step"),
        ("rollouts per signal prompt", "rollouts_per_signal_prompt"),
    ]
    if b.objective_per_step is not None and objective != "informative":  # informative: the row above
        from ..audits.objective import OBJECTIVES

        measures.append((f"{OBJECTIVES[objective].noun} per step", "objective_per_step"))

    def ratio(x: float | None, y: float | None) -> float | None:
        return None if x is None or y is None or x == 0 else y / x

    rows = tuple((label, getattr(b, name), getattr(a, name), ratio(getattr(b, name), getattr(a, name)))
                 for label, name in measures)
    table = Table("price", ("", f"G = {b.G:,} ({ref})", f"G = {a.G:,} (recommended)", "after/before"), rows,
                  digits=(RATE, AMOUNT, AMOUNT, AMOUNT),
                  row_digits=tuple(RATE if name == "silent_rate" else None for _, name in measures),
                  note=f"predicted for a step of {price.batch_prompts:,} prompts (--batch-prompts) drawn like these "
                       f"{prompts:,}; silent share by estimator {b.estimator} at G = {b.G:,}"
                       + ("" if a.G == b.G else f", {a.estimator} at G = {a.G:,}"))
    return Section("price", tables=(table,))
