"""The view of a :class:`~sigmaudit.audits.check.CheckResult`: one row per threshold (value, interval,
limit, estimator), a verdict, the warnings."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..fmt import RATE, display_pair, format_value
from ..fmt import pct as pct_
from .labels import filtered_line
from .model import Section, Table, View

if TYPE_CHECKING:
    from ..audits.check import CheckResult


def check_view(result: CheckResult) -> View:
    """One row per threshold, and a verdict line."""
    pct = pct_(result.level, 0)
    rows = []
    for c in result.checks:
        v = c.compared
        a, b = ("—", format_value(float(c.limit), RATE)) if v is None else display_pair(v, c.limit)
        point = "—" if c.value is None else display_pair(c.value, c.limit)[0]
        ci = "—" if c.value_ci is None else "[{}, {}]".format(*(display_pair(x, c.limit)[0] for x in c.value_ci))
        rows.append((c.name, point, ci, a if c.tested is not None else "", c.op, b, "pass" if c.passed else "FAIL",
                     c.estimator))
    tested = ("tested bound" if result.confidence is not None else
              f"held {result.consecutive} steps" if result.consecutive is not None else "")
    cols = ("check", "value", f"{pct} interval", tested, "", "limit", "result", "estimator")
    if not tested:
        rows = [r[:3] + r[4:] for r in rows]
        cols = cols[:3] + cols[4:]
    gated = ("the point estimate" if result.confidence is None
             else f"the one-sided {100 * result.confidence:g}% bound (upper for max-limits, lower for min-limits)")
    if result.consecutive is not None:
        gated += (f"; observed silent checks: the largest per-step share held {result.consecutive} consecutive "
                  "logged steps")
    note = (f"estimator rule: {result.estimator_rule} (silent rates {result.estimator}; fidelity, extreme share and "
            f"never solved: {'p̂ = k/n in the log' if result.estimator_rule == 'plugin' else 'posterior'}); "
            f"interval: bootstrap over prompts, {result.replicates:,} replicates; gate tests {gated}")
    table = Table("checks", cols, tuple(rows), note=note)
    n_fail = len(result.failed)
    n = len(result.checks)
    verdict = (("PASSED: the 1 check holds" if n == 1 else f"PASSED: {n} of {n} checks hold") if result.passed
               else f"FAILED: {n_fail} of {len(result.checks)} checks")
    g_from = "" if result.G_source == "given" else " (the log's most common group size; -G to change)"
    basis = ("basis: observed — the silent limits compare the shares of the window's logged groups that were "
             "silent, all-wrong or all-correct (what happened); --basis model: the estimate from the counts"
             if result.basis == "observed" else
             "basis: model — every value is an estimate from the per-prompt counts (a prediction for a group of G)")
    lines = [f"G = {result.G:,}{g_from}, {result.prompts:,} prompts — {verdict}", basis,
             *(f"warning: {w}" for w in result.warnings)]
    if result.filtered is not None:
        lines.append(filtered_line(result.filtered, "silent rates read from it are understated (see "
                                                    "--groups-generated, --allow-filtered)"))
    if result.pre_filter is not None:
        pf = result.pre_filter
        lines.append(f"silent_rate = observed pre-filter fraction (N - L + s) / N = ({pf.groups_generated:,} - "
                     f"{pf.groups_logged:,} + {pf.silent_logged:,}) / {pf.groups_generated:,} at G = {pf.G:,} "
                     "(--groups-generated)")
    sections = [Section("gate", lines=tuple(lines), tables=(table,))]
    if result.by is not None:
        bad = result.failed_groups
        column = result.by.column
        by_rows = tuple((g.value, g.result.prompts, "pass" if g.result.passed else "FAIL",
                         ", ".join(c.name for c in g.result.failed)) for g in result.by.groups)
        head = (f"{len(result.by.groups) - len(bad)} of {len(result.by.groups)} values pass"
                + (f"; FAILED: {', '.join(bad)}" if bad else ""))
        sections.append(Section(f"by {column}", lines=(head,), tables=(Table(
            f"by {column}", (column, "prompts", "result", "failed checks"), by_rows,
            note="each value checked on its own (own prior fit); the gate above is the pooled log"),)))
    return View("sigmaudit check", tuple(sections), csv_table="checks")
