"""What the logged groups did: the silent, all-wrong and all-correct shares of the groups a log holds (when group
membership is known), overall and step by step, beside the estimate from the per-prompt counts, and the statistical
test for a post-filter dump built on them (no logged group silent although many are expected).

``scan`` reports these (:attr:`sigmaudit.audits.scan.ScanReport.observed_silent`); ``check``, ``plan``, ``trend``,
``forecast`` and ``backtest`` use the post-filter test (:func:`filtered_of`). Apart from :mod:`.scan`, so a gate
imports none of the scan's other result types (each frozen dataclass costs its import ~0.5 ms).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from ..loaders.options import Filtered

if TYPE_CHECKING:
    import polars as pl

    from ..core.corpus import Corpus
    from ..loaders import LoadedCounts

FILTERED_MIN_EXPECTED = 5.0
"""A log looks filtered when it holds no silent group although at least this many are expected."""


@dataclass(frozen=True)
class StepSilent:
    """What the logged groups of one training step did."""

    step: int
    """The step."""
    groups: int
    """Groups logged at this step."""
    fraction: float
    """Share of them that were silent (k = 0 or k = n)."""
    all_wrong: float
    """Share with k = 0."""
    all_correct: float
    """Share with k = n."""
    rollout_share: float
    """Share of the step's rollouts in silent groups."""
    token_share: float | None = None
    """Share of the step's generated tokens in silent groups (None: tokens not known)."""


@dataclass(frozen=True)
class ObservedSilent:
    """Silent fraction of the groups actually logged (only when group membership is known)."""

    G: int
    """Most common logged group size."""
    groups: int
    """Groups logged (all sizes)."""
    fraction: float
    """Share of logged groups whose answers all agree (k = 0 or k = n)."""
    all_wrong: float
    """Share of logged groups with k = 0."""
    all_correct: float
    """Share of logged groups with k = n."""
    rollout_share: float
    """Share of logged rollouts that sit in silent groups."""
    all_wrong_rollout_share: float
    """Share of logged rollouts in all-wrong groups."""
    all_correct_rollout_share: float
    """Share of logged rollouts in all-correct groups."""
    expected: float
    """Default estimate of the silent rate at ``G`` from the per-prompt counts (mean over prompts)."""
    expected_estimator: str
    """Estimator of ``expected``: ``unbiased`` or ``bayes``."""
    expected_groups: float
    """``expected`` × ``groups``: silent groups an unfiltered log of this size should hold."""
    by_step: tuple[StepSilent, ...] = ()
    """The same shares step by step, in step order (empty when the log has no steps)."""
    zero_spread: float | None = None
    """With ``--threshold`` (shaped rewards): share of logged groups whose raw rewards all agree (zero
    spread: no gradient at all). ``fraction`` is then silence on correctness (all on one side of the
    threshold), which a format bonus can break without any gradient. None: rewards were read as 0/1."""
    zero_spread_rollout_share: float | None = None
    """Share of logged rollouts in zero-spread groups (None as ``zero_spread``)."""
    token_fraction: float | None = None
    """Share of the generated tokens of the logged rollouts (those with a reward) that sit in silent groups;
    None when the log carries no token counts (``token_source``) or some rollout has none (``tokens_missing``)."""
    all_wrong_token_share: float | None = None
    """Part of ``token_fraction`` in all-wrong groups."""
    all_correct_token_share: float | None = None
    """Part of ``token_fraction`` in all-correct groups."""
    zero_spread_token_share: float | None = None
    """With ``--threshold``: share of the generated tokens in zero-spread groups (None as ``token_fraction``)."""
    tokens: int | None = None
    """Generated tokens of the logged rollouts with a reward (None: not known)."""
    tokens_missing: int = 0
    """Logged rollouts with a reward but no length (the token shares are then None)."""
    token_source: str | None = None
    """Where each rollout's generated tokens came from (None: the log carries no token counts; a character
    count of logged text is not a token count)."""


MODE_BINCOUNT_MAX = 1 << 20
"""Non-negative integers up to this are counted with ``np.bincount`` in :func:`most_common`."""


def most_common(values: NDArray[np.int64]) -> int:
    """Most common value; the smallest among ties."""
    values = np.asarray(values)
    if values.size and values.dtype.kind in "iu" and 0 <= values.min() and values.max() <= MODE_BINCOUNT_MAX:
        return int(np.argmax(np.bincount(values)))  # group sizes: a count per value, no sort of every group
    uniq, counts = np.unique(values, return_counts=True)
    return int(uniq[np.argmax(counts)])


def observed_silent(loaded: LoadedCounts, corpus: Corpus) -> ObservedSilent | None:
    """The shares the logged groups of ``loaded`` show (None without groups), with the estimate at their most
    common size from ``corpus`` (the load's per-prompt counts)."""
    frame = loaded.per_group
    if frame is None or frame.height == 0:
        return None
    n = frame["n"].to_numpy()
    G = most_common(n)
    groups = int(n.size)
    # a single-G figure: check's per-G estimator rule, not the silent table's one estimator per sweep
    expected, expected_estimator = expected_silent(corpus, G)
    return ObservedSilent(
        G=G,
        groups=groups,
        **group_shares(frame),
        by_step=observed_by_step(frame) if loaded.has_steps else (),
        **_zero_spread(frame, n),
        **_token_shares(frame, loaded.length_source),
        expected=expected,
        expected_estimator=expected_estimator,
        expected_groups=expected * groups,
    )


def group_shares(frame: pl.DataFrame) -> dict[str, float]:
    """The shares of logged groups (``n, k``) silent, all wrong (k = 0) and all correct (k = n), of groups and of
    rollouts: ratios of integer counts Polars makes in one pass (numpy's masks over 5M groups cost 0.3 s)."""
    import polars as pl

    k, size = pl.col("k"), pl.col("n")
    wrong, full = k == 0, (k == size) & (k > 0)
    counts = dict(zip(("w", "c", "f", "n", "nw", "nc"), map(int, frame.select(
        wrong.sum().alias("w"), (k == size).sum().alias("c"), full.sum().alias("f"), size.sum().alias("n"),
        size.filter(wrong).sum().alias("nw"), size.filter(full).sum().alias("nc")).row(0)), strict=True))
    groups, rollouts = frame.height, counts["n"]
    return {"fraction": (counts["w"] + counts["f"]) / groups, "all_wrong": counts["w"] / groups,
            "all_correct": counts["c"] / groups, "rollout_share": (counts["nw"] + counts["nc"]) / rollouts,
            "all_wrong_rollout_share": counts["nw"] / rollouts, "all_correct_rollout_share": counts["nc"] / rollouts}


def expected_silent(corpus: Corpus, G: int) -> tuple[float, str]:
    """:func:`sigmaudit.audits.scan.silent_row`'s ``estimate`` and ``estimator`` at G alone: the other estimators
    are not computed (the model-based one fits the corpus prior, which a gate on an unbiased figure never needs:
    ``check --by`` paid that fit for each value)."""
    from ..core.estimates import resolve

    est = corpus.silent(G, resolve("silent_rate", int(G), "auto", corpus.min_samples))  # type: ignore[arg-type]
    if est.silent_rate is None:  # unbiased where some prompt has n < G: undefined
        est = corpus.silent(G, "bayes")
    return float(est.silent_rate), est.estimator  # type: ignore[arg-type]


def zero_spread_mask(per_group: pl.DataFrame) -> NDArray[np.bool_] | None:
    """Which logged groups had raw rewards of zero spread (None when the load did not keep the range)."""
    if "rmin" not in per_group.columns:
        return None
    return (per_group["rmin"] == per_group["rmax"]).fill_null(False).to_numpy()


def _zero_spread(frame: pl.DataFrame, n: NDArray[np.int64]) -> dict[str, float | None]:
    flat = zero_spread_mask(frame)
    if flat is None:
        return {}
    return {"zero_spread": float(flat.mean()), "zero_spread_rollout_share": float(n[flat].sum() / n.sum())}


def _token_shares(frame: pl.DataFrame, source: str | None) -> dict[str, Any]:
    """The shares of the logged groups' generated tokens in silent (all-wrong, all-correct, zero-spread)
    groups: each group's tokens over the rollouts with a reward, summed; None where tokens are not known."""
    if source is None or "tokens" not in frame.columns:
        return {}
    missing = int(frame["tokens_missing"].sum())
    tokens = frame["tokens"].to_numpy().astype(np.int64)
    total = int(tokens.sum())
    out: dict[str, Any] = {"token_source": source, "tokens_missing": missing, "tokens": None if missing else total}
    if missing or total == 0:
        return out
    n, k = frame["n"].to_numpy(), frame["k"].to_numpy()
    flat = zero_spread_mask(frame)
    return out | {"token_fraction": float(tokens[(k == 0) | (k == n)].sum() / total),
                  "all_wrong_token_share": float(tokens[k == 0].sum() / total),
                  "all_correct_token_share": float(tokens[(k == n) & (k > 0)].sum() / total),
                  "zero_spread_token_share": None if flat is None else float(tokens[flat].sum() / total)}


STEP_SLICE = 1 << 20
"""Logged groups counted at once by :func:`observed_by_step` (its temporaries stay small: a pass over 5M groups at
once spent more in fresh memory than in counting)."""


def observed_by_step(per_group: pl.DataFrame) -> tuple[StepSilent, ...]:
    """What the logged groups (``step, n, k``, ``tokens, tokens_missing`` when known) did, step by step (groups
    without a step left out). Counted with numpy (``np.bincount`` over the steps, :data:`STEP_SLICE` groups at a
    time; a Polars group-by over 5M groups took 0.5-0.6 s): every share is a ratio of exact integer counts, as a
    Polars group-by's means and sums give."""
    import polars as pl

    frame = per_group.filter(pl.col("step").is_not_null()) if per_group["step"].null_count() else per_group
    if frame.height == 0:
        return ()
    first, last = int(frame["step"].min()), int(frame["step"].max())  # type: ignore[arg-type]
    steps = np.arange(first, last + 1, dtype=np.int64) if last - first < 2 * frame.height else (
        np.unique(frame["step"].to_numpy()))  # steps of a run: a count for each step from first to last
    tokens = "tokens" in frame.columns
    sums = np.zeros((5 if tokens else 3, steps.size))  # rollouts, silent rollouts[, tokens, silent tokens, missing]
    kinds = np.zeros(3 * steps.size, dtype=np.int64)  # per step: groups informative, all wrong, all correct
    for part in frame.iter_slices(STEP_SLICE):
        step = part["step"].to_numpy()
        index = step - first if steps.size == last - first + 1 else np.searchsorted(steps, step)
        n, k = part["n"].to_numpy(), part["k"].to_numpy()
        wrong = k == 0
        kind = np.where(wrong, 1, np.where(k == n, 2, 0))
        kinds += np.bincount(3 * index + kind, minlength=kinds.size)
        silent = kind > 0
        columns = [n, np.where(silent, n, 0)]
        if tokens:
            spent = part["tokens"].to_numpy()
            columns += [spent, np.where(silent, spent, 0), part["tokens_missing"].to_numpy()]
        for row, values in enumerate(columns):  # float sums of integers below 2^53: exact
            sums[row] += np.bincount(index, weights=values.astype(np.float64), minlength=steps.size)
    per_kind = kinds.reshape(steps.size, 3)
    groups = per_kind.sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        shares = [(per_kind[:, 1] + per_kind[:, 2]) / groups, per_kind[:, 1] / groups, per_kind[:, 2] / groups,
                  sums[1] / sums[0], np.where(sums[4] == 0, sums[3] / sums[2], np.nan) if tokens else None]
    kept = np.flatnonzero(groups > 0)
    token = shares[4][kept].tolist() if tokens else [math.nan] * kept.size  # type: ignore[index]
    return tuple(StepSilent(s, g, fraction, wrong, correct, rollouts, None if math.isnan(t) else t)
                 for s, g, fraction, wrong, correct, rollouts, t in zip(
                     steps[kept].tolist(), groups[kept].tolist(), *(v[kept].tolist() for v in shares[:4]), token,
                     strict=True))


def statistical_filter(loaded: LoadedCounts) -> Filtered | None:
    """The statistical post-filter test (:func:`filtered_warning`) as a :class:`Filtered`, or None."""
    if loaded.per_group is None or loaded.per_group.height == 0:
        return None
    from . import corpus_of

    warning = filtered_warning(observed_silent(loaded, corpus_of(loaded)))
    return None if warning is None else Filtered("statistics", warning)


def filtered_of(loaded: LoadedCounts, post_filter: bool = False) -> Filtered | None:
    """Whether ``loaded`` is a post-filter dump, and why: the dump's own marker, else ``--post-filter``,
    else the statistical test (:func:`sigmaudit.audits.filtered.resolve`)."""
    import functools

    from .filtered import resolve

    return resolve(loaded, post_filter, functools.partial(statistical_filter, loaded))


def filtered_warning(obs: ObservedSilent | None) -> str | None:
    if obs is None:
        return None
    silent_groups = round(obs.fraction * obs.groups)
    if silent_groups == 0 and obs.expected_groups >= FILTERED_MIN_EXPECTED:
        return (
            f"the log looks filtered: none of its {obs.groups} groups is silent, but about "
            f"{obs.expected_groups:.0f} are expected at G = {obs.G} ({obs.expected_estimator}); "
            "dynamic-sampling (DAPO) dumps drop silent groups, so silent rates read from it are understated"
        )
    return None
