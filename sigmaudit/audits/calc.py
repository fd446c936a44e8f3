"""``sigmaudit calc``: every closed form for given prompt difficulties p and group sizes G."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from ..render import Section, Table, View


@dataclass(frozen=True)
class CalcRow:
    """The closed forms at one (p, G, ε)."""

    p: float
    """Prompt success probability."""
    G: int
    """Group size."""
    eps: float
    """Fidelity shortfall ε of the group-size law (φ ≥ 1 − ε)."""
    silent_rate: float
    """p^G + (1 − p)^G: chance the group is silent (σ = 0)."""
    all_correct_rate: float
    """p^G."""
    all_wrong_rate: float
    """(1 − p)^G."""
    expected_sigma: float
    """Exact E[σ](p, G): GRPO's expected per-prompt update size."""
    expected_sigma_squared: float
    """p (1 − p)(1 − 1/G): Dr. GRPO's expected per-prompt update size."""
    fidelity: float
    """φ = E[σ] / sqrt(p (1 − p)), the share of the large-G update delivered."""
    attenuation: float | None
    """Large-G approximation 1 − 1/(8 G p (1 − p)); None at p ∈ {0, 1}."""
    difficulty_weight: float | None
    """GRPO's extra weight 1/sqrt(p (1 − p)); None (infinite) at p ∈ {0, 1}."""
    group_size_closed_form: int | None
    """ceil(1/(8 ε p (1 − p))); None when unreachable (p ∈ {0, 1})."""
    group_size_exact: int | None
    """Smallest G with φ ≥ 1 − ε; None when unreachable (p ∈ {0, 1})."""
    dapo_groups_per_kept_group: float | None
    """1/(1 − silent): groups DAPO draws per kept group; None when p ∈ {0, 1}."""
    meets_eps: bool
    """Whether this G already reaches φ ≥ 1 − ε."""


@dataclass(frozen=True)
class CalcResult:
    """``calc`` for every combination of the given p and G values."""

    rows: tuple[CalcRow, ...]
    """One row per (p, G), p-major."""

    def to_dict(self) -> dict[str, Any]:
        """JSON contract: the row's keys for one (p, G); ``{"results": [...]}`` for several."""
        if len(self.rows) == 1:
            return asdict(self.rows[0])
        return {"results": [asdict(r) for r in self.rows]}

    def view(self) -> View:
        """A transposed table for one (p, G); one row per (p, G) otherwise."""
        eps = self.rows[0].eps
        note = (
            f"fidelity φ = E[σ]/sqrt(p(1−p)); group sizes for φ ≥ 1 − ε with ε = {eps:g}; "
            "— means unreachable/undefined (p ∈ {0, 1})"
        )
        if len(self.rows) == 1:
            r = self.rows[0]
            rows = (
                ("silent rate p^G + (1−p)^G", r.silent_rate),
                ("  all-correct p^G", r.all_correct_rate),
                ("  all-wrong (1−p)^G", r.all_wrong_rate),
                ("E[σ] (GRPO update size)", r.expected_sigma),
                ("E[σ²] (Dr. GRPO update size)", r.expected_sigma_squared),
                ("fidelity φ (exact)", r.fidelity),
                ("attenuation 1 − 1/(8Gp(1−p))", r.attenuation),
                ("difficulty weight 1/sqrt(p(1−p))", r.difficulty_weight),
                (f"group size, closed form (ε={eps:g})", r.group_size_closed_form),
                (f"group size, exact (ε={eps:g})", r.group_size_exact),
                ("DAPO groups drawn per kept group", r.dapo_groups_per_kept_group),
            )
            table = Table(f"p = {r.p:g}, G = {r.G}", ("quantity", "value"), rows, note=note)
            return View("sigmaudit calc", (Section("closed forms", tables=(table,)),))
        cols = ("p", "G", "silent", "all_correct", "all_wrong", "E[σ]", "fidelity",
                "G closed", "G exact", "DAPO draws/kept")
        rows = tuple(
            (r.p, r.G, r.silent_rate, r.all_correct_rate, r.all_wrong_rate, r.expected_sigma,
             r.fidelity, r.group_size_closed_form, r.group_size_exact, r.dapo_groups_per_kept_group)
            for r in self.rows
        )
        table = Table("closed forms", cols, rows, note=note)
        return View("sigmaudit calc", (Section("closed forms", tables=(table,)),))


def _opt_float(x: float) -> float | None:
    import math

    return None if (math.isnan(x) or math.isinf(x)) else float(x)


def calc(p: Sequence[float], G: Sequence[int], eps: float = 0.05) -> CalcResult:
    """Evaluate every closed form of THEORY.md for each (p, G) pair (vectorised)."""
    import numpy as np

    from ..core import fidelity as fid
    from ..core import group_size as gs
    from ..core import silent as sil
    from ..core.weighting import difficulty_weight

    pp, GG = np.meshgrid(np.asarray(p, dtype=np.float64), np.asarray(G), indexing="ij")
    pp, GG = pp.ravel(), GG.ravel()
    if not 0.0 < eps < 1.0:
        raise ValueError(f"eps must lie in (0, 1), got {eps!r}")
    silent = sil.silent_rate(pp, GG)
    ac, aw = sil.all_correct_rate(pp, GG), sil.all_wrong_rate(pp, GG)
    es, es2 = fid.expected_sigma(pp, GG), fid.expected_sigma_squared(pp, GG)
    phi, att = fid.fidelity(pp, GG), fid.attenuation(pp, GG)
    w = difficulty_weight(pp)
    g_closed = gs.group_size_closed_form(pp, eps)
    g_exact = gs.group_size_exact(pp, eps)
    dapo = sil.dapo_groups_per_kept_group(pp, GG)
    rows = []
    for i in range(pp.size):
        ge = None if np.isnan(g_exact[i]) else int(g_exact[i])
        rows.append(
            CalcRow(
                p=float(pp[i]),
                G=int(GG[i]),
                eps=float(eps),
                silent_rate=float(silent[i]),
                all_correct_rate=float(ac[i]),
                all_wrong_rate=float(aw[i]),
                expected_sigma=float(es[i]),
                expected_sigma_squared=float(es2[i]),
                fidelity=float(phi[i]),
                attenuation=_opt_float(att[i]),
                difficulty_weight=_opt_float(w[i]),
                group_size_closed_form=None if np.isnan(g_closed[i]) else int(g_closed[i]),
                group_size_exact=ge,
                dapo_groups_per_kept_group=_opt_float(dapo[i]),
                meets_eps=ge is not None and int(GG[i]) >= ge,
            )
        )
    return CalcResult(rows=tuple(rows))
