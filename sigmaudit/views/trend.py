"""The view of a :class:`~sigmaudit.audits.trend.TrendResult`: a per-step table and sparklines."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..fmt import RATE, format_value
from .labels import filtered_line
from .model import Section, Table, View
from .sparkline import sparkline

if TYPE_CHECKING:
    from ..audits.trend import TrendResult


def trend_view(result: TrendResult) -> View:
    """Per-step table and sparklines of the observed silent fraction, its branches and the forecast."""
    sizes = ", ".join(map(str, result.G_logged_sizes))
    logged = f"G = {result.G_logged:,}" if result.G_logged else f"logged sizes {sizes}"
    cols = ["step"] + (["to"] if result.every > 1 else []) + [
        "groups", "pass rate", "silent", "all wrong", "all correct", "forecast", "naive", "implied"]
    cols += [f"implied G={g}" for g in result.G]
    rows = tuple(
        (r.step, *((r.step_last,) if result.every > 1 else ()), r.groups, r.pass_rate, r.observed_silent,
         r.observed_all_wrong, r.observed_all_correct, r.ahead_silent, r.naive_silent, r.forecast_silent,
         *(r.forecast[g] for g in result.G))
        for r in result.rows
    )
    note = (f"observed shares of the logged groups ({logged}); forecast = one step ahead, from earlier steps "
            f"only (corpus prior + each prompt's earlier visits); naive = the previous step's observed share; "
            f"implied = the step's own outcomes read through the "
            f"{'bayes' if result.estimator == 'auto' else result.estimator} estimate of p^G + (1 − p)^G "
            f"(not a forecast: it follows the step's noise)")
    if result.source == "series":
        note = "a per-step series of shares as published or logged: no groups, so no forecast"
        if any(r.silent_at_least is not None for r in result.rows):
            note += ("; silent ≥ / ≤: the bounds DAPO's generation batches per step put on the step's silent share "
                     "among the groups it generated (with filter_groups on)")
    if result.source == "series":  # only the shares the file holds
        present = [(name, attr) for name, attr in (
            ("groups", "groups"), ("pass rate", "pass_rate"), ("silent", "observed_silent"),
            ("silent ≥", "silent_at_least"), ("silent ≤", "silent_at_most"), ("all wrong", "observed_all_wrong"),
            ("all correct", "observed_all_correct")) if any(getattr(r, attr) is not None for r in result.rows)]
        cols = ["step"] + (["to"] if result.every > 1 else []) + [name for name, _ in present]
        rows = tuple((r.step, *((r.step_last,) if result.every > 1 else ()),
                      *(getattr(r, attr) for _, attr in present)) for r in result.rows)
    table = Table("per step" if result.every == 1 else f"per {result.every:,} steps", tuple(cols), rows, note=note)
    width = 60
    series = [
        ("observed silent", [r.observed_silent for r in result.rows]),
        ("silent at least", [r.silent_at_least for r in result.rows]),
        ("silent at most", [r.silent_at_most for r in result.rows]),
        ("  all correct", [r.observed_all_correct for r in result.rows]),
        ("  all wrong", [r.observed_all_wrong for r in result.rows]),
        ("forecast silent", [r.ahead_silent for r in result.rows]),
        ("implied silent", [r.forecast_silent for r in result.rows]),
        ("pass rate", [r.pass_rate for r in result.rows]),
    ]
    series += [(f"implied G={g}", [r.forecast[g] for r in result.rows]) for g in result.G]
    series = [(name, vals) for name, vals in series if any(v is not None for v in vals)]
    name_w = max(len(n) for n, _ in series)
    lines = [f"{name:{name_w}}  {sparkline(vals, lo=0.0, hi=1.0, width=width)}  "
             f"{format_value(vals[0], RATE)} → {format_value(vals[-1], RATE)}" for name, vals in series]
    lines.append(f"{'':{name_w}}  scale 0–1, step {result.rows[0].step} → {result.rows[-1].step_last}")
    extra = _notes(result)
    sections = [Section("silent groups over training", lines=extra, tables=(table,)),
                Section("trend", lines=tuple(lines))]
    if result.by is not None:
        sections.append(by_section(result))
    return View("sigmaudit trend", tuple(sections))


def by_section(result: TrendResult) -> Section:
    """One table of every value's per-step rows (each value's own trend, own prior fit)."""
    assert result.by is not None
    column = result.by.column
    cols = [column, "step"] + (["to"] if result.every > 1 else []) + [
        "groups", "pass rate", "silent", "all wrong", "all correct", "forecast", "post-filter"]
    rows = tuple(
        (g.value, r.step, *((r.step_last,) if result.every > 1 else ()), r.groups, r.pass_rate, r.observed_silent,
         r.observed_all_wrong, r.observed_all_correct, r.ahead_silent,
         None if g.result.filtered is None else g.result.filtered.source)
        for g in result.by.groups for r in g.result.rows
    )
    if all(row[-1] is None for row in rows):  # the column only when a value is a post-filter dump
        cols, rows = cols[:-1], tuple(row[:-1] for row in rows)
    note = ("each value's steps on their own (own prior fit, forecast from the value's earlier steps only); "
            "the table above is the pooled log")
    return Section(f"by {column}", tables=(Table(f"per step by {column}", tuple(cols), rows, note=note),))



def _notes(result: TrendResult) -> tuple[str, ...]:
    """The lines above the per-step table: groups left out, the post-filter state, the forecast's error,
    and the window's observed silent share beside the pooled prediction."""
    extra: tuple[str, ...] = (f"{result.dropped_groups:,} groups without a step value left out",) \
        if result.dropped_groups else ()
    if result.filtered is not None:
        extra = (filtered_line(result.filtered, "the observed silent shares per step are the dump's, not the "
                                                "run's (understated)"), *extra)
    if result.ahead_note and result.source == "groups":
        extra += (result.ahead_note,)
    if result.pooled is not None:
        g = result.pooled
        extra += (f"over the window: {format_value(g.observed)} of the {g.groups:,} logged groups were silent "
                  f"(observed); pooling each prompt's samples predicts {format_value(g.predicted)} (unbiased, "
                  "the model's view of one fixed p per prompt)",)
    if result.ahead_mae is not None and result.naive_mae is not None:
        extra += (f"forecast error over {result.mae_steps:,} steps (mean |observed − predicted| silent share): "
                  f"one step ahead {format_value(result.ahead_mae)}, naive (previous step's share) "
                  f"{format_value(result.naive_mae)}",)
    return extra
