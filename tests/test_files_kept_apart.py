"""Issue 35 item 3 (and issue 36 item 33): files that repeat the same keys as complete corpora of their own -- two
tasks over the same ids, two runs each with steps 1..N -- are never pooled silently: refused in one line naming
the files and ``--by file``; ``--by file`` audits each; ``--pool-runs`` pools them with every group and every
file's prompts kept its own (predictions are the files' mean), ``--pool-prompts`` pools prompts when asked.
Part files of one log are still summed, with a note. The files are written as a user's pandas/Polars code
writes them (``DataFrame.write_ndjson`` / ``write_parquet``, one row per sample)."""

from __future__ import annotations

import json
from math import comb
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from cli_runner import run

from sigmaudit.errors import SchemaError
from sigmaudit.loaders import LoadOptions, load_by, load_counts


def _unbiased(counts: list[tuple[int, int]], G: int) -> float:
    """Mean over prompts of [C(k, G) + C(n − k, G)] / C(n, G), by hand."""
    return float(np.mean([(comb(k, G) + comb(n - k, G)) / comb(n, G) for n, k in counts]))


def _counts(rows: list[dict], key: str = "id") -> list[tuple[int, int]]:
    out: dict = {}
    for r in rows:
        n, k = out.get(r[key], (0, 0))
        out[r[key]] = (n + 1, k + int(r["reward"]))
    return list(out.values())


@pytest.fixture(scope="module")
def two_tasks(tmp_path_factory) -> tuple[Path, dict[str, list[dict]]]:
    """One eval folder, one file per task over the same 800 ids (10 samples each), the easy task mostly
    solved or failed outright (silent at G = 4 near 0.85-0.9 per task)."""
    root = tmp_path_factory.mktemp("tasks")
    rng = np.random.default_rng(11)
    rows = {}
    for task, ab in (("gsm8k", 0.12), ("math", 0.08)):
        p = rng.beta(ab, ab, 800)
        rows[task] = [{"id": i, "reward": int(rng.random() < p[i])} for i in range(800) for _ in range(10)]
        pl.DataFrame(rows[task]).write_ndjson(root / f"{task}.jsonl")
    return root, rows


def test_two_task_files_over_the_same_ids_are_refused_naming_the_files(two_tasks, capsys):
    """They were pooled into 800 prompts x 20 samples with nothing on stderr (predicted silent at G = 4 from
    the pooled pass rates, far below either task's), and check passed."""
    root, _ = two_tasks
    code, out, err = run(capsys, "scan", str(root), "-G", "4")
    line = err.strip().splitlines()[-1]
    assert code == 2 and out == ""
    assert "2 files, each a whole log of its own, in one load: 800 prompts appear in more than one " \
           "(gsm8k.jsonl, math.jsonl)" in line
    assert line.endswith("audit each file with --by file, or pool them with --pool-runs; if each file holds part of "
                         "every group (shards of one log), read them as one log with --shards")
    code, _, err = run(capsys, "check", str(root), "-G", "4", "--max-silent", "0.8")
    assert code == 2 and "--by file" in err


def test_two_task_files_by_file_are_each_task_alone(two_tasks, capsys):
    root, rows = two_tasks
    code, out, _ = run(capsys, "scan", str(root), "--by", "file", "-G", "4", "-f", "json")
    assert code == 0
    groups = json.loads(out)["by"]["groups"]
    assert [g["value"] for g in groups] == ["gsm8k.jsonl", "math.jsonl"]
    for g in groups:
        truth = _unbiased(_counts(rows[g["value"].split(".")[0]]), 4)
        assert g["prompts"] == 800 and g["rollouts"] == 8000
        assert g["silent"][0]["estimate"] == pytest.approx(truth, abs=1e-12)
    assert 0.8 < min(g["silent"][0]["estimate"] for g in groups)


def test_pool_runs_keeps_each_files_prompts_and_pool_prompts_pools_them(two_tasks, capsys):
    """--pool-runs: 1,600 prompts (800 per task), the prediction the mean of the tasks'; --pool-prompts: the
    prompts pooled by id (800 x 20), the prediction of the pooled pass rates, as asked."""
    root, rows = two_tasks
    per_task = [_unbiased(_counts(rows[t]), 4) for t in ("gsm8k", "math")]
    code, out, err = run(capsys, "scan", str(root), "--pool-runs", "-G", "4", "-f", "json")
    scan = json.loads(out)
    assert code == 0 and scan["prompts"] == 1600
    assert scan["silent"][0]["estimate"] == pytest.approx(np.mean(per_task), abs=1e-12)
    assert "pooled 2 files (each a whole log) (gsm8k.jsonl, math.jsonl) as asked" in err
    code, out, err = run(capsys, "scan", str(root), "--pool-prompts", "-G", "4", "-f", "json")
    scan = json.loads(out)
    pooled = _unbiased(_counts(rows["gsm8k"] + rows["math"]), 4)
    assert code == 0 and scan["prompts"] == 800 and scan["silent"][0]["estimate"] == pytest.approx(pooled, abs=1e-12)
    assert pooled < min(per_task) - 0.2  # what the silent pooling printed
    assert "--pool-prompts" in err


@pytest.fixture(scope="module")
def two_parquet_runs(tmp_path_factory) -> tuple[Path, dict[str, pl.DataFrame]]:
    """Two runs written as one parquet file each (steps 1..10, 64 prompts, groups of 8, no run id)."""
    root = tmp_path_factory.mktemp("runs")
    rng = np.random.default_rng(12)
    frames = {}
    for name in ("runA", "runB"):
        p = rng.beta(0.25, 0.25, 64)
        frames[name] = pl.DataFrame([{"step": s, "prompt": f"q{i}", "reward": int(rng.random() < p[i])}
                                     for s in range(1, 11) for i in range(64) for _ in range(8)])
        frames[name].write_parquet(root / f"{name}.parquet")
    return root, frames


def _observed(frame: pl.DataFrame) -> float:
    """The share of (step, prompt) groups whose 8 rewards agree, by hand."""
    g = frame.group_by("step", "prompt").agg(pl.col("reward").sum().alias("k"), pl.len().alias("n"))
    assert set(g["n"].to_list()) == {8}
    return float(((g["k"] == 0) | (g["k"] == 8)).mean())


def test_two_parquet_runs_are_not_merged_into_groups_of_16(two_parquet_runs, capsys):
    """Issue 36 item 33: ``scan runA.parquet runB.parquet`` merged the groups of 8 into 16 (observed share
    far below each run's), no note."""
    root, frames = two_parquet_runs
    files = [str(root / "runA.parquet"), str(root / "runB.parquet")]
    code, out, err = run(capsys, "scan", *files, "-G", "8")
    assert code == 2 and out == ""
    assert "640 (step, prompt) groups appear in more than one (runA.parquet, runB.parquet)" in err
    code, out, err = run(capsys, "scan", *files, "-G", "8", "--pool-runs", "-f", "json")
    observed = json.loads(out)["observed_silent"]
    assert code == 0 and observed["G"] == 8 and observed["groups"] == 1280
    both = (_observed(frames["runA"]) + _observed(frames["runB"])) / 2  # equal group counts
    assert observed["fraction"] == pytest.approx(both, abs=1e-12)
    assert min(_observed(f) for f in frames.values()) > 0.4
    lc = load_by(files, "file")
    for (name, part), frame in zip(lc.parts, frames.values(), strict=True):
        assert set(part.per_group["n"].to_list()) == {8} and part.per_group.height == 640, name
        assert int(part.per_group["k"].sum()) == int(frame["reward"].sum())


def test_runs_in_three_model_folders_pooled_keep_each_models_prompts(tmp_path, capsys):
    """--pool-runs over three models' eval folders kept the observed share per run but pooled pass rates by
    sample id, so every prediction was one of pooled pass rates; now the mean of the models'."""
    rng = np.random.default_rng(13)
    per_model = []
    for m, ab in enumerate((0.05, 0.1, 0.2)):
        p = rng.beta(ab, ab, 200)
        rows = [{"prompt_id": f"s{i}", "reward": int(rng.random() < p[i])} for i in range(200) for _ in range(8)]
        (tmp_path / f"model{m}").mkdir()
        pl.DataFrame(rows).write_ndjson(tmp_path / f"model{m}" / "results.jsonl")
        per_model.append(_unbiased(_counts(rows, "prompt_id"), 8))
    code, out, _ = run(capsys, "scan", str(tmp_path), "--pool-runs", "-G", "8", "-f", "json")
    scan = json.loads(out)
    assert code == 0 and scan["prompts"] == 600
    assert scan["silent"][0]["estimate"] == pytest.approx(np.mean(per_model), abs=1e-12)
    limit = str(np.mean(per_model) - 0.01)
    code, _, _ = run(capsys, "check", str(tmp_path), "--pool-runs", "-G", "8", "--max-silent", limit)
    assert code == 1  # the gate sees the models' silent share, not the pooled pass rates'


def test_part_files_of_one_log_are_summed_with_a_note(tmp_path):
    """Spark's part files of one log (its groups cut at the file boundaries and, here, round-robin) stay one
    corpus; the summing is said."""
    rows = [{"step": 1, "prompt": f"p{i}", "reward": float(j % 2)} for i in range(6) for j in range(8)]
    for i in range(3):
        pl.DataFrame(rows[i::3]).write_parquet(tmp_path / f"part-0000{i}-5b1c-4f7e-9d2a.c000.snappy.parquet")
    lc = load_counts([tmp_path])
    assert set(lc.per_group["n"].to_list()) == {8} and lc.per_group.height == 6
    assert any(n.startswith("12 logged groups are split over the 3 files and summed") and "--by file" in n
               for n in lc.notes)


def test_a_log_cut_into_files_between_rows_is_one_log(tmp_path):
    """A log cut into two files by rows (names that do not say "part"): only the group at the cut meets, so the
    files are one log, summed with the note."""
    rows = [{"step": s, "prompt": f"p{i}", "reward": float((i + j) % 3 == 0)} for s in (1, 2) for i in range(5)
            for j in range(8)]
    pl.DataFrame(rows[:43]).write_ndjson(tmp_path / "rollouts.jsonl")
    pl.DataFrame(rows[43:]).write_ndjson(tmp_path / "rollouts_resumed.jsonl")
    lc = load_counts([tmp_path])
    assert set(lc.per_group["n"].to_list()) == {8} and lc.per_group.height == 10
    assert any("1 logged groups are split over the 2 files" in n for n in lc.notes)


def test_files_of_disjoint_steps_are_one_log_without_a_note(tmp_path):
    for step in (1, 2, 3):
        rows = [{"step": step, "prompt": f"p{i}", "reward": float(i % 2)} for i in range(4) for _ in range(4)]
        pl.DataFrame(rows).write_ndjson(tmp_path / f"rollouts_step{step}.jsonl")
    lc = load_counts([tmp_path])
    assert lc.per_group.height == 12 and not any("split over" in n or "whole log" in n for n in lc.notes)


def test_duckdb_tells_whole_logs_of_one_folder_apart_as_polars_does(two_tasks, capsys):
    pytest.importorskip("duckdb")
    root, _ = two_tasks
    code, _, err = run(capsys, "scan", str(root), "--engine", "duckdb")
    assert code == 2 and "(gsm8k.jsonl, math.jsonl)" in err and "--by file" in err


def test_library_refuses_too(two_tasks):
    with pytest.raises(SchemaError, match="each a whole log of its own"):
        load_counts([two_tasks[0]])
    assert load_counts([two_tasks[0]], LoadOptions(pool_runs=True)).per_prompt.height == 1600
