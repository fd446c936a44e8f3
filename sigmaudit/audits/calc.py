"""``sigmaudit calc``: every closed form for given prompt difficulties p and group sizes G."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from ..fmt import none_if_nan


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
    """Large-G approximation 1 − 1/(8 G p (1 − p)); None at p ∈ {0, 1} and outside its range
    (``attenuation_in_range``)."""
    attenuation_in_range: bool
    """(G + 1) p (1 − p) > 7/16: the range of the large-G approximation (docs/theory.md); outside it
    ``attenuation`` is None, not a number (φ exact is the figure)."""
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
        """JSON contract: ``{"results": [...]}``, one object per (p, G), however many there are."""
        return {"results": [asdict(r) for r in self.rows]}


def calc(p: Sequence[float], G: Sequence[int], eps: float = 0.05) -> CalcResult:
    """Evaluate every closed form of docs/theory.md for each (p, G) pair (vectorised)."""
    import numpy as np

    from ..core import fidelity as fid
    from ..core import group_size as gs
    from ..core import silent as sil
    from ..core._validate import as_eps
    from ..core.weighting import difficulty_weight

    pp, GG = np.meshgrid(np.asarray(p, dtype=np.float64), np.asarray(G), indexing="ij")
    pp, GG = pp.ravel(), GG.ravel()
    as_eps(eps)
    silent = sil.silent_rate(pp, GG)
    ac, aw = sil.all_correct_rate(pp, GG), sil.all_wrong_rate(pp, GG)
    es, es2 = fid.expected_sigma(pp, GG), fid.expected_sigma_squared(pp, GG)
    phi, att = fid.fidelity(pp, GG), fid.attenuation(pp, GG)
    in_range = np.atleast_1d(fid.attenuation_in_range(pp, GG))
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
                attenuation=none_if_nan(att[i]) if in_range[i] else None,
                attenuation_in_range=bool(in_range[i]),
                difficulty_weight=none_if_nan(w[i]),
                group_size_closed_form=None if np.isnan(g_closed[i]) else int(g_closed[i]),
                group_size_exact=ge,
                dapo_groups_per_kept_group=none_if_nan(dapo[i]),
                meets_eps=ge is not None and int(GG[i]) >= ge,
            )
        )
    return CalcResult(rows=tuple(rows))
