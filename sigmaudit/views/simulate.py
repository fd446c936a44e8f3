"""The views of a :class:`~sigmaudit.audits.simulate.SimulateResult`: a summary per rule with
sparklines, or (``--format csv``) the per-step series."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from ..core.weighting import EXTREME
from ..fmt import AMOUNT, RATE, format_value, mean_or_none, plural
from .model import Section, Table, View
from .sparkline import sparkline

if TYPE_CHECKING:
    from ..audits.simulate import SeriesReport, SimulateConfig, SimulateResult


def initial_difficulty(c: SimulateConfig) -> str:
    """Where the initial pass rates came from, in words: the Beta mixture, or the corpus and how it was used."""
    init, (lo, hi) = c.init, c.init.clip
    if init.mixture is not None:
        mix = ", ".join(f"{w:.0%} Beta({a:g}, {b:g})" for w, a, b in init.mixture)
        return f"Beta mixture {mix}, clipped to [{lo:g}, {hi:g}]"
    how = f"{c.prompts:,} drawn with replacement from" if init.resampled else "each of"
    return (f"pass rates k/n of {init.corpus_label}: {how} {plural(init.corpus_prompts, 'prompt')} with 0 < k < n "
            f"({init.corpus_excluded:,} with k/n ∈ {{0, 1}} left out), clipped to [{lo:g}, {hi:g}]")


def worded(result: SimulateResult | SeriesReport) -> SimulateResult | SeriesReport:
    """``result`` with its initial difficulty's :attr:`~sigmaudit.audits.simulate.InitSpec.description`
    written: the words of its JSON contract (a :class:`~sigmaudit.audits.simulate.SeriesReport`'s run's)."""
    from ..audits.simulate import SeriesReport

    if isinstance(result, SeriesReport):
        return SeriesReport(worded(result.result))  # type: ignore[arg-type]
    c = result.config
    return replace(result, config=replace(c, init=replace(c.init, description=initial_difficulty(c))))


def simulate_view(result: SimulateResult) -> View:
    """Summary table per rule and sparklines of the silent fraction and the hard quarter's pass rate."""
    c = result.config
    head = (
        "a toy model: each prompt is its own one-parameter policy (no parameter shared between prompts, no batch, "
        "no optimiser); it shows how silence and each rule's per-prompt gain move pass rates, not transfer, a batch "
        "mean's dilution by silent groups, a step's noise or an optimiser (docs/theory.md)",
        f"{c.prompts:,} prompts, G = {c.G:,}, {c.steps:,} steps, lr = {c.lr:g}, seed = {c.seed:,}; budget "
        f"{c.budget:,} rollouts per arm (one group per prompt per step)",
        "dapo: verl's loop (train = gen = every prompt, chunks until every slot holds a group with 0 < k < G, "
        "surplus truncated), run until its rollouts generated reach the budget",
        f"initial difficulty: {initial_difficulty(c)} (mean p = {format_value(c.init.mean_p, RATE)}); "
        f"hardest quarter: {result.hard_quartile_size:,} prompts, "
        f"mean p = {format_value(result.hard_quartile_initial, RATE)}",
    )
    rows = tuple(
        (r.name, r.comparison, r.lr, r.steps_run, r.samples, r.groups_used * c.G, r.r2_silent,
         r.silent_measured[-1] if r.silent_measured else None,
         r.hard_quartile[-1] if r.hard_quartile else result.hard_quartile_initial,
         r.mean_p[-1] if r.mean_p else c.init.mean_p,
         mean_or_none(r.extreme_share), mean_or_none(r.extreme_share_forecast))
        for r in result.runs
    )
    table = Table(
        "per arm",
        ("arm", "compared at", "lr", "steps", "rollouts generated", "rollouts trained", "R²", "silent end",
         "hard ¼ end", "mean p end", "extreme", "expected"),
        rows,
        note="R²: forecast mean silent(p, G) vs measured silent fraction over steps (DAPO: its first chunk). extreme: "
             f"share of the update on {EXTREME.describe()}, mean over steps (realised vs expected gain)."
             + (" drgrpo-matched: lr · Σ E[σ] / Σ E[σ²] over the initial pass rates (docs/theory.md)."
                if any(r.name == "drgrpo-matched" for r in result.runs) else ""),
        digits=(RATE, RATE, RATE) + (AMOUNT,) * 3 + (RATE,) * 6,
    )
    width = 36  # the two sparklines and their headers fit an 80-column panel
    name_w = max(len(r.name) for r in result.runs)
    lines = [f"{'':{name_w}}  {'silent fraction (0–1)':{width}}  hard-quarter pass rate (0–1)"]
    for r in result.runs:
        pad = [None] * (c.steps - r.steps_run)  # an arm that ran fewer steps (DAPO) on the same step axis
        s = sparkline([*r.silent_measured, *pad], lo=0.0, hi=1.0, width=width)
        h = sparkline([*r.hard_quartile, *pad], lo=0.0, hi=1.0, width=width)
        lines.append(f"{r.name:{name_w}}  {s:{width}}  {h}")
    short = [f"{r.name} {r.steps_run:,}" for r in result.runs if r.steps_run < c.steps]
    lines.append(f"{'':{name_w}}  step 1 → {c.steps:,}, left to right"
                 + (f" (steps run: {', '.join(short)}; blank after)" if short else ""))
    return View(
        "sigmaudit simulate",
        (
            Section("controlled training run", lines=head, tables=(table,)),
            Section("over training", lines=tuple(lines)),
        ),
    )


def simulate_series_view(result: SimulateResult) -> View:
    """The per-step series of every rule as one long table (``--format csv``)."""
    rows = tuple(
        (i + 1, r.name, r.silent_measured[i], r.silent_forecast[i], r.hard_quartile[i], r.mean_p[i],
         r.extreme_share[i], r.extreme_share_forecast[i])
        for r in result.runs
        for i in range(len(r.silent_measured))
    )
    table = Table("per-step series", ("step", "rule", "silent_measured", "silent_forecast", "hard_quartile",
                                      "mean_p", "extreme_share", "extreme_share_forecast"), rows)
    return View("sigmaudit simulate", (Section("per-step series", tables=(table,)),))


def series_report_view(result: SeriesReport) -> View:
    """The per-step series table."""
    return simulate_series_view(result.result)

