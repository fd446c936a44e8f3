"""``sigmaudit watch``'s lines: one per completed step, and the summary when it ends."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..fmt import pct, plural, printable

if TYPE_CHECKING:
    from ..audits.watch import StepReport, WatchSummary

SHOWN_PROMPTS = 3
"""Newly skipped prompts named on a step's line (the rest are counted)."""
PROMPT_WIDTH = 24
"""Prompt keys are named on a line only when each of the first shown is at most this long (keys are often
whole chat-templated prompts: then only their count is shown; ``--events`` and ``--skip-out`` hold them all)."""


def step_line(r: StepReport) -> str:
    """``step 12 · 64 groups G=8 · observed silent 62.5% (all-wrong 40.6%, all-correct 21.9%) · last 5
    steps 58.1% · forecast step 13: 60.0% (120 prompts, G=8) · skip list 14 (+3: p7, p19, p20)``."""
    o = r.observed
    if o.groups == 0 and r.G == 0:  # a per-step series: the logged shares only
        parts = [f"step {r.step}", f"observed silent {pct(o.silent)} (logged share)",
                 f"last {plural(r.window_steps, 'step')} {pct(r.window.silent)} (mean of the logged shares)"]
        return " · ".join(parts + _over(r))
    parts = [f"step {r.step}" + (" (late: logged after a later step)" if r.late else ""), f"{plural(o.groups, 'group')} G={r.G}",
             f"observed silent {pct(o.silent)} (all-wrong {pct(o.all_wrong)}, all-correct {pct(o.all_correct)}"
             + ("" if o.tokens is None else f"; {pct(o.tokens)} of generated tokens") + ")",
             f"last {plural(r.window_steps, 'step')} {pct(r.window.silent)}"]
    if r.forecast is None:
        # none before the second step; of the steps already complete when the watch started, only the last
        why = ("its next step is logged" if r.late else "needs two steps" if r.cumulative.groups == o.groups
               else "already logged when the watch started")
        parts.append(f"forecast step {r.step + 1}: — ({why})")
    else:
        f = r.forecast
        parts.append(f"forecast step {f.step}: {pct(f.silent)} ({plural(f.prompts, 'prompt')}, G={f.G})")
    new = ""
    if r.newly_skipped:
        first = [printable(p) for p in r.newly_skipped[:SHOWN_PROMPTS]]
        new = f" (+{len(r.newly_skipped)}"
        if all(len(p) <= PROMPT_WIDTH for p in first):
            more = len(r.newly_skipped) - len(first)
            new += ": " + ", ".join(first) + (f", +{more} more" if more > 0 else "")
        new += ")"
    parts.append(f"skip list {r.skipped}{new}")
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
            lines.append(f"{plural(s.steps, 'completed step')} ({s.first_step}–{s.last_step}) of a per-step series: mean "
                         f"logged silent share {pct(c.silent)}")
        else:
            lines.append(f"{plural(s.steps, 'completed step')} ({s.first_step}–{s.last_step}), {plural(c.groups, 'group')}: observed "
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
