"""`sigmaudit plan`: exit codes, stdout, stderr and --alloc-out apart."""

from __future__ import annotations

import json

import numpy as np
import polars as pl
import pytest
from cli_runner import run

from sigmaudit.audits.plan import sweep
from sigmaudit.core.corpus import Corpus

N = [8, 8, 8, 8, 16, 16, 32, 4, 4, 8, 64, 64, 64, 64]
K = [0, 0, 1, 4, 15, 16, 9, 2, 0, 7, 0, 0, 0, 64]  # the n = 64 unanimous prompts put prior mass at p ∈ {0, 1}
SWEEP_KEYS = {"G", "silent", "all_wrong", "all_correct", "fidelity", "signal_prompts_per_batch",
              "rollouts_per_signal_prompt", "dapo_groups_per_kept_group", "estimator", "silent_ci", "fidelity_ci"}


@pytest.fixture
def counts(tmp_path):
    path = tmp_path / "counts.csv"
    path.write_text("prompt,n,k\n" + "".join(f"q{i},{n},{k}\n" for i, (n, k) in enumerate(zip(N, K, strict=True))))
    return str(path)


@pytest.fixture(scope="module")
def rows():
    return sweep(Corpus(np.array(N), np.array(K)), [2, 4, 8, 16])


def test_json_contract_and_recommendation(capsys, counts, rows):
    # G = 8 meets it (by 1e-12: a batch of G and check's single G may differ in the last bits), G = 4 does not
    target = rows[2].silent + 1e-12
    assert rows[1].silent > target
    code, out, err = run(capsys, "plan", counts, "-G", "2", "-G", "16", "-G", "4", "-G", "8", "--max-silent",
                         repr(target), "--batch-prompts", "100", "-f", "json", "-q")
    assert code == 0 and err == ""
    d = json.loads(out)
    assert [r["G"] for r in d["sweep"]] == [2, 4, 8, 16]
    assert set(d["sweep"][0]) == SWEEP_KEYS
    assert d["recommended_G"] == 8 and d["estimator"] == "auto" and d["prompts"] == len(N)
    assert [r["estimator"] for r in d["sweep"]] == ["unbiased", "unbiased", "bayes", "bayes"]  # n >= G everywhere
    lo, hi = d["sweep"][2]["silent_ci"]
    assert lo <= d["sweep"][2]["silent"] <= hi
    g_lo, g_hi = d["recommended_G_range"]
    assert g_lo <= 8 and (g_hi is None or g_hi >= 8)
    assert d["targets"] == {"max_silent": target, "min_fidelity": None}
    assert d["sweep"][2]["silent"] == pytest.approx(rows[2].silent, rel=1e-12)
    assert d["sweep"][1]["signal_prompts_per_batch"] == pytest.approx(100 * (1 - rows[1].silent))
    assert 0 < d["unreachable_share"] < rows[-1].silent
    assert d["allocation"] is None


def test_no_reachable_target_exits_1(capsys, counts):
    code, out, err = run(capsys, "plan", counts, "--max-silent", "0.3", "-f", "json", "-q")
    d = json.loads(out)
    assert code == 1 and err == "" and d["recommended_G"] is None
    share = d["unreachable_share"]
    assert share > 0.3 and all(r["silent"] > share for r in d["sweep"])
    assert f"never- or always-solved prompts alone make up {100 * share:.1f}% of the corpus" in d["reason"]


def test_table_default_and_notes_on_stderr(capsys, counts):
    code, out, err = run(capsys, "plan", counts, "-G", "4", "-G", "8", "--min-fidelity", "0.5")
    assert code == 0
    # fidelity ≥ 0.5 is met first at G = 3, between the swept 2... (not swept) and 4: every whole G is searched
    assert out.startswith("sigmaudit plan") and "G sweep" in out and "recommended G: 3" in out
    assert "estimator rule: auto" in out
    assert err.startswith("sigmaudit: detected counts layout") and "G sweep" not in err


def test_csv_is_the_sweep(capsys, counts):
    code, out, _ = run(capsys, "plan", counts, "-G", "4", "-G", "8", "-f", "csv", "-q")
    lines = out.splitlines()
    assert code == 0 and len(lines) == 3 and lines[0].startswith("G,silent,all_wrong,all_correct,fidelity,")


@pytest.mark.parametrize("suffix", [".csv", ".parquet", ".jsonl"])
def test_budget_allocation_and_alloc_out(capsys, counts, tmp_path, suffix):
    dest, report = tmp_path / f"alloc{suffix}", tmp_path / "plan.json"
    code, out, err = run(capsys, "plan", counts, "--budget", "200", "--max-g", "32", "--alloc-out", str(dest),
                         "-o", str(report), "-q")
    assert code == 0 and out == "" and err == ""
    a = json.loads(report.read_text())["allocation"]
    assert a["mode"] == "budget" and a["budget"] == 200 and a["allocated"]["rollouts"] <= 200
    assert a["method"].startswith("greedy on marginal gains") and a["optimality_gap"] == 0.0
    assert a["uniform"]["G"] == min(200 // len(N), 32)  # the best uniform G the budget buys
    assert a["allocated"]["expected_signal"] >= a["uniform"]["expected_signal"]
    reader = {".csv": pl.read_csv, ".parquet": pl.read_parquet, ".jsonl": pl.read_ndjson}[suffix]
    df = reader(dest)
    assert sorted(df["prompt"].to_list()) == sorted(f"q{i}" for i in range(len(N)))  # each prompt once
    assert int(df["G"].sum()) == a["allocated"]["rollouts"]
    unanimous = {f"q{i}" for i, (n, k) in enumerate(zip(N, K, strict=True)) if k in (0, n)}
    assert set(df.filter(pl.col("drop"))["prompt"].to_list()) <= unanimous  # posterior P(p ∈ {0, 1}) > 1/2
    assert a["prompts_dropped"] == int(df["drop"].sum())
    assert a["prompts_kept"] + a["prompts_dropped"] == len(N)


@pytest.mark.parametrize(("args", "message"), [
    (["--budget", "10"], "--budget 10 is below"),
    (["--budget", "100", "--min-g", "8", "--max-g", "4"], "--min-g 8 is larger than --max-g 4"),
    (["--budget", "100", "--eps", "0.1"], "--budget and --eps are alternatives"),
    (["--budget", "0"], "--budget must be at least 1, got 0"),
    (["--eps", "1.5"], "--eps must lie in (0, 1), got 1.5"),
    (["--max-silent", "1.2"], "--max-silent: must lie in [0, 1], got 1.2"),
    (["--min-fidelity", "-1"], "--min-fidelity: must lie in [0, 1], got -1"),
    (["--alloc-out", "a.csv"], "--alloc-out: nothing to write"),
    (["--eps", "0.1", "--alloc-out", "a.xlsx"], "--alloc-out: unknown file type '.xlsx'"),
])
def test_impossible_options_exit_2(capsys, counts, tmp_path, monkeypatch, args, message):
    monkeypatch.chdir(tmp_path)
    code, out, err = run(capsys, "plan", counts, *args, "-q")
    assert code == 2 and out == ""
    assert err.startswith(f"sigmaudit: error: {message}") and len(err.splitlines()) == 1
    assert not (tmp_path / "a.csv").exists()


@pytest.mark.parametrize("fmt", ["table", "json", "markdown", "csv"])
def test_every_format_with_allocation(capsys, counts, fmt):
    code, out, err = run(capsys, "plan", counts, "-G", "4", "-G", "8", "--eps", "0.2", "--max-g", "16",
                         "-f", fmt, "-q")
    assert code == 0 and err == "" and out.endswith("\n")
    if fmt == "json":
        assert json.loads(out)["allocation"]["mode"] == "eps"
    elif fmt == "csv":
        assert out.splitlines()[0].startswith("G,silent")
    else:
        assert "per-prompt allocation" in out and "uniform G =" in out


@pytest.mark.parametrize("fmt", ["table", "json", "markdown", "csv"])
def test_check_every_format(capsys, counts, fmt):
    code, out, err = run(capsys, "check", counts, "-G", "4", "--max-silent", "1", "-f", fmt, "-q")
    assert code == 0 and err == "sigmaudit: check passed (1 of 1 holds) at G = 4\n"
    assert ("silent_rate" in out) and (json.loads(out)["passed"] if fmt == "json" else True)
