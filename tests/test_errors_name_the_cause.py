"""Issue 35 item 7: error messages name the real cause and keep their remedy within the length limit; a csv
of 0/1 rewards with ``nan`` for unscored samples reads as the same data in parquet does."""

from __future__ import annotations

import csv
import json
import math

import numpy as np
import polars as pl
import pytest
from cli_runner import run

from sigmaudit.cli.app import MAX_MESSAGE
from sigmaudit.errors import SchemaError


def test_four_long_run_folders_keep_the_remedy(tmp_path, capsys):
    """Four eval folders with long names over the same problems: the refusal named four long names and a long
    location, and the 400-character cut took "--by run" with it."""
    rng = np.random.default_rng(3)
    for m in range(4):
        folder = tmp_path / f"eval-2025-06-01-qwen2.5-math-7b-instruct-grpo-seed{m}-temperature-1.0-top-p-0.95-run"
        folder.mkdir()
        rows = [{"problem_id": f"p{i}", "reward": int(rng.random() < 0.5)} for i in range(30) for _ in range(4)]
        pl.DataFrame(rows).write_ndjson(folder / "samples.jsonl")
    code, out, err = run(capsys, "scan", str(tmp_path))
    line = err.strip().splitlines()[-1]
    assert code == 2 and out == ""
    assert len(line) <= len("sigmaudit: error: ") + MAX_MESSAGE
    assert "audit each run with --by run, or pool them with --pool-runs" in line
    assert "4 runs in one load" in line and "30 prompts appear in more than one" in line


def test_one_line_keeps_the_remedy_and_cuts_the_location_in_its_middle():
    exc = SchemaError("x" * 500, location="/data/" + "a" * 300 + "/log.jsonl", remedy="pass --step-col")
    line = exc.one_line(400)
    assert len(line) == 400 and line.endswith("; pass --step-col")
    assert line.startswith("/data/") and "/log.jsonl: " in line  # the folder's start and the file name kept
    assert exc.one_line() == f"{exc.location}: {exc.message}; pass --step-col"  # no limit: whole


def test_few_names_a_few_and_counts_the_rest():
    from sigmaudit.errors import few

    assert few(["a", "b", "c", "d"]) == "a, b, c, d"  # four named outright: "and 1 more" would save nothing
    assert few([f"c{i}" for i in range(20)]) == "c0, c1, c2 and 17 more"
    assert len(few(["z" * 500])) == 60


def test_columns_listed_in_an_error_keep_its_remedy(tmp_path, capsys):
    """A wide table (200 metric columns) that fits no layout: the column list took the whole line."""
    log = tmp_path / "wide.csv"
    log.write_text(",".join(f"metric_{i:03d}_mean_over_the_validation_set" for i in range(200)) + "\n"
                   + ",".join("0.5" for _ in range(200)) + "\n")
    code, _, err = run(capsys, "scan", str(log))
    assert code == 2 and "columns: metric_000" in err and "and 196 more" in err
    assert err.rstrip().endswith("(counts)")  # the remedy's flags, whole


def test_a_list_column_as_prompt_key_is_named_not_blamed_on_the_step(tmp_path, capsys):
    """``--prompt-col tags`` on a list column: any Polars error in reduce._finish was reported as
    "column None: step column None is not an integer step"."""
    rows = [{"prompt": f"q{i}", "tags": ["algebra", "easy"], "reward": float(j % 2)}
            for i in range(6) for j in range(4)]
    log = tmp_path / "tagged.jsonl"
    pl.DataFrame(rows).write_ndjson(log)
    code, _, err = run(capsys, "scan", str(log), "--prompt-col", "tags")
    assert code == 2 and "step column" not in err and "None" not in err
    assert "prompt key column 'tags' holds List(String) values" in err and "--prompt-col" in err


def test_a_text_step_is_still_named_as_the_step(tmp_path, capsys):
    log = tmp_path / "steps.csv"
    log.write_text("step,prompt,reward\n" + "".join(f"s{i % 3},q{i % 5},{i % 2}\n" for i in range(40)))
    code, _, err = run(capsys, "scan", str(log), "--step-col", "step")
    assert code == 2 and "step column 'step' is not an integer step (String values)" in err


def _unscored_rows():
    """(prompt, reward) with a reward of NaN for every 7th sample (an unscored answer), 12 prompts x 8."""
    rng = np.random.default_rng(5)
    out = []
    for i in range(12):
        p = rng.uniform(0.1, 0.9)
        out.extend((f"q{i}", math.nan if (i * 8 + j) % 7 == 3 else int(rng.random() < p)) for j in range(8))
    return out


@pytest.mark.parametrize("writer", ["csv-module", "numpy-savetxt"])
def test_a_csv_with_nan_for_unscored_samples_reads_like_parquet(tmp_path, capsys, writer):
    """Python's csv module writes float('nan') as ``nan`` (numpy.savetxt too); Polars infers ``0, 1, nan`` as
    text, so the csv was refused as "holds String values" while the same data in parquet read with
    "N missing rewards excluded"."""
    rows = _unscored_rows()
    log = tmp_path / "scored.csv"
    if writer == "csv-module":
        with open(log, "w", newline="") as fh:
            w = csv.writer(fh)
            w.writerow(["prompt_id", "reward"])
            w.writerows(rows)
    else:
        ids = np.array([int(p[1:]) for p, _ in rows])
        np.savetxt(log, np.column_stack([ids, [r for _, r in rows]]), delimiter=",", header="prompt_id,reward",
                   comments="", fmt=["%d", "%g"])
    assert "nan" in log.read_text()
    nans = sum(1 for _, r in rows if r != r)
    par = tmp_path / "scored.parquet"
    ids = [p if writer == "csv-module" else str(int(p[1:])) for p, _ in rows]
    pl.DataFrame({"prompt_id": ids, "reward": [float(r) for _, r in rows]}).write_parquet(par)
    code_csv, out_csv, err_csv = run(capsys, "scan", str(log), "-G", "4", "-f", "json")
    code_par, out_par, err_par = run(capsys, "scan", str(par), "-G", "4", "-f", "json")
    assert code_csv == code_par == 0, err_csv
    assert f"{nans} missing (null/NaN) rewards excluded" in err_csv
    a, b = json.loads(out_csv), json.loads(out_par)
    assert a["missing_rewards"] == b["missing_rewards"] == nans
    assert a["rollouts"] == b["rollouts"] == len(rows) - nans
    # k by hand: the prompts' right answers, NaN excluded
    k = {}
    for p, r in rows:
        if r == r:
            k[p] = k.get(p, 0) + int(r)
    assert a["pass_rate"]["mean"] == pytest.approx(np.mean([k[p] / sum(1 for q, r in rows if q == p and r == r)
                                                            for p in k]), abs=1e-12)
    assert a["silent"] == b["silent"]


def test_a_csv_whose_rewards_are_words_is_still_refused(tmp_path, capsys):
    log = tmp_path / "words.csv"
    log.write_text("prompt,reward\n" + "".join(f"q{i},{'correct' if i % 2 else 'nan'}\n" for i in range(20)))
    code, _, err = run(capsys, "scan", str(log))
    assert code == 2 and "holds String values" in err
