"""scan's per-step observed shares (``observed_silent.by_step``) are counted with numpy (issue 45: a Polars group-by
over the 82M-row log's 5.12M groups took 0.6 s CPU). Checked against that group-by, kept here as the reference, on
random logged groups: equal to the last bit, step by step, with and without token counts, null steps and
steps far apart."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st

from sigmaudit.audits.observed import StepSilent, observed_by_step


def _by_polars(per_group: pl.DataFrame) -> tuple[StepSilent, ...]:
    """The group-by observed_by_step ran before issue 45."""
    silent = (pl.col("k") == 0) | (pl.col("k") == pl.col("n"))
    tokens = ()
    if "tokens" in per_group.columns:
        share = pl.col("tokens").filter(silent).sum() / pl.col("tokens").sum()
        tokens = (pl.when(pl.col("tokens_missing").sum() == 0).then(share).otherwise(None).alias("token_share"),)
    frame = (per_group.filter(pl.col("step").is_not_null()).group_by("step")
             .agg(pl.len().alias("groups"), silent.mean().alias("fraction"),
                  (pl.col("k") == 0).mean().alias("all_wrong"),
                  ((pl.col("k") == pl.col("n")) & (pl.col("k") > 0)).mean().alias("all_correct"),
                  (pl.col("n").filter(silent).sum() / pl.col("n").sum()).alias("rollout_share"), *tokens)
             .sort("step"))
    return tuple(StepSilent(int(r[0]), int(r[1]), float(r[2]), float(r[3]), float(r[4]), float(r[5]),
                            None if len(r) < 7 or r[6] is None or math.isnan(r[6]) else float(r[6]))
                 for r in frame.iter_rows())


@settings(max_examples=80, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), groups=st.integers(1, 400), spread=st.sampled_from([3, 50, 10**9]),
       tokens=st.booleans(), nulls=st.booleans())
def test_per_step_shares_are_the_group_bys_to_the_last_bit(seed, groups, spread, tokens, nulls):
    rng = np.random.default_rng(seed)
    n = rng.integers(1, 17, groups)
    k = np.minimum(n, rng.integers(0, 17, groups) * rng.integers(0, 2, groups))
    step = rng.integers(-spread, spread, groups)
    frame = pl.DataFrame({"step": step, "prompt": [f"p{i % 7}" for i in range(groups)], "n": n, "k": k})
    if nulls:
        frame = frame.with_columns(pl.when(pl.Series(rng.random(groups) < 0.2)).then(None)
                                   .otherwise(pl.col("step")).alias("step"))
    if tokens:
        frame = frame.with_columns(tokens=pl.Series(rng.integers(0, 3, groups) * rng.integers(0, 500, groups)),
                                   tokens_missing=pl.Series((rng.random(groups) < 0.05).astype(np.int64)))
    got, want = observed_by_step(frame), _by_polars(frame)
    assert [s.step for s in got] == sorted({int(s) for s in frame["step"].drop_nulls()})
    assert got == want  # dataclass equality: every field, floats exactly (NaN never occurs: n >= 1)
    assert sum(s.groups for s in got) == frame["step"].drop_nulls().len()


def _shares_by_numpy(frame: pl.DataFrame) -> dict[str, float]:
    """How scan's observed shares were computed before issue 45 (numpy masks over every group)."""
    n, k = frame["n"].to_numpy().astype(np.int64), frame["k"].to_numpy().astype(np.int64)
    silent, groups = (k == 0) | (k == n), int(n.size)
    return {"fraction": float(silent.sum() / groups), "all_wrong": float((k == 0).sum() / groups),
            "all_correct": float((k == n).sum() / groups), "rollout_share": float(n[silent].sum() / n.sum()),
            "all_wrong_rollout_share": float(n[k == 0].sum() / n.sum()),
            "all_correct_rollout_share": float(n[(k == n) & (k > 0)].sum() / n.sum())}


@settings(max_examples=80, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), groups=st.integers(1, 3000), zeros=st.booleans())
def test_the_logs_shares_are_the_numpy_masks_to_the_last_bit(seed, groups, zeros):
    """group_shares (one Polars pass) against the masks it replaced, groups of n = 0 (all missing) included."""
    from sigmaudit.audits.observed import group_shares

    rng = np.random.default_rng(seed)
    n = rng.integers(0 if zeros else 1, 33, groups)
    n[0] = max(n[0], 1)  # some rollout
    k = np.where(rng.random(groups) < 0.4, rng.choice([0, 1], groups) * n, rng.integers(0, 33, groups) % (n + 1))
    frame = pl.DataFrame({"n": n, "k": k})
    assert group_shares(frame) == _shares_by_numpy(frame)
