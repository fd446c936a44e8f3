"""The view of a :class:`~sigmaudit.audits.report.ReportData`: the scan, plan and trend views in one, and
the report page's cards, recommendation, charts and captions (:class:`~sigmaudit.views.page.Page`).

Which sections the page shows, under which heading, and every word and number around the charts are
chosen here; ``render/html.py`` turns them into HTML and SVG.
"""

from __future__ import annotations

import dataclasses
import math
from typing import TYPE_CHECKING

from ..fmt import format_value, pct
from .drift import message
from .forecast import backtest_view
from .labels import EXTREME_LABEL, MIDDLE_LABEL, QUANTILE_NAMES, WARNING, filtered_line
from .model import Section, View
from .page import (
    CalibrationChart,
    Card,
    Chart,
    FidelityChart,
    FidelityLine,
    Mark,
    MassChart,
    Page,
    PassRateChart,
    Series,
    SilentChart,
    Span,
    Spans,
    TradeoffChart,
    TrendChart,
)
from .plan import plan_view, reason
from .plan import worded as plan_worded
from .scan import by_section, scan_view
from .trend import trend_view

if TYPE_CHECKING:
    from ..audits.backtest import BacktestResult
    from ..audits.plan import PlanResult
    from ..audits.report import ReportData
    from ..audits.scan import ScanReport
    from ..audits.trend import TrendResult

BY_FOLD_ROWS = 200
"""Rows of the ``--by`` table the page shows before folding it away (the other tables: 40)."""
SKIP_RULES = ("sigmaudit", "greso", "silent-last-time")
"""The skip rules drawn on the trade-off chart, in drawing order."""


def worded(result: ReportData) -> ReportData:
    """``result`` with the words of its plan's JSON contract written (:func:`sigmaudit.views.plan.worded`)."""
    return dataclasses.replace(result, plan=plan_worded(result.plan))


def report_part_views(result: ReportData) -> tuple[View, ...]:
    """The views of the parts, in report order: scan, plan, and trend and backtest when there are steps."""
    parts = [scan_view(result.scan), plan_view(result.plan)]
    if result.trend is not None:
        parts.append(trend_view(result.trend))
    if result.backtest is not None:
        parts.append(backtest_view(result.backtest))
    return tuple(parts)


def report_page_parts(result: ReportData, parts: tuple[View, ...]) -> tuple[View, ...]:
    """The parts as the page shows them, each under its heading: the plan ("Recommendation"), the scan,
    the ``--by`` table, the trend's first section ("Per step") and the backtest ("Forecast backtest")."""
    scan, plan, *rest = parts
    page = [dataclasses.replace(plan, heading="Recommendation"), dataclasses.replace(scan, heading="Scan")]
    if result.by is not None:
        page.append(View(result.title, (report_by_section(result),), heading=f"By {result.by.column}",
                         fold_rows=BY_FOLD_ROWS))
    steps = iter(rest)
    if result.trend is not None:
        trend = next(steps)
        page.append(dataclasses.replace(trend, heading="Per step", sections=trend.sections[:1]))
    if result.backtest is not None:
        page.append(dataclasses.replace(next(steps), heading="Forecast backtest"))
    return tuple(page)


def report_view(result: ReportData) -> View:
    """Every section of the scan, plan and trend views, prefixed by the command each comes from; the
    page's parts and :class:`~sigmaudit.views.page.Page` for the HTML report."""
    parts = report_part_views(result)
    sections = [
        Section(f"{v.title.removeprefix('sigmaudit ')}: {s.title}", s.lines, s.tables)
        for v in parts for s in v.sections
    ]
    if result.filtered is not None:
        sections.insert(0, Section("post-filter dump", (filtered_line(result.filtered),)))
    if result.by is not None:
        sections.append(report_by_section(result))
    return View(result.title, tuple(sections), parts=report_page_parts(result, parts), page=report_page(result))


def report_by_section(result: ReportData) -> Section:
    """The per-value scan summary of ``report --by`` (the scan view's by table)."""
    assert result.by is not None
    return by_section(result.by, pooled="the rest of the report is the pooled log")


# --------------------------------------------------------------------------- the page around the tables


def report_page(d: ReportData) -> Page:
    """The line under the title, the warning, the cards, the recommendation, the charts and the notes."""
    s = d.scan
    steps = "no steps" if s.steps is None else f"{s.steps:,} steps"
    files = ", ".join(d.files[:3]) + (f" and {len(d.files) - 3} more" if len(d.files) > 3 else "")
    sub = (f"{len(d.files):,} file{'s' if len(d.files) != 1 else ''} ({files}) · layout {s.layout} · "
           f"{s.prompts:,} prompts · {s.rollouts:,} rollouts · {_samples(s)} · {steps} · ε = {d.eps:g} · "
           f"G for the scan figures = {d.g_main}")
    lines = (*(() if d.filtered is None else (filtered_line(d.filtered),)),
             *(() if d.drift is None else (message(d.drift),)))
    warnings = tuple(line.removeprefix(WARNING) for line in lines)
    return Page(subtitle=sub, warnings=warnings, cards=_cards(d), recommendation=_recommendation(d),
                charts=_charts(d), notes=tuple(s.notes))


def _cards(d: ReportData) -> tuple[Card, ...]:
    s = d.scan
    w = s.wasted
    cards = [
        Card(f"{s.prompts:,}", f"prompts · {s.rollouts:,} rollouts"),
        Card(pct(w.silent_rollout_share), f"silent groups at G = {w.G:,} ({w.estimator}): all wrong "
                                          f"{pct(w.all_wrong_share)}, all correct {pct(w.all_correct_share)}"),
        Card(f"{pct(s.pass_rate.never_solved)} / {pct(s.pass_rate.always_solved)}",
             "of prompts never / always solved in the log"),
        Card("—" if d.plan.recommended_G is None else f"G = {d.plan.recommended_G:,}",
             f"recommended ({d.plan.targets.describe()})"),
        _mass_card(s),
    ]
    if s.observed_silent is not None:
        o = s.observed_silent
        cards.insert(2, Card(pct(o.fraction), f"of the {o.groups:,} logged groups were silent (size {o.G:,})"))
    return tuple(cards)


def _mass_card(s: ScanReport) -> Card:
    """The extreme band's share of gradient mass at the scan's G (the figure of scan's summary), GRPO vs
    Dr. GRPO, and GRPO's G → ∞ limit beside it (Dr. GRPO's shares are the same at every G)."""
    m = s.mass_share
    label = f"gradient mass on extreme prompts ({EXTREME_LABEL}) at G = {m.G:,}: GRPO vs Dr. GRPO"
    if math.isnan(m.grpo_finite.extreme):
        return Card("no mass", label)
    return Card(f"{pct(m.grpo_finite.extreme)} vs {pct(m.drgrpo_finite.extreme)}",
                f"{label}; GRPO in the G → ∞ limit {pct(m.grpo.extreme)}")


def _recommendation(d: ReportData) -> Spans:
    p = d.plan
    if p.recommended_G is not None:
        return (Span("Recommended G = "), Span(f"{p.recommended_G:,}", "strong"), Span(": "),
                Span(reason(p), "quote"), Span("."))
    if p.targets.given:
        return (Span("No G recommended", "strong"), Span(": "), Span(reason(p), "quote"),
                Span(f". The charts mark G = {d.g_main} (--g-main)."))
    return (Span(f"No target given (--max-silent, --min-fidelity), so no G is recommended; the charts mark "
                 f"G = {d.g_main} (--g-main or the logged group size)."),)


def _samples(s: ScanReport) -> str:
    sp = s.samples_per_prompt
    return f"n = {sp.min:,} samples per prompt" if sp.min == sp.max else f"n = {sp.min:,}–{sp.max:,} samples per prompt"


def _chosen_mark(d: ReportData) -> Mark:
    label = "recommended" if d.chosen_by == "recommended" else "--g-main"
    return Mark(d.chosen_G, f"G = {d.chosen_G} ({label})")


def _charts(d: ReportData) -> tuple[Chart, ...]:
    """The charts in page order: the scan's and the plan's four, then the trend's and the backtest's
    when the log has steps."""
    charts = [_pass_rate_chart(d), _silent_chart(d), _fidelity_chart(d), _mass_chart(d)]
    if d.trend is not None and d.trend.rows:
        charts.append(_trend_chart(d.trend))
    if d.backtest is not None:
        charts += _backtest_charts(d.backtest)
    return tuple(charts)


def pass_rate_data(histogram: tuple[int, ...], never: int, always: int, prompts: int) -> PassRateChart:
    """The pass-rate histogram with its never- and always-solved counts and their legend words."""
    return PassRateChart(histogram, never, always,
                         f"never solved (k = 0): {never:,} ({pct(never / prompts)})",
                         f"always solved (k = n): {always:,} ({pct(always / prompts)})")


def _pass_rate_chart(d: ReportData) -> Chart:
    s = d.scan
    pr = s.pass_rate
    never = round(pr.never_solved * s.prompts)
    always = round(pr.always_solved * s.prompts)
    return Chart("Pass rates", pass_rate_data(tuple(pr.histogram), never, always, s.prompts), (
        Span(f"Prompts by pass rate p̂ = k/n in bins of width 0.1 (last bin includes 1), {s.prompts:,} prompts, "
             f"{_samples(s)}. "), Span("Never solved", "strong"), Span(" (k = 0) and "),
        Span("always solved", "strong"),
        Span(f" (k = n) prompts give silent groups at every G; from few samples some of them are merely rare, "
             f"not impossible. Mean p̂ {format_value(pr.mean)}, median {format_value(pr.median)}.")))


def _silent_chart(d: ReportData) -> Chart:
    p = d.plan
    est_note = (f"Model-based (bayes) estimate for every G: posterior expectations under a prior over p fitted to "
                f"the corpus, mean over {p.prompts:,} prompts")
    target_note = (f"Targets: {p.targets.describe()}" if p.targets.given else "No target given (--max-silent, "
                   "--min-fidelity), so the marked G is --g-main")
    marks = (Mark(d.g_main, f"G = {d.g_main} (--g-main)", secondary=True),) if d.g_main != d.chosen_G else ()
    target = p.targets.max_silent
    data = SilentChart(tuple(r.G for r in p.sweep), tuple(r.all_wrong for r in p.sweep),
                       tuple(r.all_correct for r in p.sweep), p.unreachable_share,
                       f"floor as G → ∞: {pct(p.unreachable_share)} (p = 0 or 1)", target,
                       "" if target is None else f"target silent ≤ {target:g}", (*marks, _chosen_mark(d)))
    return Chart("Silent groups versus G", data, (
        Span("Share of groups of G answers that all agree (σ = 0, no update), split into all wrong and all "
             "correct. "), Span(est_note, "quote"),
        Span(". The dotted floor is the posterior share of prompts with p = 0 or 1, which no G helps. "),
        Span(target_note, "quote"), Span(f". At G = {d.chosen_G:,}: "), Span(_at(p, d.chosen_G), "quote")))


def _fidelity_chart(d: ReportData) -> Chart:
    s, p = d.scan, d.plan
    lines = []
    for c in d.fidelity_curves:
        name = QUANTILE_NAMES.get(c.quantile, f"q = {c.quantile:g}")
        need = "unreachable" if c.exact_G is None else f"needs G ≥ {c.exact_G:,}"
        dot = c.exact_G if c.exact_G is not None and c.G[0] <= c.exact_G <= c.G[-1] else None
        lines.append(FidelityLine(c.G, c.fidelity, f"{name} p̂ = {format_value(c.p_hat)} ({need})", dot))
    corpus = tuple((r.G, r.fidelity) for r in p.sweep if r.fidelity is not None)
    target = p.targets.min_fidelity
    data = FidelityChart(
        tuple(lines), tuple(r.G for r in p.sweep), corpus, "corpus (GRPO-mass-weighted, bayes)", 1.0 - d.eps,
        f"1 − ε = {1 - d.eps:g}", target, "" if target is None else f"target corpus φ ≥ {target:g}",
        _chosen_mark(d),
        "no prompt with 0 < k < n: no G moves any prompt" if not lines and not corpus else None)
    return Chart("Fidelity versus G", data, (Span(
        f"Fidelity φ(p, G) = E[σ](p, G) / sqrt(p(1−p)): the share of the large-G update a group of G delivers, "
        f"exact binomial sum at the quartiles of p̂ over the {s.group_size.in_between_prompts:,} prompts with "
        f"0 < k < n ({s.group_size.unreachable_prompts:,} with p̂ ∈ {{0, 1}} are unreachable). Dots: the smallest "
        f"G with φ ≥ 1 − ε, ε = {d.eps:g}. Dashed: the corpus mean φ weighted by GRPO gradient mass (bayes). "
        f"G = {s.group_size.G:,} meets the need of {pct(s.group_size.met_share)} of all prompts."),))


def _bars(values: tuple[float | None, ...]) -> tuple[float, ...]:
    return tuple(0.0 if v is None or math.isnan(v) else v for v in values)


def _mass_chart(d: ReportData) -> Chart:
    s = d.scan
    pr, ms = s.pass_rate, s.mass_share

    def band(name: str, extreme: float, middle: float) -> str:
        return f"{name} (extreme {pct(extreme, 0)}, middle {pct(middle, 0)})"

    data = MassChart((
        Series(band("GRPO, large G", ms.grpo.extreme, ms.grpo.middle), _bars(tuple(ms.grpo.bins))),
        Series(band(f"GRPO at G = {ms.G:,}", ms.grpo_finite.extreme, ms.grpo_finite.middle),
               _bars(tuple(ms.grpo_finite.bins))),
        Series(band("Dr. GRPO", ms.drgrpo.extreme, ms.drgrpo.middle), _bars(tuple(ms.drgrpo.bins)))),
        tuple(c / s.prompts for c in pr.histogram), "share of prompts")
    return Chart("Gradient mass by difficulty", data, (
        Span(f"Share of each rule's total gradient mass falling in each p̂ bin, per-prompt mass at p = p̂ over "
             f"{s.prompts:,} prompts: GRPO ∝ sqrt(p̂(1−p̂)) at large G or E[σ](p̂, G = {ms.G:,}); Dr. GRPO ∝ "
             f"p̂(1−p̂) (same shares at every G). Extreme: "), Span(EXTREME_LABEL, "quote"), Span("; middle: "),
        Span(MIDDLE_LABEL, "quote"),
        Span(". Prompts with p̂ ∈ {0, 1} carry no mass. Dashed: each bin's share of the prompts.")))


def _trend_chart(t: TrendResult) -> Chart:
    logged = f"G = {t.G_logged}" if t.G_logged else "logged sizes " + ", ".join(map(str, t.G_logged_sizes))
    groups = sum(r.groups for r in t.rows)
    rows = t.rows
    data = TrendChart(tuple(r.step for r in rows), tuple(r.observed_all_wrong for r in rows),
                      tuple(r.observed_silent for r in rows),
                      tuple((r.step, r.ahead_silent) for r in rows if r.ahead_silent is not None),
                      tuple(r.pass_rate for r in rows),
                      "training step" if t.every == 1 else f"training step (buckets of {t.every})")
    mae = (f", mean absolute error {format_value(t.ahead_mae)} over {t.mae_steps:,} steps against "
           f"{format_value(t.naive_mae)} for the previous step's share"
           if t.ahead_mae is not None and t.naive_mae is not None else "")
    return Chart("Over training", data, (Span(
        f"Per training step ({len(rows):,} {'steps' if t.every == 1 else 'buckets'}, {groups:,} logged groups, "
        f"{logged}): the observed share of silent groups, split into all wrong and all correct; dashed, the "
        f"forecast one step ahead: the share predicted for the step from earlier steps only (corpus prior and "
        f"each prompt's earlier visits){mae}; green, the mean pass rate k/n."
        + (f" {t.dropped_groups:,} groups without a step value left out." if t.dropped_groups else "")),), wide=True)


def _backtest_charts(bt: BacktestResult) -> list[Chart]:
    at = bt.avoided_at_max_lost
    base = ", ".join(f"{b.name} {format_value(b.brier)}" for b in bt.baselines)
    bins = [c for c in bt.calibration if c.n]
    calibration = CalibrationChart(tuple(c.predicted for c in bins), tuple(c.observed for c in bins),
                                   tuple(c.n for c in bins))
    curves = tuple((rule, pts) for rule in SKIP_RULES
                   if (pts := tuple(sorted((t.informative_lost, t.silent_avoided) for t in bt.tradeoff
                                           if t.rule == rule))))
    worst = max((t.informative_lost for t in bt.tradeoff if t.informative_lost == t.informative_lost), default=1.0)
    tradeoff = TradeoffChart(curves, bt.max_lost, f"{pct(bt.max_lost, 0)} lost", worst)
    return [Chart("Forecast calibration", calibration, (
        Span(f"Every logged group after the first step ({bt.visits:,} groups of {bt.prompts:,} prompts) forecast "
             f"from earlier steps only: corpus prior fitted on earlier steps, each prompt's earlier visits "
             f"down-weighted with a half-life chosen online, recalibrated on earlier steps. Bins of width 0.1 of "
             f"the forecast P(silent) against the observed silent share; weighted mean gap "
             f"{format_value(bt.calibration_error)}. Brier score {format_value(bt.brier)} (baselines: "),
        Span(base, "quote"), Span(")."))), Chart("What a skip rule buys", tradeoff, (Span(
            f"Skipping prompts before rollout: share of the silent groups avoided against the share of "
            f"informative groups lost, replayed on the log. sigmaudit: skip when the forecast P(silent) ≥ "
            f"threshold; GRESO (Zheng et al. 2025): skip with chance 1 − max(p_e^z, 0.01) after z silent visits; "
            f"silent last time. At most {pct(bt.max_lost, 0)} lost: sigmaudit avoids {pct(at.get('sigmaudit'))}, "
            f"GRESO (best over its two bases) {pct(at.get('greso'))}."),))]


def _at(p: PlanResult, G: int) -> str:
    row = next((r for r in p.sweep if r.G == G), None)
    if row is None:
        return "not on the swept grid."
    fid = format_value(row.fidelity)
    return (f"silent {pct(row.silent)} (all wrong {pct(row.all_wrong)}, all correct {pct(row.all_correct)}), "
            f"corpus fidelity {fid}.")
