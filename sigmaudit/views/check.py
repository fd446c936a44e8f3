"""The view of a :class:`~sigmaudit.audits.check.CheckResult`: one row per threshold (value, interval,
limit, estimator), a verdict, the warnings."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from ..audits.by import ByGroup, ByResult
from ..audits.check import ALL_METRICS
from ..fmt import RATE, display_pair, display_pct_pair, format_value, plural, settings_line
from ..fmt import pct as pct_
from .dapo import dapo_sections
from .labels import filtered_line
from .model import Section, Table, View

if TYPE_CHECKING:
    from ..audits.check import Check, CheckResult

RATIOS = frozenset({"fidelity"})
"""Checked quantities that are not shares (printed with decimals; every other is a share, printed in %)."""


def sentence(c: Check) -> str:
    """``silent_rate 0.4123 > limit 0.3000`` (failed) or ``... <= limit ...`` (passed); digits
    are added until a value that differs from its limit also prints differently."""
    op = c.op if c.passed else {"<=": ">", ">=": "<"}[c.op]
    v = c.compared
    if v is None:
        return f"{c.name} undefined {op} limit {c.limit:.4f}"
    a, b = display_pair(v, c.limit)
    what = c.name if c.tested is None else f"{c.name} bound"
    return f"{what} {a} {op} limit {b}"


def worded(result: CheckResult) -> CheckResult:
    """``result`` with each check's :attr:`~sigmaudit.audits.check.Check.sentence` written (and each
    ``--by`` value's): the words of its JSON contract."""
    by = None if result.by is None else ByResult(result.by.column, tuple(
        ByGroup(g.value, worded(g.result)) for g in result.by.groups))
    return replace(result, checks=tuple(replace(c, sentence=sentence(c)) for c in result.checks), by=by)


def check_view(result: CheckResult) -> View:
    """One row per threshold, and a verdict line."""
    pct = pct_(result.level, 0)
    rows = []
    for c in result.checks:
        v = c.compared
        pair = display_pair if c.name in RATIOS else display_pct_pair  # shares print as percentages (JSON: fractions)
        blank = format_value(float(c.limit), RATE) if c.name in RATIOS else pct_(float(c.limit))
        a, b = ("—", blank) if v is None else pair(v, c.limit)
        point = "—" if c.value is None else pair(c.value, c.limit)[0]
        ci = "—" if c.value_ci is None else "[{}, {}]".format(*(pair(x, c.limit)[0] for x in c.value_ci))
        rows.append((c.name, point, ci, a if c.tested is not None else "", c.op, b, "pass" if c.passed else "FAIL",
                     c.estimator))
    tested = ("tested bound" if result.confidence is not None else
              f"held {plural(result.consecutive, 'step')}" if result.consecutive is not None else "")
    cols = ("check", "value", f"{pct} interval", tested, "", "limit", "result", "estimator")
    if not tested:
        rows = [r[:3] + r[4:] for r in rows]
        cols = cols[:3] + cols[4:]
    note = _estimator_note(result)
    table = Table("checks", cols, tuple(rows), note=note if result.basis != "series" else
                  "each value: the mean of the logged per-step shares over the window (observed, no interval)")
    n_fail = len(result.failed)
    n = len(result.checks)
    verdict = (("PASSED: the 1 check holds" if n == 1 else f"PASSED: {n} of {n} checks hold") if result.passed
               else f"FAILED: {n_fail:,} of {len(result.checks):,} checks")
    g_from = "" if result.G_source == "given" else " (the log's most common group size; -G to change)"
    basis = ("basis: observed — the silent limits compare the shares of the window's logged groups that were "
             "silent, all-wrong or all-correct (what happened); --basis model: the estimate from the counts"
             if result.basis == "observed" else
             "basis: model — every value is an estimate from the per-prompt counts (a prediction for a group of G)")
    head, basis = _series_head(result, verdict, basis) if result.basis == "series" else \
        (f"G = {result.G:,}{g_from}, {plural(result.prompts, 'prompt')} — {verdict}", basis)
    lines = [head, basis,
             *(f"warning: {w}" for w in result.warnings)]
    if result.config is not None:  # a config file set values of this gate: the report says which, as stderr did
        lines.append(settings_line(result.config.file, result.config.values))
    if result.filtered is not None:
        lines.append(filtered_line(result.filtered, "silent rates read from it are understated (see "
                                                    "--groups-generated, --allow-filtered)"))
    if result.pre_filter is not None:
        pf = result.pre_filter
        lines.append(f"silent_rate = observed pre-filter fraction (N - L + s) / N = ({pf.groups_generated:,} - "
                     f"{pf.groups_logged:,} + {pf.silent_logged:,}) / {pf.groups_generated:,} at G = {pf.G:,} "
                     "(--groups-generated)")
    sections = [Section("gate", lines=tuple(lines), tables=(table,)), *dapo_sections(result.dapo)]
    if result.by is not None:
        bad = result.failed_groups
        column = result.by.column
        by_rows = tuple((g.value, g.result.prompts, "pass" if g.result.passed else "FAIL",
                         ", ".join(c.name for c in g.result.failed)) for g in result.by.groups)
        head = (f"{len(result.by.groups) - len(bad):,} of {plural(len(result.by.groups), 'value')} pass"
                + (f"; FAILED: {', '.join(bad)}" if bad else ""))
        sections.append(Section(f"by {column}", lines=(head,), tables=(Table(
            f"by {column}", (column, "prompts", "result", "failed checks"), by_rows,
            note="each value checked on its own (own prior fit); the gate above is the pooled log"),)))
    return View("sigmaudit check", tuple(sections), csv_table="checks")


def _estimator_note(result: CheckResult) -> str:
    """The checks table's note: the estimator rule, the interval, and what each check gates."""
    gated = ("the point estimate" if result.confidence is None
             else f"the one-sided {100 * result.confidence:g}% bound (upper for max-limits, lower for min-limits)")
    untested = [c.name for c in result.checks if result.confidence is not None and c.tested is None]
    if untested:  # the observed shares: what the logged groups did, no sampling interval to bound
        gated += f"; {', '.join(untested)}: the observed value (what the logged groups did, no interval)"
    if result.consecutive is not None:
        gated += (f"; observed silent checks: the largest per-step share held {result.consecutive} consecutive "
                  "logged steps")
    silent = ("silent_rate", "all_wrong_rate", "all_correct_rate", "silent_token_share")
    others = [c.name for c in result.checks if c.name not in silent]
    per_prompt = ("from p̂ = k/n in the log" if result.estimator_rule == "plugin" else
                  "from each prompt's posterior (the corpus prior updated by its counts)")
    return (f"how values are estimated (--estimator {result.estimator_rule}): silent shares {result.estimator}"
            + (f"; {', '.join(others)} {per_prompt}" if others else "")
            + ("; interval: bootstrap over prompts, "
               f"{plural(result.replicates, 'resample')}" if result.replicates else "; no interval (--bootstrap 0)")
            + f"; the gate tests {gated}")


def _series_head(result: CheckResult, verdict: str, basis: str) -> tuple[str, str]:
    """The gate's first two lines for a per-step series of shares."""
    return (f"per-step series{f' at G = {result.G:,}' if result.G else ''} — {verdict}",
            "basis: series — the silent limits compare the mean of the window's logged per-step shares (each "
            "step one batch; --consecutive K: the largest share held K steps)")


def _escape(data: str) -> str:
    """GitHub workflow-command message escaping (%, CR, LF: actions/toolkit ``escapeData``)."""
    return data.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(data: str) -> str:
    """GitHub workflow-command property escaping (``escapeProperty``: also ``:`` and ``,``, which would
    end the property or the command's properties)."""
    return _escape(data).replace(":", "%3A").replace(",", "%2C")


def github_annotations(result: CheckResult) -> list[str]:
    """``::error title=...::message`` lines, one per failed check (log text in a title or a message
    escaped by GitHub's rules, so a ``--by`` value cannot end the property or start a command)."""
    out = [
        f"::error title={_escape_property(f'sigmaudit check ({c.name})')}::{_escape(sentence(c))} "
        f"at G = {result.G} ({_escape(ALL_METRICS[c.name][2])})"
        for c in result.failed
    ]
    if result.by is not None:
        out += [f"::error title={_escape_property(f'sigmaudit check ({result.by.column}={g.value}, {c.name})')}"
                f"::{_escape(sentence(c))} at G = {result.G}"
                for g in result.by.groups for c in g.result.failed]
    return out
