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
from ..fmt import AMOUNT, PERCENT, RATE, format_value, plural
from ..fmt import pct as pct_
from .dapo import dapo_section
from .labels import filtered_line
from .model import Section, Table, View

if TYPE_CHECKING:
    from ..audits.allocate import AllocationResult, AllocationStats
    from ..audits.curation import Curation
    from ..audits.objective import ObjectiveChoice
    from ..audits.plan import Floor, PlanResult, Price
    from ..audits.snr_choice import SnrChoice

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
    if result.snr_choice is not None:
        return snr_sentences(result.snr_choice, result.max_samples)
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
                f"{plural(floor.needed_prompts_per_step, 'prompt')} per step at this R (the floor is "
                f"{pct_(floor.unreachable_share)} unreachable prompts); the data is the cheaper lever: {curated}")
    return (f"no G up to the cap meets {targets.describe()}: the floor of {pct_(floor.unreachable_share)} "
            f"unreachable prompts is approached too slowly; the data is the lever: {curated}")


def _objective_reason(result: PlanResult, c: ObjectiveChoice) -> str:
    """A view's G, its prompts per step, the flatness."""
    if c.recommended_G is None:
        if c.G_end < 2:
            return G1_NOTE
        return f"no G up to {c.G_end:,} gives any {c.noun}: every prompt looks never or always solved"
    G, R = c.recommended_G, c.rollouts_per_step
    src = "" if result.budget is None else f" ({result.budget.description})"
    return (f"by --objective {c.name}, {c.noun}: G = {G:,}, {plural(R // G, 'prompt')} per step at R = {R:,}{src}. "
            f"{flatness_sentence(c)}")


def flatness_sentence(c: ObjectiveChoice) -> str:
    """How flat a view's curve is, in one sentence."""
    conv = CONVENTION.get(c.advantage, c.advantage) + (f", {c.std} std" if c.advantage == "grpo" else "")
    tol = f"{c.tolerance:.0%}"
    if c.within_lo is None:
        return f"no G gives any {c.noun}"
    if c.flat:
        return f"Every searched G from 2 to {c.G_end:,} is within {tol} of the best ({conv})."
    span = (f"the searched G from {c.within_lo:,} to {c.within_hi:,}" if c.within_hi != c.within_lo else
            f"only G = {c.within_lo:,}")
    lost = ""
    if c.loss_below is not None:
        lo, hi = c.loss_below
        lost = (f"; G ≤ {c.within_lo - 1:,} loses {lo:.0%}" if round(lo, 2) == round(hi, 2) else
                f"; G ≤ {c.within_lo - 1:,} loses {100 * lo:.0f}–{hi:.0%}")
    return f"{span[0].upper()}{span[1:]} are within {tol} of the best{lost} ({conv})."


# ---------------------------------------------------------------- the SNR rule in words


def runs_words(runs: tuple[tuple[int, int], ...]) -> str:
    """``5–14`` or ``5–70 and 73``."""
    parts = [f"{lo:,}" if lo == hi else f"{lo:,}–{hi:,}" for lo, hi in runs]
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + f" and {parts[-1]}"


def _losses(c: SnrChoice, which: str) -> str:
    """``loses 1–3% (f = 2%: 3%, …)`` of the run's or the recommended G, over the band."""
    vals = [(s.share, getattr(s, which)) for s in c.shares if getattr(s, which) is not None]
    if not vals:
        return ""
    lo, hi = min(v for _, v in vals), max(v for _, v in vals)
    span = pct_(hi) if len(vals) == 1 or round(lo, 3) == round(hi, 3) else f"{100 * lo:.1f}–{pct_(hi)}"
    each = ", ".join(f"f = {100 * f:.3g}%: {pct_(v)}" for f, v in vals)
    return span if len(vals) == 1 else f"{span} ({each})"


def _at_G(c: SnrChoice, G: int, max_samples: int) -> str:
    """``G = 8 (200 prompts/step)``, with the rollouts a step leaves unused and extrapolation named."""
    R = c.rollouts_per_step
    N = R // G
    unused = "" if N * G == R else f", {N * G:,} of the {R:,} rollouts"
    past = "" if G <= max_samples else ", past every prompt's samples: extrapolated"
    return f"G = {G:,} ({plural(N, 'prompt')}/step{unused}{past})"


def snr_sentences(c: SnrChoice, max_samples: int) -> str:
    """The flat range over the band and the verdict on the run's G, in two or three sentences."""
    tol = f"{c.tolerance:.0%}"
    shares = f"between-prompt noise share {c.band.describe()}"
    if c.verdict == "none":
        return "no G gives the step any signal: every prompt looks never or always solved"
    if c.verdict == "no-flat-range":
        G = c.recommended_G
        assert G is not None
        return (f"No G keeps the step's SNR within {tol} of the best for every {shares}: {_at_G(c, G, max_samples)} "
                f"loses the least at worst, {_losses(c, 'recommended_loss')}.")
    grid = "" if c.flat_exact else " (on the searched grid past G = 64)"
    one = len(c.flat_runs) == 1 and c.flat_runs[0][0] == c.flat_runs[0][1]
    flat = (f"G = {runs_words(c.flat_runs)}{grid} {'keeps' if one else 'keep'} the step's SNR within {tol} of the best "
            f"for any {shares}")
    G = c.recommended_G
    assert G is not None
    what = {"given": "-G", "logged": "logged"}.get(c.run_G_source or "", "run's")
    if c.verdict == "keep":
        text = f"G barely matters here: {flat}. The {what} {_at_G(c, G, max_samples)} is inside: keep it."
    elif c.verdict == "nearest":
        run = c.run_G
        assert run is not None
        loss = _losses(c, "run_G_loss")
        lost = f": it loses {loss} of the best" if loss else " (it does not fit a step)"
        text = (f"{flat}. The {what} G = {run:,} is outside{lost}; {_at_G(c, G, max_samples)}, the nearest inside, "
                f"loses at most {pct_(c.worst_loss)}.")
    else:
        near = ("is one of them" if G == c.band.G_ref else f"is the one nearest the band's G = {c.band.G_ref:,}")
        text = (f"{flat}. The log shows no run G (an eval file; -G given once names one): any of these; "
                f"{_at_G(c, G, max_samples)} {near}.")
    if c.small_prompts:
        text += (f" Few prompts per step: {c.recommended_prompts_per_step:,} at G = {G:,}, fewer than 1/{tol} = "
                 f"{round(1 / c.tolerance):,}, so one prompt is more than {tol} of a step's mean.")
    return text


def data_lever(result: PlanResult) -> str | None:
    """The data lever line of the first screen (the curation's figures; :func:`curation_sentence`)."""
    return curation_sentence(result)


def curation_sentence(result: PlanResult) -> str | None:
    """The data lever in one sentence, at the recommended (else the logged) G."""
    cur = result.curation
    if cur is None or not cur.rows:
        return None
    post, log = cur.row("posterior"), cur.row("log")
    G = result.recommended_G if result.recommended_G is not None else (result.price.before.G if result.price else None)
    if cur.row("value") is not None:
        return value_sentence(cur)
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


def value_sentence(cur: Curation) -> str:
    """The data lever by value (``sigmaudit curate``'s drop class at the G to be run), at that G."""
    from ..core.value import DEFAULT_CONFIDENCE, DEFAULT_MIN_VALUE

    row = cur.row("value")
    assert row is not None and cur.value_G is not None
    at = next((a for a in row.at if a.G == cur.value_G), row.at[-1])
    rule = (f"informative at G = {cur.value_G:,} less than {DEFAULT_MIN_VALUE:g} × as often as the average prompt, "
            f"sure at {pct_(DEFAULT_CONFIDENCE, 0)}")
    if row.prompts_dropped == 0:
        return f"Data: no prompt is surely below the value threshold ({rule}); `sigmaudit curate` lists re-probes."
    return (f"Data is the lever: dropping the {pct_(row.dropped_share)} of prompts {rule}, takes silent at "
            f"G = {at.G:,} from {pct_(at.silent_before)} to {pct_(at.silent_after)} for "
            f"{pct_(at.signal_cost)} of the expected update; `sigmaudit curate --dataset TRAIN --curated-out OUT` "
            "writes the curated set.")


def objective_rule(choice: ObjectiveChoice) -> str:
    """How the objective chooses G, in words."""
    tol = f"{choice.tolerance:.0%}"
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
    data = curation_sentence(result) if result.objective_choice is not None or result.snr_choice else None
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
    if result.snr_choice is not None:
        sections.append(snr_section(result.snr_choice))
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


def _samples(result: PlanResult) -> str:
    lo, hi = result.min_samples, result.max_samples
    return f"{hi:,} samples each" if lo == hi else f"{lo:,}–{hi:,} samples per prompt"


def _snr_lines(result: PlanResult, c: SnrChoice) -> list[str]:
    """The first screen of the default rule: R and its source, the conventions and the data; the flat range
    and the verdict; the data lever."""
    b = result.budget
    src = "" if b is None else f" ({b.description})"
    lines = [f"R = {c.rollouts_per_step:,} rollouts/step{src} · {_conv(result)} · {result.prompts:,} prompts, "
             f"{_samples(result)}", snr_sentences(c, result.max_samples)]
    data = data_lever(result)
    if data is not None:
        lines.append(data)
    return lines


def _recommendation_lines(result: PlanResult) -> tuple[str, ...]:
    rec = "none" if result.recommended_G is None else f"{result.recommended_G:,}"
    b = result.budget
    lines: list[str] = (_snr_lines(result, result.snr_choice) if result.snr_choice is not None else
                        [f"recommended G: {rec} — {result.reason or reason(result)}"])
    if result.recommended_G_range is not None and result.targets.given and any(result.recommended_G_range):
        lo, hi = result.recommended_G_range
        lines.append(f"{pct_(result.level, 0)} intervals allow G from {'—' if lo is None else f'{lo:,}'} to "
                     f"{'beyond the sweep' if hi is None else f'{hi:,}'}")
    if result.objective_choice is None and result.snr_choice is None and b is not None:
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
    s = result.snr_choice
    if s is not None and s.flat_runs:
        marks += [s.flat_runs[0][0], s.flat_runs[-1][1]]
    keep.update(g for g in marks if g is not None)
    return keep


def _marks(result: PlanResult) -> dict[int, str]:
    out: dict[int, list[str]] = {}
    s = result.snr_choice
    if s is not None and s.flat_runs:
        out.setdefault(s.flat_runs[0][0], []).append("flat from")
        out.setdefault(s.flat_runs[-1][1], []).append("flat to")
    if result.price is not None:
        out.setdefault(result.price.before.G, []).append(result.price.reference)
    if result.recommended_G is not None:
        same = (result.price is not None and result.price.before.G == result.recommended_G
                and (s is None or s.verdict == "keep"))
        out.setdefault(result.recommended_G, []).append("keep" if same else "recommended")
    c = result.objective_choice
    if c is not None and c.best_G is not None:
        out.setdefault(c.best_G, []).append("best")
    return {g: ", ".join(m) for g, m in out.items()}


def _share_cols(result: PlanResult) -> tuple[str, ...]:
    c = result.snr_choice
    return () if c is None else tuple(f"f={100 * f.share:.3g}%" for f in c.shares)


def brief_sweep(result: PlanResult) -> Section:
    """The sweep's rows and the columns a reader needs (shown without --full): the step's SNR over its best
    per share of the band, prompts per step and the silent share."""
    R = result.rollouts_per_step
    marks = _marks(result)
    shares = _share_cols(result)
    rows = tuple((r.G, marks.get(r.G, ""), r.prompts_per_step, r.silent,
                  *(r.snr_vs_best or (None,) * len(shares)))
                 for r in result.sweep if r.G in _brief_G(result))
    est = result.sweep[0].estimator if result.sweep else result.estimator
    cols = ("G", "", "prompts/step", f"silent ({est})", *shares)
    table = Table("", cols, rows, digits=(RATE, RATE, RATE, PERCENT, *(PERCENT,) * len(shares)))
    past = ("" if result.extrapolation_warning is None else
            f"; G > {result.max_samples:,} extrapolated")
    what = "" if result.snr_choice is None else " (f: step SNR / its best at between-prompt share f)"
    return Section(f"G sweep, R = {R:,}{what}{past}", tables=(table,))


def full_sweep(result: PlanResult) -> Section:
    """Every row, column and interval (--full)."""
    with_ci = result.replicates > 0
    shares = _share_cols(result)

    def ci(x: tuple[float, float] | None) -> tuple[float | None, float | None]:
        return (None, None) if x is None else x

    rows = tuple(
        (r.G, r.prompts_per_step, r.silent, *(ci(r.silent_ci) if with_ci else ()), r.all_wrong, r.all_correct,
         r.fidelity, r.informative_groups, r.informative_rollouts, *(r.snr_vs_best or (None,) * len(shares)),
         r.update, *(ci(r.update_ci) if with_ci else ()), r.knapsack, r.dapo_groups_per_kept_group, r.estimator)
        for r in result.sweep)
    lohi = ("lo", "hi") if with_ci else ()
    cols = ("G", "prompts/step", "silent", *(f"silent {x}" for x in lohi), "all-wrong", "all-correct", "fidelity φ",
            "informative groups/step", "informative rollouts/step", *shares, "step size (SGD, fixed lr)",
            *(f"step size {x}" for x in lohi), "Knapsack-RL value/step", "DAPO groups/kept", "estimator")
    amounts = {"informative groups/step", "informative rollouts/step", "Knapsack-RL value/step", "DAPO groups/kept",
               "prompts/step"}
    percents = {"silent", "silent lo", "silent hi", "all-wrong", "all-correct", *shares}
    note = (f"R = {result.rollouts_per_step:,}; {_conv(result)}; silent, fidelity: estimator rule {result.estimator} "
            "(auto: unbiased where every prompt has n ≥ G, else bayes = posterior under the corpus prior); "
            "SNR, step size, Knapsack-RL: posterior; f columns: the step's SNR over its best at that between-prompt "
            "share; step size: the expected batch-mean update, the step size under SGD at a fixed learning rate "
            "(not an objective: AdamW divides it out; docs/theory.md)"
            + (f"; lo–hi: {pct_(result.level, 0)} bootstrap interval over prompts, {result.replicates:,} replicates"
               if with_ci else ""))
    digits = tuple(AMOUNT if c in amounts else PERCENT if c in percents else RATE for c in cols)
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
                ("step size under SGD at a fixed learning rate", "update"),
                ("step SNR over its best, worst share", "objective")]

    def ratio(x: float | None, y: float | None) -> float | None:
        return None if x is None or y is None or x == 0 else y / x

    rows = tuple((label, getattr(b, name), getattr(a, name), ratio(getattr(b, name), getattr(a, name)))
                 for label, name in measures)
    table = Table("price", ("", f"G = {b.G:,} ({ref})", f"G = {a.G:,} (recommended)", "after/before"), rows,
                  digits=(RATE, AMOUNT, AMOUNT, AMOUNT),
                  row_digits=tuple(PERCENT if name == "silent_rate" else RATE if name in ("update", "objective")
                                   else None for _, name in measures),
                  note=f"a step of R = {price.rollouts_per_step:,} rollouts drawn like these {prompts:,} prompts")
    return Section("price", tables=(table,))


def objective_section(choice: ObjectiveChoice) -> Section:
    """The objective's curve at the marked G and its rule (--full)."""
    rows = tuple((c.G, c.prompts_per_step, c.value, c.of_best) for c in choice.curve)
    table = Table(f"objective: {choice.noun}", ("G", "prompts/step", "value", "vs best"), rows,
                  digits=(RATE, RATE, RATE, RATE), note=choice.definition)
    return Section("objective", lines=(f"rule: {objective_rule(choice)}",), tables=(table,))


def snr_section(c: SnrChoice) -> Section:
    """The band: each share's λ, best G and the losses of the run's and the recommended G (--full)."""
    rows = tuple((f"{100 * s.share:.3g}%", s.noise_ratio, s.best_G, s.best_prompts_per_step, s.run_G_loss,
                  s.recommended_loss) for s in c.shares)
    run = "run G" if c.run_G is None else f"G = {c.run_G:,} loses"
    rec = "recommended" if c.recommended_G is None else f"G = {c.recommended_G:,} loses"
    table = Table("step SNR over the band", ("share f", "λ = τ²/ν²", "best G", "prompts/step", run, rec), rows,
                  digits=(RATE, AMOUNT, RATE, RATE, PERCENT, PERCENT),
                  note=f"f: the share of a step's noise variance from the prompt draw at G = {c.band.G_ref:,} "
                       f"({'--between-prompt-share' if c.band.given else 'the default band'}); SNR² ∝ N·m1²/(m2 + "
                       f"λ·ma/G), N = ⌊R/G⌋; {c.searched:,} G evaluated (docs/theory.md)")
    return Section("step SNR", tables=(table,))


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
