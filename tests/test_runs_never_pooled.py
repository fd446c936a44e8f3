"""Issue 21 item 6 and issue 23 item 16: a load holding several runs (the same (step, prompt) groups, or
the same prompts of an eval, under different run folders or files) is never pooled silently: refused
in one line naming the runs and ``--by run``; ``--by run`` / ``--by file`` audit each; ``--pool-runs``
pools with every logged group kept within its run (groups of 8 never become groups of 16)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from cli_runner import run

from sigmaudit.errors import SchemaError
from sigmaudit.loaders import LoadOptions, load_by, load_counts

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("make_sample_logs", ROOT / "scripts" / "make_sample_logs.py")
make = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(make)


@pytest.fixture(scope="module")
def two_verl_runs(tmp_path_factory) -> Path:
    """Two verl ``rollout_data_dir``s of one experiment (two seeds over the same 300 prompts and 5 steps)."""
    exp = tmp_path_factory.mktemp("exp")
    for seed in (1, 2):
        make.verl(np.random.default_rng(seed), exp / f"seed{seed}")
    return exp


def test_two_verl_runs_of_one_experiment_are_refused_naming_the_runs(two_verl_runs):
    with pytest.raises(SchemaError) as err:
        load_counts([two_verl_runs])
    line = err.value.one_line()
    assert "2 runs in one load: 19 (step, prompt) groups appear in more than one " \
           "(seed1/verl/rollout_data, seed2/verl/rollout_data)" in line
    assert "--by run" in line and "--pool-runs" in line
    assert "drawn twice" not in line and "--group-col" not in line  # not the wrong cause


def test_two_verl_runs_by_run_equal_each_run_alone(two_verl_runs):
    lc = load_by([two_verl_runs], "run")
    assert [name for name, _ in lc.parts] == ["seed1/verl/rollout_data", "seed2/verl/rollout_data"]
    for name, part in lc.parts:
        alone = load_counts([two_verl_runs / name])
        assert part.per_group.equals(alone.per_group) and part.per_prompt.equals(alone.per_prompt)
    assert lc.parts[0][1].per_group["n"].max() == 8


def test_pooled_runs_keep_groups_of_8_apart(two_verl_runs):
    """Issue 23 item 16: pooled by (step, prompt), groups of 8 became groups of 16."""
    alone = [load_counts([two_verl_runs / f"seed{s}"]) for s in (1, 2)]
    lc = load_counts([two_verl_runs], LoadOptions(pool_runs=True))
    assert lc.per_group.height == sum(a.per_group.height for a in alone)
    assert set(lc.per_group["n"].to_list()) == {8}
    assert lc.n_rows == sum(a.n_rows for a in alone)
    assert any(n.startswith("pooled 2 runs (seed1/verl/rollout_data, seed2/verl/rollout_data) as asked")
               for n in lc.notes)


@pytest.fixture(scope="module")
def model_evals(tmp_path_factory) -> Path:
    """One eval folder per model, the same 81 problems, 5 samples each (a long log without steps)."""
    root = tmp_path_factory.mktemp("evals")
    rng = np.random.default_rng(7)
    for m, skill in enumerate((0.2, 0.4, 0.6, 0.8)):
        rows = [{"problem_id": f"aime-{i}", "sample_idx": s, "reward": float(rng.random() < skill)}
                for i in range(81) for s in range(5)]
        (root / f"model_{m}").mkdir()
        pl.DataFrame(rows).write_ndjson(root / f"model_{m}" / "samples.jsonl")
    return root


def test_per_model_eval_folders_are_not_pooled(model_evals, capsys):
    code, out, err = run(capsys, "scan", str(model_evals))
    assert code == 2 and out == ""
    assert "4 runs in one load: 81 prompts appear in more than one (model_0, model_1, model_2, model_3)" in err
    assert "--by run" in err and len(err.strip().splitlines()) == 1


def test_per_model_eval_folders_by_run_and_by_file(model_evals, capsys):
    code, out, _ = run(capsys, "scan", str(model_evals), "--by", "run", "-G", "4", "-f", "json")
    assert code == 0
    groups = json.loads(out)["by"]["groups"]
    assert [g["value"] for g in groups] == [f"model_{m}" for m in range(4)]
    assert all(g["prompts"] == 81 and g["rollouts"] == 405 for g in groups)
    by_file = load_by([model_evals], "file")
    assert [v for v, _ in by_file.parts] == [f"model_{m}/samples.jsonl" for m in range(4)]
    assert [p.n_rows for _, p in by_file.parts] == [405] * 4
    pooled = load_counts([model_evals], LoadOptions(pool_runs=True))  # each model's prompts its own
    assert pooled.per_prompt.height == 4 * 81 and set(pooled.per_prompt["n"].to_list()) == {5}
    pooled = load_counts([model_evals], LoadOptions(pool_prompts=True))  # asked for: 81 prompts x 20
    assert pooled.per_prompt.height == 81 and set(pooled.per_prompt["n"].to_list()) == {20}


def test_a_real_run_column_wins_over_the_pseudo_column(tmp_path):
    rows = [{"prompt": f"p{i}", "run": r, "reward": float((i + j) % 2)} for r in ("a", "b")
            for i in range(6) for j in range(4)]
    pl.DataFrame(rows).write_ndjson(tmp_path / "log.jsonl")
    lc = load_by([tmp_path / "log.jsonl"], "run")
    assert [v for v, _ in lc.parts] == ["a", "b"]


def test_per_step_shards_of_one_run_are_one_corpus(tmp_path):
    """Files whose keys never meet (one file per step) are one run, as before."""
    for step in (1, 2):
        rows = [{"step": step, "prompt": f"p{i}", "reward": float(i % 2)} for i in range(4) for _ in range(4)]
        pl.DataFrame(rows).write_ndjson(tmp_path / f"step{step}.jsonl")
    lc = load_counts([tmp_path])
    assert lc.per_group.height == 8 and not any("runs" in n for n in lc.notes)


def test_open_instruct_resumed_run_relogging_steps_keeps_groups_of_8(tmp_path):
    """Issue 23 item 16: a resumed run appends steps after its checkpoint to its shard again
    (``_save_rollouts`` opens the shard with "a"): the re-logged groups were merged into groups of 16."""
    truth = make.open_instruct(np.random.default_rng(4), tmp_path, "oi", filter_zero_std=False).counts()
    shard = next((tmp_path / "oi").rglob("*_rollouts_000000.jsonl"))
    lines = shard.read_text().splitlines(keepends=True)
    again = [line for line in lines if json.loads(line)["step"] >= 3]  # checkpoint at step 2, then resumed
    with open(shard, "a") as fh:
        fh.writelines(again)
    lc = load_counts([tmp_path / "oi"])
    assert set(lc.per_group["n"].to_list()) == {8}
    assert lc.per_group.height == truth["groups"] + len(again) // 8
    assert any("steps from 3 logged again from record" in n and "kept apart" in n for n in lc.notes)


def test_part_files_of_one_log_in_one_folder_are_one_run(tmp_path):
    """A log written as part files (groups split over them) is one run: its groups are summed."""
    rows = [{"step": 1, "prompt": f"p{i}", "reward": float(j % 2)} for i in range(4) for j in range(8)]
    pl.DataFrame(rows[::2]).write_parquet(tmp_path / "part-0.parquet")
    pl.DataFrame(rows[1::2]).write_parquet(tmp_path / "part-1.parquet")
    lc = load_counts([tmp_path])
    assert set(lc.per_group["n"].to_list()) == {8} and lc.per_group.height == 4


def test_duckdb_refuses_two_runs_as_polars_does(two_verl_runs, capsys):
    pytest.importorskip("duckdb")
    code, out, err = run(capsys, "scan", str(two_verl_runs), "--engine", "duckdb")
    assert code == 2 and "(seed1/verl/rollout_data, seed2/verl/rollout_data)" in err and "2 runs in one load" in err
    args = ("scan", str(two_verl_runs), "--pool-runs", "-G", "8", "-f", "json")
    want, got = run(capsys, *args), run(capsys, *args, "--engine", "duckdb")
    assert want[0] == got[0] == 0 and json.loads(got[1]) == json.loads(want[1])
