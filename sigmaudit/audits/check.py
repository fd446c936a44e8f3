"""``sigmaudit check``: a CI gate on a corpus at one group size G.

The gate itself is a small pure function, :func:`passes` (one truth table: a ``max`` limit holds
when value ≤ limit, a ``min`` limit when value ≥ limit, a missing value never holds), applied to
each :class:`Threshold` by :func:`evaluate`. :func:`check` computes the values from a
:class:`~sigmaudit.core.corpus.Corpus` with the one estimator rule that scan, plan, report and
trend share (:mod:`sigmaudit.core.estimates`; default ``auto``: the silent rates unbiased where
every prompt has n ≥ G, else posterior expectations under the corpus prior; fidelity, extreme
share and never solved from the posterior), so ``plan``'s recommended G is exactly the smallest
G this gate passes.

Each value carries a bootstrap interval (90 % by default). With ``confidence`` the gate tests a
one-sided bound instead of the point: the upper ``confidence`` quantile of the bootstrap
replicates for a ``max`` limit, the lower one for a ``min`` limit, so a pass means "within the
limit with that confidence" and noise alone cannot pass a corpus.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import TYPE_CHECKING, Any, Literal

from ..core.weighting import EXTREME
from ..errors import ConfigError
from ..fmt import none_if_nan
from ..loaders.options import Filtered, Window
from .by import ByGroup, ByResult
from .drift import Drift, context_json
from .filtered import PreFilter

if TYPE_CHECKING:
    import numpy as np
    import polars as pl
    from numpy.typing import NDArray

    from ..core.corpus import Corpus, CorpusEstimates
    from ..loaders import LoadedCounts
    from .dapo import DapoResult, DapoSettings

Kind = Literal["max", "min"]

METRICS: dict[str, tuple[Kind, str, str]] = {
    "silent_rate": ("max", "--max-silent", "silent-group rate at G"),
    "all_wrong_rate": ("max", "--max-all-wrong", "all-wrong part of the silent rate"),
    "all_correct_rate": ("max", "--max-all-correct", "all-correct part of the silent rate"),
    "extreme_share": ("max", "--max-extreme-share", f"share of GRPO gradient mass on {EXTREME.describe('p')}"),
    "fidelity": ("min", "--min-fidelity", "mean fidelity φ at G (weighted by GRPO mass)"),
    "never_solved_rate": ("max", "--max-never-solved", "share of prompts never solved (p = 0)"),
    "silent_token_share": ("max", "--max-silent-tokens", "share of the logged generated tokens in silent groups"),
}
"""Every metric of the corpus at G the gate knows: its kind (max/min limit), CLI option and meaning, in report order."""
LOOP_METRICS: dict[str, tuple[Kind, str, str]] = {
    "dapo_p_step_raises": ("max", "--max-p-raises", "P(a DAPO step raises 'Generated too many') in verl's loop, "
                                                    "the larger of the window's and the next-step forecast's"),
}
"""Metrics of a trainer's loop (:mod:`.dapo`, with ``--train-batch``), not estimated from the corpus at G."""
ALL_METRICS = METRICS | LOOP_METRICS
"""Every metric a check can name, in report order."""


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
    """A key of :data:`ALL_METRICS`."""
    limit: float
    """The limit, in [0, 1]."""

    @property
    def kind(self) -> Kind:
        """``max`` or ``min``."""
        return ALL_METRICS[self.name][0]


@dataclass(frozen=True)
class Check:
    """One threshold's outcome."""

    name: str
    """Metric name (a key of :data:`ALL_METRICS`)."""
    value: float | None
    """Estimated value; None when undefined (fails)."""
    limit: float
    """The limit given."""
    kind: Kind
    """``max``: value must be ≤ limit; ``min``: value must be ≥ limit."""
    passed: bool
    """Whether the limit holds (for ``tested``)."""
    estimator: str = "auto"
    """Estimator behind ``value``: unbiased, bayes or plugin."""
    value_ci: tuple[float, float] | None = None
    """Bootstrap interval of ``value`` at the result's ``level``; None without replicates."""
    tested: float | None = None
    """The number compared with the limit: ``value``, or its one-sided bound under ``--confidence``."""
    sentence: str | None = None
    """The check in words (``silent_rate 0.4123 > limit 0.3000``), written by
    :func:`sigmaudit.views.check.worded` (the audit returns numbers); None until then."""

    @property
    def op(self) -> str:
        """``<=`` or ``>=``."""
        return "<=" if self.kind == "max" else ">="

    @property
    def compared(self) -> float | None:
        """The number the gate compared (``tested`` when set, else ``value``)."""
        return self.value if self.tested is None else self.tested


def evaluate(values: Mapping[str, float | None], thresholds: Sequence[Threshold]) -> tuple[Check, ...]:
    """Apply :func:`passes` to every threshold, in :data:`METRICS` order."""
    order = {name: i for i, name in enumerate(METRICS)}
    out = []
    for t in sorted(thresholds, key=lambda t: order[t.name]):
        v = values.get(t.name)
        v = none_if_nan(v)
        out.append(Check(name=t.name, value=v, limit=t.limit, kind=t.kind, passed=passes(v, t.kind, t.limit)))
    return tuple(out)


@dataclass(frozen=True)
class FileSettings:
    """The values a config file (``sigmaudit.toml``, ``[tool.sigmaudit]``) set for a gate and nothing overrode:
    the report names them, as the run's note does, so a file that changed a gate is never invisible."""

    file: str
    values: tuple[tuple[str, str, Any], ...]
    """(table as written, "" for top-level keys; key as written; value as written)."""

    def to_dict(self) -> dict[str, Any]:
        return {"file": self.file, "values": [{"table": t, "key": k, "value": v} for t, k, v in self.values]}


@dataclass(frozen=True)
class CheckResult:
    """The gate's outcome at one G."""

    passed: bool
    """Every threshold holds (exit code 0; else 1)."""
    G: int
    """Group size checked (0 for a per-step series checked without -G: the file does not say)."""
    estimator: str
    """Estimator of the silent rates: ``unbiased``, ``bayes`` or ``plugin`` (see ``estimator_rule``)."""
    prompts: int
    """Number of prompts."""
    checks: tuple[Check, ...]
    """One per threshold given."""
    estimator_rule: str = "auto"
    """The rule asked for (``--estimator``): auto, bayes, unbiased or plugin."""
    level: float = 0.9
    """Two-sided level of each ``value_ci``."""
    replicates: int = 0
    """Bootstrap replicates behind the intervals (0: no intervals)."""
    confidence: float | None = None
    """With ``--confidence C``: each check tested its one-sided C bound instead of the point."""
    G_source: str = "given"
    """Where G came from: ``given`` (-G), ``log`` (the log's most common group size) or ``series`` (a per-step
    series, which does not say)."""
    warnings: tuple[str, ...] = field(default=())
    """Why the figures may deserve less trust (few prompts, extrapolation, wide intervals)."""
    filtered: Filtered | None = None
    """Set when the log is a post-filter dump (see :mod:`sigmaudit.audits.filtered`)."""
    pre_filter: PreFilter | None = None
    """Set with ``--groups-generated``: ``silent_rate`` is then the observed pre-filter fraction."""
    by: ByResult | None = None
    """With ``--by COLUMN``: each value's own check; ``passed`` needs every one to pass."""
    basis: str = "model"
    """``observed``: the silent/all-wrong/all-correct checks compared what the logged groups did over the
    window; ``model``: every value is an estimate from the per-prompt counts (``--basis``); ``series``: the
    mean of a per-step series' shares over the window (:func:`check_series`)."""
    silent_by: str | None = None
    """Shaped rewards, observed basis: ``zero-spread`` (silent_rate = share of groups whose raw rewards all
    agree: no gradient) or ``correctness`` (all on one side of ``--threshold``); None for 0/1 rewards."""
    consecutive: int | None = None
    """With ``--consecutive K`` (observed basis): a silent/all-wrong/all-correct limit fails only when the
    per-step share crosses it in K consecutive logged steps; ``tested`` is the largest share held K steps."""
    window: Window | None = None
    """The training steps the figures cover (``--steps``/``--last-steps``, else the whole log); None without steps."""
    drift: Drift | None = None
    """Set when pass rates moved within the window (:mod:`sigmaudit.audits.drift`): pooled-count figures understate."""
    dapo: DapoResult | None = None
    """With ``--train-batch``: DAPO's loop as verl runs it (:mod:`.dapo`; ``--max-p-raises`` gates it)."""
    config: FileSettings | None = None
    """The values a config file set for this gate (the command line's: None when no file set any)."""

    def to_dict(self) -> dict[str, Any]:
        """JSON contract: passed, G, estimator, prompts, checks[{name, value, value_ci, tested, limit, ...}]."""
        return {
            "passed": self.passed,
            "G": self.G,
            "G_source": self.G_source,
            "estimator": self.estimator,
            "estimator_rule": self.estimator_rule,
            "fidelity_estimator": "plugin" if self.estimator_rule == "plugin" else "bayes",
            "prompts": self.prompts,
            "level": self.level,
            "replicates": self.replicates,
            "confidence": self.confidence,
            "checks": [
                {"name": c.name, "value": c.value, "value_ci": None if c.value_ci is None else list(c.value_ci),
                 "tested": c.compared, "limit": c.limit, "kind": c.kind, "op": c.op, "passed": c.passed,
                 "estimator": c.estimator, "sentence": c.sentence, "meaning": ALL_METRICS[c.name][2]}
                for c in self.checks
            ],
            "warnings": list(self.warnings),
            "filtered": None if self.filtered is None else asdict(self.filtered),
            "pre_filter": None if self.pre_filter is None else asdict(self.pre_filter),
            "basis": self.basis,
            "consecutive": self.consecutive,
            "silent_by": self.silent_by,
            "by": None if self.by is None else self.by.to_dict(),
            **context_json(self.window, self.drift),
            "dapo": None if self.dapo is None else self.dapo.to_dict(),
            "config": None if self.config is None else self.config.to_dict(),
        }

    @property
    def failed(self) -> tuple[Check, ...]:
        """The checks that failed."""
        return tuple(c for c in self.checks if not c.passed)

    @property
    def failed_groups(self) -> tuple[str, ...]:
        """Values of the ``--by`` column whose check failed."""
        return () if self.by is None else tuple(g.value for g in self.by.groups if not g.result.passed)

    def verdict(self) -> str:
        """One line: ``check FAILED (1 of 2): silent_rate 0.599 > limit 0.5 at G = 8``, from the checks'
        sentences (a worded result: :func:`sigmaudit.check` returns one; :func:`sigmaudit.views.check.worded`)."""
        n = len(self.checks)
        at = f"at G = {self.G}" if self.G else "on the per-step series"
        if self.passed:
            return f"check passed ({n} of {n} {'holds' if n == 1 else 'hold'}) {at}"
        if not self.failed and self.by is not None:  # the pooled checks hold; some --by values fail
            m = len(self.by.groups)
            return (f"check FAILED ({len(self.failed_groups)} of {m} {self.by.column} values; the pooled log "
                    f"passes {n} of {n}) {at}")
        if any(c.sentence is None for c in self.failed):
            raise ValueError("the checks are not worded yet: sigmaudit.views.check.worded(result).verdict()")
        first = "; ".join(str(c.sentence) for c in self.failed)
        return f"check FAILED ({len(self.failed)} of {n}): {first} {at}"


def estimate_metrics(corpus: Corpus, G: int, names: Sequence[str] | None = None, estimator: str = "auto",
                     replicates: int = 0) -> CorpusEstimates:
    """Every requested metric at G by the shared estimator rule, with bootstrap replicates."""
    wanted = [m for m in METRICS if (names is None or m in names) and m not in OBSERVED_ONLY]
    return corpus.estimates(wanted, [int(G)], estimator, replicates=replicates)  # type: ignore[arg-type]


def metric_values(corpus: Corpus, G: int, names: Sequence[str] | None = None,
                  estimator: str = "auto") -> tuple[str, dict[str, float | None]]:
    """(silent estimator, value of each requested metric) at group size G."""
    est = estimate_metrics(corpus, G, names, estimator)
    values = {s.name: est.value(s.name, G) for s in est.specs}
    return est.used("silent_rate", G) if "silent_rate" in values else _silent_used(corpus, G, estimator), values


def _silent_used(corpus: Corpus, G: int, estimator: str) -> str:
    from ..core.estimates import resolve

    return resolve("silent_rate", int(G), estimator, corpus.min_samples)  # type: ignore[arg-type]


OBSERVED_ONLY = ("silent_token_share",)
"""Metrics only the logged groups give (no estimate from the per-prompt counts): the observed basis only."""

FILTER_SENSITIVE = ("silent_rate", "all_wrong_rate", "all_correct_rate", "never_solved_rate", "extreme_share",
                    "silent_token_share")
"""Metrics a post-filter dump misstates: ``check`` refuses them on such a dump. The silent rates read
low; the filter removes the groups of never-solved and always-solved prompts, so the never-solved share
and the gradient mass on p < 0.1 or p > 0.9 read low too (issue 23 item 27)."""


def check(corpus: Corpus, G: int, thresholds: Sequence[Threshold], *, estimator: str = "auto",
          replicates: int = 0, level: float = 0.9, confidence: float | None = None,
          G_source: str = "given", filtered: Filtered | None = None, pre_filter: PreFilter | None = None,
          allow_filtered: bool = False) -> CheckResult:
    """Evaluate ``thresholds`` on ``corpus`` at group size ``G``.

    ``replicates`` > 0 adds bootstrap intervals at ``level``; ``confidence`` (needs replicates)
    makes each check test the one-sided bound at that confidence instead of the point.

    On a post-filter dump (``filtered``) a threshold in :data:`FILTER_SENSITIVE` raises ConfigError
    (exit 2) unless ``allow_filtered``, or ``pre_filter`` gives the pre-filter silent fraction (which
    then replaces ``silent_rate``; the others stay refused, since the dropped groups' kind is unknown).
    """
    from ..core.estimates import warnings as fit_warnings

    if any(t.name in LOOP_METRICS for t in thresholds):
        raise ConfigError("P(a DAPO step raises) is a property of the training loop, not of the corpus at G",
                          location="--max-p-raises", remedy="add --train-batch B (check_logs(..., dapo=...))")
    _refuse_filtered(thresholds, G, filtered, pre_filter, allow_filtered)
    use_pre = pre_filter is not None and filtered is not None and not allow_filtered
    if confidence is not None and replicates <= 0:
        raise ValueError("--confidence needs bootstrap replicates (--bootstrap N with N > 0)")
    order = {name: i for i, name in enumerate(METRICS)}
    thresholds = sorted(thresholds, key=lambda t: order[t.name])
    est = estimate_metrics(corpus, G, [t.name for t in thresholds if t.name not in OBSERVED_ONLY], estimator,
                           replicates)
    checks, intervals = _checks(thresholds, est, G, replicates=replicates, level=level, confidence=confidence,
                                pre_filter=pre_filter if use_pre else None)
    used = {c.estimator for c in checks}
    warns = fit_warnings(corpus.n_prompts, int(corpus.n.max()), [G], intervals, tuple(used), level)
    silent_est = ("observed pre-filter fraction (--groups-generated)" if use_pre
                  else _silent_used(corpus, G, estimator))
    return CheckResult(passed=all(c.passed for c in checks), G=int(G), estimator=silent_est,
                       prompts=corpus.n_prompts, checks=tuple(checks), estimator_rule=estimator, level=level,
                       replicates=int(replicates), confidence=confidence, G_source=G_source, warnings=tuple(warns),
                       filtered=filtered, pre_filter=pre_filter if use_pre else None)


def _refuse_filtered(thresholds: Sequence[Threshold], G: int, filtered: Filtered | None,
                     pre_filter: PreFilter | None, allow_filtered: bool) -> None:
    """ConfigError for a threshold in :data:`FILTER_SENSITIVE` on a post-filter dump, unless
    ``allow_filtered``, or ``pre_filter`` (at the same G) gives the pre-filter silent fraction and
    silent_rate is the only such threshold."""
    sensitive = [t.name for t in thresholds if t.name in FILTER_SENSITIVE]
    if filtered is None or not sensitive or allow_filtered:
        return
    if pre_filter is None:
        raise ConfigError(
            f"post-filter log ({filtered.source}): {', '.join(METRICS[n][1] for n in sensitive)} "
            f"would read an understated rate", location="check",
            remedy="pass --groups-generated N (groups sampled before the filter) or --allow-filtered")
    others = [METRICS[n][1] for n in sensitive if n != "silent_rate"]
    if others:
        raise ConfigError(f"--groups-generated gives the pre-filter silent fraction, not its all-wrong/all-correct "
                          f"split nor which prompts the filter removed: {', '.join(others)} would read the "
                          f"post-filter log", location="check",
                          remedy=f"drop {'/'.join(others)}, or pass --allow-filtered")
    if pre_filter.G != G:
        raise ConfigError(f"the dump's groups have G = {pre_filter.G}, not {G}: the pre-filter "
                          f"silent fraction is observed at the logged G", location="G",
                          remedy=f"pass -G {pre_filter.G}")


def interval_label(name: str, G: int) -> str:
    """How a check's bootstrap interval is named in a warning (``silent_rate at G = 8``)."""
    return f"{name} at G = {G}"


def _checks(
    thresholds: Sequence[Threshold], est: CorpusEstimates, G: int, *, replicates: int, level: float,
    confidence: float | None, pre_filter: PreFilter | None,
) -> tuple[list[Check], dict[str, tuple[float, float]]]:
    """Each threshold tested at G (on the value, or on its one-sided bound at ``confidence``) and the
    bootstrap intervals by label; ``pre_filter`` replaces silent_rate by the observed pre-filter
    fraction (no interval, no bound)."""
    checks = []
    intervals: dict[str, tuple[float, float]] = {}
    for t in thresholds:
        if t.name in OBSERVED_ONLY:  # filled in from the logged groups (_observed_checks): undefined until then
            checks.append(Check(name=t.name, value=None, limit=t.limit, kind=t.kind, passed=False,
                                estimator="observed"))
            continue
        v = est.value(t.name, G)
        ci = est.interval(t.name, G, level) if replicates else None
        tested = None
        if confidence is not None:
            tested = est.quantile(t.name, G, confidence if t.kind == "max" else 1.0 - confidence)
        used_est = est.used(t.name, G)
        if pre_filter is not None and t.name == "silent_rate":  # observed, not estimated: no interval, no bound
            v, ci, tested, used_est = pre_filter.silent_fraction, None, None, "observed pre-filter"
        if ci is not None:  # a warning quotes only an interval the table shows
            intervals[interval_label(t.name, G)] = ci
        compared = v if (confidence is None or tested is None) else tested
        checks.append(Check(name=t.name, value=v, limit=t.limit, kind=t.kind,
                            passed=passes(compared, t.kind, t.limit), estimator=used_est,
                            value_ci=ci, tested=tested))
    return checks, intervals


def dapo_gate(result: CheckResult, loaded: LoadedCounts, settings: DapoSettings, loop: Sequence[Threshold],
              estimator: str) -> CheckResult:
    """``result`` with DAPO's loop at G (:func:`sigmaudit.audits.dapo.dapo_of`: the counts check reads, and the
    next-step forecast) and, for a ``dapo_p_step_raises`` threshold, a check on the larger of the two readings'
    P(a step raises)."""
    from . import corpus_of
    from .dapo import dapo_of

    found = dapo_of(loaded, corpus_of(loaded), settings, estimator=estimator, basis_name="the window checked",
                    n=result.G if result.G_source == "given" else None, filtered=result.filtered is not None)
    p = max(found.current.cost.p_step_raises, found.next_step.cost.p_step_raises if found.next_step else 0.0)
    checks = tuple(sorted((*result.checks, *(Check(name=t.name, value=p, limit=t.limit, kind=t.kind,
                                                   passed=passes(p, t.kind, t.limit), estimator="verl loop")
                                             for t in loop)), key=lambda c: list(ALL_METRICS).index(c.name)))
    return replace(result, checks=checks, passed=all(c.passed for c in checks), dapo=found)


BASES = ("observed", "model")
"""``--basis`` values: what the silent/all-wrong/all-correct checks compare."""


def resolve_basis(loaded: LoadedCounts, G: int, basis: str | None) -> str:
    """``observed`` when the log's groups are known and ``G`` is their most common size (the default, and
    what ``--basis observed`` needs), else ``model``; ConfigError for ``observed`` where it cannot be."""
    from . import logged_group_size

    logged = logged_group_size(loaded)
    if basis not in (None, *BASES):
        raise ConfigError(f"{basis!r} is not a basis; choose observed or model", location="--basis")
    if basis == "model" or (basis is None and logged != G):
        return "model"
    if logged is None:
        raise ConfigError("--basis observed needs logged groups, and this log has none (counts only)",
                          location="--basis", remedy="drop --basis (the model is used), or give a log with groups")
    if logged != G:
        raise ConfigError(f"--basis observed compares the logged groups, which have G = {logged}, not {G}",
                          location="--basis", remedy=f"pass -G {logged}, or --basis model for another G")
    return "observed"


def _held(shares: Sequence[float], k: int) -> float:
    """The largest share the series holds for ``k`` consecutive entries: max over windows of their min;
    0 when the series has fewer than ``k`` entries (no run of ``k`` steps exists, so none crosses a limit). An
    undefined share (NaN: a step whose tokens are all 0) is in no run."""
    import numpy as np

    x = np.asarray(shares, dtype=np.float64)
    if x.size < k:
        return 0.0
    runs = np.lib.stride_tricks.sliding_window_view(x, k).min(axis=1)  # NaN: a step with no tokens (0/0) breaks a run
    runs = runs[~np.isnan(runs)]
    return float(runs.max()) if runs.size else 0.0


def _step_shares(groups: pl.DataFrame, masks: Mapping[str, NDArray[np.bool_]]) -> dict[str, list[float]]:
    """Each mask's share of the logged groups, step by step (in step order; groups without a step left out)."""
    import polars as pl

    frame = groups.select("step").with_columns(**{name: pl.Series(m) for name, m in masks.items()})
    frame = frame.filter(pl.col("step").is_not_null()).group_by("step").agg(pl.all().mean()).sort("step")
    return {name: frame[name].to_list() for name in masks}


def _token_steps(groups: pl.DataFrame, silent: NDArray[np.bool_]) -> list[float]:
    """The share of each step's generated tokens in its ``silent`` groups, in step order (as :func:`_step_shares`)."""
    import polars as pl

    frame = groups.select("step", "tokens").with_columns(quiet=pl.Series(silent))
    frame = frame.filter(pl.col("step").is_not_null()).group_by("step").agg(
        (pl.col("tokens").filter(pl.col("quiet")).sum() / pl.col("tokens").sum()).alias("share")).sort("step")
    return frame["share"].fill_null(float("nan")).to_list()


def _tokens_known(loaded: LoadedCounts, thresholds: Sequence[Threshold], used: str) -> None:
    """ConfigError (exit 2) for ``--max-silent-tokens`` where it cannot run: a model basis, or a log whose
    rollouts' generated tokens are not all known."""
    if not any(t.name in OBSERVED_ONLY for t in thresholds):
        return
    flag = METRICS["silent_token_share"][1]
    if used != "observed":
        raise ConfigError("compares the logged groups' generated tokens, so it needs the observed basis (the log's "
                          "groups at the logged G)", location=flag, remedy="drop -G/--basis model, or drop " + flag)
    groups = loaded.per_group
    if loaded.length_source is None or groups is None or "tokens" not in groups.columns:
        raise ConfigError("the log carries no token count per rollout (a character count of its text is not a "
                          "token count)", location=flag, remedy="name a column of generated tokens with --length-col")
    missing = int(groups["tokens_missing"].sum())
    if missing:
        raise ConfigError(f"{missing:,} rollouts with a reward have no length ({loaded.length_source}), so the "
                          "share of tokens is not known", location=flag, remedy="drop " + flag)
    if not float(groups["tokens"].sum()) > 0:
        raise ConfigError(f"every rollout's generated-token count is 0 ({loaded.length_source}): the silent share "
                          "of tokens is 0/0, not defined", location=flag,
                          remedy="name the column of generated tokens with --length-col, or drop " + flag)


def _observed_checks(result: CheckResult, loaded: LoadedCounts, consecutive: int | None,
                     silent_by: str | None = None) -> CheckResult:
    """``result`` with its silent/all-wrong/all-correct checks compared on what the logged groups did
    (``--groups-generated`` keeps its pre-filter silent fraction); ``consecutive`` K tests the largest
    per-step share held K steps running instead of the window's share (the same silent rule step by step).
    With shaped rewards (the load kept each group's reward range) silent_rate is the zero-spread share unless
    ``silent_by`` is ``correctness``."""
    from .observed import zero_spread_mask

    groups = loaded.per_group
    assert groups is not None
    n, k = groups["n"].to_numpy(), groups["k"].to_numpy()
    flat = zero_spread_mask(groups) if silent_by != "correctness" else None
    masks = {"silent_rate": ((k == 0) | (k == n)) if flat is None else flat, "all_wrong_rate": k == 0,
             "all_correct_rate": (k == n) & (k > 0)}
    values = {name: float(m.mean()) for name, m in masks.items()}
    steps = _step_shares(groups, masks) if consecutive is not None else {}
    short = consecutive is not None and len(steps["silent_rate"]) < consecutive
    if "tokens" in groups.columns and loaded.length_source is not None:
        tokens = groups["tokens"].to_numpy()
        silent = masks["silent_rate"]
        values["silent_token_share"] = float(tokens[silent].sum() / tokens.sum()) if tokens.sum() else float("nan")
        if consecutive is not None:
            steps["silent_token_share"] = _token_steps(groups, silent)
    checks = []
    for c in result.checks:
        if c.name not in values or (result.pre_filter is not None and c.name == "silent_rate"):
            checks.append(c)
            continue
        tested = None if consecutive is None else _held(steps[c.name], consecutive)
        compared = values[c.name] if tested is None else tested
        checks.append(replace(c, value=values[c.name], value_ci=None, tested=tested, estimator="observed",
                              passed=passes(compared, c.kind, c.limit)))
    est = result.estimator if result.pre_filter is not None else "observed (the logged groups)"
    # the model's interval of a value now read from the logged groups is not shown: no warning quotes it
    replaced = tuple(interval_label(c.name, result.G) for c in result.checks if c.name in values)
    warns = tuple(w for w in result.warnings if not w.startswith(replaced))
    if short:
        m = len(steps["silent_rate"])
        warns += (f"only {m:,} logged step{'s' if m != 1 else ''} in the window, fewer than --consecutive "
                  f"{consecutive}: no silent limit can be crossed {consecutive} steps running, so those checks "
                  "pass (held share 0)",)
    return replace(result, checks=tuple(checks), passed=all(c.passed for c in checks), estimator=est,
                   basis="observed", consecutive=consecutive, warnings=warns,
                   silent_by=None if zero_spread_mask(groups) is None else silent_by or "zero-spread")


SERIES_FIELDS = {"silent_rate": "observed_silent", "all_wrong_rate": "observed_all_wrong",
                 "all_correct_rate": "observed_all_correct"}
"""The checks a per-step series can answer, by the series field they compare."""


def check_series(loaded: LoadedCounts, thresholds: Sequence[Threshold], *, G: int | None = None,
                 consecutive: int | None = None) -> CheckResult:
    """The silent/all-wrong/all-correct limits on a per-step series (``loaded.series``): the value is the mean
    of the window's per-step shares (each step one batch); ``consecutive`` K tests the largest share held K
    steps running. Other thresholds need per-prompt data and are refused."""
    from ..loaders.series import PER_PROMPT
    from .trend import trend_from_series

    other = [t.name for t in thresholds if t.name not in SERIES_FIELDS]
    if other:
        raise ConfigError(f"a {other[0].replace('_', ' ')} limit cannot be checked on a per-step series of shares: "
                          f"{PER_PROMPT}",
                          location=loaded.files[0], remedy="check only --max-silent, --max-all-wrong or "
                                                           "--max-all-correct on it, or give a rollout dump")
    rows = trend_from_series(loaded.series).rows  # type: ignore[arg-type]
    checks = []
    for t in thresholds:
        attr = SERIES_FIELDS[t.name]
        shares = [getattr(r, attr) for r in rows if getattr(r, attr) is not None]
        if not shares and "gen_batches" in loaded.series.columns:  # type: ignore[union-attr]
            from ..loaders.series import gen_batches_missing

            raise ConfigError(f"a limit is checked on logged shares; this series holds none: "
                              f"{gen_batches_missing(loaded.files[0]).message}", location=loaded.files[0],
                              remedy="see the bounds with 'sigmaudit trend --train-batch B --gen-batch M'")
        if not shares:
            raise ConfigError(f"the series holds no {attr.removeprefix('observed_').replace('_', '-')} share per "
                              f"step", location=loaded.files[0], remedy="drop that threshold")
        value = math.fsum(shares) / len(shares)
        tested = None if consecutive is None else _held(shares, consecutive)
        kind = METRICS[t.name][0]
        checks.append(Check(t.name, value, t.limit, kind, passes(value if tested is None else tested, kind, t.limit),
                            estimator="observed", tested=tested))
    warns: tuple[str, ...] = ()
    if consecutive is not None and len(rows) < consecutive:
        warns = (f"only {len(rows):,} logged steps, fewer than --consecutive {consecutive}: no limit can be "
                 f"crossed {consecutive} steps running, so those checks pass (held share 0)",)
    return CheckResult(all(c.passed for c in checks), G or 0, "observed (the logged per-step shares)", 0,
                       tuple(checks), G_source="given" if G else "series", basis="series", consecutive=consecutive,
                       warnings=warns + (f"a per-step series: {PER_PROMPT}",), window=loaded.window)


def _refuse_single(corpus: Corpus, G: int, G_source: str) -> None:
    """Refuse a check at G = 1 (a PPO log, one sample per prompt): a group of one sample has no spread, so every
    group is silent whatever the pass rates. As scan and plan do: the refusal at G = 2 when the logs do not
    determine it (issue 43, n = 1 logs), else one naming -G."""
    corpus.require_identified(2)
    raise ConfigError(f"a group of G = {G} sample is silent whatever the pass rates (one sample has no spread), so no "
                      f"silent share at G = {G} can pass or fail"
                      + (" (the logged group size: one sample per prompt per step)" if G_source == "log" else ""),
                      location="-G/--group-size", remedy="give the run's group size, e.g. -G 8")


def check_logs(loaded: LoadedCounts, G: int, thresholds: Sequence[Threshold], *, post_filter: bool = False,
               groups_generated: int | None = None, allow_filtered: bool = False, estimator: str = "auto",
               replicates: int = 0, level: float = 0.9, confidence: float | None = None,
               G_source: str = "given", basis: str | None = None, consecutive: int | None = None,
               silent_by: str | None = None, dapo: DapoSettings | None = None) -> CheckResult:
    """:func:`check` on loaded logs: post-filter resolution (:mod:`.filtered`), the basis of the silent
    checks (:func:`resolve_basis`: observed at the logged G by default), and with ``--by`` one check per
    value (the pooled result passes only when every value passes too). ``dapo``: DAPO's loop on the pooled
    log, gated by a ``dapo_p_step_raises`` threshold (:func:`dapo_gate`)."""
    import functools

    from . import corpus_of
    from .drift import context
    from .filtered import pre_filter, resolve
    from .observed import statistical_filter

    opts: dict[str, Any] = {"estimator": estimator, "replicates": replicates, "level": level,
                            "confidence": confidence, "G_source": G_source}
    if G < 2:
        _refuse_single(corpus_of(loaded), G, G_source)
    used = resolve_basis(loaded, G, basis)
    _tokens_known(loaded, thresholds, used)
    if consecutive is not None and (used != "observed" or not loaded.has_steps):
        raise ConfigError("--consecutive counts logged steps, so it needs the observed basis on a log with steps",
                          location="--consecutive",
                          remedy="drop --consecutive, or give a log with steps at the logged G")
    filtered = resolve(loaded, post_filter, functools.partial(statistical_filter, loaded))
    pre = pre_filter(loaded, groups_generated) if groups_generated is not None else None
    if pre is not None and filtered is None:  # N given: the user says groups were dropped (issue 23 item 4)
        filtered = Filtered("flag", f"--groups-generated {pre.groups_generated}: {pre.groups_logged:,} of the "
                                    f"{pre.groups_generated:,} groups sampled are in the log")
    loop = [t for t in thresholds if t.name in LOOP_METRICS]
    thresholds = [t for t in thresholds if t.name not in LOOP_METRICS]
    result = replace(check(corpus_of(loaded), G, thresholds, filtered=filtered, pre_filter=pre,
                           allow_filtered=allow_filtered, **opts), **context(loaded))
    if used == "observed":
        result = _observed_checks(result, loaded, consecutive, silent_by)
    if dapo is not None:
        result = dapo_gate(result, loaded, dapo, loop, estimator)
    if loaded.by is None:
        return result
    if pre is not None:
        raise ConfigError("--groups-generated counts the groups of the whole log, not of each --by value",
                          location="--by", remedy="drop --by, or pass --allow-filtered")
    groups = tuple(ByGroup(value, check_logs(part, G, thresholds, post_filter=post_filter,
                                             allow_filtered=allow_filtered, basis=basis if basis == "model" else
                                             None, consecutive=consecutive if used == "observed" else None,
                                             silent_by=silent_by, **opts))
                   for value, part in loaded.parts)
    return replace(result, passed=result.passed and all(g.result.passed for g in groups),
                   by=ByResult(loaded.by, groups))
