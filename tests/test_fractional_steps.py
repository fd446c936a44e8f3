"""Issue 36 item 19: a step column holding steps that are not whole numbers (0.5, 1.0, 1.5, 2.0) was cast to
integers, merging steps 1.0 and 1.5 into one "step 1" of 40 groups. It is refused now, on every engine and
by every command that reads steps, with nothing written; whole float steps (1.0, 2.0) read as the integers."""

from __future__ import annotations

import json
import random
import re
import shutil
from pathlib import Path

import polars as pl
import pytest
from cli_runner import run

STEPS = (0.5, 1.0, 1.5, 2.0)


def _rows(steps):
    rng = random.Random(3)
    return [{"step": s, "prompt_id": f"q{q}", "reward": float(rng.random() < 0.5)}
            for s in steps for q in range(10) for _ in range(4)]


@pytest.fixture(params=["parquet", "csv", "jsonl"])
def fractional(request, tmp_path):
    df = pl.DataFrame(_rows(STEPS))
    path = tmp_path / f"frac.{request.param}"
    {"parquet": df.write_parquet, "csv": df.write_csv, "jsonl": df.write_ndjson}[request.param](path)
    return path


def _refused(code, err):
    assert code == 2
    line = err.strip().splitlines()[-1]
    assert "column 'step'" in line and "not whole numbers" in line and "first 0.5" in line
    assert "--step-col" in line
    return line


@pytest.mark.parametrize("argv", [["scan"], ["check", "--max-silent", "0.5"], ["trend"], ["plan"],
                                  ["forecast"], ["watch", "--once"], ["scan", "--engine", "duckdb"]])
def test_every_command_refuses_fractional_steps(capsys, fractional, argv):
    code, out, err = run(capsys, argv[0], str(fractional), *argv[1:], "-q")
    _refused(code, err)
    assert out == ""


def test_reduce_refuses_and_writes_nothing(capsys, fractional, tmp_path):
    target = tmp_path / "counts.parquet"
    code, _, err = run(capsys, "reduce", str(fractional), "-o", str(target), "-q")
    _refused(code, err)
    assert not target.exists()


def test_whole_float_steps_read_as_the_integer_steps(capsys, tmp_path):
    whole = {0.5: 1.0, 1.0: 2.0, 1.5: 3.0, 2.0: 4.0}
    floats = pl.DataFrame(_rows(STEPS)).with_columns(pl.col("step").replace_strict(whole, return_dtype=pl.Float64))
    ints = floats.with_columns(pl.col("step").cast(pl.Int64))
    floats.write_parquet(tmp_path / "floats.parquet")
    ints.write_parquet(tmp_path / "ints.parquet")
    outs = []
    for name in ("floats", "ints"):
        code, out, _ = run(capsys, "scan", str(tmp_path / f"{name}.parquet"), "-f", "json", "-q", "--bootstrap", "0")
        assert code == 0
        outs.append(json.loads(out))
    assert json.dumps(outs[0], sort_keys=True).replace("floats", "ints") == json.dumps(outs[1], sort_keys=True)
    # four steps of 10 groups each, not three (the old cast made 1.0 and 1.5 one step of 20)
    assert outs[1]["steps"] == 4
    assert {r["step"]: r["groups"] for r in outs[1]["observed_silent"]["by_step"]} == {1: 10, 2: 10, 3: 10, 4: 10}

def test_a_metrics_series_with_fractional_steps_is_refused(capsys, tmp_path):
    path = tmp_path / "metrics.csv"
    path.write_text("step,silent_fraction\n0.5,0.2\n1.0,0.3\n1.5,0.4\n")
    code, _, err = run(capsys, "scan", str(path), "-q")
    _refused(code, err)


def _trl(steps):
    """A TRL completions table (step, prompt, completion, one reward column): 5 prompts x G = 4 per step."""
    return pl.DataFrame([{"step": s, "prompt": f"q{q}", "completion": f"c{i}", "acc": float((q + i) % 2 == 0)}
                         for s in steps for q in range(5) for i in range(4)])


def test_a_trl_completions_file_with_fractional_steps_is_refused(capsys, tmp_path):
    # the TRL reader cast its own step column: 0.5..2.0 became steps 0-2, 3 steps (issue 36 item 19)
    path = tmp_path / "completions" / "completions_00001.parquet"
    path.parent.mkdir()
    _trl(STEPS).write_parquet(path)
    for argv in (["scan"], ["trend"], ["watch", "--once"]):
        code, out, err = run(capsys, argv[0], str(path), *argv[1:], "-q")
        assert code == 2 and out == ""
        line = err.strip().splitlines()[-1]
        assert "column 'step'" in line and "first 0.5" in line and "TRL" in line


def test_a_trl_file_with_whole_float_steps_reads_as_integer_steps(capsys, tmp_path):
    outs = []
    for name, dtype in (("floats", pl.Float64), ("ints", pl.Int64)):
        path = tmp_path / name / "completions" / "completions_00001.parquet"
        path.parent.mkdir(parents=True)
        _trl((1.0, 2.0, 3.0, 4.0)).with_columns(pl.col("step").cast(dtype)).write_parquet(path)
        code, out, _ = run(capsys, "scan", str(path), "-f", "json", "-q", "--bootstrap", "0")
        assert code == 0
        outs.append(json.loads(out))
    assert json.dumps(outs[0], sort_keys=True).replace("floats", "ints") == json.dumps(outs[1], sort_keys=True)
    # 5 prompts x 4 steps: each step its own 5 groups
    assert {r["step"]: r["groups"] for r in outs[1]["observed_silent"]["by_step"]} == {1: 5, 2: 5, 3: 5, 4: 5}


def test_an_open_instruct_log_with_a_fractional_step_is_refused_at_its_line(capsys, tmp_path):
    # open-instruct's reader took int(step): 1.5 was read as step 1, merged with step 1's groups
    path = tmp_path / "shard_0.jsonl"
    rows = [{"step": s, "prompt_idx": 7, "reward": r, "response": f"r{i}"}
            for i, (s, r) in enumerate([(1, 1.0), (1, 0.0), (1.5, 1.0), (1.5, 0.0)])]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    code, out, err = run(capsys, "scan", str(path), "-q")
    assert code == 2 and out == ""
    line = err.strip().splitlines()[-1]
    assert f"{path}:3" in line and "step 1.5" in line and "not a whole number" in line


def test_a_prime_rl_trace_with_a_fractional_step_is_refused_at_its_line(capsys, tmp_path):
    # prime-rl's reader built an Int64 frame from run.work.step: Polars made 1.5 step 1. (Given the run's folder,
    # the file is refused, as its folder is: test_a_prime_rl_episode_with_a_fractional_step_is_refused_not_skipped.)
    root = Path(__file__).resolve().parent.parent / "sample_logs" / "prime-rl"
    run_dir = tmp_path / "prime-rl"
    shutil.copytree(root, run_dir)
    for subset in ("all", "effective"):  # whichever the reader takes
        traces = run_dir / "rollouts" / "step_1" / "train" / subset / "traces.jsonl"
        lines = traces.read_text().splitlines()
        second = json.loads(lines[1])
        second["run"]["work"]["step"] = 1.5
        lines[1] = json.dumps(second)
        traces.write_text("\n".join(lines) + "\n")
    code, out, err = run(capsys, "scan", str(run_dir / "rollouts" / "step_1" / "train" / "all" / "traces.jsonl"), "-q")
    assert code == 2 and out == ""
    line = err.strip().splitlines()[-1]
    assert "traces.jsonl:2: field run.work.step" in line and "step 1.5 is not a whole number" in line
PRIME_RL = Path(__file__).resolve().parent / "fixtures" / "writers" / "prime-rl-straddle"


def test_a_prime_rl_episode_with_a_fractional_step_is_refused_not_skipped(capsys, tmp_path):
    # prime-rl's row-wise Int64 frame truncated run.work.step 1.5 to 1 (step 1 read 3 groups, exit 0);
    # a refusal raised as a SchemaError would have skipped the step_1 file as "fits no layout" and audited
    # step_2 alone: the whole folder is refused instead, by scan, watch and reduce
    root = tmp_path / "prl"
    shutil.copytree(PRIME_RL, root)
    first = root / "rollouts" / "step_1" / "train" / "all" / "traces.jsonl"
    first.write_text(re.sub(r'"step": ?1\b', '"step": 1.5', first.read_text()))
    target = tmp_path / "counts.parquet"
    for argv in (["scan"], ["watch", "--once"], ["reduce", "-o", str(target)]):
        code, out, err = run(capsys, argv[0], str(root), *argv[1:], "-q")
        assert code == 2 and out == ""
        line = err.strip().splitlines()[-1]
        assert str(first) in line and "run.work.step" in line and "step 1.5" in line and "not a whole number" in line
    assert not target.exists()


def test_a_trl_file_with_fractional_steps_in_a_folder_is_refused_not_skipped(capsys, tmp_path):
    folder = tmp_path / "completions"
    folder.mkdir()
    _trl((1, 2)).write_parquet(folder / "completions_00001.parquet")
    # other prompts than the first file's (a file repeating the last one's batch is a relog, counted once)
    _trl((2.5, 3.0)).with_columns(pl.col("prompt") + "b").write_parquet(folder / "completions_00002.parquet")
    code, out, err = run(capsys, "scan", str(folder), "-q")
    assert code == 2 and out == ""
    assert "completions_00002.parquet" in err and "first 2.5" in err


def test_the_refused_step_is_printed_exactly(tmp_path, capsys):
    """Issue 44: 3.0000000000000004 was printed as "3" (format g), a step that looks whole; the shortest
    round-trip repr is printed."""
    import polars as pl
    from cli_runner import run

    path = tmp_path / "log.parquet"
    pl.DataFrame({"step": [1.0, 1.0, 3.0000000000000004, 3.0000000000000004], "prompt": ["a", "a", "b", "b"],
                  "reward": [1.0, 0.0, 1.0, 1.0]}).write_parquet(path)
    code, out, err = run(capsys, "scan", str(path))
    assert (code, out) == (2, "") and "first 3.0000000000000004," in err


def test_a_trainers_refused_step_is_printed_exactly():
    import pytest

    from sigmaudit.errors import InputError
    from sigmaudit.loaders.trainers._common import refuse_fractional_step

    with pytest.raises(InputError, match=r"step 2\.0000000000000004 is not"):
        refuse_fractional_step(2.0000000000000004, "step", "x.jsonl")
