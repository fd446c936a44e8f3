"""``sigmaudit check``: a CI gate on a corpus at one group size G.

The gate itself is a small pure function, :func:`passes` (one truth table: a ``max`` limit holds
when value ≤ limit, a ``min`` limit when value ≥ limit, a missing value never holds), applied to
each :class:`Threshold` by :func:`evaluate`. :func:`check` computes the values from a
:class:`~sigmaudit.corpus.Corpus`:

- ``silent_rate``, ``all_wrong_rate``, ``all_correct_rate``: the scan's default estimate
  (:meth:`Corpus.default_estimator`: unbiased where n ≥ G for every prompt, else bayes);
- ``extreme_share``: share of the large-G GRPO gradient mass sqrt(p̂(1 − p̂)) on prompts with
  p̂ = k/n < 0.1 or > 0.9 (:data:`sigmaudit.core.weighting.EXTREME`);
- ``fidelity``: GRPO-mass-weighted mean φ at G, model-based, as in ``plan``'s sweep;
- ``never_solved_rate``: share of prompts with k = 0 in the logs (observed).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, Literal

from ..core.weighting import EXTREME

if TYPE_CHECKING:
    from ..core.corpus import Corpus

Kind = Literal["max", "min"]

METRICS: dict[str, tuple[Kind, str, str]] = {
    "silent_rate": ("max", "--max-silent", "silent-group rate at G"),
    "all_wrong_rate": ("max", "--max-all-wrong", "all-wrong part of the silent rate"),
    "all_correct_rate": ("max", "--max-all-correct", "all-correct part of the silent rate"),
    "extreme_share": ("max", "--max-extreme-share", f"GRPO mass on {EXTREME.describe('p̂')}"),
    "fidelity": ("min", "--min-fidelity", "mean fidelity φ at G (weighted by GRPO mass)"),
    "never_solved_rate": ("max", "--max-never-solved", "share of prompts never solved in the logs"),
}
"""Every metric the gate knows: its kind (max/min limit), CLI option and meaning, in report order."""


def passes(value: float | None, kind: Kind, limit: float) -> bool:
    """The gate: ``max`` holds when value ≤ limit, ``min`` when value ≥ limit; None/NaN never holds.

    >>> passes(0.3, "max", 0.3), passes(0.31, "max", 0.3), passes(None, "min", 0.5)
    (True, False, False)
    """
    if value is None or math.isnan(value):
        return False
    if kind == "max":
        return value <= limit
    if kind == "min":
        return value >= limit
    raise ValueError(f"kind must be 'max' or 'min', got {kind!r}")


@dataclass(frozen=True)
class Threshold:
    """One limit on one metric."""

    name: str
    """A key of :data:`METRICS`."""
    limit: float
    """The limit, in [0, 1]."""

    @property
    def kind(self) -> Kind:
        """``max`` or ``min``."""
        return METRICS[self.name][0]


@dataclass(frozen=True)
class Check:
    """One threshold's outcome."""

    name: str
    """Metric name (a key of :data:`METRICS`)."""
    value: float | None
    """Measured value; None when undefined (fails)."""
    limit: float
    """The limit given."""
    kind: Kind
    """``max``: value must be ≤ limit; ``min``: value must be ≥ limit."""
    passed: bool
    """Whether the limit holds."""

    @property
    def op(self) -> str:
        """``<=`` or ``>=``."""
        return "<=" if self.kind == "max" else ">="

    def sentence(self) -> str:
        """``silent_rate 0.4123 > limit 0.3000`` (failed) or ``... <= limit ...`` (passed)."""
        v = "undefined" if self.value is None else f"{self.value:.4f}"
        op = self.op if self.passed else {"<=": ">", ">=": "<"}[self.op]
        return f"{self.name} {v} {op} limit {self.limit:.4f}"


def evaluate(values: Mapping[str, float | None], thresholds: Sequence[Threshold]) -> tuple[Check, ...]:
    """Apply :func:`passes` to every threshold, in :data:`METRICS` order."""
    order = {name: i for i, name in enumerate(METRICS)}
    out = []
    for t in sorted(thresholds, key=lambda t: order[t.name]):
        v = values.get(t.name)
        v = None if v is None or math.isnan(v) else float(v)
        out.append(Check(name=t.name, value=v, limit=t.limit, kind=t.kind, passed=passes(v, t.kind, t.limit)))
    return tuple(out)


@dataclass(frozen=True)
class CheckResult:
    """The gate's outcome at one G."""

    passed: bool
    """Every threshold holds (exit code 0; else 1)."""
    G: int
    """Group size checked."""
    estimator: str
    """Estimator of the silent rates: ``unbiased`` (n ≥ G for every prompt) or ``bayes``."""
    prompts: int
    """Number of prompts."""
    checks: tuple[Check, ...]
    """One per threshold given."""

    def to_dict(self) -> dict[str, Any]:
        """JSON contract: passed, G, estimator, prompts, checks[{name, value, limit, kind, op, passed}]."""
        return {
            "passed": self.passed,
            "G": self.G,
            "estimator": self.estimator,
            "fidelity_estimator": "bayes",
            "prompts": self.prompts,
            "checks": [{**asdict(c), "op": c.op} for c in self.checks],
        }

    @property
    def failed(self) -> tuple[Check, ...]:
        """The checks that failed."""
        return tuple(c for c in self.checks if not c.passed)


def metric_values(corpus: Corpus, G: int, names: Sequence[str] | None = None) -> tuple[str, dict[str, float | None]]:
    """(silent estimator, value of each requested metric) at group size G."""
    import numpy as np

    from ..core.weighting import EXTREME, band_share, gradient_mass

    wanted = set(METRICS if names is None else names)
    s = corpus.silent(G)
    values: dict[str, float | None] = {
        "silent_rate": s.silent_rate, "all_wrong_rate": s.all_wrong_rate, "all_correct_rate": s.all_correct_rate,
    }
    if "extreme_share" in wanted:
        p_hat = corpus.p_hat
        mass = np.asarray(gradient_mass(p_hat), dtype=np.float64) * corpus.weight
        values["extreme_share"] = band_share(p_hat, mass, EXTREME)
    if "fidelity" in wanted:
        values["fidelity"] = corpus.fidelity([G])[0]
    if "never_solved_rate" in wanted:
        values["never_solved_rate"] = corpus.mean(corpus.k == 0)
    return s.estimator, {k: v for k, v in values.items() if k in wanted}


def check(corpus: Corpus, G: int, thresholds: Sequence[Threshold]) -> CheckResult:
    """Evaluate ``thresholds`` on ``corpus`` at group size ``G``."""
    estimator, values = metric_values(corpus, G, [t.name for t in thresholds])
    checks = evaluate(values, thresholds)
    return CheckResult(passed=all(c.passed for c in checks), G=int(G), estimator=estimator,
                       prompts=corpus.n_prompts, checks=checks)


def _escape(data: str) -> str:
    """GitHub workflow-command message escaping (%, CR, LF)."""
    return data.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def github_annotations(result: CheckResult) -> list[str]:
    """``::error title=...::message`` lines, one per failed check."""
    return [
        f"::error title=sigmaudit check ({_escape(c.name)})::{_escape(c.sentence())} at G = {result.G} "
        f"({_escape(METRICS[c.name][2])})"
        for c in result.failed
    ]
