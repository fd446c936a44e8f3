"""`sigmaudit plan` at the edge: the JSON contract, the recommendation read in 30 seconds, --full, the
drop list against a hand computation on two sample logs, --alloc-out, exit codes and one-line errors."""

from __future__ import annotations

import json
import re

import numpy as np
import polars as pl
import pytest
from cli_runner import run
from scipy.stats import binom

import sigmaudit
from sigmaudit.audits import corpus_of

N = [8, 8, 8, 8, 16, 16, 32, 4, 4, 8, 64, 64, 64, 64]
K = [0, 0, 1, 4, 15, 16, 9, 2, 0, 7, 0, 0, 0, 64]  # the n = 64 unanimous prompts put prior mass at p ∈ {0, 1}
ROLLOUTS = "sample_logs/rollouts.parquet"
LONG = "sample_logs/long.csv"
SWEEP_KEYS = {"G", "prompts_per_step", "silent", "all_wrong", "all_correct", "fidelity", "estimator", "silent_ci",
              "fidelity_ci", "informative_groups", "informative_groups_ci", "informative_rollouts",
              "informative_rollouts_ci", "update", "update_ci", "snr_vs_best", "snr_moments", "knapsack", "knapsack_ci",
              "dapo_groups_per_kept_group"}


@pytest.fixture
def counts(tmp_path):
    path = tmp_path / "counts.csv"
    path.write_text("prompt,n,k\n" + "".join(f"q{i},{n},{k}\n" for i, (n, k) in enumerate(zip(N, K, strict=True))))
    return str(path)


def test_json_contract(capsys):
    code, out, _ = run(capsys, "plan", ROLLOUTS, "-f", "json", "-q", "--bootstrap", "20")
    d = json.loads(out)
    assert code == 0 and set(d["sweep"][0]) == SWEEP_KEYS
    assert d["budget"] == {"rollouts_per_step": 1600, "source": "log",
                           "description": "the log's median per step, 20 steps"}
    assert d["advantage"] == "grpo" and d["std"] == "sample" and d["objective"] == "snr"
    c = d["snr_choice"]
    assert c["recommended_G"] == d["recommended_G"] == 8 and c["G_end"] == 1600 and c["tolerance"] == 0.05
    assert c["verdict"] == "keep" and c["run_G"] == 8 and c["run_G_source"] == "logged"
    assert c["band"] == {"shares": [0.02, 0.05, 0.1, 0.2], "G_ref": 8, "given": False}
    assert all(len(r["snr_vs_best"]) == 4 and max(r["snr_vs_best"]) <= 1.0 for r in d["sweep"])
    assert d["objective_detail"] is None
    assert {r["rule"] for r in d["curation"]["rows"]} == {"log", "posterior", "value"}
    assert d["price"]["before"]["G"] == 8 and d["price"]["reference"] == "logged"
    assert all(r["update_ci"][0] <= r["update"] <= r["update_ci"][1] for r in d["sweep"] if r["G"] > 1)


def test_rollouts_per_step_from_the_log_is_its_median_step():
    loaded = sigmaudit.load_counts([ROLLOUTS])
    per_step = loaded.per_group.group_by("step").agg(pl.col("n").sum())["n"]
    from sigmaudit.audits.plan import log_budget

    b = log_budget(loaded, None, 512, 8)
    assert b.source == "log" and b.rollouts_per_step == int(np.median(per_step.to_numpy()))
    assert log_budget(loaded, 999, 512, 8).rollouts_per_step == 999


def _lines(text: str) -> list[str]:
    return text.rstrip("\n").splitlines()


@pytest.mark.parametrize("path", [ROLLOUTS, LONG])
def test_default_output_fits_30_lines_of_100_columns(capsys, monkeypatch, path):
    """Issue 41 item 7: the first screen is at most 12 lines before the sweep: R and its source, the
    conventions and the data; the flat range over the band and the verdict; the data lever."""
    monkeypatch.setenv("COLUMNS", "100")
    code, out, _ = run(capsys, "plan", path, "-q")
    lines = _lines(out)
    assert code == 0 and len(lines) <= 30 and max(len(x) for x in lines) <= 100
    head = lines[:next(i for i, x in enumerate(lines) if "G sweep" in x)]
    assert len(head) <= 12
    text = " ".join(x.strip("│ ╭╰─") for x in head)
    assert "rollouts/step (" in text and "GRPO, sample std" in text and "samples each" in text
    assert "keep the step's SNR within 5% of the best for any between-prompt noise share 2–20% at G = 8" in text
    assert "Data" in text
    full = _lines(run(capsys, "plan", path, "-q", "--full")[1])
    assert len(full) > len(lines) and any("curation" in x for x in full)


def test_no_column_twice_and_no_price_table_of_ones(capsys, counts):
    out = run(capsys, "plan", ROLLOUTS, "-q", "--full", "-G", "8", "-G", "16")[1]
    assert "signal prompts" not in out and "rollouts / signal prompt" not in out
    # the recommendation equal to the logged G: no price table at all
    out = run(capsys, "plan", ROLLOUTS, "-q", "--full", "--objective", "snr", "--tolerance", "0.03")[1]
    d = json.loads(run(capsys, "plan", ROLLOUTS, "-q", "-f", "json", "--objective", "snr", "--tolerance", "0.03")[1])
    if d["recommended_G"] == d["price"]["before"]["G"]:
        assert "price" not in re.findall(r"╭─ (\w+)", out)


# ---------------------------------------------------------------- the drop list by hand


def _by_hand(path: str, drop_above: float, band: tuple[float, float] | None) -> pl.DataFrame:
    """n, k per prompt from the raw rows; P(p = 0), P(p = 1) from the prior's weights and scipy's pmf."""
    if path.endswith(".parquet"):
        raw = pl.read_parquet(path).rename({"prompt_id": "prompt", "reward": "r"})
    else:
        raw = pl.read_csv(path).rename({"problem_id": "prompt", "correct": "r"})
    per = raw.group_by(pl.col("prompt").cast(pl.Utf8)).agg(pl.len().alias("n"), pl.col("r").sum().alias("k"))
    prior = corpus_of(sigmaudit.load_counts([path])).prior
    g, w = prior.grid, prior.weights
    rows = []
    for prompt, n, k in per.iter_rows():
        like = binom.pmf(k, n, g) * w
        p0, p1 = like[g == 0].sum() / like.sum(), like[g == 1].sum() / like.sum()
        p_hat = k / n
        rule = "posterior" if p0 + p1 > drop_above else (
            "band" if band is not None and not band[0] < p_hat < band[1] else None)
        rows.append((prompt, n, k, p_hat, p0, p1, k in (0, n), rule, rule is not None))
    return pl.DataFrame(rows, schema=["prompt", "samples", "k", "p_hat", "p_never", "p_always",
                                      "never_or_always_in_log", "rule", "drop"], orient="row").sort("prompt")


@pytest.mark.parametrize(("path", "args", "band"), [
    (ROLLOUTS, [], None),
    (LONG, ["--keep-band", "0.1:0.9", "--drop-above", "0.3"], (0.1, 0.9)),
])
def test_the_curation_rules_against_a_hand_computation(capsys, path, args, band):
    """The posterior and band rows of the curation table (--drop-above, --keep-band) drop the prompts a hand
    computation drops (posterior P(p = 0), P(p = 1) from the prior's weights and scipy's pmf)."""
    d = json.loads(run(capsys, "plan", path, "-q", "-f", "json", "--bootstrap", "0", *args)[1])
    want = _by_hand(path, 0.3 if band else 0.5, band)
    rows = {r["rule"]: r for r in d["curation"]["rows"]}
    posterior = want.filter(pl.col("rule") == "posterior")
    assert rows["posterior"]["prompts_dropped"] == posterior.height > 0
    if band is not None:
        outside = want.filter(~((pl.col("p_hat") > band[0]) & (pl.col("p_hat") < band[1])))
        assert rows["band"]["prompts_dropped"] == outside.height


@pytest.mark.parametrize("path", [ROLLOUTS, LONG])
@pytest.mark.parametrize("suffix", [".csv", ".parquet", ".jsonl"])
def test_plans_drop_list_is_curates_at_the_g_it_values(capsys, tmp_path, path, suffix):
    """One drop list: plan's --drop-out is the data lever its recommendation names (the value rule at the G to
    be run), byte for byte what ``curate -G that G --drop-out`` writes; its drop count is the value row's. It was
    the posterior rule's list, which the first screen no longer quotes."""
    mine, theirs = tmp_path / f"plan{suffix}", tmp_path / f"curate{suffix}"
    d = json.loads(run(capsys, "plan", path, "-q", "-f", "json", "--bootstrap", "0", "--drop-out", str(mine))[1])
    G = d["curation"]["value_G"]
    assert run(capsys, "curate", path, "-q", "-G", str(G), "--drop-out", str(theirs))[0] == 0
    assert mine.read_bytes() == theirs.read_bytes()
    got = {".csv": pl.read_csv, ".parquet": pl.read_parquet, ".jsonl": pl.read_ndjson}[suffix](mine)
    value = next(r for r in d["curation"]["rows"] if r["rule"] == "value")
    assert value["prompts_dropped"] == int((got["decision"] == "drop").sum())
    assert got.height == sigmaudit.load_counts([path]).per_prompt.height
    # the sample log's 160 samples a prompt settle most values; long.csv's few samples leave them to re-probe
    assert (value["prompts_dropped"] > 0) == (path == ROLLOUTS)


def test_curation_figures_against_the_posterior_rule(capsys):
    d = json.loads(run(capsys, "plan", ROLLOUTS, "-q", "-f", "json", "--bootstrap", "0")[1])
    drop = _by_hand(ROLLOUTS, 0.5, None)
    post = next(r for r in d["curation"]["rows"] if r["rule"] == "posterior")
    assert post["prompts_dropped"] == int(drop["drop"].sum())
    assert post["dropped_share"] == pytest.approx(drop["drop"].mean())
    # silent share of the kept prompts at the logged G = 8: the posterior mean of p^8 + (1 − p)^8 under the corpus
    # prior (the kept set is chosen by the counts: no per-prompt unbiased estimate), by hand on the prior's grid
    kept = drop.filter(~pl.col("drop"))
    prior = corpus_of(sigmaudit.load_counts(ROLLOUTS)).prior
    post_k = prior.posterior(kept["samples"].to_numpy(), kept["k"].to_numpy())
    s = post_k @ (prior.grid**8 + (1 - prior.grid) ** 8)
    at8 = next(a for a in post["at"] if a["G"] == 8)
    assert at8["silent_after"] == pytest.approx(float(np.mean(s)), rel=1e-9)


# ---------------------------------------------------------------- budgets


@pytest.mark.parametrize("suffix", [".csv", ".parquet", ".jsonl"])
def test_budget_allocation_and_alloc_out(capsys, counts, tmp_path, suffix):
    dest, report = tmp_path / f"alloc{suffix}", tmp_path / "plan.json"
    code, out, err = run(capsys, "plan", counts, "--budget", "200", "--max-g", "32", "--alloc-out", str(dest),
                         "-o", str(report), "-q")
    assert code == 0 and out == "" and err == ""
    a = json.loads(report.read_text())["allocation"]
    assert a["mode"] == "budget" and a["budget"] == 200 and a["allocated"]["rollouts"] <= 200
    assert a["method"].startswith("greedy on marginal gains") and a["optimality_gap"] == 0.0
    assert a["allocated"]["objective_value"] >= a["uniform"]["objective_value"]
    df = {".csv": pl.read_csv, ".parquet": pl.read_parquet, ".jsonl": pl.read_ndjson}[suffix](dest)
    assert sorted(df["prompt"].to_list()) == sorted(f"q{i}" for i in range(len(N)))
    assert int(df["G"].sum()) == a["allocated"]["rollouts"]
    unanimous = {f"q{i}" for i, (n, k) in enumerate(zip(N, K, strict=True)) if k in (0, n)}
    assert set(df.filter(pl.col("drop"))["prompt"].to_list()) == unanimous  # no budget for k ∈ {0, n}


def test_budget_never_soaks_up_rollouts_on_prompts_the_samples_cannot_place(capsys, tmp_path):
    """An epoch-style log: many prompts never solved in 16 tries. They get none of the budget."""
    rng = np.random.default_rng(3)
    k = np.concatenate([np.zeros(600, int), rng.binomial(16, 0.4, 400)])
    path = tmp_path / "epoch.csv"
    path.write_text("prompt,n,k\n" + "".join(f"q{i},16,{x}\n" for i, x in enumerate(k)))
    for objective in ("snr", "informative", "knapsack"):
        d = json.loads(run(capsys, "plan", str(path), "-q", "-f", "json", "--budget", "4000", "--objective",
                           objective, "--bootstrap", "0")[1])
        a = d["allocation"]
        assert a["prompts_dropped"] >= 600 and a["allocated"]["rollouts"] <= 4000
        assert "cannot tell p from 0 or 1" in a["drop_rule"]


@pytest.mark.parametrize(("args", "message"), [
    (["--budget", "10"], "--budget 10 is below"),
    (["--budget", "100", "--min-g", "8", "--max-g", "4"], "--min-g 8 is larger than --max-g 4"),
    (["--max-silent", "1.2"], "--max-silent: must lie in [0, 1], got 1.2"),
    (["--alloc-out", "a.csv"], "--alloc-out: nothing to write"),
    (["--drop-out", "a.xlsx"], "--drop-out: unknown file type '.xlsx'"),
    (["--keep-band", "0.9:0.1"], "--keep-band: --keep-band '0.9:0.1' is not LO:HI"),
    (["-G", "4611686018427387904"], "-G 4,611,686,018,427,387,904 is above 65,536"),
    (["-G", "8192", "--rollouts-per-step", "4096"], "-G 8,192 is above the rollouts per step R = 4,096"),
    (["--advantage", "ppo"], "--advantage: --advantage 'ppo' is not an estimator"),
    (["--tolerance", "1.5"], "--tolerance: --tolerance must lie in [0, 1)"),
])
def test_impossible_options_exit_2(capsys, counts, tmp_path, monkeypatch, args, message):
    monkeypatch.chdir(tmp_path)
    code, out, err = run(capsys, "plan", counts, *args, "-q")
    assert code == 2 and out == ""
    assert err.startswith(f"sigmaudit: error: {message}") and len(err.splitlines()) == 1
    assert not (tmp_path / "a.csv").exists()


def test_G_past_the_logs_budget_is_refused_after_reading(capsys):
    code, out, err = run(capsys, "plan", ROLLOUTS, "-G", "2048", "-q")  # R = 1,600 from the log
    assert code == 2 and out == "" and "above the rollouts per step R = 1,600" in err and len(err.splitlines()) == 1


@pytest.mark.parametrize("fmt", ["table", "json", "markdown", "csv"])
def test_every_format_with_allocation(capsys, counts, fmt):
    code, out, err = run(capsys, "plan", counts, "-G", "4", "-G", "8", "--eps", "0.2", "--max-g", "16",
                         "-f", fmt, "-q")
    assert code == 0 and err == "" and out.endswith("\n")
    if fmt == "json":
        assert json.loads(out)["allocation"]["mode"] == "eps"
    elif fmt == "csv":
        assert out.splitlines()[0].startswith("G,prompts_per_step,silent")
    else:
        assert "per-prompt allocation" in out and "one n for every prompt" in " ".join(out.split())
