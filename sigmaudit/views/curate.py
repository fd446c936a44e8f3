"""``sigmaudit curate``'s view: the value rule's classes, what dropping does at the G to be run and the logged
G, and the join to the training set."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..fmt import RATE, format_count, pct, plural
from .model import Section, Table, View

if TYPE_CHECKING:
    from ..audits.curate import CurateResult, DatasetJoin
    from ..audits.curation import ValueAt, ValueClass

_SOURCE = {"given": "-G", "recommended": "plan's recommendation", "logged": "the logged group size",
           "default": "no groups logged: G = 8"}
_NAMES = {"drop": "drop", "reprobe": "re-probe", "keep": "keep"}


def curate_view(result: CurateResult) -> View:
    """The headline (classes, effect, join) and, with --full, the tables."""
    head = Section("curation by value", lines=headline(result))
    sections = [head, classes_section(result), effect_section(result)]
    if result.dataset is not None:
        sections.append(Section("training set", lines=join_lines(result.dataset)))
    return View("sigmaudit curate", tuple(sections), csv_table="classes", brief=(head,))


def headline(result: CurateResult) -> tuple[str, ...]:
    v = result.value
    lines = [
        f"value of a prompt: posterior chance that a group of G = {v.G:,} ({_SOURCE[result.G_source]}) is informative "
        f"(0 < k < G), under the corpus prior; corpus mean {pct(v.corpus_value)} · {result.prompts:,} prompts, "
        f"{format_count(result.samples_median)} samples each (median)",
        f"threshold {pct(v.threshold)} = {v.min_value:g} × the mean (--min-value); a drop needs P(value < "
        f"threshold) ≥ {pct(v.confidence, 0)} (--drop-confidence)",
        *(_class_line(c) for c in v.classes),
    ]
    lines += [_effect_line(a, v.G, result) for a in v.at]
    if result.dataset is not None:
        lines.append(join_lines(result.dataset)[0])
    if result.difficulty:
        lines.append(f"read from {result.difficulty}")
    return tuple(lines)


def _class_line(c: ValueClass) -> str:
    what = {"drop": "below the threshold, and sure of it", "reprobe": "below it on average, but too few samples "
            "to tell", "keep": "at or above the threshold"}[c.decision]
    ends = f"never solved {c.never_solved:,}, always solved {c.always_solved:,}"
    mean = "" if c.mean_value is None else f"; mean value {pct(c.mean_value)}"
    settle = ""
    if c.settle_samples is not None:
        lo, hi = c.settle_samples
        span = f"{lo:,}" if lo == hi else f"{lo:,}–{hi:,}"
        settle = f"; {span} more samples with the same outcome would settle an extreme one (drop)"
    return f"{_NAMES[c.decision]}: {pct(c.share)} ({plural(c.prompts, 'prompt')}: {ends}{mean}) — {what}{settle}"


def _effect_line(a: ValueAt, G: int, result: CurateResult) -> str:
    which = ", ".join(w for g, w in ((G, "the G valued at"), (result.G_logged, "logged"),
                                     (result.G_recommended, "plan's recommendation")) if g == a.G)
    after = pct(a.silent_after)
    snr = "— (not determined: the counts do not fix the noise ratio at G = 8)" if a.snr_change is None and \
        a.silent_after is not None else "—" if a.snr_change is None else f"{a.snr_change:+.1%}"
    extra = ""
    if a.silent_after_reprobe_dropped is not None and a.silent_after_reprobe_dropped != a.silent_after:
        extra = f" ({pct(a.silent_after_reprobe_dropped)} were the re-probe prompts dropped too)"
    return (f"dropping at G = {a.G:,} ({which}, same rollouts per step; predicted): silent {pct(a.silent_before)} → "
            f"{after}{extra}; step SNR {snr}; cost {pct(a.signal_cost)} of the expected update")


def classes_section(result: CurateResult) -> Section:
    rows = tuple((c.decision, c.prompts, c.share, c.never_solved, c.always_solved, c.mean_value,
                  None if c.settle_samples is None else c.settle_samples[0],
                  None if c.settle_samples is None else c.settle_samples[1]) for c in result.value.classes)
    cols = ("class", "prompts", "share", "k = 0", "k = n", "mean value", "settle from", "settle to")
    note = (f"value at G = {result.value.G:,}: posterior chance of an informative group; settle: extra samples of "
            "the same outcome after which a never/always-solved re-probe prompt would be dropped")
    return Section("classes", tables=(Table("classes", cols, rows, note=note, digits=RATE),))


def effect_section(result: CurateResult) -> Section:
    rows = tuple((a.G, a.silent_before, a.silent_after, a.silent_after_reprobe_dropped, a.snr_change, a.signal_cost)
                 for a in result.value.at)
    cols = ("G", "silent", "silent after", "silent, re-probe dropped too", "SNR change", "signal cost")
    note = ("predicted (posterior means under the corpus prior: the kept set is chosen by the counts); SNR: the step "
            f"SNR of `plan` at the same rollouts per step ({result.value.advantage}, {result.value.std} std); signal "
            "cost: the dropped prompts' share of Σ E[c(k, G)]")
    return Section("after curation", tables=(Table("after curation", cols, rows, note=note,
                                                   digits=(0, RATE, RATE, RATE, RATE, RATE)),))


def join_lines(j: DatasetJoin) -> tuple[str, ...]:
    first = (f"training set {j.path} ({j.rows:,} rows, column {j.column!r}, {j.shape}): {j.prompts_matched:,} logged "
             f"prompts matched one row, {j.prompts_unmatched:,} none, {j.prompts_several:,} several; rows dropped "
             f"{j.rows_dropped:,}, kept {j.rows_kept:,} (never seen in the log {j.rows_unseen:,}, only among several "
             f"candidates {j.rows_ambiguous:,}, re-probe "
             f"{j.rows_reprobe:,}, matched by prompts of different classes {j.rows_mixed:,})")
    more = [f"matches no row: {e}" for e in j.unmatched_examples]
    more += [f"matches several rows: {e}" for e in j.several_examples]
    if j.prompts_unmatched or j.prompts_several:
        more.append("--drop-out lists every one (match none/several, candidate_rows); their rows are kept")
    return (first, *more)


