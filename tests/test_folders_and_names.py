"""Issue 35 items 5 and 6: a folder holding several layouts is refused listing them (it was audited as the first
layout found, AReaL's 384 rollouts of ``sample_logs/``, with ~20 files skipped, the 32,000-rollout parquet among
them, and ``-q`` hid every skip); a log without step or group columns says which flags add them; a folder of
files numbered by step without a step column (verl names its dumps ``{global_steps}.jsonl``) reads each file's
number as its step and says so."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from cli_runner import run

from sigmaudit.errors import SchemaError
from sigmaudit.loaders import load_counts

ROOT = Path(__file__).resolve().parents[1]


def test_sample_logs_folder_is_refused_listing_its_layouts_even_quiet(capsys, monkeypatch):
    monkeypatch.chdir(ROOT)  # a relative path: the line's length must not depend on where the repository sits
    code, out, err = run(capsys, "scan", "sample_logs", "-q")
    lines = err.strip().splitlines()
    assert code == 2 and out == "" and len(lines) == 1
    assert "the files found hold 12 layouts (areal: 48 files in" in lines[0]
    assert "and 9 more" in lines[0] and lines[0].endswith("or name its files; audit each in its own run")


def test_a_folder_of_a_trainer_dump_and_a_long_log_is_refused(tmp_path):
    """A verl ``rollout_data_dir`` (as ``_dump_generations`` writes it) beside a hand-written long log."""
    dump = tmp_path / "verl" / "rollout_data"
    dump.mkdir(parents=True)
    for step in (1, 2):
        rows = [{"input": f"q{i}", "output": "x", "gts": "1", "score": float(j % 2), "step": step}
                for i in range(4) for j in range(4)]
        pl.DataFrame(rows).write_ndjson(dump / f"{step}.jsonl")
    pl.DataFrame([{"prompt_id": f"p{i}", "reward": i % 2} for i in range(16)]).write_csv(tmp_path / "eval.csv")
    with pytest.raises(SchemaError) as exc:
        load_counts([tmp_path])
    line = exc.value.one_line()
    assert "2 layouts (verl: 2 files in" in line and "long: 1 file in" in line
    lc = load_counts([dump])  # one layout's folder reads as before
    assert lc.layout == "verl" and lc.n_rows == 32


def test_a_log_without_step_or_group_columns_names_the_flags(tmp_path, capsys):
    log = tmp_path / "handwritten.jsonl"
    pl.DataFrame([{"prompt": f"q{i % 5}", "reward": i % 3 == 0} for i in range(40)]).write_ndjson(log)
    code, _, err = run(capsys, "scan", str(log), "-G", "8")
    assert code == 0
    assert "no step or group column" in err and "--step-col / --group-col" in err


@pytest.fixture
def numbered(tmp_path) -> tuple[Path, dict[int, list[dict]]]:
    """``1.jsonl 2.jsonl 3.jsonl``: each a step's 10 prompts x 8 samples, no step field."""
    rng = np.random.default_rng(21)
    rows = {}
    for step in (1, 2, 3):
        p = rng.beta(0.3, 0.3, 10)
        rows[step] = [{"prompt": f"q{i}", "reward": int(rng.random() < p[i])} for i in range(10) for _ in range(8)]
        pl.DataFrame(rows[step]).write_ndjson(tmp_path / f"{step}.jsonl")
    return tmp_path, rows


def test_steps_are_read_from_numbered_file_names(numbered, capsys):
    """They were pooled into 10 prompts x 24 with "observed silent groups: none logged by group"."""
    folder, rows = numbered
    code, out, err = run(capsys, "scan", str(folder), "-G", "8", "-f", "json")
    scan = json.loads(out)
    assert code == 0 and scan["steps"] == 3
    groups = [(step, [r["reward"] for r in rs if r["prompt"] == f"q{i}"]) for step, rs in rows.items()
              for i in range(10)]
    silent = np.mean([sum(g) in (0, 8) for _, g in groups])
    obs = scan["observed_silent"]
    assert obs["groups"] == 30 and obs["G"] == 8 and obs["fraction"] == pytest.approx(silent, abs=1e-12)
    assert [s["step"] for s in obs["by_step"]] == [1, 2, 3]
    assert "steps read from the file names (1.jsonl → step 1, 2.jsonl → step 2, 3.jsonl → step 3)" in err
    code, out, _ = run(capsys, "scan", str(folder), "-G", "8", "--last-steps", "1", "-f", "json")
    last = json.loads(out)["observed_silent"]
    assert code == 0 and last["groups"] == 10


def test_step_named_files_read_as_the_step_column_would(tmp_path):
    """``step_10.csv``, ``step_20.csv`` without a step column equal the same rows with one."""
    rows = []
    for step in (10, 20):
        part = [{"prompt": f"q{i}", "reward": (i + j + step) % 3 == 0} for i in range(6) for j in range(4)]
        pl.DataFrame(part).write_csv(tmp_path / f"step_{step}.csv")
        rows += [{"step": step, **r} for r in part]
    pl.DataFrame(rows).write_csv(tmp_path / "with_steps.csv")
    a = load_counts(sorted(tmp_path.glob("step_*.csv")))
    b = load_counts([tmp_path / "with_steps.csv"])
    assert a.per_group.sort("step", "prompt").equals(b.per_group.sort("step", "prompt"))
    assert a.has_steps and a.per_prompt.equals(b.per_prompt)


def test_files_named_by_task_are_not_steps(tmp_path):
    for shift, name in enumerate(("gsm8k", "math")):
        pl.DataFrame([{"prompt": f"q{i}", "reward": (i + shift) % 2} for i in range(8) for _ in range(2)]).write_ndjson(
            tmp_path / f"{name}.jsonl")
    with pytest.raises(SchemaError, match="each a whole log of its own"):
        load_counts([tmp_path])
