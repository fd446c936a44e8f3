"""The view of a :class:`~sigmaudit.audits.calc.CalcResult`: the closed forms at each (p, G)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..fmt import AMOUNT, RATE
from .model import Section, Table, View

if TYPE_CHECKING:
    from ..audits.calc import CalcResult


def calc_view(result: CalcResult) -> View:
    """A transposed table for one (p, G); one row per (p, G) otherwise."""
    eps = result.rows[0].eps
    note = (
        f"fidelity φ = E[σ]/sqrt(p(1−p)); group sizes for φ ≥ 1 − ε with ε = {eps:g}; "
        "— means unreachable/undefined (p ∈ {0, 1})"
    )
    if len(result.rows) == 1 and not result.rows[0].attenuation_in_range and 0.0 < result.rows[0].p < 1.0:
        note += ("; attenuation: a large-G approximation, in range only while (G + 1)p(1−p) > 7/16 (its next "
                 "term is then smaller than its correction; docs/theory.md): here it is not, so no number is shown "
                 "— φ exact is the figure")
    if len(result.rows) == 1:
        r = result.rows[0]
        rows = (
            ("silent rate p^G + (1−p)^G", r.silent_rate),
            ("  all-correct p^G", r.all_correct_rate),
            ("  all-wrong (1−p)^G", r.all_wrong_rate),
            ("E[σ] (GRPO update size)", r.expected_sigma),
            ("E[σ²] (Dr. GRPO update size)", r.expected_sigma_squared),
            ("fidelity φ (exact)", r.fidelity),
            ("attenuation 1 − 1/(8Gp(1−p))",
             r.attenuation if r.attenuation_in_range or not 0.0 < r.p < 1.0 else "outside its range"),
            ("difficulty weight 1/sqrt(p(1−p))", r.difficulty_weight),
            (f"group size, closed form (ε={eps:g})", r.group_size_closed_form),
            (f"group size, exact (ε={eps:g})", r.group_size_exact),
            ("DAPO groups drawn per kept group", r.dapo_groups_per_kept_group),
        )
        table = Table(f"p = {r.p:g}, G = {r.G:,}", ("quantity", "value"), rows, note=note,
                      row_digits=(None,) * 7 + (AMOUNT, None, None, AMOUNT))
        return View("sigmaudit calc", (Section("closed forms", tables=(table,)),))
    cols = ("p", "G", "silent", "all_correct", "all_wrong", "E[σ]", "fidelity",
            "G closed", "G exact", "DAPO draws/kept")
    rows = tuple(
        (r.p, r.G, r.silent_rate, r.all_correct_rate, r.all_wrong_rate, r.expected_sigma,
         r.fidelity, r.group_size_closed_form, r.group_size_exact, r.dapo_groups_per_kept_group)
        for r in result.rows
    )
    table = Table("closed forms", cols, rows, note=note, digits=(RATE,) * (len(cols) - 1) + (AMOUNT,))
    return View("sigmaudit calc", (Section("closed forms", tables=(table,)),))

