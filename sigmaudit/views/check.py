"""The view of a :class:`~sigmaudit.audits.check.CheckResult`: one row per threshold and a verdict."""

from __future__ import annotations

from typing import TYPE_CHECKING

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
    head = f"G = {result.G}, {result.prompts} prompts — {verdict}"
    return View("sigmaudit check", (Section("gate", lines=(head,), tables=(table,)),), csv_table="checks")

