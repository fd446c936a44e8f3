"""The gate on post-filter dumps (issue 23 items 4 and 27): --groups-generated N is used whenever it is
given; never-solved and extreme-share thresholds are refused on a dump the tool calls post-filter."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
from cli_runner import run

OPEN_INSTRUCT = str(Path(__file__).resolve().parents[1] / "sample_logs" / "open-instruct")


@pytest.fixture
def kept_one_silent_of_100(tmp_path):
    """A dump that kept 100 groups of 8 of the 400 sampled: 99 mixed (k = 4) and 1 silent (k = 0)."""
    rows = [{"step": 1, "prompt_id": f"p{g}", "reward": int(g > 0 and i < 4)} for g in range(100) for i in range(8)]
    path = tmp_path / "dump.parquet"
    pl.DataFrame(rows).write_parquet(path)
    return str(path)


def test_check_groups_generated_silently_ignored(capsys, kept_one_silent_of_100):
    """Before: the statistics test did not call the dump post-filter, so N was ignored and the logged
    silent fraction 0.01 passed --max-silent 0.5. Now N is used: (400 - 100 + 1) / 400 = 0.7525 fails."""
    code, out, err = run(capsys, "check", kept_one_silent_of_100, "--max-silent", "0.5", "--groups-generated", "400",
                         "--bootstrap", "0", "-f", "json", "-q")
    d = json.loads(out)
    assert code == 1 and d["checks"][0]["value"] == pytest.approx(0.7525)
    assert d["pre_filter"]["groups_generated"] == 400 and d["filtered"]["source"] == "flag"
    assert "100 of the 400 groups sampled" in d["filtered"]["message"]
    code, _, _ = run(capsys, "check", kept_one_silent_of_100, "--max-silent", "0.5", "--bootstrap", "0", "-q")
    assert code == 0  # without N the dump reads as it is (0.01)


@pytest.mark.parametrize("threshold", ["--max-never-solved", "--max-extreme-share"])
def test_max_never_solved_passes_on_a_post_filter_dump(capsys, threshold):
    """The filter removed exactly the never-solved (and always-solved) prompts: refused unless --allow-filtered."""
    code, out, err = run(capsys, "check", OPEN_INSTRUCT, "-G", "8", threshold, "0.5", "--bootstrap", "0", "-q")
    assert code == 2 and out == "" and err.count("\n") == 1
    assert "post-filter log (structure)" in err and "--allow-filtered" in err
    code, out, _ = run(capsys, "check", OPEN_INSTRUCT, "-G", "8", threshold, "0.5", "--allow-filtered",
                       "--bootstrap", "0", "-f", "json", "-q")
    assert code in (0, 1) and json.loads(out)["filtered"]["source"] == "structure"
    code, _, err = run(capsys, "check", OPEN_INSTRUCT, "-G", "8", "--max-silent", "0.9", threshold, "0.5",
                       "--groups-generated", "96", "--bootstrap", "0", "-q")
    assert code == 2 and threshold in err and "--allow-filtered" in err


@pytest.fixture
def by_log_with_nulls(tmp_path):
    """60 prompts × 8 answers; source 'a' (mixed groups) on 40 prompts, null on 20 (all wrong)."""
    rows = [{"step": 1, "prompt_id": f"p{i}", "reward": (j < 4) if i < 40 else 0,
             "source": "a" if i < 40 else None} for i in range(60) for j in range(8)]
    path = tmp_path / "log.parquet"
    pl.DataFrame(rows, schema={"step": pl.Int64, "prompt_id": pl.Utf8, "reward": pl.Int64,
                               "source": pl.Utf8}).write_parquet(path)
    return str(path)


def test_by_rows_with_a_null_value_vanish(capsys, by_log_with_nulls):
    """Before: the 160 rows with a null source belonged to no value, and check --by could not fail on them."""
    code, out, err = run(capsys, "scan", by_log_with_nulls, "--by", "source", "-f", "json")
    groups = {g["value"]: g for g in json.loads(out)["by"]["groups"]}
    assert code == 0 and sorted(groups) == ["(null)", "a"]
    assert groups["(null)"]["prompts"] == 20 and groups["a"]["prompts"] == 40
    assert "rows with no source as '(null)'" in err
    code, _, err = run(capsys, "check", by_log_with_nulls, "-q", "--by", "source", "--max-all-wrong", "0.5",
                       "--bootstrap", "0")
    assert code == 1 and "check failed for source = (null)" in err


def _stepped_log(path, base: int) -> str:
    rows = [{"step": base + s, "prompt_id": f"p{i}", "reward": int((i + j + s) % 3 == 0)}
            for s in range(4) for i in range(20) for j in range(8)]
    pl.DataFrame(rows, schema={"step": pl.Int64, "prompt_id": pl.Utf8, "reward": pl.Int64}).write_parquet(path)
    return str(path)


@pytest.mark.parametrize("command", ["trend", "forecast", "backtest", "report"])
def test_steps_above_2_53_collide_as_float64(capsys, tmp_path, command):
    """Steps 2^53 .. 2^53 + 3 (64-bit counters) were merged as float64 ('visits must be sorted by prompt,
    then by strictly increasing step'); now every figure equals the same log's with steps 0 .. 3."""
    base = 2**53
    extra = ["-o", "-"] if command == "report" else []
    outs = []
    for b, name in ((base, "big.parquet"), (0, "small.parquet")):
        code, out, err = run(capsys, command, _stepped_log(tmp_path / name, b), "-q", "-f", "json", *extra)
        assert code == 0, err
        outs.append(json.loads(out))
    big, small = outs
    if command == "trend":
        assert [s["step"] for s in big["steps"]] == [base, base + 1, base + 2, base + 3]
        assert [s["ahead_silent"] for s in big["steps"]] == [s["ahead_silent"] for s in small["steps"]]
    elif command == "forecast":
        assert big["next_step"] == base + 4
        assert [r["last_step"] - base for r in big["per_prompt"]] == [r["last_step"] for r in small["per_prompt"]]
        assert big["expected_silent"] == small["expected_silent"]
    elif command == "backtest":
        assert big["brier"] == small["brier"] and big["visits"] == small["visits"] == 60
    else:
        assert [s["step"] - base for s in big["trend"]["steps"]] == [s["step"] for s in small["trend"]["steps"]]
