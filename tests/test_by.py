"""``--by COLUMN``: one audit per value (own corpus, own prior fit) beside the pooled one."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
from cli_runner import run
from test_loaders_layouts import write_jsonl

from sigmaudit.errors import SchemaError
from sigmaudit.loaders import load_by, load_counts

EVALPERF = Path(__file__).parent / "data" / "real" / "evalperf_per_task_pass_rates.csv"


@pytest.fixture
def verl_two_sources(tmp_path):
    """verl rollout_data_dir whose reward extras include data_source: gsm8k groups are all mixed
    (1 of 4 right), math groups all wrong."""
    d = tmp_path / "rollout_data"
    d.mkdir()
    for step in (1, 2):
        rows = []
        for i in range(6):
            source = "gsm8k" if i < 3 else "math"
            for s in range(4):
                right = source == "gsm8k" and s == 0
                rows.append({"input": f"q{i}", "output": "...", "gts": "1", "score": float(right),
                             "step": step, "acc": right, "data_source": source})
        write_jsonl(d / f"{step}.jsonl", rows)
    return d


def test_load_by_splits_rows_by_value(verl_two_sources):
    lc = load_by([verl_two_sources], "data_source")
    assert lc.by == "data_source" and [v for v, _ in lc.parts] == ["gsm8k", "math"]
    gsm, math = (p for _, p in lc.parts)
    assert gsm.per_prompt["prompt"].to_list() == ["q0", "q1", "q2"]
    assert gsm.per_prompt["n"].to_list() == [8] * 3 and gsm.per_prompt["k"].to_list() == [2] * 3
    assert math.per_prompt["k"].sum() == 0 and math.per_group.height == 6
    assert lc.per_prompt.height == 6  # the pooled load is unchanged


def test_check_by_names_the_failing_group(capsys, verl_two_sources):
    code, out, err = run(capsys, "check", str(verl_two_sources), "--by", "data_source", "-G", "4",
                         "--max-never-solved", "0.5", "-f", "json", "-q", "--estimator", "plugin",
                         "--bootstrap", "0")  # plugin: never solved = k = 0 in the log
    assert code == 1
    d = json.loads(out)
    groups = {g["value"]: g for g in d["by"]["groups"]}
    assert d["by"]["column"] == "data_source" and set(groups) == {"gsm8k", "math"}
    assert groups["gsm8k"]["passed"] and groups["gsm8k"]["checks"][0]["value"] == 0.0
    assert not groups["math"]["passed"] and groups["math"]["checks"][0]["value"] == 1.0
    assert d["checks"][0]["value"] == 0.5 and not d["passed"]  # pooled holds, a group fails
    assert err.splitlines()[0] == "sigmaudit: check failed for data_source = math"
    assert err.splitlines()[1] == ("sigmaudit: check FAILED (1 of 2 data_source values; the pooled log passes "
                                   "1 of 1) at G = 4")  # was "check FAILED (0 of 1):  at G = 4"


def test_scan_and_plan_by_give_one_entry_per_value(capsys, verl_two_sources):
    for command in ("scan", "plan"):
        code, out, _ = run(capsys, command, str(verl_two_sources), "--by", "data_source", "-f", "json", "-q")
        d = json.loads(out)
        assert [g["value"] for g in d["by"]["groups"]] == ["gsm8k", "math"]
        assert [g["prompts"] for g in d["by"]["groups"]] == [3, 3] and d["prompts"] == 6
    code, out, _ = run(capsys, "scan", str(verl_two_sources), "-f", "json", "-q")
    assert json.loads(out)["by"] is None


def test_by_a_missing_column_is_an_error(verl_two_sources):
    with pytest.raises(SchemaError, match="--by column 'model' is in none of the files"):
        load_by([verl_two_sources], "model")


def test_evalperf_by_run_matches_the_file(capsys):
    table = pl.read_csv(EVALPERF)
    never = (table.group_by("run").agg((pl.col("n_correct") == 0).mean().alias("never"),
                                       pl.len().alias("tasks")).sort("run"))
    code, out, err = run(capsys, "check", str(EVALPERF), "--by", "run", "-G", "8",
                         "--max-never-solved", "0.1", "-f", "json", "-q", "--estimator", "plugin",
                         "--bootstrap", "0")  # plugin: never solved = k = 0 in the log
    d = json.loads(out)
    groups = d["by"]["groups"]
    assert [g["value"] for g in groups] == never["run"].to_list()
    assert [g["prompts"] for g in groups] == never["tasks"].to_list()
    for g, expected in zip(groups, never["never"].to_list(), strict=True):
        assert g["checks"][0]["value"] == pytest.approx(expected, abs=1e-12)
    failing = [r for r, v in zip(never["run"], never["never"], strict=True) if v > 0.1]
    assert failing and code == 1
    assert err.splitlines()[0] == f"sigmaudit: check failed for run = {', '.join(failing)}"
    assert load_counts([EVALPERF]).per_prompt.height == d["prompts"]


def test_report_by_gives_each_value_its_scan(capsys, verl_two_sources):
    from math import comb

    code, out, _ = run(capsys, "report", str(verl_two_sources), "--by", "data_source", "-f", "json", "-o", "-",
                       "-q")
    assert code == 0
    d = json.loads(out)
    assert d["by"]["column"] == "data_source" and d["scan"]["by"] is None  # not twice
    gsm, math = d["by"]["groups"]
    assert (gsm["value"], math["value"]) == ("gsm8k", "math")
    assert (gsm["prompts"], gsm["rollouts"], math["prompts"], math["rollouts"]) == (3, 24, 3, 24)
    assert gsm["pass_rate"]["never_solved"] == 0.0 and math["pass_rate"]["never_solved"] == 1.0
    assert gsm["observed_silent"]["fraction"] == 0.0 and math["observed_silent"]["all_wrong"] == 1.0
    # wasted is what the logged groups of 4 did (none silent); each gsm8k prompt: n = 8, k = 2, so the pooled
    # prediction at G = 4 (unbiased) is [C(2,4) + C(6,4)] / C(8,4)
    assert gsm["wasted"]["G"] == 4 and gsm["wasted"]["estimator"] == "observed"
    assert gsm["wasted"]["silent_rollout_share"] == 0.0 and gsm["wasted"]["predicted_estimator"] == "unbiased"
    assert gsm["wasted"]["predicted"] == pytest.approx(comb(6, 4) / comb(8, 4), abs=1e-12)
    assert math["wasted"]["silent_rollout_share"] == pytest.approx(1.0)
    assert d["scan"]["prompts"] == 6 and d["filtered"] is None
    code, out, _ = run(capsys, "report", str(verl_two_sources), "--by", "data_source", "-o", "-", "-q")
    assert "<h2>By data_source</h2>" in out
    row = out[out.index("<tr><td>gsm8k</td>"):]
    row = row[:row.index("</tr>")]
    cells = [c.split(">", 1)[1] for c in row.removeprefix("<tr>").split("</td>")[:-1]]
    assert cells[:6] == ["gsm8k", "3", "24", "6", "0.0000", "0.0000"]
    code, out, _ = run(capsys, "report", str(verl_two_sources), "-f", "json", "-o", "-", "-q")
    assert json.loads(out)["by"] is None


def test_trend_by_gives_each_value_its_steps(capsys, verl_two_sources):
    code, out, _ = run(capsys, "trend", str(verl_two_sources), "--by", "data_source", "-f", "json", "-q")
    assert code == 0
    d = json.loads(out)
    assert [s["observed_silent"] for s in d["steps"]] == [0.5, 0.5]  # pooled: the math half
    groups = {g["value"]: g for g in d["by"]["groups"]}
    assert d["by"]["column"] == "data_source" and list(groups) == ["gsm8k", "math"]
    gsm, math = groups["gsm8k"]["steps"], groups["math"]["steps"]
    assert [s["step"] for s in gsm] == [1, 2] and [s["groups"] for s in gsm] == [3, 3]
    assert [s["pass_rate"] for s in gsm] == [0.25, 0.25] and [s["observed_silent"] for s in gsm] == [0.0, 0.0]
    assert [s["observed_all_wrong"] for s in math] == [1.0, 1.0] and [s["pass_rate"] for s in math] == [0.0, 0.0]
    code, out, _ = run(capsys, "trend", str(verl_two_sources), "--by", "data_source", "-f", "markdown", "-q")
    assert "per step by data_source" in out
    assert out.count("| gsm8k |") == 2 and out.count("| math |") == 2
    code, out, _ = run(capsys, "trend", str(verl_two_sources), "-f", "json", "-q")
    assert json.loads(out)["by"] is None


def test_by_numeric_values_in_numeric_order_and_too_many_values_refused(tmp_path, capsys):
    import polars as pl
    from cli_runner import run

    from sigmaudit.loaders import MAX_BY_VALUES, load_counts

    path = tmp_path / "runs.parquet"
    n = 12 * 16
    pl.DataFrame({"prompt": [f"p{i % 12}" for i in range(n)], "reward": [(i // 3) % 2 for i in range(n)],
                  "run": [str(i % 12) for i in range(n)]}).write_parquet(path)
    loaded = load_counts([path])
    from sigmaudit.loaders import load_by

    split = load_by([path], column="run")
    assert [v for v, _ in split.parts] == [str(i) for i in range(12)]  # 2 before 10
    assert loaded.per_prompt.height == 12
    many = tmp_path / "many.parquet"
    m = (MAX_BY_VALUES + 1) * 2
    pl.DataFrame({"prompt": [f"p{i % 7}" for i in range(m)], "reward": [i % 2 for i in range(m)],
                  "run": [f"r{i // 2}" for i in range(m)]}).write_parquet(many)
    code, out, err = run(capsys, "scan", str(many), "--by", "run", "-q")
    assert code == 2 and out == ""
    assert f"--by column 'run' holds {MAX_BY_VALUES + 1} values" in err and len(err.strip().splitlines()) == 1


def test_check_by_on_an_unbiased_figure_fits_no_prior(capsys, monkeypatch, verl_two_sources):
    """Issue 23 item 25: each --by value's post-filter test asked scan for every estimator of the silent rate,
    the model-based one fitting that value's prior (~0.14 s a value: 35 s for 250 values). A gate on the
    observed silent share now fits none, pooled or per value, and says the same."""
    args = ("check", str(verl_two_sources), "--by", "data_source", "-G", "4", "--max-silent", "0.9", "-f", "json")
    want = run(capsys, *args)
    fits = []

    def counted(*a, **kw):
        fits.append(1)
        raise AssertionError("the prior was fitted")

    monkeypatch.setattr("sigmaudit.core.corpus.fit_corpus_prior", counted)
    got = run(capsys, *args)
    assert fits == [] and got[:2] == want[:2] and want[0] == 1
    d = json.loads(got[1])
    assert [g["value"] for g in d["by"]["groups"]] == ["gsm8k", "math"] and d["checks"][0]["estimator"] == "observed"
