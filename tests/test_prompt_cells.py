"""The load counts each (prompt, group size) cell of the logged groups once (``loaders.assemble.prompt_cells``):
the per-prompt sums are summed from those cells, and the drift test reads them instead of grouping every logged
group again (issue 45: one group-by over the 82M-row log's 5.12M groups, 1.1 s CPU, instead of two). Checked on
random logs against a brute-force count of the rows, and the drift test against its own group-by."""

from __future__ import annotations

import collections
import math

import numpy as np
import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st

from sigmaudit.audits.drift import gap_of, silent_gap
from sigmaudit.errors import SigmauditError
from sigmaudit.loaders import LoadOptions, load_counts
from sigmaudit.loaders.options import PROMPT_CELLS
from sigmaudit.loaders.window import cut


def _log(rng: np.random.Generator, rows: int, steps: int) -> pl.DataFrame:
    reward = rng.choice([0.0, 1.0, 1.0, np.nan], rows, p=[0.45, 0.25, 0.25, 0.05])
    reward = np.where(rng.random(rows) < 0.03, None, reward)  # nulls beside NaN: both missing
    return pl.DataFrame({"step": rng.integers(0, steps, rows), "prompt": [f"q{i}" for i in rng.integers(0, 9, rows)],
                         "reward": pl.Series(reward.tolist(), dtype=pl.Float64)})


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), rows=st.integers(1, 300), steps=st.integers(1, 6), files=st.integers(1, 3))
def test_per_prompt_sums_and_the_drift_cells_are_the_brute_force_counts(tmp_path_factory, seed, rows, steps, files):
    rng = np.random.default_rng(seed)
    folder = tmp_path_factory.mktemp("log")
    frames = [_log(rng, rows, steps) for _ in range(files)]  # several files may split one group: summed
    for i, frame in enumerate(frames):
        frame.write_parquet(folder / f"part{i}.parquet")
    opts = LoadOptions(prompt_col="prompt", step_col="step", reward_col="reward", keep_duplicates=True, shards=True)
    try:
        loaded = load_counts(sorted(folder.glob("*.parquet")), opts)
    except SigmauditError as exc:  # every reward missing: refused, as a brute force says it must be
        assert "every reward is missing" in str(exc)
        assert all(r is None or math.isnan(r) for f in frames for r in f["reward"].to_list())
        return
    n, k = collections.Counter(), collections.Counter()
    group_n, group_k = collections.Counter(), collections.Counter()
    for frame in frames:
        for step, prompt, reward in frame.iter_rows():
            if reward is not None and not math.isnan(reward):
                n[prompt] += 1
                k[prompt] += int(reward == 1.0)
                group_n[step, prompt] += 1
                group_k[step, prompt] += int(reward == 1.0)
    want = sorted((p, n[p], k[p]) for p in n)
    missing = sum(r is None or math.isnan(r) for f in frames for r in f["reward"].to_list())
    assert (loaded.missing_rewards, loaded.n_rows) == (missing, sum(f.height for f in frames))  # missing = rows − n
    assert list(loaded.per_prompt.select("prompt", "n", "k").iter_rows()) == want
    cells = collections.Counter()
    for key, size in group_n.items():
        cells[key[1], size] += 1
    counted = loaded.cache[PROMPT_CELLS]
    assert counted[0] is loaded.per_group
    got = {(r["prompt"], r["n"]): r["groups"] for r in counted[1].iter_rows(named=True)}
    assert got == dict(cells)
    assert gap_of(loaded) is not None
    assert (gap_of(loaded).observed, gap_of(loaded).predicted, gap_of(loaded).statistic,
            gap_of(loaded).groups) == silent_gap(loaded.per_group)  # the drift test's own group-by, to the last bit


def test_a_window_does_not_read_the_whole_logs_cells(tmp_path):
    """A cut load holds other groups: its drift test counts its own cells (the cells are tied to their frame)."""
    rng = np.random.default_rng(3)
    path = tmp_path / "log.parquet"
    _log(rng, 4000, 40).write_parquet(path)
    loaded = load_counts(path, LoadOptions(prompt_col="prompt", step_col="step", reward_col="reward"))
    window = cut(loaded, last_steps=5)
    assert PROMPT_CELLS not in window.cache
    gap = gap_of(window)
    assert gap.groups == window.per_group.height < loaded.per_group.height
    assert (gap.observed, gap.predicted, gap.statistic, gap.groups) == silent_gap(window.per_group)
