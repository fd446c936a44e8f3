"""The view of a :class:`~sigmaudit.audits.check.CheckResult`: one row per threshold and a verdict."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .labels import filtered_line
from .model import Section, Table, View

if TYPE_CHECKING:
    from ..audits.check import CheckResult


def check_view(result: CheckResult) -> View:
    """One row per threshold, and a verdict line."""
    rows = tuple((c.name, c.value, c.op, c.limit, "pass" if c.passed else "FAIL") for c in result.checks)
    note = (f"silent rates: {result.estimator} estimator; fidelity: bayes; extreme share: plug-in p̂ = k/n; "
            "never solved: k = 0 in the logs")
    table = Table("checks", ("check", "value", "", "limit", "result"), rows, note=note)
    n_fail = len(result.failed)
    verdict = ("PASSED: all " f"{len(result.checks)} checks hold" if result.passed
               else f"FAILED: {n_fail} of {len(result.checks)} checks")
    lines = [f"G = {result.G}, {result.prompts} prompts — {verdict}"]
    if result.filtered is not None:
        lines.append(filtered_line(result.filtered, "silent rates read from it are understated (see "
                                                    "--groups-generated, --allow-filtered)"))
    if result.pre_filter is not None:
        pf = result.pre_filter
        lines.append(f"silent_rate = observed pre-filter fraction (N - L + s) / N = ({pf.groups_generated} - "
                     f"{pf.groups_logged} + {pf.silent_logged}) / {pf.groups_generated} at G = {pf.G} "
                     "(--groups-generated)")
    sections = [Section("gate", lines=tuple(lines), tables=(table,))]
    if result.by is not None:
        bad = result.failed_groups
        column = result.by.column
        rows = tuple((g.value, g.result.prompts, "pass" if g.result.passed else "FAIL",
                      ", ".join(c.name for c in g.result.failed)) for g in result.by.groups)
        head = (f"{len(result.by.groups) - len(bad)} of {len(result.by.groups)} values pass"
                + (f"; FAILED: {', '.join(bad)}" if bad else ""))
        sections.append(Section(f"by {column}", lines=(head,), tables=(Table(
            f"by {column}", (column, "prompts", "result", "failed checks"), rows,
            note="each value checked on its own (own prior fit); the gate above is the pooled log"),)))
    return View("sigmaudit check", tuple(sections), csv_table="checks")

