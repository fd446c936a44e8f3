"""Generic layouts (long, grouped, counts), file formats and path handling, against hand counts."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import polars as pl
import pytest
import zstandard
from polars.testing import assert_frame_equal

from sigmaudit.errors import ConfigError, InputError, SchemaError
from sigmaudit.loaders import LoadOptions, load_counts


def prompts(rows: list[tuple[str, int, int]]) -> pl.DataFrame:
    return pl.DataFrame(rows, schema={"prompt": pl.Utf8, "n": pl.Int64, "k": pl.Int64},
                        orient="row")


def groups(rows: list[tuple[int | None, str, int, int]]) -> pl.DataFrame:
    return pl.DataFrame(rows, schema={"step": pl.Int64, "prompt": pl.Utf8, "n": pl.Int64,
                                      "k": pl.Int64}, orient="row")


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


LONG = pl.DataFrame({"prompt_id": ["a", "a", "a", "b", "c", "c"],
                     "reward": [1, 0, 1, 0, 1, 1]})


def test_long_csv_without_steps_has_no_groups(tmp_path):
    LONG.write_csv(tmp_path / "log.csv")
    lc = load_counts([tmp_path / "log.csv"], LoadOptions())
    assert_frame_equal(lc.per_prompt, prompts([("a", 3, 2), ("b", 1, 0), ("c", 2, 2)]))
    assert lc.per_group is None
    assert (lc.layout, lc.n_rows, lc.missing_rewards, lc.reward_source) == ("long", 6, 0, "reward")
    assert lc.n_single_sample_prompts == 1
    assert "1 prompt has a single sample (counted; its p̂ is 0 or 1)" in lc.notes
    assert lc.notes[0].startswith("detected long layout: prompt = prompt_id")
    assert not lc.has_steps


def test_long_parquet_with_steps_groups_by_step_and_prompt(tmp_path):
    df = pl.DataFrame({"global_step": [1, 1, 1, 2, 2, 2, 2],
                       "question": ["x", "x", "y", "x", "x", "y", "y"],
                       "score": [1.0, 0.0, 0.0, 1.0, 1.0, 1.0, 0.0]})
    df.write_parquet(tmp_path / "log.parquet")
    lc = load_counts([tmp_path / "log.parquet"], LoadOptions())
    assert_frame_equal(lc.per_group, groups([(1, "x", 2, 1), (1, "y", 1, 0), (2, "x", 2, 2),
                                             (2, "y", 2, 1)]))
    assert_frame_equal(lc.per_prompt, prompts([("x", 4, 3), ("y", 3, 1)]))
    assert lc.has_steps and lc.reward_source == "score"


def test_group_id_missing_rewards_and_plus_minus_one(tmp_path):
    df = pl.DataFrame({"uid": ["g1", "g1", "g1", "g2", "g2", "g3", "g3"],
                       "prompt": ["p", "p", "p", "p", "p", "q", "q"],
                       "reward": [1.0, -1.0, None, -1.0, -1.0, 1.0, float("nan")]})
    path = tmp_path / "log.parquet"
    df.write_parquet(path)
    lc = load_counts([path])
    assert lc.missing_rewards == 2
    assert lc.n_rows == 7
    assert_frame_equal(lc.per_prompt, prompts([("p", 4, 1), ("q", 1, 1)]))
    assert_frame_equal(lc.per_group, groups([(None, "p", 2, 1), (None, "p", 2, 0),
                                             (None, "q", 1, 1)]))
    assert any("2 missing" in n for n in lc.notes)


def test_booleans_and_threshold(tmp_path):
    pl.DataFrame({"task_id": ["a", "a", "b"], "is_correct": [True, False, True]}).write_parquet(
        tmp_path / "b.parquet")
    assert_frame_equal(load_counts([tmp_path / "b.parquet"]).per_prompt,
                       prompts([("a", 2, 1), ("b", 1, 1)]))
    pl.DataFrame({"task_id": ["a", "a", "b"], "reward": [0.2, 0.8, 0.5]}).write_csv(
        tmp_path / "r.csv")
    with pytest.raises(SchemaError) as err:
        load_counts([tmp_path / "r.csv"])
    assert "values such as 0.2, 0.5, 0.8); pass --threshold" in err.value.one_line()
    lc = load_counts([tmp_path / "r.csv"], LoadOptions(threshold=0.5))
    assert_frame_equal(lc.per_prompt, prompts([("a", 2, 1), ("b", 1, 1)]))


@pytest.mark.parametrize("name", ["log.csv.gz", "log.jsonl.gz", "log.jsonl.zst", "log.csv.zst",
                                  "log.ndjson"])
def test_compressed_and_ndjson(tmp_path, name):
    if ".csv" in name:
        raw = LONG.write_csv().encode()
    else:
        raw = LONG.write_ndjson().encode()
    if name.endswith(".gz"):
        raw = gzip.compress(raw)
    elif name.endswith(".zst"):
        raw = zstandard.ZstdCompressor().compress(raw)
    (tmp_path / name).write_bytes(raw)
    before = (tmp_path / name).read_bytes()
    lc = load_counts([tmp_path / name])
    assert_frame_equal(lc.per_prompt, prompts([("a", 3, 2), ("b", 1, 0), ("c", 2, 2)]))
    assert (tmp_path / name).read_bytes() == before


def test_csv_comment_header_lines_are_skipped(tmp_path):
    path = tmp_path / "c.csv"
    path.write_text('"# source: somewhere, with a comma"\n# second comment\n'
                    "problem_id,sample_idx,correct\nx,0,1\nx,1,0\n")
    assert_frame_equal(load_counts([path]).per_prompt, prompts([("x", 2, 1)]))


def test_grouped_list_column(tmp_path):
    df = pl.DataFrame({"step": [3, 3, 4], "prompt_id": ["a", "b", "a"],
                       "rewards": [[1, 0, 1, 1], [0, 0, None, 0], [1, 1, 1, 1]]})
    df.write_parquet(tmp_path / "g.parquet")
    lc = load_counts([tmp_path / "g.parquet"])
    assert lc.layout == "grouped"
    assert_frame_equal(lc.per_group, groups([(3, "a", 4, 3), (3, "b", 3, 0), (4, "a", 4, 4)]))
    assert_frame_equal(lc.per_prompt, prompts([("a", 8, 7), ("b", 3, 0)]))
    assert (lc.n_rows, lc.missing_rewards) == (12, 1)


def test_grouped_without_step_keeps_each_row_as_a_group(tmp_path):
    write_jsonl(tmp_path / "g.jsonl", [{"problem": "a", "correct": [True, False]},
                                       {"problem": "a", "correct": [True, True]}])
    lc = load_counts([tmp_path / "g.jsonl"])
    assert_frame_equal(lc.per_group, groups([(None, "a", 2, 1), (None, "a", 2, 2)]))
    assert_frame_equal(lc.per_prompt, prompts([("a", 4, 3)]))


def test_counts_n_k_and_steps(tmp_path):
    pl.DataFrame({"step": [1, 1, 2], "prompt_id": ["a", "b", "a"], "num_samples": [8, 8, 8],
                  "num_correct": [0, 8, 3]}).write_csv(tmp_path / "c.csv")
    lc = load_counts([tmp_path / "c.csv"])
    assert lc.layout == "counts" and lc.reward_source == "num_correct"
    assert_frame_equal(lc.per_group, groups([(1, "a", 8, 0), (1, "b", 8, 8), (2, "a", 8, 3)]))
    assert_frame_equal(lc.per_prompt, prompts([("a", 16, 3), ("b", 8, 8)]))


def test_counts_without_step_have_no_groups(tmp_path):
    pl.DataFrame({"task_id": ["a", "b"], "n": [4, 2], "k": [1, 2]}).write_csv(tmp_path / "c.csv")
    lc = load_counts([tmp_path / "c.csv"])
    assert lc.per_group is None
    assert_frame_equal(lc.per_prompt, prompts([("a", 4, 1), ("b", 2, 2)]))


def test_pass_rate_with_samples_option_and_n_column(tmp_path):
    pl.DataFrame({"prompt_id": ["a", "b", "c"], "solve_rate": [0.0, 0.375, 1.0]}).write_csv(
        tmp_path / "r.csv")
    lc = load_counts([tmp_path / "r.csv"], LoadOptions(samples=8))
    assert_frame_equal(lc.per_prompt, prompts([("a", 8, 0), ("b", 8, 3), ("c", 8, 8)]))
    pl.DataFrame({"prompt_id": ["a", "b"], "total": [3, 64],
                  "pass_rate": [0.3333, 0.3281]}).write_csv(tmp_path / "t.csv")
    lc = load_counts([tmp_path / "t.csv"])  # 4-decimal rates: 1/3 of 3, 21/64 of 64
    assert_frame_equal(lc.per_prompt, prompts([("a", 3, 1), ("b", 64, 21)]))


def test_several_runs_share_a_counts_file(tmp_path):
    pl.DataFrame({"run": ["r1", "r1", "r2"], "task_id": ["t1", "t2", "t1"],
                  "n_samples": [10, 10, 10], "n_correct": [1, 2, 3]}).write_csv(tmp_path / "c.csv")
    lc = load_counts([tmp_path / "c.csv"])
    assert_frame_equal(lc.per_prompt, prompts([("r1 | t1", 10, 1), ("r1 | t2", 10, 2),
                                               ("r2 | t1", 10, 3)]))
    assert "several runs share this file" in lc.notes[0]
    merged = load_counts([tmp_path / "c.csv"], LoadOptions(prompt_col="task_id"))
    assert_frame_equal(merged.per_prompt, prompts([("t1", 20, 4), ("t2", 10, 2)]))


def test_overrides_and_unknown_columns(tmp_path):
    pl.DataFrame({"item": ["a", "a"], "reward": [1, 1], "verdict": [0, 1]}).write_csv(
        tmp_path / "o.csv")
    lc = load_counts([tmp_path / "o.csv"], LoadOptions(prompt_col="item", reward_col="verdict"))
    assert_frame_equal(lc.per_prompt, prompts([("a", 2, 1)]))
    assert lc.reward_source == "verdict"
    with pytest.raises(SchemaError) as err:
        load_counts([tmp_path / "o.csv"], LoadOptions(reward_col="nope"))
    assert "'nope' not found; columns: item, reward, verdict" in err.value.one_line()
    with pytest.raises(ConfigError, match="samples"):
        load_counts([tmp_path / "o.csv"], LoadOptions(samples=0))


def test_directories_globs_and_skips(tmp_path):
    (tmp_path / "run" / "step_1").mkdir(parents=True)
    (tmp_path / "run" / "step_2").mkdir()
    LONG.with_columns(step=pl.lit(1)).write_parquet(tmp_path / "run" / "step_1" / "part.parquet")
    LONG.with_columns(step=pl.lit(2)).write_parquet(tmp_path / "run" / "step_2" / "part.parquet")
    (tmp_path / "run" / "README.txt").write_text("not a log")
    seen: list[int] = []
    lc = load_counts([tmp_path / "run", str(tmp_path / "run" / "*" / "*.parquet")],
                     progress=seen.append)
    assert len(lc.files) == 2  # the glob names the same files again: read once
    assert seen == [6, 12]
    assert_frame_equal(lc.per_prompt, prompts([("a", 6, 4), ("b", 2, 0), ("c", 4, 4)]))
    assert lc.per_group is not None and lc.per_group.height == 6
    assert "read 2 files" in lc.notes


def test_path_errors(tmp_path):
    with pytest.raises(InputError, match="no such file") as err:
        load_counts([tmp_path / "missing.parquet"])
    assert "missing.parquet" in err.value.one_line()
    (tmp_path / "empty_dir").mkdir()
    (tmp_path / "empty_dir" / "notes.txt").write_text("x")
    with pytest.raises(InputError, match="no supported files"):
        load_counts([tmp_path / "empty_dir"])
    with pytest.raises(InputError, match="glob matches no supported files"):
        load_counts([str(tmp_path / "*.parquet")])


def test_mixed_layouts_are_refused(tmp_path):
    LONG.write_csv(tmp_path / "a.csv")
    pl.DataFrame({"prompt_id": ["a"], "n": [2], "k": [1]}).write_csv(tmp_path / "b.csv")
    with pytest.raises(SchemaError, match="mix layouts"):
        load_counts([tmp_path / "a.csv", tmp_path / "b.csv"])


def test_all_missing_rewards_is_an_error(tmp_path):
    write_jsonl(tmp_path / "m.jsonl", [{"prompt_id": "a", "reward": None}] * 2
                + [{"prompt_id": "b", "reward": 1.0}])
    lc = load_counts([tmp_path / "m.jsonl"])
    assert_frame_equal(lc.per_prompt, prompts([("b", 1, 1)]))
    assert "1 prompts dropped: all their rewards are missing" in lc.notes


def test_group_id_over_several_prompts_is_noted(tmp_path):
    """A `uid` that is not a per-prompt group id (here: one id per 8 rows of 8 different prompts)
    gives one-sample groups; the load says so and names --group-col."""
    import json

    from sigmaudit.loaders import load_counts

    rows = [{"prompt": f"q{i % 20}", "reward": (i * 7) % 3 % 2, "uid": f"u{i // 8}"} for i in range(160)]
    path = tmp_path / "mixed.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows))
    loaded = load_counts([path])
    assert loaded.per_group is not None and (loaded.per_group["n"] == 1).all()
    note = [n for n in loaded.notes if "holds several prompts" in n]
    assert note == ["group id 'uid' holds several prompts under one id (20 of 20 ids): a group is taken as one "
                    "prompt's rows under one id; if 'uid' is not a group id, name the right column with --group-col"]
    # a proper group id (one prompt per id) gets no such note
    rows = [{"prompt": f"q{i // 8}", "reward": i % 2, "uid": f"u{i // 8}"} for i in range(160)]
    path.write_text("\n".join(json.dumps(r) for r in rows))
    assert not [n for n in load_counts([path]).notes if "holds several" in n]
