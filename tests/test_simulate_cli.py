"""`sigmaudit simulate` as a command: exit code, stdout and stderr apart."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from cli_runner import run

CONTRACT_KEYS = {"schema_version", "rules", "config", "r2_silent", "hard_quartile_initial", "hard_quartile_final",
                 "dapo_oversampling", "samples", "summary", "series"}


def test_json_contract(capsys) -> None:
    code, out, err = run(capsys, "simulate", "--prompts", "300", "--num-steps", "10", "--seed", "5", "-f", "json")
    assert code == 0 and err == ""
    d = json.loads(out)
    assert set(d) == CONTRACT_KEYS
    assert d["rules"] == ["grpo", "drgrpo", "dapo"]
    assert d["config"] | {"init": None} == {"prompts": 300, "G": 8, "steps": 10, "lr": 0.5, "seed": 5,
                                            "budget_rollouts": 300 * 8 * 10, "init": None}
    assert d["config"]["init"]["source"] == "beta-mixture"
    assert set(d["hard_quartile_final"]) == {"grpo", "drgrpo", "dapo", "drgrpo-matched"}
    assert d["dapo_oversampling"] >= 1.0
    assert all(len(d["series"][r]["silent_measured"]) == d["summary"][r]["steps"] for r in d["summary"])
    assert d["summary"]["grpo"]["steps"] == 10 and d["summary"]["dapo"]["steps"] < 10


def test_table_and_csv(capsys, tmp_path: Path) -> None:
    code, out, err = run(capsys, "simulate", "--prompts", "200", "--num-steps", "6", "--rules", "grpo,sign")
    assert code == 0 and err == ""
    assert "hard-quarter pass rate" in out and "sign" in out
    target = tmp_path / "series.csv"
    code, out, err = run(capsys, "simulate", "--prompts", "200", "--num-steps", "6", "--rules", "grpo,sign", "-o",
                         str(target))
    assert code == 0 and out == "" and err == ""
    rows = list(csv.DictReader(io.StringIO(target.read_text())))
    assert len(rows) == 12 and {r["rule"] for r in rows} == {"grpo", "sign"}


def test_init_from_corpus(capsys, tmp_path: Path) -> None:
    counts = tmp_path / "counts.csv"
    counts.write_text("prompt_id,n_samples,n_correct\n" + "".join(f"q{i},10,{i % 11}\n" for i in range(44)))
    code, out, err = run(capsys, "simulate", "--init-from", str(counts), "--num-steps", "5", "-f", "json")
    assert code == 0
    assert "counts" in err  # the loader's note goes to stderr, never into the JSON
    init = json.loads(out)["config"]["init"]
    assert init["source"] == "corpus"
    assert (init["corpus_prompts"], init["corpus_excluded"], init["resampled"]) == (36, 8, False)
    assert json.loads(out)["config"]["prompts"] == 36


@pytest.mark.parametrize("args", [["--prompts", "0"], ["--rules", "foo"], ["-G", "0"], ["--lr", "0"],
                                  ["--num-steps", "-1"], ["--num-steps", "0"], ["--steps", "-1"], ["--steps", "1:5"],
                                  ["--steps", "3", "--num-steps", "3"]])
def test_bad_options_exit_2_with_one_line(capsys, args: list[str]) -> None:
    code, out, err = run(capsys, "simulate", *args)
    assert code == 2
    assert out == ""
    assert err.startswith("sigmaudit: error:") and err.count("\n") == 1


def test_missing_init_file(capsys, tmp_path: Path) -> None:
    code, out, err = run(capsys, "simulate", "--init-from", str(tmp_path / "nope.csv"))
    assert code == 2 and out == "" and err.count("\n") == 1


def test_the_old_step_count_still_runs_with_a_warning(capsys) -> None:
    """``--steps`` is a window everywhere else; simulate's count is ``--num-steps``, the old name kept one release."""
    code, out, err = run(capsys, "simulate", "--prompts", "50", "--steps", "3", "-f", "json", "-q")
    assert code == 0 and json.loads(out)["config"]["steps"] == 3
    assert "warning: simulate --steps 3 is deprecated" in err and "--num-steps 3" in err
    code, out, err = run(capsys, "simulate", "--prompts", "50", "--num-steps", "4", "-f", "json")
    assert code == 0 and json.loads(out)["config"]["steps"] == 4 and "deprecated" not in err
