"""Large step-ordered parquet logs are reduced in step ranges: same counts, same order as one pass."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from polars.testing import assert_frame_equal

from sigmaudit.loaders import load_counts
from sigmaudit.loaders import reduce as reduce_mod


def _log(path, *, shuffle: bool, null_steps: bool) -> None:
    rng = np.random.default_rng(3)
    steps = np.repeat(np.arange(12), 40)
    prompts = [f"p{i}" for i in rng.integers(0, 9, steps.size)]
    reward = rng.integers(0, 2, steps.size).astype(float)
    reward[::17] = np.nan
    df = pl.DataFrame({"step": steps, "prompt_id": prompts, "reward": reward})
    if null_steps:  # a few rows in every row group lose their step
        df = df.with_columns(pl.when(pl.int_range(pl.len()) % 23 == 0).then(None)
                             .otherwise(pl.col("step")).alias("step"))
    if shuffle:
        df = df.sample(fraction=1.0, shuffle=True, seed=1)
    df.write_parquet(path, row_group_size=50)


@pytest.mark.parametrize(("shuffle", "null_steps"), [(False, False), (False, True), (True, False)])
def test_step_ranges_match_one_pass(tmp_path, monkeypatch, shuffle, null_steps):
    path = tmp_path / "log.parquet"
    _log(path, shuffle=shuffle, null_steps=null_steps)
    whole = load_counts([path])
    monkeypatch.setattr(reduce_mod, "CHUNK_ROWS", 60)
    chunked = load_counts([path])
    assert_frame_equal(chunked.per_group, whole.per_group)
    assert_frame_equal(chunked.per_prompt, whole.per_prompt)
    assert (chunked.n_rows, chunked.missing_rewards) == (whole.n_rows, whole.missing_rewards)


def test_ranges_only_for_step_ordered_files(tmp_path, monkeypatch):
    from sigmaudit.loaders.detect import detect
    from sigmaudit.loaders.options import LoadOptions
    from sigmaudit.loaders.readers import scan

    monkeypatch.setattr(reduce_mod, "CHUNK_ROWS", 60)
    for shuffle, null_steps, expect in ((False, False, True), (False, True, True), (True, False, False)):
        path = tmp_path / f"log{shuffle}{null_steps}.parquet"
        _log(path, shuffle=shuffle, null_steps=null_steps)
        src = scan(path, tmp_path)
        ranges = reduce_mod.step_ranges(src, detect(src.schema, LoadOptions(), str(path)))
        assert (ranges is not None) == expect
        if ranges:
            assert len(ranges) > 2


def test_progress_ticks_per_step_range(monkeypatch, tmp_path):
    """A big step-ordered log reports its rows after each step range, ending at the total."""
    monkeypatch.setattr(reduce_mod, "CHUNK_ROWS", 100)
    path = tmp_path / "steps.parquet"
    steps = [s for s in range(10) for _ in range(40)]
    pl.DataFrame({"step": steps, "prompt_id": [f"p{i % 5}" for i in range(400)],
                  "reward": [i % 2 for i in range(400)]}).write_parquet(path, row_group_size=40)
    ticks: list[int] = []
    load_counts([path], progress=ticks.append)
    assert len(ticks) > 2 and ticks == sorted(ticks) and ticks[-1] == 400
