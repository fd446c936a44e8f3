"""``sigmaudit forecast``: which prompts will go silent at their next visit, and the replay behind it.

Both replay a log with steps in step order (:func:`replay`). Every group logged at step t is
forecast from what was logged before t only: a corpus prior fitted to the groups of earlier
steps and the prompt's own earlier visits, older visits down-weighted with a half-life
(:mod:`sigmaudit.core.forecast`). The half-life is chosen online from
:data:`~sigmaudit.core.forecast.HALF_LIFE_FACTORS` × the typical revisit gap: the forecast
at step t uses the half-life with the lowest log loss on the groups before t (held-out:
each of those was itself forecast from its past only), so no number the backtest reports
was fitted to the outcome it is scored on. Likewise the forecast is recalibrated online
(:func:`~sigmaudit.core.forecast.fit_recalibration`, fitted on the groups of earlier steps):
when training pushes most pass rates one way, a forecast from past visits lags behind, and
the map learnt on earlier steps corrects that lag.

- :func:`sigmaudit.audits.backtest.backtest` scores the replay: Brier score and log loss of P(silent), a 10-bin
  calibration table, two baselines (the previous step's silent fraction; P(silent | the
  prompt's last visit was silent or not), estimated from earlier steps), and the trade-off
  curves of three skip rules (sigmaudit's threshold on P(silent), GRESO's streak rule,
  "skip if silent last time").
- :func:`forecast` gives every prompt seen its P(silent), P(all wrong), P(all correct) at
  its next visit with G samples, using the half-life the backtest picks on the whole log,
  and a skip list.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import polars as pl
from numpy.typing import NDArray

from ..errors import ConfigError, SchemaError
from ..fmt import none_if_nan
from ..loaders.options import Filtered, Window
from .drift import Drift, context_json
from .skip_rule import DEFAULT_MAX_P_SILENT

HALF_LIFE_SAMPLE = 20_000
"""The half-life is chosen on about this many groups (whole prompts, by a hash of their names) in
bigger logs: each group is forecast once per half-life tried there, once in all elsewhere."""
RECAL_MIN_GROUPS = 200
"""The online recalibration starts once this many scored groups precede a step (identity before)."""
RECAL_EVERY = 4
"""The recalibration is refitted every this many steps (and at steps 1, 2, 4, 8, ...)."""
RECAL_FULL_GROWTH = 1.25
"""A recalibration refit is made on every earlier scored group (a full fit) once they number this many
times those of the last full fit; the refits in between add the groups since the last refit to it
(:func:`~sigmaudit.core.forecast.update_recalibration`, cost independent of the history). The full fits
then cost at most 1 / (1 − 1 / RECAL_FULL_GROWTH) = 5 fits on all the groups in all, whatever the number
of steps; a larger growth is cheaper and leaves more of the map to the updates' approximation."""
NO_STEPS = "the logs have no training-step information"
STEPS_REMEDY = ("a log with a step column under another name: --step-col NAME; a log without steps (an eval "
                "file, a counts table) has nothing to follow over time: 'sigmaudit scan' and 'plan' read it")


# --------------------------------------------------------------------------- the replay


@dataclass(frozen=True)
class Replay:
    """Every group of a log with steps, forecast from its past only (internal to this module)."""

    groups: pl.DataFrame
    """One row per group: prompt, step, n, k, G (size forecast), outcome, forecast, p_all_wrong,
    p_all_correct, p_mean, visits_before, streak_correct, streak_wrong, last_silent, scored,
    naive, markov."""
    half_lives: tuple[float, ...]
    """Half-lives tried, in steps."""
    gap: float
    """Typical revisit gap (median steps between consecutive visits of a prompt)."""
    half_life_final: float
    """The half-life with the lowest log loss over every scored group."""
    half_life_used: tuple[float, ...]
    """Half-life used at each logged step (the first step: none, no prior yet)."""
    steps: tuple[int, ...]
    """Logged steps, ascending."""
    prior_fits: int
    """Priors fitted during the replay."""
    dropped_groups: int
    """Groups without a step value (left out)."""
    recalibration: tuple[float, ...]
    """(a, b, c) of the recalibration fitted on every scored group (what ``forecast`` applies)."""


def _visits(per_group: pl.DataFrame) -> tuple[pl.DataFrame, int]:
    if "step" not in per_group.columns:
        raise SchemaError(NO_STEPS, remedy=STEPS_REMEDY)
    df = per_group.select(pl.col("prompt").cast(pl.Utf8), pl.col("step").cast(pl.Int64), pl.col("n").cast(pl.Int64),
                          pl.col("k").cast(pl.Int64))
    dropped = int(df["step"].null_count())
    df = df.filter(pl.col("step").is_not_null() & (pl.col("n") > 0))
    if df.height == 0:
        raise SchemaError(NO_STEPS, remedy=STEPS_REMEDY)
    _check_step_range(df["step"])
    return df, dropped


def _check_step_range(steps: pl.Series) -> None:
    """SchemaError for a step beyond ±:data:`~sigmaudit.audits.arguments.MAX_STEP`: the forecast is for the
    step after the last and decays histories by step gaps, both 64-bit integers (a last step of 2**63 - 1
    overflowed into an internal error; issue 36 item 25)."""
    from .arguments import MAX_STEP

    lo, hi = steps.min(), steps.max()
    bad = hi if hi > MAX_STEP else lo if lo < -MAX_STEP else None  # type: ignore[operator]
    if bad is not None:
        raise SchemaError(f"a logged step is {bad}: forecasts count steps within ±2**62 (the next step and the "
                          "gaps between steps must fit in 64-bit integers)", location="step",
                          remedy="renumber the steps (e.g. count from 0); scan and check read such a log as it is")


def _outcome(n: NDArray[np.int64], k: NDArray[np.int64], G: int | None) -> NDArray[np.float64]:
    """The logged silent outcome at G: the indicator at the group's own size, else the chance that G
    of its n answers drawn without replacement agree (hypergeometric, unbiased)."""
    if G is None:
        return ((k == 0) | (k == n)).astype(np.float64)
    from ..core.estimators import silent_unbiased

    return np.asarray(silent_unbiased(n, k, G).silent, dtype=np.float64)


def _doubling(last: int) -> NDArray[np.int64]:
    """Step indices 1, 2, 4, 8, ... up to ``last``: a refit each time the data has doubled.

    A log cut after any step gets the same fits for the steps it keeps (so a step's forecast
    does not depend on how many steps follow it)."""
    return (2 ** np.arange(int(np.log2(max(last, 1))) + 1)).astype(np.int64)


def replay(per_group: pl.DataFrame, G: int | None = None, whole: bool = False) -> Replay:
    """Forecast every group from the groups of earlier steps (see the module docstring).

    ``per_group`` has columns prompt, step, n, k. ``G`` scores each group's silence at G
    samples (needs n >= G everywhere; the outcome is then the hypergeometric chance that G
    of its answers agree); None scores it at its own logged size n. ``whole``: the prior of every group
    is fitted with the replay's (:func:`forecast` takes it from :func:`prior_of_pairs`).

    The steps: each prompt's visits and their decayed histories (one per half-life tried), the
    priors of earlier steps, the half-life chosen online, every group's forecast at it,
    recalibrated online, and the baselines the backtest compares with.
    """
    from ..core.forecast import HALF_LIFE_FACTORS, branch_skew

    groups, dropped = _visits(per_group)
    _check_scoring_size(groups, G)
    steps = _logged_steps(groups)
    visits = _visit_rows(groups)
    gap = _revisit_gap(visits)
    half_lives = tuple(gap * f for f in HALF_LIFE_FACTORS)
    visits, g, hist = _with_history(groups, visits, half_lives)
    n, k = g["n"].to_numpy(), g["k"].to_numpy()
    step_id = np.searchsorted(steps, g["step"].to_numpy())
    G_eval = n if G is None else np.full(n.size, G)
    y = _outcome(n, k, G)
    fits = _doubling(steps.size - 1)  # the prior is refitted each time the earlier data has doubled
    priors = _priors_before(g, steps, fits, whole)
    row_prior = _prior_of_step(fits, steps.size)[step_id]  # each step uses the latest fit before it
    scored = step_id >= 1
    histories = _Histories(hist, g["vrow"].to_numpy(), priors, row_prior, G_eval)
    choice, final = _choose_half_life(histories, g["prompt"], y, step_id, scored, steps.size)
    pick = choice[step_id]
    raw, aw_raw, ac_raw, p_mean = _forecast_at(histories, pick)
    forecast, coef_final = _recalibrated(raw, branch_skew(aw_raw, ac_raw), y, step_id, scored, steps.size)
    share = np.divide(aw_raw, aw_raw + ac_raw, out=np.full(n.size, 0.5), where=(aw_raw + ac_raw) > 0)
    naive, last_silent, markov = _baselines(g, visits, y, step_id, steps.size)
    out = g.select("prompt", "step", "n", "k").with_columns(
        pl.Series("G", G_eval), pl.Series("outcome", y), pl.Series("forecast", forecast),
        pl.Series("p_all_wrong", forecast * share), pl.Series("p_all_correct", forecast * (1.0 - share)),
        pl.Series("raw_forecast", raw), pl.Series("p_mean", p_mean), g["visits_before"], g["streak_correct"],
        g["streak_wrong"],
        pl.Series("last_silent", last_silent), pl.Series("scored", scored), pl.Series("naive", naive),
        pl.Series("markov", markov), pl.Series("half_life", np.asarray(half_lives)[pick]),
    )
    used = tuple(float(half_lives[c]) if i >= 1 else float("nan") for i, c in enumerate(choice))
    return Replay(out, half_lives, gap, float(half_lives[final]), used, tuple(int(s) for s in steps), len(fits),
                  dropped, tuple(float(c) for c in coef_final))


def _check_scoring_size(groups: pl.DataFrame, G: int | None) -> None:
    """Refuse a scoring size G bigger than the smallest logged group (its outcome needs G of n answers)."""
    if G is None:
        return
    small = int(groups["n"].min())  # type: ignore[arg-type]
    if small < G:
        raise ConfigError(f"group size {G} exceeds the smallest logged group ({small} samples): silence at "
                          f"a size can only be checked on that many of a group's logged answers", location="G",
                          remedy=f"give G {small} or less, or leave G out (each group's own size)")


def _logged_steps(groups: pl.DataFrame) -> NDArray[np.int64]:
    """The distinct logged steps, ascending; at least two (the first has nothing earlier to forecast from)."""
    steps = np.sort(groups["step"].unique().to_numpy())
    if steps.size < 2:
        raise SchemaError(f"only one logged step ({steps[0]}): nothing earlier to forecast from",
                          remedy="forecasts and backtests need a log with at least two steps")
    return steps


def _visit_rows(groups: pl.DataFrame) -> pl.DataFrame:
    """One row per (prompt, step) visit with its summed n, k, sorted by prompt then step, and an
    integer ``code`` per prompt."""
    return (groups.group_by("prompt", "step").agg(pl.col("n").sum(), pl.col("k").sum())
            .sort("prompt", "step")
            .with_columns(pl.col("prompt").rank("dense").cast(pl.Int64).alias("code")))


def _revisit_gap(visits: pl.DataFrame) -> float:
    """The typical revisit gap: median steps between consecutive visits of a prompt (1 if none revisits)."""
    vp, vs = visits["code"].to_numpy(), visits["step"].to_numpy()
    gaps = (vs[1:] - vs[:-1])[vp[1:] == vp[:-1]]
    return float(np.median(gaps)) if gaps.size else 1.0


def _with_history(
    groups: pl.DataFrame, visits: pl.DataFrame, half_lives: tuple[float, ...]
) -> tuple[pl.DataFrame, pl.DataFrame, Any]:
    """Each visit's decayed history before it, for every half-life; returns the visits with their row
    number ``vrow`` and streak columns, the groups joined to their visit (sorted by step, prompt, logged
    order) and the :class:`~sigmaudit.core.forecast.History`."""
    from ..core.forecast import visit_history

    vp, vs, vn, vk = (visits[c].to_numpy() for c in ("code", "step", "n", "k"))
    hist = visit_history(vp, vs, vn, vk, half_lives)
    visits = visits.with_columns(
        pl.Series("vrow", np.arange(visits.height)),
        pl.Series("visits_before", hist.visits_before),
        pl.Series("streak_correct", hist.streak_correct),
        pl.Series("streak_wrong", hist.streak_wrong),
    ).with_columns(pl.col("step").shift(1).over("code").alias("last_step"))  # int64: exact past 2^53
    g = (groups.with_row_index("grow")
         .join(visits.select("prompt", "step", "vrow", "visits_before", "streak_correct", "streak_wrong",
                             "last_step"), on=["prompt", "step"], how="left")
         .sort("step", "prompt", "grow"))
    return visits, g, hist


def _prior_of_step(fits: NDArray[np.int64], S: int) -> NDArray[np.int64]:
    """Index into ``fits`` of the prior each step uses: the latest fit at or before it (-1: none yet)."""
    prior_of_step = np.full(S, -1)
    for j, i in enumerate(fits):
        prior_of_step[i:] = j
    return prior_of_step


def _priors_before(g: pl.DataFrame, steps: NDArray[np.int64], fits: NDArray[np.int64],
                   whole: bool = False) -> list[Any]:
    """One corpus prior per fit step i, fitted to the groups logged before step i (as distinct (n, k) pairs), all in
    one :func:`priors_of_pairs`; ``whole``: the prior of every group too (:func:`forecast`'s), kept for it."""
    cells = g.group_by("step", "n", "k").agg(pl.len().alias("c")).sort("step", "n", "k")
    wanted = [cells.filter(pl.col("step") < int(steps[i])).group_by("n", "k").agg(pl.col("c").sum()).sort("n", "k")
              for i in fits]
    if whole:
        wanted.append(g.group_by("n", "k").agg(pl.len().alias("c")).sort("n", "k"))
    priors = priors_of_pairs([(c["n"].to_numpy(), c["k"].to_numpy(), c["c"].to_numpy()) for c in wanted])
    return priors[: len(fits)]


PRIOR_MEMO = 64
"""Corpus priors kept by :func:`prior_of_pairs` (most recently used)."""
_PRIORS: dict[bytes, Any] = {}


def prior_of_pairs(n: NDArray[np.int64], k: NDArray[np.int64], c: NDArray[np.int64]) -> Any:
    """The corpus prior of distinct (n, k) pairs with multiplicities ``c``, fitted once per process for
    the same pairs: a log replayed again after more steps (``watch`` at each step) refits only the priors
    of data it had not seen (the replay's fits before step i do not depend on later steps)."""
    return priors_of_pairs([(n, k, c)])[0]


def priors_of_pairs(cells: list[tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.int64]]]) -> list[Any]:
    """:func:`prior_of_pairs` of each (n, k, c): those not kept from before fitted together
    (:func:`~sigmaudit.core.prior.fit_corpus_priors`: the same priors, one lockstep optimisation for those on
    the same pairs)."""
    from ..core.corpus import Corpus
    from ..core.prior import fit_corpus_priors

    keys = [np.stack([np.asarray(a, dtype=np.int64) for a in cell]).tobytes() for cell in cells]  # 3 equal rows
    new = {key: Corpus.from_pairs(*cell) for key, cell in zip(keys, cells, strict=True) if key not in _PRIORS}
    fitted = fit_corpus_priors([(corpus.n, corpus.k, corpus.weight) for corpus in new.values()]) if new else []
    found = dict(zip(new, fitted, strict=True))
    out = []
    for key in keys:
        prior = found[key] if key in found else _PRIORS.pop(key)
        _PRIORS.pop(key, None)
        _PRIORS[key] = prior  # most recent last
        out.append(prior)
    while len(_PRIORS) > PRIOR_MEMO:
        del _PRIORS[next(iter(_PRIORS))]
    return out


@dataclass(frozen=True)
class _Histories:
    """What a group's forecast is made from: its visit's decayed history and the prior of its step."""

    hist: Any
    """The :class:`~sigmaudit.core.forecast.History` of every visit (one row per half-life)."""
    vrow: NDArray[np.int64]
    """Each group's visit row in ``hist``."""
    priors: list[Any]
    """The priors fitted during the replay."""
    row_prior: NDArray[np.int64]
    """Each group's prior (index into ``priors``; -1 at the first step)."""
    G_eval: NDArray[np.int64]
    """The group size each group is forecast at."""

    def forecast(self, rows: NDArray[np.int64], h: int, prior: Any) -> Any:
        """The :class:`~sigmaudit.core.forecast.SilentForecast` of ``rows`` at half-life index h."""
        from ..core.forecast import silent_forecast

        v = self.vrow[rows]
        return silent_forecast(self.hist.n_eff[h, v], self.hist.k_eff[h, v], prior, self.G_eval[rows])


def _choose_half_life(
    hx: _Histories, prompt: pl.Series, y: NDArray[np.float64], step_id: NDArray[np.int64],
    scored: NDArray[np.bool_], S: int,
) -> tuple[NDArray[np.int64], int]:
    """The half-life index used at each step (lowest log loss on the scored groups of earlier steps;
    the static model, h = ∞, until some are scored) and the one best over every scored group.

    It is chosen on a sample of whole prompts (all of them in logs up to HALF_LIFE_SAMPLE groups);
    the sample depends on prompt names and the log's size only, never on an outcome."""
    from ..core.forecast import log_losses

    H = hx.hist.n_eff.shape[0]
    srows = np.flatnonzero(_sample_rows(prompt, HALF_LIFE_SAMPLE))
    f_s = np.full((H, srows.size), np.nan)
    for j, prior in enumerate(hx.priors):
        sel = np.flatnonzero(hx.row_prior[srows] == j)
        for h in range(H):
            f_s[h, sel] = hx.forecast(srows[sel], h, prior).silent
    s_step, s_scored = step_id[srows], scored[srows]
    ll = np.where(s_scored[None, :], log_losses(np.nan_to_num(f_s, nan=0.5), y[srows][None, :]), 0.0)
    per_step = np.stack([np.bincount(s_step, weights=ll[h], minlength=S) for h in range(H)])
    before_sum = np.cumsum(per_step, axis=1) - per_step  # log loss of the groups before each step
    n_scored = np.bincount(s_step, weights=s_scored.astype(float), minlength=S)
    seen = np.cumsum(n_scored) - n_scored
    choice = np.where(seen > 0, np.argmin(before_sum, axis=0), H - 1)
    return choice, int(np.argmin(per_step.sum(axis=1)))


def _forecast_at(hx: _Histories, pick: NDArray[np.int64]) -> tuple[NDArray[np.float64], ...]:
    """Every group's P(silent), P(all wrong), P(all correct) and posterior mean of p at the half-life
    chosen for its step (NaN at the first step, which has no prior)."""
    size = pick.size
    silent, aw, ac, p_mean = (np.full(size, np.nan) for _ in range(4))
    for j, prior in enumerate(hx.priors):
        for h in range(hx.hist.n_eff.shape[0]):
            rows = np.flatnonzero((hx.row_prior == j) & (pick == h))
            if rows.size:
                sf = hx.forecast(rows, h, prior)
                silent[rows], aw[rows], ac[rows], p_mean[rows] = sf.silent, sf.all_wrong, sf.all_correct, sf.p_mean
    return silent, aw, ac, p_mean


def _baselines(
    g: pl.DataFrame, visits: pl.DataFrame, y: NDArray[np.float64], step_id: NDArray[np.int64], S: int
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """The backtest's baselines per group: ``naive`` (the previous step's silent fraction), whether the
    prompt's last visit was silent, and ``markov`` (P(silent | last visit silent / informative / first))."""
    frac = np.bincount(step_id, weights=y, minlength=S) / np.bincount(step_id, minlength=S)
    naive = np.where(step_id >= 1, frac[np.maximum(step_id - 1, 0)], np.nan)
    last_silent = _last_silent(g, visits)
    state = np.where(np.isnan(last_silent), 2, last_silent).astype(np.int64)
    return naive, last_silent, _markov(step_id, state, y, S)


def _sample_rows(prompt: pl.Series, limit: int) -> NDArray[np.bool_]:
    """Rows of whole prompts, chosen by a hash of the prompt name, about ``limit`` rows in all
    (every row when there are at most ``limit``)."""
    if prompt.len() <= limit:
        return np.ones(prompt.len(), dtype=bool)
    h = prompt.cast(pl.Utf8).hash(seed=12).to_numpy() % np.uint64(1 << 32)
    return h < np.uint64(int(limit / prompt.len() * (1 << 32)))


def _recalibrated(
    f: NDArray[np.float64], skew: NDArray[np.float64], y: NDArray[np.float64], step_id: NDArray[np.int64],
    scored: NDArray[np.bool_], S: int,
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Forecasts recalibrated online: the map used at step t is fitted on the scored groups of earlier
    steps (identity until RECAL_MIN_GROUPS of them); also the map fitted on every scored group.

    Refits come at steps 1, 2, 4, 8, ... and every RECAL_EVERY steps. A refit is full (on every earlier
    group) at the first refit and once the groups have grown RECAL_FULL_GROWTH-fold since the last full
    one; the others add the groups since the last refit to it
    (:func:`~sigmaudit.core.forecast.update_recalibration`). The replay's cost is linear in the steps
    (a full refit at every refit grew as S² / RECAL_EVERY: 15 of 17 s of a forecast at 8,000 steps;
    issue 45 item 2)."""
    from ..core.forecast import fit_recalibration_rows, recal_features, recalibrate_rows

    out = f.copy()
    # features built once; each refit takes the scored rows of earlier steps (a prefix of them when the
    # groups are in step order, as they are after the replay's sort), each map applies to a slice of steps
    X_all = recal_features(f, skew)
    in_order = bool(np.all(step_id[1:] >= step_id[:-1]))
    X_scored, y_scored, step_scored = X_all[scored], y[scored], step_id[scored]
    order = np.argsort(step_scored, kind="stable")
    X_scored, y_scored, step_scored = X_scored[order], y_scored[order], step_scored[order]
    counts = np.cumsum(np.bincount(step_id[scored], minlength=S))
    refits = np.array([i for i in range(1, S) if counts[i - 1] >= RECAL_MIN_GROUPS
                       and (i % RECAL_EVERY == 0 or i & (i - 1) == 0)], dtype=np.int64)
    state, done, full = None, 0, 0
    for j, i in enumerate(refits):
        n = int(np.searchsorted(step_scored, i, side="left"))
        exact = state is None or n >= RECAL_FULL_GROWTH * full
        state = _refit(state, X_scored, y_scored, done, n, exact)
        done, full = n, n if exact else full
        upto = refits[j + 1] if j + 1 < refits.size else S
        rows = (slice(*np.searchsorted(step_id, [i, upto], side="left")) if in_order
                else np.flatnonzero((step_id >= i) & (step_id < upto)))
        out[rows] = recalibrate_rows(X_all[rows], state.coef)
    final = (fit_recalibration_rows(X_all[scored], y[scored]) if scored.sum() >= RECAL_MIN_GROUPS
             else np.array([1.0, 0.0, 0.0]))
    return out, final


def _refit(state: Any, X: NDArray[np.float64], y: NDArray[np.float64], done: int, n: int, exact: bool) -> Any:
    """The recalibration on rows :n of (X, y): fitted on all of them (``exact``), else ``state`` (fitted on
    rows :done) updated with rows done:n."""
    from ..core.forecast import fit_recalibration_state, update_recalibration

    if exact:
        return fit_recalibration_state(X[:n], y[:n])
    return update_recalibration(state, X[done:n], y[done:n])


def _last_silent(g: pl.DataFrame, visits: pl.DataFrame) -> NDArray[np.float64]:
    """1.0/0.0 when the prompt's previous visit was silent/informative (at its logged size); NaN if none."""
    v = visits.with_columns(((pl.col("k") == 0) | (pl.col("k") == pl.col("n"))).cast(pl.Float64).alias("sil"))
    prev = v.select(pl.col("vrow") + 1, pl.col("sil"), pl.col("code")).rename({"code": "pcode"})
    joined = (v.select("vrow", "code").join(prev, on="vrow", how="left")
              .with_columns(pl.when(pl.col("pcode") == pl.col("code")).then(pl.col("sil")).otherwise(None)
                            .alias("last")).sort("vrow"))
    lookup = joined["last"].to_numpy().astype(np.float64)
    return lookup[g["vrow"].to_numpy()]


def _markov(
    step_id: NDArray[np.int64], state: NDArray[np.int64], y: NDArray[np.float64], S: int
) -> NDArray[np.float64]:
    """P(silent | state of the last visit) from groups of earlier steps, (silent + 1)/(groups + 2)."""
    out = np.full(step_id.size, np.nan)
    for s in range(3):
        m = state == s
        sil = np.bincount(step_id[m], weights=y[m], minlength=S)
        cnt = np.bincount(step_id[m], minlength=S).astype(np.float64)
        sil_b, cnt_b = np.cumsum(sil) - sil, np.cumsum(cnt) - cnt
        est = (sil_b + 1.0) / (cnt_b + 2.0)
        out[m] = est[step_id[m]]
    return out


# --------------------------------------------------------------------------- forecast


@dataclass(frozen=True)
class ForecastResult:
    """Each prompt's chance of a silent group at its next visit, and a skip list."""

    G: int
    """Group size of the next visit."""
    next_step: int
    """The step the forecast is for: the last logged step + 1."""
    half_life: float
    """Half-life in steps (chosen by the backtest on the whole log; inf = no down-weighting)."""
    prior_kind: str
    """The corpus prior fitted to every logged group (``beta+atoms/1``, ``beta+atoms/2`` or ``grid-em``)."""
    prompts: int
    """Prompts forecast (every prompt seen)."""
    rule: str
    """How the skip list was chosen: ``max-p-silent`` (skip P(silent) > threshold), ``target-saving``, or ``none``."""
    threshold: float | None
    """P(silent) above which a prompt is skipped (None: no skip list)."""
    skipped: int
    """Prompts on the skip list."""
    rollouts_saved: float
    """Share of the next pass's rollouts (G per prompt) not sampled."""
    silent_avoided: float
    """Expected share of the next pass's silent groups that are skipped."""
    informative_lost: float
    """Expected share of its informative groups that are skipped."""
    expected_silent: float
    """Expected silent groups if every prompt is sampled (Σ P(silent))."""
    table: pl.DataFrame
    """prompt, visits, last_step, p_estimate, p_silent, p_all_wrong, p_all_correct,
    expected_useful_rollouts, skip; sorted by p_silent descending."""
    backtest_brier: float
    """Brier score of the same forecasts replayed on the log (held-out, one step ahead)."""
    recalibrated: bool = False
    """The backtest's recalibration map was applied (only when G is the one logged group size, where it
    was fitted)."""
    filtered: Filtered | None = None
    """Set when the log is a post-filter dump (see :mod:`sigmaudit.audits.filtered`): each prompt's
    history lacks its silent groups, so P(silent) is understated."""
    window: Window | None = None
    """The training steps the figures cover (``--steps``/``--last-steps``, else the whole log); None without steps."""
    drift: Drift | None = None
    """Set when pass rates moved within the window (:mod:`sigmaudit.audits.drift`): pooled-count figures understate."""

    def to_dict(self) -> dict[str, Any]:
        """JSON contract (see :mod:`sigmaudit.commands.forecast`)."""
        return {
            "G": self.G, "next_step": self.next_step, "half_life": none_if_nan(self.half_life),
            "prior": self.prior_kind, "prompts": self.prompts, "rule": self.rule, "threshold": self.threshold,
            "skipped": self.skipped, "rollouts_saved": self.rollouts_saved, "silent_avoided": self.silent_avoided,
            "informative_lost": self.informative_lost, "expected_silent": self.expected_silent,
            "backtest_brier": self.backtest_brier, "recalibrated": self.recalibrated,
            "filtered": None if self.filtered is None else asdict(self.filtered),
            "per_prompt": self.table.to_dicts(),
            **context_json(self.window, self.drift),
        }


TABLE_COLUMNS = ("prompt", "visits", "last_step", "p_estimate", "p_silent", "p_all_wrong", "p_all_correct",
                 "expected_useful_rollouts", "skip")
"""Columns of the per-prompt forecast table (also the keys of each JSON ``per_prompt`` object)."""


def forecast(
    per_group: pl.DataFrame,
    G: int,
    *,
    max_p_silent: float | None = None,
    target_saving: float | None = None,
    replayed: Replay | None = None,
    filtered: Filtered | None = None,
) -> ForecastResult:
    """P(silent), P(all wrong), P(all correct) at each prompt's next visit with G samples.

    The half-life is the backtest's choice on this log; the prior is fitted to every logged
    group. ``max_p_silent`` skips prompts whose P(silent) exceeds it (default :data:`DEFAULT_MAX_P_SILENT`);
    ``target_saving`` skips the most likely silent prompts until that share of the rollouts is saved instead.
    ``replayed`` reuses a :func:`replay` of the same ``per_group`` (made without G). ``filtered``
    (:func:`sigmaudit.audits.observed.filtered_of`) is carried to the result: the forecast is read
    from a post-filter dump.
    """
    from ..core.forecast import brier

    _check_forecast_options(G, max_p_silent, target_saving)
    if max_p_silent is None and target_saving is None:
        max_p_silent = DEFAULT_MAX_P_SILENT
    rp = replay(per_group, whole=True) if replayed is None else replayed
    groups, _ = _visits(per_group)
    next_step = rp.steps[-1] + 1
    table, prior_kind, recalibrated = _next_visit_table(groups, G, next_step, rp)
    ps = table["p_silent"].to_numpy()
    M = ps.size
    rule, threshold, skip = _skip_list(ps, max_p_silent, target_saving)
    table = table.with_columns(pl.Series("skip", skip)).select(TABLE_COLUMNS)
    exp_silent = float(ps.sum())
    exp_inf = float((1.0 - ps).sum())
    scored = rp.groups.filter(pl.col("scored"))
    return ForecastResult(
        G=int(G), next_step=int(next_step), half_life=rp.half_life_final, prior_kind=prior_kind, prompts=M,
        rule=rule, threshold=threshold, skipped=int(skip.sum()), rollouts_saved=float(skip.mean()) if M else 0.0,
        silent_avoided=float(ps[skip].sum() / exp_silent) if exp_silent > 0 else 0.0,
        informative_lost=float((1.0 - ps[skip]).sum() / exp_inf) if exp_inf > 0 else 0.0,
        expected_silent=exp_silent, table=table, recalibrated=recalibrated, filtered=filtered,
        backtest_brier=brier(scored["forecast"].to_numpy(), scored["outcome"].to_numpy()),
    )


def _check_forecast_options(G: int, max_p_silent: float | None, target_saving: float | None) -> None:
    """Refuse a G that is not a whole number >= 1, both skip rules at once, or a rule outside [0, 1]."""
    if int(G) != G or G < 1:
        raise ValueError(f"G must be a whole number >= 1, got {G!r}")
    if max_p_silent is not None and target_saving is not None:
        raise ConfigError("give max_p_silent or target_saving, not both", location="target_saving")
    for name, v in (("max_p_silent", max_p_silent), ("target_saving", target_saving)):
        if v is not None and not 0.0 <= v <= 1.0:
            raise ConfigError(f"must lie in [0, 1], got {v:g}", location=name)


def _next_visit_table(
    groups: pl.DataFrame, G: int, next_step: int, rp: Replay
) -> tuple[pl.DataFrame, str, bool]:
    """Every prompt's forecast at ``next_step`` (history decayed with the replay's final half-life, prior
    fitted to every logged group, recalibrated when G is the one logged size), sorted by P(silent)
    descending; also the prior's kind and whether the recalibration was applied."""
    from ..core.forecast import branch_skew, recalibrate, silent_forecast, visit_history

    visits = (groups.group_by("prompt", "step").agg(pl.col("n").sum(), pl.col("k").sum()).sort("prompt", "step"))
    # the state at the next step: one more "visit" per prompt at next_step with nothing observed
    ghost = visits.group_by("prompt").agg(pl.col("step").max().alias("last_step"), pl.len().alias("visits"))
    ext = pl.concat([visits, ghost.select("prompt", pl.lit(next_step, dtype=pl.Int64).alias("step"),
                                          pl.lit(0, dtype=pl.Int64).alias("n"), pl.lit(0, dtype=pl.Int64).alias("k"))]
                    ).sort("prompt", "step").with_columns(pl.col("prompt").rank("dense").cast(pl.Int64).alias("code"))
    hist = visit_history(ext["code"].to_numpy(), ext["step"].to_numpy(), ext["n"].to_numpy(), ext["k"].to_numpy(),
                         [rp.half_life_final])
    at_next = ext["step"].to_numpy() == next_step
    cells = groups.group_by("n", "k").agg(pl.len().alias("c")).sort("n", "k")
    prior = prior_of_pairs(cells["n"].to_numpy(), cells["k"].to_numpy(), cells["c"].to_numpy())
    sf = silent_forecast(hist.n_eff[0, at_next], hist.k_eff[0, at_next], prior, G)
    silent, aw, ac = sf.silent, sf.all_wrong, sf.all_correct
    sizes = groups["n"].unique()
    recalibrated = sizes.len() == 1 and int(sizes[0]) == G  # the map was fitted at the logged size only
    if recalibrated:
        share = np.divide(aw, silent, out=np.full(silent.size, 0.5), where=silent > 0)
        silent = recalibrate(silent, branch_skew(aw, ac), rp.recalibration)
        aw, ac = silent * share, silent * (1.0 - share)
    table = (ext.filter(pl.Series(at_next)).select("prompt")
             .join(ghost, on="prompt", how="left")
             .with_columns(pl.Series("p_estimate", sf.p_mean), pl.Series("p_silent", silent),
                           pl.Series("p_all_wrong", aw), pl.Series("p_all_correct", ac),
                           pl.Series("expected_useful_rollouts", G * (1.0 - silent)))
             .sort(["p_silent", "prompt"], descending=[True, False]))
    return table, prior.kind, recalibrated


def _skip_list(
    ps: NDArray[np.float64], max_p_silent: float | None, target_saving: float | None
) -> tuple[str, float | None, NDArray[np.bool_]]:
    """The skip rule's name, its P(silent) threshold and the prompts it skips, for P(silent) ``ps``
    sorted descending: above ``max_p_silent``, or the most likely silent until ``target_saving`` of
    the prompts (ties skipped together); nothing when neither is given."""
    M = ps.size
    rule, threshold = "none", None
    skip = np.zeros(M, dtype=bool)
    if max_p_silent is not None:
        rule, threshold = "max-p-silent", float(max_p_silent)
        skip = ps > max_p_silent
    elif target_saving is not None:
        rule = "target-saving"
        m = int(np.ceil(target_saving * M - 1e-9))
        skip[:m] = True
        while 0 < m < M and ps[m] == ps[m - 1]:  # a threshold skips ties together
            skip[m] = True
            m += 1
        threshold = float(ps[m]) if m < M else float(ps[-1]) - 1e-12 if M else None
        if m == 0:
            threshold = float(ps[0]) if M else None
    return rule, threshold, skip


def ahead_by_step(per_group: pl.DataFrame) -> pl.DataFrame:
    """Per logged step: groups, observed silent share (at the logged sizes), the mean one-step-ahead
    forecast of it (null at the first step) and the naive baseline (the previous step's share). For ``trend``."""
    rp = replay(per_group)
    return (rp.groups.group_by("step")
            .agg(pl.len().alias("groups"), pl.col("outcome").mean().alias("observed"),
                 pl.when(pl.col("scored")).then(pl.col("forecast")).mean().alias("forecast"),
                 pl.col("naive").mean())
            .sort("step"))
