"""The views of :class:`~sigmaudit.audits.forecast.ForecastResult` and
:class:`~sigmaudit.audits.backtest.BacktestResult`."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING

from ..fmt import AMOUNT, RATE, format_value, pct, plural
from .labels import LABEL_NOTE, filtered_line, prior_kind_words, prompt_label
from .model import Section, Table, View

if TYPE_CHECKING:
    from ..audits.backtest import BacktestResult
    from ..audits.forecast import ForecastResult

VIEW_ROWS = 25
BRIEF_ROWS = 8
"""Prompts in the first screen's table (``--full``: :data:`VIEW_ROWS`, every column)."""
"""Prompts shown in the per-prompt table of ``forecast`` (the ``--skip-out`` file and JSON hold all)."""


def half_life_text(h: float) -> str:
    """A half-life for people: ``8 steps`` or ``∞ (no down-weighting)``."""
    return "∞ (no down-weighting)" if math.isinf(h) else f"{h:g} steps"


def tied_rows(rows: list[tuple], limit: int,
              label: Callable[[str], str] = str) -> tuple[tuple[tuple, ...], list[int]]:
    """The table's rows, a run of prompts whose other cells are all equal shown once (``p0000 +41 tied``): rows
    are taken in order until ``limit`` prompts are covered, a run that starts within them is shown whole. Also
    the number of prompts each shown row stands for. ``label`` shows a prompt key (:func:`.labels.prompt_label`)."""
    out: list[tuple] = []
    counts: list[int] = []
    i = 0
    while i < len(rows) and sum(counts) < limit:
        j = i + 1
        while j < len(rows) and rows[j][1:] == rows[i][1:]:
            j += 1
        key = label(str(rows[i][0])) + ("" if j - i == 1 else f" +{j - i - 1:,} tied")
        out.append((key, *rows[i][1:]))
        counts.append(j - i)
        i = j
    return tuple(out), counts


def forecast_view(result: ForecastResult) -> View:
    """Summary lines and the per-prompt table, most likely silent first (the first VIEW_ROWS prompts)."""
    from ..audits.forecast import TABLE_COLUMNS

    r = result
    head = [
        f"{plural(r.prompts, 'prompt')}, next visit at step {r.next_step:,} with G = {r.G:,}: "
        f"{format_value(r.expected_silent, AMOUNT)} silent groups expected ({pct(r.expected_silent / r.prompts)})",
        f"model: a prior fitted to all prompts ({prior_kind_words(r.prior_kind)}), updated by each prompt's own "
        f"visits, older visits down-weighted with a half-life of {half_life_text(r.half_life)} "
        f"(chosen by the backtest; its Brier score {format_value(r.backtest_brier)}); "
        + ("recalibrated as in the backtest" if r.recalibrated else
           "not recalibrated (the backtest's map was fitted at the logged group size)"),
    ]
    if r.threshold is not None:
        head.append(f"skip list ({r.rule}): {plural(r.skipped, 'prompt')} with P(silent) > "
                    f"{format_value(r.threshold, RATE)}; "
                    f"saves {pct(r.rollouts_saved)} of rollouts, avoids {pct(r.silent_avoided)} of expected "
                    f"silent groups, loses {pct(r.informative_lost)} of expected informative groups")
    if r.filtered is not None:
        head.append(filtered_line(r.filtered, "each prompt's history lacks its silent groups, so P(silent) is "
                                              "understated"))
    rows, tied = tied_rows(list(r.table.select(TABLE_COLUMNS).iter_rows()), VIEW_ROWS, label=prompt_label)
    covered = sum(tied)
    shown = (f"the {covered:,} most likely silent of {r.prompts:,} prompts (--skip-out writes all); "
             if r.prompts > covered else "")
    ties = "KEY +N tied: N more prompts with the same values; " if max(tied, default=1) > 1 else ""
    labelled = any(prompt_label(str(x)) != str(x) for x in r.table["prompt"].head(covered))
    table = Table("per prompt", TABLE_COLUMNS, rows,
                  note=f"{shown}{ties}P(...) of a group of G = {r.G:,} at the next visit"
                       + (f"; {LABEL_NOTE}" if labelled else ""),
                  digits=tuple(AMOUNT if c == "expected_useful_rollouts" else RATE for c in TABLE_COLUMNS))
    brief_rows, brief_tied = tied_rows([(x[0], x[1], x[4], x[8]) for x in r.table.select(TABLE_COLUMNS).iter_rows()],
                                       BRIEF_ROWS, label=prompt_label)
    brief = Table("most likely silent", ("prompt", "visits", "p_silent", "skip"), brief_rows,
                  note=f"{plural(sum(brief_tied), 'prompt')} of {r.prompts:,}; --full: every column"
                       + (" (KEY +N tied: N more with the same values)" if max(brief_tied, default=1) > 1 else "")
                       + (f"; {LABEL_NOTE}" if labelled else ""),
                  digits=(RATE, RATE, RATE, RATE))
    first = Section("next visit", lines=tuple(head), tables=(brief,))
    sections = (Section("next visit", lines=tuple(head)), Section("per prompt", tables=(table,)))
    return View("sigmaudit forecast", sections, csv_table="per prompt", brief=(first,))


def backtest_view(result: BacktestResult) -> View:
    """Scores against the baselines, the calibration table and the skip rules' trade-off."""
    r = result
    at = "each group's logged size" if r.G is None else f"G = {r.G:,}"
    gap = f"{r.half_life_gap:g} step{'s' if r.half_life_gap != 1 else ''}"
    head = (
        f"{plural(r.visits, 'group')} of {plural(r.prompts, 'prompt')} over {plural(r.steps, 'step')}, "
        "each forecast from earlier steps "
        f"only ({r.revisited:,} revisits); silent at {at}: {pct(r.observed_silent)} observed",
        f"forecast: corpus prior refitted {r.prior_fits:,}× on earlier steps + each prompt's earlier visits, "
        f"half-life chosen online by held-out log loss (whole run: {half_life_text(r.half_life)}; typical "
        f"revisit gap {gap}), recalibrated on earlier steps",
    )
    scores = Table("scores", ("forecast", "Brier", "log loss"),
                   (("sigmaudit", r.brier, r.log_loss), *((b.name, b.brier, b.log_loss) for b in r.baselines)),
                   note="lower is better; previous-step: the step before's silent fraction; last-visit: "
                        "P(silent | last visit silent / informative / none) from earlier steps")
    calib = Table("calibration", ("bin", "predicted", "observed", "groups"),
                  tuple((f"{c.bin / 10:.1f}–{(c.bin + 1) / 10:.1f}", c.predicted, c.observed, c.n)
                        for c in r.calibration),
                  note=f"weighted mean |predicted − observed| = {format_value(r.calibration_error)}")
    trade = Table("skip rules", ("rule", "threshold", "silent avoided", "informative lost"),
                  tuple((t.rule, t.threshold, t.silent_avoided, t.informative_lost) for t in r.tradeoff),
                  note="sigmaudit: skip when P(silent) >= threshold; greso: skip with chance 1 − max(p_e^z, 0.01) "
                       "after z silent visits (Zheng et al. 2025), threshold = p_e")
    at_lost = tuple(f"{rule}: {pct(v)} of silent groups avoided" if v is not None else
                    f"{rule}: no setting stays within the budget" for rule, v in r.avoided_at_max_lost.items())
    if r.filtered is not None:
        head += (filtered_line(r.filtered, "the replay scores forecasts against a log whose silent groups were "
                                           "dropped, not against the run"),)
    return View("sigmaudit backtest", (
        Section("replay", lines=head, tables=(scores,)),
        Section("calibration", tables=(calib,)),
        Section("skip rules", lines=(f"at most {pct(r.max_lost, 0)} of informative groups lost:", *at_lost),
                tables=(trade,)),
    ), csv_table="calibration")
