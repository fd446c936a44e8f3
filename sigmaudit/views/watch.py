"""``sigmaudit watch``'s lines: one per completed step, and the summary when it ends."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..fmt import pct, plural, printable
from .labels import prompt_label

if TYPE_CHECKING:
    from ..audits.watch import StepReport, WatchSummary

SHOWN_PROMPTS = 3
"""Newly skipped prompts named on a step's line (the rest are counted)."""
PROMPT_WIDTH = 12
"""Characters of a newly skipped prompt's label on a step's line (:func:`~.labels.prompt_label`); the names are
given only while the line fits :data:`LINE_WIDTH` (``--events`` and ``--skip-out`` hold them all)."""
LINE_WIDTH = 100
"""A step's line fits this many columns."""


def legend_lines(window: int, max_p_silent: float) -> tuple[str, ...]:
    """What a step's line says, said once before the first (notes on stderr; each fits 100 columns with
    its ``sigmaudit: `` prefix)."""
    return ("one line per completed step · silent: observed share of its groups whose answers",
            f"all agree · last {window}: the same over the last {window} steps · step N forecast: predicted",
            f"silent share of the next step · skip: prompts whose forecast P(silent) > {pct(max_p_silent, 0)}",
            "(+ newly added) · --events holds every figure of every step")


HISTORY_NOTE = "steps logged before the watch started: only the last of them is forecast"
"""Said once, before the first of those steps' lines."""


def is_history(r: StepReport) -> bool:
    """A step already logged when the watch started, reported without a forecast for that reason."""
    return r.forecast is None and not r.late and r.cumulative.groups != r.observed.groups


def step_line(r: StepReport) -> str:
    """``step 12 · 64 groups G=8 · silent 62.5% · last 5 58.1% · step 13 forecast 60.0% · skip 14 (+3: p7,
    p19, p20)``: the all-wrong and all-correct shares are in ``--events`` and the summary."""
    o = r.observed
    if o.groups == 0 and r.G == 0:  # a per-step series: the logged shares only
        parts = [f"step {r.step:,}", f"silent {pct(o.silent)} (logged share)",
                 f"last {r.window_steps} {pct(r.window.silent)} (mean of the logged shares)"]
        return " · ".join(parts + _over(r))
    parts = [f"step {r.step:,}" + (" (late: logged after a later step)" if r.late else ""),
             f"{plural(o.groups, 'group')} G={r.G}",
             f"silent {pct(o.silent)}" + ("" if o.tokens is None else f" ({pct(o.tokens)} of tokens)"),
             f"last {r.window_steps} {pct(r.window.silent)}"]
    if r.forecast is not None:
        parts.append(f"step {r.forecast.step:,} forecast {pct(r.forecast.silent)}")
    elif r.late:
        parts.append("no forecast (its next step is logged)")
    elif not is_history(r):
        parts.append("no forecast yet (first step)")
    new = ""
    if r.newly_skipped:
        first = [prompt_label(printable(p), PROMPT_WIDTH) for p in r.newly_skipped[:SHOWN_PROMPTS]]
        more = len(r.newly_skipped) - len(first)
        named = f" (+{len(r.newly_skipped):,}: " + ", ".join(first) + (f", +{more:,} more" if more > 0 else "") + ")"
        new = named if len(" · ".join([*parts, f"skip {r.skipped:,}{named}"])) <= LINE_WIDTH \
            else f" (+{len(r.newly_skipped):,})"
    parts.append(f"skip {r.skipped:,}{new}")
    return " · ".join(parts + _over(r))


def _over(r: StepReport) -> list[str]:
    """The guard's part of a step's line (none when the step is within the limit)."""
    if not r.over_limit:
        return []
    return [f"OVER LIMIT {r.streak} step{'s' if r.streak != 1 else ''}" + (" — FAILED" if r.failed else "")]


def summary_lines(s: WatchSummary, max_silent: float | None, for_steps: int) -> list[str]:
    """The summary printed when the watch ends."""
    how = {"once": "processed what was there (--once)", "idle": "the logs stopped changing (--until-idle)",
           "guard": "the guard tripped", "interrupt": "interrupted (Ctrl-C)",
           "terminate": "terminated (SIGTERM)", "eof": "the input stream ended"}[s.ended_by]
    lines = [f"watch ended: {how}"]
    if s.steps == 0:
        lines.append("no completed step")
    else:
        c = s.cumulative
        assert c is not None
        if c.groups == 0:  # a per-step series
            lines.append(f"{plural(s.steps, 'completed step')} ({s.first_step}–{s.last_step}) of a per-step series: "
                         "mean "
                         f"logged silent share {pct(c.silent)}")
        else:
            lines.append(f"{plural(s.steps, 'completed step')} ({s.first_step}–{s.last_step}), "
                         f"{plural(c.groups, 'group')}: observed "
                         f"silent {pct(c.silent)} (all-wrong {pct(c.all_wrong)}, all-correct {pct(c.all_correct)})"
                         + ("" if c.tokens is None else f", holding {pct(c.tokens)} of the generated tokens"))
            lines.append(f"skip list: {plural(s.skipped, 'prompt')}")
    if max_silent is not None:
        verdict = (f"FAILED at step {s.failed_at}" if s.failed_at is not None else "held")
        lines.append(f"guard silent > {pct(max_silent)} for {plural(for_steps, 'step')}: {verdict} "
                     f"({plural(s.steps_over_limit, 'step')} over, longest run {s.longest_streak:,})")
    if s.unreported_step is not None:
        lines.append(f"step {s.unreported_step} was still being written: not reported")
    if s.late_steps:
        shown = ", ".join(map(str, s.late_steps[:5])) + (", ..." if len(s.late_steps) > 5 else "")
        lines.append(f"{plural(len(s.late_steps), 'step')} arrived after a later step "
                     f"was reported, reported late: {shown}")
    added = s.late_groups - s.late_step_groups
    if added:
        lines.append(f"{plural(added, 'group')} arrived for steps already reported (not in their reports)")
    if s.unstepped_groups:
        lines.append(f"{plural(s.unstepped_groups, 'group')} without a step value left out")
    return lines
