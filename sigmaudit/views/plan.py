"""The view of a :class:`~sigmaudit.audits.plan.PlanResult`: the recommendation first (G, prompts per step
at R, its price against the logged G, how flat the curve is, the curation lever), then the sweep; with
``--full`` every column, the curation table, the price and the objective's curve.

A plan's further sections (``PlanResult.sections``) are drawn by :data:`SECTION_VIEWS`: a module adding a
part of the plan registers its view there."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from ..audits.by import ByGroup, ByResult
from ..fmt import AMOUNT, RATE, format_value
from ..fmt import pct as pct_
from .dapo import dapo_section
from .labels import filtered_line
from .model import Section, Table, View

if TYPE_CHECKING:
    from ..audits.allocate import AllocationResult, AllocationStats
    from ..audits.curation import Curation
    from ..audits.objective import ObjectiveChoice
    from ..audits.plan import Floor, PlanResult, Price

SECTION_VIEWS: dict[str, Callable[[Any, PlanResult], tuple[Section, ...]]] = {}
"""Name of a ``PlanResult.sections`` entry -> its sections (registered by the module that adds it)."""

CONVENTION = {"grpo": "GRPO", "drgrpo": "Dr. GRPO", "rloo": "RLOO"}
G1_NOTE = ("G = 1: one answer per prompt has no spread (σ = 0 for every prompt, whatever its pass rate), so no "
           "estimator (GRPO, Dr. GRPO, RLOO) updates on it: every objective is 0 there and the search starts at G = 2")


def _conv(result: PlanResult) -> str:
    name = CONVENTION.get(result.advantage, result.advantage)
    return f"{name}, {result.std} std" if result.advantage == "grpo" else name


def _change(before: float | None, after: float | None) -> str:
    if before is None or after is None or before == 0:
        return "—"
    r = after / before - 1.0
    return f"{'+' if r >= 0 else '−'}{abs(r):.0%}"


# ---------------------------------------------------------------- the words


def reason(result: PlanResult) -> str:
    """One or two sentences explaining ``recommended_G``: how the targets or the objective chose it, or why
    no G does."""
    if result.objective_choice is not None:
        return _objective_reason(result, result.objective_choice)
    targets, chosen, sweep = result.targets, result.recommended_G, result.sweep
    if not targets.given:
        return "no target given (--max-silent, --min-fidelity) and no objective, so no recommendation"
    if chosen is not None:
        return (f"the smallest G with {targets.describe()} ('sigmaudit check -G {chosen}' passes these targets"
                f"{'' if chosen == 1 else f', -G {chosen - 1} does not'})")
    if result.floor is not None:
        return _floor_words(result.floor, targets)
    last = max(sweep, key=lambda r: r.G)
    return (f"no G up to {last.G:,} meets {targets.describe()}; G = {last.G:,} gives fidelity "
            f"{format_value(last.fidelity)}, and fidelity → 1 only as G → ∞")


def _floor_words(floor: Floor, targets: Any) -> str:
    """A failed --max-silent target: the floor or the G it needs, and the curated figure (never 'try -G')."""
    curated = (f"dropping the {pct_(floor.curated_dropped_share)} of prompts with posterior P(p ∈ {{0, 1}}) > "
               f"{floor.drop_above:g} gives {pct_(floor.curated_silent)} silent at G = {floor.curated_G:,}")
    if floor.below_floor:
        return (f"no G meets silent ≤ {floor.target:g}: never- or always-solved prompts (posterior) are "
                f"{pct_(floor.unreachable_share)} of the corpus, the silent share's floor at any G; the data is "
                f"the lever: {curated}")
    if floor.needed_G is not None:
        return (f"no swept G meets {targets.describe()}: it needs G = {floor.needed_G:,}, "
                f"{floor.needed_prompts_per_step:,} prompts per step at this R (the floor is "
                f"{pct_(floor.unreachable_share)} unreachable prompts); the data is the cheaper lever: {curated}")
    return (f"no G up to the cap meets {targets.describe()}: the floor of {pct_(floor.unreachable_share)} "
            f"unreachable prompts is approached too slowly; the data is the lever: {curated}")


def _objective_reason(result: PlanResult, c: ObjectiveChoice) -> str:
    """The objective's G, its prompts per step, its price, the flatness."""
    if c.recommended_G is None:
        if c.G_end < 2:
            return G1_NOTE
        return f"no G up to {c.G_end:,} gives any {c.noun}: every prompt looks never or always solved"
    return f"{_headline(result, c)}. {flatness_sentence(c)}"


def _headline(result: PlanResult, c: ObjectiveChoice) -> str:
    """``93 prompts per step at R = 4,096 rollouts; against the logged G = 8 (...): update +24%, ...``."""
    G, R = c.recommended_G, c.rollouts_per_step
    assert G is not None
    b = result.budget
    src = "" if b is None else f" ({b.description})"
    head = f"{R // G:,} prompts per step at R = {R:,} rollouts{src}"
    p = result.price
    if p is None:
        return head
    if p.same:
        return f"{head}, the {p.reference} G"
    b, a = p.before, p.after
    return (f"{head}; against the {p.reference} G = {b.G:,} ({b.prompts_per_step:,} prompts): update "
            f"{_change(b.update, a.update)}, SNR {_change(b.snr, a.snr)}, silent {pct_(b.silent_rate)} → "
            f"{pct_(a.silent_rate)}")


def flatness_sentence(c: ObjectiveChoice) -> str:
    """How flat the objective's curve is, in one sentence."""
    conv = CONVENTION.get(c.advantage, c.advantage) + (f", {c.std} std" if c.advantage == "grpo" else "")
    noun = "update" if c.guarded else c.noun
    tol = f"{c.tolerance:.0%}"
    if c.within_lo is None:
        return f"no G gives any {noun}"
    if c.flat:
        return (f"The curve is flat: every G from 2 to {c.G_end:,} is within {tol} of the best {noun}, so G "
                "barely matters here.")
    span = (f"any G from {c.within_lo:,} to {c.within_hi:,}" if c.within_hi != c.within_lo else
            f"only G = {c.within_lo:,}")
    guard = ""
    if c.guarded:
        guard = ("" if c.snr_within is None else
                 f" among the G with the SNR within {tol} of its best ({c.snr_within[0]:,}–{c.snr_within[1]:,})")
    lost = ""
    if c.loss_below is not None:
        lo, hi = c.loss_below
        lost = (f"; G ≤ {c.within_lo - 1:,} loses {lo:.0%}" if round(lo, 2) == round(hi, 2) else
                f"; G ≤ {c.within_lo - 1:,} loses {100 * lo:.0f}–{hi:.0%}")
    end = ""
    return f"{span[0].upper()}{span[1:]} is within {tol} of the best {noun}{guard}{lost}{end} ({conv})."


def curation_sentence(result: PlanResult) -> str | None:
    """The data lever in one sentence, at the recommended (else the logged) G."""
    cur = result.curation
    if cur is None or not cur.rows:
        return None
    post, log = cur.row("posterior"), cur.row("log")
    G = result.recommended_G if result.recommended_G is not None else (result.price.before.G if result.price else None)
    if post is None or log is None:
        return None
    at = next((a for a in post.at if a.G == G), post.at[-1])
    log_at = next((a for a in log.at if a.G == at.G), log.at[-1])
    same = post.prompts_dropped == log.prompts_dropped and post.signal_share == log.signal_share
    log_words = ("" if same or not log.prompts_dropped else
                 f"; dropping the {pct_(log.dropped_share)} never or always solved in the log gives "
                 f"{pct_(log_at.silent_after)} silent at G = {log_at.G:,} but costs {pct_(log.signal_share)} of the "
                 "learnable signal")
    if post.prompts_dropped == 0:
        return (f"Data: no prompt is more likely unreachable than not (P(p ∈ {{0, 1}}) > {cur.drop_above:g})"
                f"{log_words}.")
    which = ": those never or always solved in the log" if same else ""
    return (f"Data first: dropping the {pct_(post.dropped_share)} of prompts more likely unreachable than not "
            f"(P(p ∈ {{0, 1}}) > {cur.drop_above:g}{which}; {pct_(post.signal_share)} of the learnable signal) "
            f"takes silent at G = {at.G:,} from {pct_(at.silent_before)} to {pct_(at.silent_after)}{log_words}.")


def objective_rule(choice: ObjectiveChoice) -> str:
    """How the objective chooses G, in words."""
    tol = f"{choice.tolerance:.0%}"
    if choice.guarded:
        return (f"the smallest G whose expected update is within {tol} of the best among the G keeping the update "
                f"SNR within {tol} of its best (--objective update, --tolerance); G 2–{choice.G_end:,} searched "
                f"({choice.searched:,} values)")
    return (f"the smallest G whose {choice.noun} is within {tol} of the best (--tolerance); G from 2 to "
            f"{choice.G_end:,} searched ({choice.searched:,} values)")


def worded(result: PlanResult) -> PlanResult:
    """``result`` with its :attr:`~sigmaudit.audits.plan.PlanResult.reason` and its objective's rule
    written (and each ``--by`` value's): the words of its JSON contract."""
    by = None if result.by is None else ByResult(result.by.column, tuple(
        ByGroup(g.value, worded(g.result)) for g in result.by.groups))
    choice = result.objective_choice
    choice = None if choice is None else replace(choice, rule=objective_rule(choice))
    text = reason(result)
    data = curation_sentence(result) if result.objective_choice is not None else None
    return replace(result, reason=text if data is None else f"{text} {data}", by=by, objective_choice=choice)


# ---------------------------------------------------------------- the view


def plan_view(result: PlanResult) -> View:
    """Every section (what --full, markdown, HTML and the report show) and the first screen (``View.brief``):
    the recommendation and the brief sweep, then the allocation and DAPO's loop when asked for."""
    rec = Section("recommendation", lines=_recommendation_lines(result))
    sections = [rec, full_sweep(result)]
    if result.curation is not None:
        sections.append(curation_section(result.curation, result))
    if result.price is not None and not result.price.same:
        sections.append(price_section(result.price, result.prompts, result.objective))
    if result.objective_choice is not None:
        sections.append(objective_section(result.objective_choice))
    asked: list[Section] = []
    if result.allocation is not None:
        asked.append(allocation_section(result.allocation))
    if result.dapo is not None:
        asked.append(dapo_section(result.dapo))
    for name, part in result.sections:
        if name in SECTION_VIEWS:
            asked.extend(SECTION_VIEWS[name](part, result))
    if result.by is not None:
        column = result.by.column
        rows = tuple((g.value, g.result.prompts, g.result.recommended_G, g.result.unreachable_share)
                     for g in result.by.groups)
        asked.append(Section(f"by {column}", tables=(Table(
            f"by {column}", (column, "prompts", "recommended G", "unreachable share"), rows,
            note="each value planned on its own (own prior fit); the sweep is pooled"),)))
    from . import context_lines

    first = replace(rec, lines=(*context_lines(result), *rec.lines))  # the whole view gets them in build_view
    return View("sigmaudit plan", (*sections, *asked), csv_table="G sweep",
                brief=(first, brief_sweep(result), *asked))


def _recommendation_lines(result: PlanResult) -> tuple[str, ...]:
    rec = "none" if result.recommended_G is None else f"{result.recommended_G:,}"
    b = result.budget
    lines: list[str] = [f"recommended G: {rec} — {result.reason or reason(result)}"]
    if result.recommended_G_range is not None and result.targets.given and any(result.recommended_G_range):
        lo, hi = result.recommended_G_range
        lines.append(f"{pct_(result.level, 0)} intervals allow G from {'—' if lo is None else f'{lo:,}'} to "
                     f"{'beyond the sweep' if hi is None else f'{hi:,}'}")
    if result.objective_choice is None and b is not None:
        lines.append(f"R = {b.rollouts_per_step:,}: {b.description} (--rollouts-per-step); {result.prompts:,} prompts")
    if any(r.G == 1 for r in result.sweep):
        lines.append(G1_NOTE)
    lines.extend(f"warning: {w}" for w in result.warnings if w != result.extrapolation_warning)
    if result.filtered is not None:
        lines.append(filtered_line(result.filtered, "pass rates lean toward mixed prompts, so silent rates are "
                                                     "understated"))
    return tuple(lines)


def _brief_G(result: PlanResult) -> set[int]:
    """The rows of the brief sweep: powers of two, the logged and recommended G, the flat range's ends."""
    keep = {r.G for r in result.sweep if r.G & (r.G - 1) == 0}
    c = result.objective_choice
    marks = [result.recommended_G, result.price.before.G if result.price else None]
    if c is not None:
        marks += [c.within_lo, c.best_G]
    keep.update(g for g in marks if g is not None)
    return keep


def _marks(result: PlanResult) -> dict[int, str]:
    out: dict[int, list[str]] = {}
    if result.recommended_G is not None:
        out.setdefault(result.recommended_G, []).append("recommended")
    if result.price is not None:
        out.setdefault(result.price.before.G, []).append(result.price.reference)
    c = result.objective_choice
    if c is not None and c.best_G is not None:
        out.setdefault(c.best_G, []).append("best")
    return {g: ", ".join(m) for g, m in out.items()}


def brief_sweep(result: PlanResult) -> Section:
    """The sweep's rows and the columns a reader needs (shown without --full)."""
    R = result.rollouts_per_step
    best = max((r.snr for r in result.sweep if r.snr is not None), default=None)
    marks = _marks(result)
    rows = tuple((r.G, marks.get(r.G, ""), r.prompts_per_step, r.silent, r.informative_groups, r.update,
                  None if best in (None, 0) or r.snr is None else r.snr / best)  # type: ignore[operator]
                 for r in result.sweep if r.G in _brief_G(result))
    cols = ("G", "", "prompts/step", "silent", "informative groups/step", "update", "SNR vs best")
    table = Table("", cols, rows,
                  digits=(RATE, RATE, RATE, RATE, AMOUNT, RATE, RATE))
    past = ("" if result.extrapolation_warning is None else
            f"; G > {result.max_samples:,} past every prompt's samples, extrapolated")
    return Section(f"G sweep at R = {R:,} rollouts per step{past}", tables=(table,))


def full_sweep(result: PlanResult) -> Section:
    """Every row, column and interval (--full)."""
    with_ci = result.replicates > 0

    def ci(x: tuple[float, float] | None) -> tuple[float | None, float | None]:
        return (None, None) if x is None else x

    rows = tuple(
        (r.G, r.prompts_per_step, r.silent, *(ci(r.silent_ci) if with_ci else ()), r.all_wrong, r.all_correct,
         r.fidelity, r.informative_groups, r.informative_rollouts, r.update, *(ci(r.update_ci) if with_ci else ()),
         r.snr, *(ci(r.snr_ci) if with_ci else ()), r.knapsack, r.dapo_groups_per_kept_group, r.estimator)
        for r in result.sweep)
    lohi = ("lo", "hi") if with_ci else ()
    cols = ("G", "prompts/step", "silent", *(f"silent {x}" for x in lohi), "all-wrong", "all-correct", "fidelity φ",
            "informative groups/step", "informative rollouts/step", "update", *(f"update {x}" for x in lohi),
            "SNR", *(f"SNR {x}" for x in lohi), "Knapsack-RL value/step", "DAPO groups/kept", "estimator")
    amounts = {"informative groups/step", "informative rollouts/step", "Knapsack-RL value/step", "DAPO groups/kept",
               "SNR", "SNR lo", "SNR hi", "prompts/step"}
    note = (f"R = {result.rollouts_per_step:,}; {_conv(result)}; silent, fidelity: estimator rule {result.estimator} "
            "(auto: unbiased where every prompt has n ≥ G, else bayes = posterior under the corpus prior); "
            "update, SNR, Knapsack-RL: posterior; SNR in units of |Δμ|/τ (docs/theory.md)"
            + (f"; lo–hi: {pct_(result.level, 0)} bootstrap interval over prompts, {result.replicates:,} replicates"
               if with_ci else ""))
    digits = tuple(AMOUNT if c in amounts else RATE for c in cols)
    lines = tuple(x for x in (
        result.extrapolation_warning and f"warning: {result.extrapolation_warning}",
        f"unreachable at any G: {pct_(result.unreachable_share)} of prompts (never solved "
        f"{pct_(result.unreachable_all_wrong)}, always solved {pct_(result.unreachable_all_correct)}; posterior "
        "P(p ∈ {0, 1})): the silent share's floor",
        None if result.difficulty is None else f"read from {result.difficulty}") if x)
    return Section("G sweep", lines=lines, tables=(Table("G sweep", cols, rows, note=note, digits=digits),))


def curation_section(cur: Curation, result: PlanResult) -> Section:
    """Each curation rule at the logged and the recommended G (--full)."""
    from ..audits.objective import OBJECTIVES

    noun = OBJECTIVES[cur.objective].noun if cur.objective in OBJECTIVES else cur.objective
    rows = tuple((r.rule, r.description, r.dropped_share, r.signal_share, a.G, a.silent_before, a.silent_after,
                  a.objective_before, a.objective_after) for r in cur.rows for a in r.at)
    cols = ("rule", "drops", "prompts dropped", "learnable signal dropped", "G", "silent", "silent after",
            noun, f"{noun} after")
    table = Table("curation", cols, rows, digits=(RATE, RATE, RATE, RATE, RATE, RATE, RATE, AMOUNT, AMOUNT),
                  note=f"at R = {result.rollouts_per_step:,}; learnable signal Σ E[sqrt(p(1 − p))] (large-G GRPO "
                       "mass); the kept prompts keep their posteriors under the whole corpus's prior; --drop-out "
                       "writes the per-prompt list")
    return Section("curation", tables=(table,))


def price_section(price: Price, prompts: int, objective: str) -> Section:
    """The recommendation's step against the reference G at the same R (--full; omitted when they agree)."""
    b, a = price.before, price.after
    ref = "logged" if price.reference == "logged" else "default: none logged"
    measures = [("prompts per step", "prompts_per_step"), ("rollouts used", "rollouts_used"),
                ("silent share", "silent_rate"), ("informative groups per step", "informative_groups"),
                ("expected update", "update"), ("update SNR", "snr")]

    def ratio(x: float | None, y: float | None) -> float | None:
        return None if x is None or y is None or x == 0 else y / x

    rows = tuple((label, getattr(b, name), getattr(a, name), ratio(getattr(b, name), getattr(a, name)))
                 for label, name in measures)
    table = Table("price", ("", f"G = {b.G:,} ({ref})", f"G = {a.G:,} (recommended)", "after/before"), rows,
                  digits=(RATE, AMOUNT, AMOUNT, AMOUNT),
                  row_digits=tuple(RATE if name in ("silent_rate", "update") else None for _, name in measures),
                  note=f"a step of R = {price.rollouts_per_step:,} rollouts drawn like these {prompts:,} prompts")
    return Section("price", tables=(table,))


def objective_section(choice: ObjectiveChoice) -> Section:
    """The objective's curve at the marked G and its rule (--full)."""
    rows = tuple((c.G, c.prompts_per_step, c.value, c.of_best, c.snr_of_best) for c in choice.curve)
    table = Table(f"objective: {choice.noun}", ("G", "prompts/step", "value", "vs best", "SNR vs best"), rows,
                  digits=(RATE, RATE, RATE, RATE, RATE), note=choice.definition)
    return Section("objective", lines=(f"rule: {objective_rule(choice)}",), tables=(table,))


def allocation_section(result: AllocationResult) -> Section:
    """The allocation block of the plan view."""
    head = (f"budget {result.budget:,} rollouts per pass" if result.mode == "budget" else f"ε = {result.eps:g}")
    lines = (
        f"{head}; G_i in [{result.min_g:,}, {result.max_g:,}]; {result.prompts_kept:,} prompts given rollouts, "
        f"{result.prompts_dropped:,} none ({result.drop_rule})",
        f"objective: {result.objective}; method: {result.method}",
        "stock verl and TRL sample one n for every prompt (rollout.n, num_generations): a per-prompt n needs a "
        "custom sampler",
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
        ("objective Σ f_i(G_i)" + (" (maximised)" if result.mode == "budget" else ""), "objective_value"),
    ]
    if result.mode == "eps":
        measures.insert(1, (f"prompts with φ ≥ {1 - (result.eps or 0):g} (objective)", "eps_met"))
    rows = tuple((label, getattr(a, name), col(u, name)) for label, name in measures)
    uniform_rule = ("every prompt at G = min(budget // prompts, max-g); prompts the samples cannot place count 0"
                    if result.mode == "budget" else "every prompt at G = rollouts used // prompts: the same rollouts")
    table = Table("allocation vs uniform G", ("", "per-prompt G_i", uG), rows, note=f"uniform: {uniform_rule}",
                  row_digits=tuple(AMOUNT if name == "objective_value" else None for _, name in measures))
    return Section("per-prompt allocation", lines=lines, tables=(table,))
