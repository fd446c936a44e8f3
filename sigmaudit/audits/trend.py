"""``sigmaudit trend``: silent groups per training step, observed and forecast.

For logs with a training-step column, one row per step (or per bucket of
``every`` steps): the logged groups, their mean pass rate, the observed silent
fraction split into all-wrong (k = 0) and all-correct (k = n), and the
closed-form forecast of the silent fraction implied by the step's pass rates,
at the logged group size and at other G.

Two different numbers per step:

- **forecast** (``ahead_silent``): the honest one-step-ahead forecast. The silent share at step t
  predicted from what was logged before t only: a corpus prior fitted on earlier steps and each
  prompt's earlier visits (:func:`sigmaudit.audits.forecast.replay`, the same forecast
  ``backtest`` scores), next to a naive baseline (the previous step's observed share), with the
  mean absolute error of both over steps.
- **implied** (``forecast_silent`` in JSON, for compatibility): each step's own outcomes read
  through an estimator of p^G + (1 − p)^G. It uses the step's outcomes, so it follows the
  step-to-step noise; it says what the step's pass rates imply, it does not predict.

The implied rate is a mean over the step's groups of a per-group estimate of
p^G + (1 − p)^G (docs/theory.md, "Estimating from finite logs"); ``estimator``:

- ``bayes`` (default): the corpus prior over p (:func:`~sigmaudit.core.prior.fit_corpus_prior`:
  point masses at 0 and 1 plus Betas, or a grid prior by EM) fitted to every logged group of
  the run (one fit), and each group's posterior mean E[p^G + (1 − p)^G | k, n].
  Any G. At the fitted prior the run-wide mean of this forecast reproduces the
  modelled silent fraction, so per step it shows what the pass rates imply
  without the plug-in's upward bias.
- ``plugin``: silent(k/n, G). Biased upward for small n (p̂ = 1/8 already
  implies (7/8)^8 = 0.34 silent at G = 8), so it sits above the observed rate.
- ``unbiased``: [C(k, G) + C(n − k, G)] / C(n, G), defined for G ≤ n. For the
  logged group itself (G = n) it *equals* the observed silent indicator, so
  ``forecast_silent`` then repeats ``observed_silent``; useful at G < n.

Everything is computed once per distinct (n, k) pair; a step only weights
them by how many of its groups have that pair.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl
from numpy.typing import NDArray

from ..core.estimators import ESTIMATORS, Estimator
from ..errors import ConfigError, SchemaError
from ..fmt import none_if_nan
from ..loaders.options import Filtered, Window
from .by import ByGroup, ByResult
from .drift import Drift, SilentGap, context_json
from .forecast import STEPS_REMEDY

if TYPE_CHECKING:
    from ..loaders import LoadedCounts


@dataclass(frozen=True)
class TrendRow:
    """One step (or bucket of steps)."""

    step: int
    """First logged step of the bucket (the step itself when ``every`` = 1)."""
    step_last: int
    """Last logged step of the bucket."""
    groups: int | None
    """Logged groups (a per-step series: its group count column summed over the bucket, None without one)."""
    pass_rate: float | None
    """Mean over the groups of k/n (a series: its pass-rate column, if any)."""
    observed_silent: float | None
    """Share of the groups with k ∈ {0, n} (a series: its silent column, or the sum of its branches)."""
    observed_all_wrong: float | None
    """Share with k = 0."""
    observed_all_correct: float | None
    """Share with k = n."""
    forecast_silent: float | None
    """Mean over the groups of the estimated silent chance at the group's own logged size n."""
    forecast_all_wrong: float | None
    """All-wrong part of ``forecast_silent``."""
    forecast_all_correct: float | None
    """All-correct part of ``forecast_silent``."""
    forecast: dict[int, float | None]
    """Estimated silent rate at each requested G (None where the estimator is undefined)."""
    ahead_silent: float | None = None
    """Honest one-step-ahead forecast: mean over the groups of P(silent at the logged size) predicted
    from earlier steps only (:func:`sigmaudit.audits.forecast.replay`); None for the first step."""
    naive_silent: float | None = None
    """Naive baseline: the previous logged step's observed silent share (mean over the groups)."""
    silent_at_least: float | None = None
    silent_at_most: float | None = None
    """A series of verl DAPO's ``train/num_gen_batches`` with the batch sizes given: the bounds on the step's silent
    share among the groups it generated (:func:`sigmaudit.core.dapo.gen_batches_silent_bounds`; a bucket's mean)."""


@dataclass(frozen=True)
class TrendResult:
    """Silent groups over training."""

    rows: tuple[TrendRow, ...]
    """One per step or bucket, in step order."""
    G_logged: int | None
    """The logged group size n when every group has the same one, else None (see ``G_logged_sizes``)."""
    G_logged_sizes: tuple[int, ...]
    """Distinct logged group sizes."""
    every: int
    """Steps per bucket."""
    estimator: Estimator | None
    """Estimator behind the forecasts (None for a per-step series: nothing to forecast from)."""
    G: tuple[int, ...]
    """Other group sizes forecast."""
    dropped_groups: int = 0
    """Groups without a step value (left out)."""
    source: str = "groups"
    """``groups`` (a log reduced to groups) or ``series`` (a file of per-step shares)."""
    ahead_mae: float | None = None
    """Mean absolute error over steps (after the first) of the one-step-ahead forecast of the silent share."""
    naive_mae: float | None = None
    """Same for the naive baseline (the previous step's observed share)."""
    mae_steps: int = 0
    """Steps behind the two errors."""
    ahead_note: str | None = None
    """Why there is no one-step-ahead forecast, when there is none for a log of groups."""
    filtered: Filtered | None = None
    """Set when the log is a post-filter dump (see :mod:`sigmaudit.audits.filtered`): its observed
    silent shares are the dump's, not the run's."""
    by: ByResult | None = None
    """With ``--by COLUMN``: each value's own trend (own prior fit); this one is pooled."""
    pooled: SilentGap | None = None
    """Over the whole window: the observed silent share beside the prediction from pooled per-prompt counts
    (they part when pass rates move; None for a series)."""
    window: Window | None = None
    """The training steps the figures cover (``--steps``/``--last-steps``, else the whole log); None without steps."""
    drift: Drift | None = None
    """Set when pass rates moved within the window (:mod:`sigmaudit.audits.drift`): pooled-count figures understate."""

    def to_dict(self) -> dict[str, Any]:
        """JSON contract: ``steps`` (one object per row), ``G_logged``, ``every``, ``estimator``, ..."""
        return {
            "steps": [
                {
                    "step": r.step,
                    "step_last": r.step_last,
                    "groups": r.groups,
                    "pass_rate": r.pass_rate,
                    "observed_silent": r.observed_silent,
                    "observed_all_wrong": r.observed_all_wrong,
                    "observed_all_correct": r.observed_all_correct,
                    "forecast_silent": r.forecast_silent,
                    "forecast_all_wrong": r.forecast_all_wrong,
                    "forecast_all_correct": r.forecast_all_correct,
                    "forecast": {str(g): v for g, v in r.forecast.items()},
                    "ahead_silent": r.ahead_silent,
                    "naive_silent": r.naive_silent,
                    "silent_at_least": r.silent_at_least,
                    "silent_at_most": r.silent_at_most,
                }
                for r in self.rows
            ],
            "forecast_error": {"ahead_mae": self.ahead_mae, "naive_mae": self.naive_mae, "steps": self.mae_steps,
                               "note": self.ahead_note},
            "G_logged": self.G_logged,
            "G_logged_sizes": list(self.G_logged_sizes),
            "every": self.every,
            "estimator": self.estimator,
            "G": list(self.G),
            "dropped_groups": self.dropped_groups,
            "source": self.source,
            "filtered": None if self.filtered is None else asdict(self.filtered),
            "by": None if self.by is None else self.by.to_dict(),
            **context_json(self.window, self.drift),
            "pooled": None if self.pooled is None else asdict(self.pooled),
        }


def _pair_estimates(
    n: NDArray[np.int64], k: NDArray[np.int64], G: int | None, estimator: Estimator, prior: Any
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """(all-correct, all-wrong) estimates per distinct pair at G (``None``: each pair's own n)."""
    from ..core.estimators import silent_estimate

    if G is not None:
        s = silent_estimate(n, k, G, estimator, prior)
        return np.asarray(s.all_correct, dtype=np.float64), np.asarray(s.all_wrong, dtype=np.float64)
    ac = np.empty(n.size)
    aw = np.empty(n.size)
    for size in np.unique(n):
        m = n == size
        s = silent_estimate(n[m], k[m], int(size), estimator, prior)
        ac[m], aw[m] = s.all_correct, s.all_wrong
    return ac, aw


def trend(
    per_group: pl.DataFrame,
    *,
    G: Sequence[int] = (),
    every: int = 1,
    estimator: str = "auto",
) -> TrendResult:
    """Per-step silent groups of a log reduced to groups (columns ``step``, ``n``, ``k``).

    ``estimator`` follows the rule shared with scan, plan and check
    (:func:`sigmaudit.core.estimates.resolve`): ``auto`` forecasts each -G unbiasedly when every
    group has n ≥ G, else by ``bayes``. The forecast at each group's own logged size uses ``bayes``
    under ``auto``: the unbiased estimate there is the observed silent indicator itself.

    Raises SchemaError when no group has a step value (remedy: ``--step-col``)
    and ValueError for bad ``G``, ``every`` or ``estimator``.
    """
    Gs = _check_trend_options(G, every, estimator)
    df, dropped = _stepped_groups(per_group)
    first = int(df["step"].min())  # type: ignore[arg-type]
    df = df.with_columns(((pl.col("step") - first) // every).alias("bucket"))
    buckets = (df.group_by("bucket").agg(pl.col("step").min().alias("first"), pl.col("step").max().alias("last"))
               .sort("bucket"))
    cells = df.group_by(["bucket", "n", "k"]).agg(pl.len().alias("count")).sort(["bucket", "n", "k"])
    pairs = cells.group_by(["n", "k"]).agg(pl.col("count").sum()).sort(["n", "k"])
    n_u, k_u, w_u = (pairs[c].to_numpy() for c in ("n", "k", "count"))
    own: Estimator = "bayes" if estimator == "auto" else estimator  # type: ignore[assignment]
    at: dict[int, Estimator] = {g: own if estimator != "auto" else ("unbiased" if int(n_u.min()) >= g else "bayes")
                                for g in Gs}
    prior = None
    if "bayes" in (own, *at.values()):  # the logged groups as the corpus's units
        from ..core.corpus import Corpus

        prior = Corpus.from_pairs(n_u, k_u, w_u).prior
    mean = _BucketMean.of(cells, n_u, k_u, buckets["bucket"].to_numpy())
    rows = _trend_rows(buckets, mean, n_u, k_u, own, at, prior)
    sizes = tuple(int(s) for s in np.unique(n_u))
    return _with_ahead(TrendResult(rows, sizes[0] if len(sizes) == 1 else None, sizes, int(every), estimator, Gs,  # type: ignore[arg-type]
                                   dropped), df, first)


def _check_trend_options(G: Sequence[int], every: int, estimator: str) -> tuple[int, ...]:
    """Refuse an unknown estimator, or an ``every`` or a G that is not a whole number >= 1; the distinct
    G in the order given."""
    if estimator not in (*ESTIMATORS, "auto"):
        raise ValueError(f"estimator must be one of auto, {', '.join(ESTIMATORS)}, got {estimator!r}")
    if int(every) != every or every < 1:
        raise ValueError(f"every must be a whole number >= 1, got {every!r}")
    Gs = tuple(dict.fromkeys(int(g) for g in G))
    if any(g < 1 for g in Gs):
        raise ValueError(f"G must be a whole number >= 1, got {min(Gs)}")
    return Gs


def _stepped_groups(per_group: pl.DataFrame) -> tuple[pl.DataFrame, int]:
    """The non-empty groups with a step value (step, n, k and prompt when there is one) and how many
    groups had no step; SchemaError when none has one."""
    no_steps = SchemaError("the logs have no training-step information", remedy=STEPS_REMEDY)
    if "step" not in per_group.columns:
        raise no_steps
    cols = [pl.col("step").cast(pl.Int64), pl.col("n").cast(pl.Int64), pl.col("k").cast(pl.Int64)]
    if "prompt" in per_group.columns:
        cols.append(pl.col("prompt").cast(pl.Utf8))
    df = per_group.select(cols)
    dropped = int(df["step"].null_count())
    df = df.filter(pl.col("step").is_not_null() & (pl.col("n") > 0))
    if df.height == 0:
        raise no_steps
    return df, dropped


@dataclass(frozen=True)
class _BucketMean:
    """Means over each bucket's groups of a value given once per distinct (n, k) pair."""

    pair: NDArray[np.int64]
    """Each (bucket, n, k) cell's pair index."""
    bucket: NDArray[np.int64]
    """Each cell's bucket index."""
    count: NDArray[np.float64]
    """Groups in each cell."""
    groups: NDArray[np.float64]
    """Groups in each bucket."""

    @classmethod
    def of(
        cls, cells: pl.DataFrame, n_u: NDArray[np.int64], k_u: NDArray[np.int64], bucket_ids: NDArray[np.int64]
    ) -> _BucketMean:
        """From the (bucket, n, k, count) cells, the distinct pairs and the sorted bucket ids."""
        pair_index = {(int(a), int(b)): i for i, (a, b) in enumerate(zip(n_u, k_u, strict=True))}
        cn, ck, cc = (cells[c].to_numpy() for c in ("n", "k", "count"))
        ci = np.array([pair_index[(int(a), int(b))] for a, b in zip(cn, ck, strict=True)], dtype=np.int64)
        cb = np.searchsorted(bucket_ids, cells["bucket"].to_numpy())
        cc = cc.astype(np.float64)
        return cls(ci, cb, cc, np.bincount(cb, weights=cc, minlength=bucket_ids.size))

    def __call__(self, values: NDArray[np.float64]) -> NDArray[np.float64]:
        """Per bucket, the group-weighted mean of ``values`` (one per pair)."""
        nb = self.groups.size
        return np.bincount(self.bucket, weights=self.count * values[self.pair], minlength=nb) / self.groups


def _trend_rows(
    buckets: pl.DataFrame, mean: _BucketMean, n_u: NDArray[np.int64], k_u: NDArray[np.int64], own: Estimator,
    at: dict[int, Estimator], prior: Any,
) -> tuple[TrendRow, ...]:
    """One row per bucket: pass rate, observed silent shares, the implied rate at the logged sizes (by
    ``own``) and at each G (by ``at[G]``)."""
    obs_aw = mean((k_u == 0).astype(np.float64))
    obs_ac = mean((k_u == n_u).astype(np.float64))
    pass_rate = mean(k_u / n_u)
    f_ac, f_aw = (mean(x) for x in _pair_estimates(n_u, k_u, None, own, prior))
    at_G = {}
    for g, est in at.items():
        ac, aw = _pair_estimates(n_u, k_u, g, est, prior)
        at_G[g] = mean(ac + aw)
    return tuple(
        TrendRow(
            step=int(buckets["first"][b]),
            step_last=int(buckets["last"][b]),
            groups=int(mean.groups[b]),
            pass_rate=float(pass_rate[b]),
            observed_silent=float(obs_aw[b] + obs_ac[b]),
            observed_all_wrong=float(obs_aw[b]),
            observed_all_correct=float(obs_ac[b]),
            forecast_silent=none_if_nan(f_ac[b] + f_aw[b]),
            forecast_all_wrong=none_if_nan(f_aw[b]),
            forecast_all_correct=none_if_nan(f_ac[b]),
            forecast={g: none_if_nan(at_G[g][b]) for g in at},
        )
        for b in range(mean.groups.size)
    )


AHEAD_MAX_GROUPS = 2_000_000
"""``trend`` adds the one-step-ahead forecast to logs of at most this many groups (its replay costs
about a second per 100,000 groups)."""


def _with_ahead(res: TrendResult, df: pl.DataFrame, first: int) -> TrendResult:
    """Add the one-step-ahead forecast and the naive baseline per row, and both errors per step."""
    from .forecast import ahead_by_step

    if "prompt" not in df.columns or df["step"].n_unique() < 2:
        return replace(res, ahead_note="no one-step-ahead forecast: it needs prompts and at least two steps")
    if df.height > AHEAD_MAX_GROUPS:
        return replace(res, ahead_note=f"no one-step-ahead forecast: {df.height:,} groups is more than trend "
                                       f"replays ({AHEAD_MAX_GROUPS:,}); 'sigmaudit backtest' replays any log")
    per_step = ahead_by_step(df)
    err = per_step.filter(pl.col("forecast").is_not_null())
    ahead_mae = float((err["observed"] - err["forecast"]).abs().mean())  # type: ignore[arg-type]
    naive_mae = float((err["observed"] - err["naive"]).abs().mean())  # type: ignore[arg-type]
    buckets = (per_step.with_columns(((pl.col("step") - first) // res.every).alias("bucket"))
               .group_by("bucket").agg((pl.col("forecast") * pl.col("groups")).sum() / pl.col("groups")
                                       .filter(pl.col("forecast").is_not_null()).sum(),
                                       (pl.col("naive") * pl.col("groups")).sum() / pl.col("groups")
                                       .filter(pl.col("naive").is_not_null()).sum(),
                                       pl.col("step").min().alias("first"))
               .sort("first"))
    by_first = {int(r["first"]): r for r in buckets.iter_rows(named=True)}
    rows = tuple(replace(r, ahead_silent=none_if_nan(by_first[r.step]["forecast"]),
                         naive_silent=none_if_nan(by_first[r.step]["naive"])) for r in res.rows)
    return replace(res, rows=rows, ahead_mae=ahead_mae, naive_mae=naive_mae, mae_steps=err.height)


def trend_logs(
    loaded: LoadedCounts,
    *,
    G: Sequence[int] = (),
    every: int = 1,
    estimator: Estimator = "bayes",
    post_filter: bool = False,
    batches: tuple[int, int] | None = None,
) -> TrendResult:
    """:func:`trend` (or :func:`trend_from_series`) of loaded logs, with the post-filter state
    (:func:`sigmaudit.audits.observed.filtered_of`) and, with ``--by``, one trend per value. ``batches`` (DAPO's train
    and generation batch sizes) turn a series' generation batches per step into bounds on its silent share.

    Raises SchemaError when the logs have no training-step information.
    """
    from .observed import filtered_of

    if loaded.series is not None:
        res = trend_from_series(loaded.series, every=every, G=G, batches=batches)
    elif loaded.per_group is None or not loaded.has_steps:
        raise SchemaError("the logs have no training-step information", remedy=STEPS_REMEDY)
    else:
        res = trend(loaded.per_group, G=G, every=every, estimator=estimator)
    by = None
    if loaded.by is not None:
        by = ByResult(loaded.by, tuple(
            ByGroup(value, trend_logs(part, G=G, every=every, estimator=estimator, post_filter=post_filter))
            for value, part in loaded.parts))
    from .drift import context, gap_of

    return replace(res, filtered=filtered_of(loaded, post_filter), by=by, pooled=gap_of(loaded), **context(loaded))


def trend_from_series(series: pl.DataFrame, *, every: int = 1, G: Sequence[int] = (),
                      batches: tuple[int, int] | None = None) -> TrendResult:
    """A per-step series of shares (``LoadedCounts.series``) as a :class:`TrendResult` with no forecast.

    Buckets of ``every`` steps average the shares of their rows. ``observed_silent`` is the
    file's silent column, else the sum of its two branches when both are present. ``groups`` (when the file
    gives the groups per step) is the bucket's sum; a bucket's shares are the mean of its steps' shares.
    """
    if int(every) != every or every < 1:
        raise ValueError(f"every must be a whole number >= 1, got {every!r}")
    fields = ("observed_all_correct", "observed_all_wrong", "observed_silent", "pass_rate", "silent_at_least",
              "silent_at_most")
    series = _with_bounds(series, batches)
    df = series.with_columns(*(pl.lit(None, dtype=pl.Float64).alias(f) for f in fields if f not in series.columns))
    first = int(df["step"].min())  # type: ignore[arg-type]
    rows_df = (df.with_columns(((pl.col("step") - first) // every).alias("bucket"))
               .group_by("bucket").agg(pl.col("step").min().alias("first"), pl.col("step").max().alias("last"),
                                       *(pl.col(f).mean() for f in fields),
                                       *([pl.col("groups").sum()] if "groups" in df.columns else []))
               .sort("bucket"))

    def silent(r: dict[str, Any]) -> float | None:
        if r["observed_silent"] is not None:
            return r["observed_silent"]
        if r["observed_all_correct"] is not None and r["observed_all_wrong"] is not None:
            return r["observed_all_correct"] + r["observed_all_wrong"]
        return None

    Gs = tuple(dict.fromkeys(int(g) for g in G))
    rows = tuple(
        TrendRow(step=int(r["first"]), step_last=int(r["last"]), groups=r.get("groups"), pass_rate=r["pass_rate"],
                 observed_silent=silent(r), observed_all_wrong=r["observed_all_wrong"],
                 observed_all_correct=r["observed_all_correct"], forecast_silent=None, forecast_all_wrong=None,
                 forecast_all_correct=None, forecast=dict.fromkeys(Gs), silent_at_least=r["silent_at_least"],
                 silent_at_most=r["silent_at_most"])
        for r in rows_df.iter_rows(named=True)
    )
    return TrendResult(rows, None, (), int(every), None, Gs, 0, source="series")


def _with_bounds(series: pl.DataFrame, batches: tuple[int, int] | None) -> pl.DataFrame:
    """The series with ``silent_at_least``/``silent_at_most`` from its ``gen_batches`` when ``batches`` (train, gen)
    is given; ConfigError for batch sizes given to a series without generation batches, or that its steps
    contradict."""
    if batches is None:
        return series
    from ..core.dapo import gen_batches_silent_bounds

    if "gen_batches" not in series.columns:
        raise ConfigError("--train-batch/--gen-batch bound the silent share through verl DAPO's "
                          "train/num_gen_batches, which this series does not log", location="--train-batch",
                          remedy="drop them")
    logged = series.filter(pl.col("gen_batches").is_not_null())
    short = logged.filter(pl.col("gen_batches") * batches[1] < batches[0])
    if short.height:
        raise ConfigError(f"step {short['step'][0]} logs {short['gen_batches'][0]} generation batches of {batches[1]} "
                          f"prompts, which cannot keep the {batches[0]} prompts of a training batch",
                          location="--train-batch/--gen-batch",
                          remedy="give the run's data.train_batch_size and data.gen_batch_size")
    low, high = gen_batches_silent_bounds(logged["gen_batches"].to_numpy(), train_batch=batches[0],
                                          gen_batch=batches[1])
    bounds = logged.select("step", pl.Series("silent_at_least", low), pl.Series("silent_at_most", high))
    return series.join(bounds, on="step", how="left")
