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
from dataclasses import asdict, dataclass, replace
from typing import TYPE_CHECKING, Any, Literal

from ..core.weighting import EXTREME
from ..errors import ConfigError
from ..loaders.options import Filtered
from .by import ByGroup, ByResult
from .filtered import PreFilter

if TYPE_CHECKING:
    from ..core.corpus import Corpus
    from ..loaders import LoadedCounts

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
    filtered: Filtered | None = None
    """Set when the log is a post-filter dump (see :mod:`sigmaudit.audits.filtered`)."""
    pre_filter: PreFilter | None = None
    """Set with ``--groups-generated``: ``silent_rate`` is then the observed pre-filter fraction."""
    by: ByResult | None = None
    """With ``--by COLUMN``: each value's own check; ``passed`` needs every one to pass."""

    def to_dict(self) -> dict[str, Any]:
        """JSON contract: passed, G, estimator, prompts, checks[{name, value, limit, kind, op, passed}],
        filtered (null or {source, message}), pre_filter (null or its fields), by (null or
        {column, groups: [{value, ...these keys}]})."""
        return {
            "passed": self.passed,
            "G": self.G,
            "estimator": self.estimator,
            "fidelity_estimator": "bayes",
            "prompts": self.prompts,
            "checks": [{**asdict(c), "op": c.op} for c in self.checks],
            "filtered": None if self.filtered is None else asdict(self.filtered),
            "pre_filter": None if self.pre_filter is None else asdict(self.pre_filter),
            "by": None if self.by is None else self.by.to_dict(),
        }

    @property
    def failed(self) -> tuple[Check, ...]:
        """The checks that failed."""
        return tuple(c for c in self.checks if not c.passed)

    @property
    def failed_groups(self) -> tuple[str, ...]:
        """Values of the ``--by`` column whose check failed."""
        return () if self.by is None else tuple(g.value for g in self.by.groups if not g.result.passed)


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


FILTER_SENSITIVE = ("silent_rate", "all_wrong_rate", "all_correct_rate")
"""Metrics a post-filter dump understates: ``check`` refuses them on such a dump."""


def check(corpus: Corpus, G: int, thresholds: Sequence[Threshold], *, filtered: Filtered | None = None,
          pre_filter: PreFilter | None = None, allow_filtered: bool = False) -> CheckResult:
    """Evaluate ``thresholds`` on ``corpus`` at group size ``G``.

    On a post-filter dump (``filtered``) a silent/all-wrong/all-correct threshold raises
    ConfigError (exit 2) unless ``allow_filtered``, or ``pre_filter`` gives the pre-filter silent
    fraction (which then replaces ``silent_rate``; all-wrong/all-correct stay refused, since
    the dropped groups' kind is unknown).
    """
    sensitive = [t.name for t in thresholds if t.name in FILTER_SENSITIVE]
    if filtered is not None and sensitive and not allow_filtered:
        if pre_filter is None:
            raise ConfigError(
                f"post-filter log ({filtered.source}): {', '.join(METRICS[n][1] for n in sensitive)} "
                f"would read an understated rate", location="check",
                remedy="pass --groups-generated N (groups sampled before the filter) or --allow-filtered")
        if sensitive != ["silent_rate"]:
            raise ConfigError("--groups-generated gives the pre-filter silent fraction, not its "
                              "all-wrong/all-correct split", location="check",
                              remedy="drop --max-all-wrong/--max-all-correct, or pass --allow-filtered")
        if pre_filter.G != G:
            raise ConfigError(f"the dump's groups have G = {pre_filter.G}, not {G}: the pre-filter "
                              f"silent fraction is observed at the logged G", location="G",
                              remedy=f"pass -G {pre_filter.G}")
    estimator, values = metric_values(corpus, G, [t.name for t in thresholds])
    use_pre = pre_filter is not None and filtered is not None and not allow_filtered
    if use_pre:
        values["silent_rate"] = pre_filter.silent_fraction  # type: ignore[union-attr]
        estimator = "observed pre-filter fraction (--groups-generated)"
    checks = evaluate(values, thresholds)
    return CheckResult(passed=all(c.passed for c in checks), G=int(G), estimator=estimator,
                       prompts=corpus.n_prompts, checks=checks, filtered=filtered,
                       pre_filter=pre_filter if use_pre else None)


def check_logs(loaded: LoadedCounts, G: int, thresholds: Sequence[Threshold], *, post_filter: bool = False,
               groups_generated: int | None = None, allow_filtered: bool = False) -> CheckResult:
    """:func:`check` on loaded logs: post-filter resolution (:mod:`.filtered`), and with ``--by``
    one check per value (the pooled result passes only when every value passes too)."""
    import functools

    from . import corpus_of
    from .filtered import pre_filter, resolve
    from .scan import statistical_filter

    filtered = resolve(loaded, post_filter, functools.partial(statistical_filter, loaded))
    pre = pre_filter(loaded, groups_generated) if groups_generated is not None and filtered else None
    result = check(corpus_of(loaded), G, thresholds, filtered=filtered, pre_filter=pre,
                   allow_filtered=allow_filtered)
    if loaded.by is None:
        return result
    if pre is not None:
        raise ConfigError("--groups-generated counts the groups of the whole log, not of each --by value",
                          location="--by", remedy="drop --by, or pass --allow-filtered")
    groups = tuple(ByGroup(value, check_logs(part, G, thresholds, post_filter=post_filter,
                                             allow_filtered=allow_filtered))
                   for value, part in loaded.parts)
    return replace(result, passed=result.passed and all(g.result.passed for g in groups),
                   by=ByResult(loaded.by, groups))


def _escape(data: str) -> str:
    """GitHub workflow-command message escaping (%, CR, LF)."""
    return data.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def github_annotations(result: CheckResult) -> list[str]:
    """``::error title=...::message`` lines, one per failed check."""
    out = [
        f"::error title=sigmaudit check ({_escape(c.name)})::{_escape(c.sentence())} at G = {result.G} "
        f"({_escape(METRICS[c.name][2])})"
        for c in result.failed
    ]
    if result.by is not None:
        out += [f"::error title=sigmaudit check ({_escape(result.by.column)}={_escape(g.value)}, {_escape(c.name)})"
                f"::{_escape(c.sentence())} at G = {result.G}"
                for g in result.by.groups for c in g.result.failed]
    return out
