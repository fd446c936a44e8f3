"""``plan --train-batch B --gen-batch M --max-gen-batches K``: DAPO's loop as verl runs it, in words and JSON.

Every figure is checked against an independent computation: the log's silent share at G = n counted by hand
from its groups and P(a step raises) = P(Binomial(K·M, 1 − s) < B) from scipy (docs/theory.md)."""

from __future__ import annotations

import json

import numpy as np
import polars as pl
import pytest
from cli_runner import run
from scipy.stats import binom

SAMPLE = "sample_logs/rollouts.parquet"


def silent_by_hand(path: str) -> float:
    """Mean over prompts of the unbiased silent chance at G = 8 from pooled counts (no drift on this log)."""
    from math import comb

    df = pl.read_parquet(path).group_by("prompt_id").agg(pl.len().alias("n"),
                                                         pl.col("reward").sum().cast(pl.Int64).alias("k"))
    return float(np.mean([(comb(k, 8) + comb(n - k, 8)) / comb(n, 8) for n, k in zip(df["n"], df["k"], strict=True)]))


def test_plan_dapo_json_against_hand_counts(capsys) -> None:
    code, out, err = run(capsys, "plan", SAMPLE, "-G", "8", "--train-batch", "512", "--gen-batch", "1536",
                         "--max-gen-batches", "6", "--run-steps", "50", "--bootstrap", "0", "-f", "json", "-q")
    assert code == 0, err
    d = json.loads(out)["dapo"]
    s = silent_by_hand(SAMPLE)
    assert d["silent"] == pytest.approx(s, rel=1e-9)
    assert d["p_step_raises"] == pytest.approx(binom.cdf(511, 6 * 1536, 1 - s), abs=1e-15)
    # 1536 · (1 − s) ≈ 616 kept > 512: one chunk almost always suffices, so 3 rollouts generated per trained
    assert d["gen_batches_per_step"] == pytest.approx(1 + binom.cdf(511, 1536, 1 - s), rel=1e-9)
    assert d["generated_per_trained"] == pytest.approx(3 * d["gen_batches_per_step"], rel=1e-12)
    assert d["ideal_groups_per_kept"] == pytest.approx(1 / (1 - s), rel=1e-9)
    # Wald: E[kept in the step] = E[J]·M·(1 − s); the surplus over 512 is dropped, 8 rollouts a group
    assert d["discarded_informative_rollouts"] == pytest.approx(8 * (d["gen_batches_per_step"] * 1536 * (1 - s) - 512),
                                                                rel=1e-6)
    assert (d["train_batch"], d["gen_batch"], d["max_gen_batches"], d["run_steps"], d["n"]) == (512, 1536, 6, 50, 8)
    nxt = d["next_step"]
    assert nxt["basis"] == "next-step forecast" and 0 < nxt["silent"] < 1
    assert nxt["p_step_raises"] == pytest.approx(binom.cdf(511, 6 * 1536, 1 - nxt["silent"]), abs=1e-15)


def test_plan_dapo_text_and_defaults(capsys) -> None:
    code, out, _ = run(capsys, "plan", SAMPLE, "-G", "8", "--train-batch", "512", "--bootstrap", "0", "-q",
                       "-f", "markdown")
    assert code == 0
    assert "DAPO as verl runs it" in out
    assert "data.gen_batch_size M = 512" in out  # verl: gen defaults to train
    assert "no chunk limit" in out


def test_plan_without_dapo_flags_has_no_dapo(capsys) -> None:
    code, out, _ = run(capsys, "plan", SAMPLE, "-G", "8", "--bootstrap", "0", "-f", "json", "-q")
    assert code == 0 and json.loads(out)["dapo"] is None


@pytest.mark.parametrize("args", [["--gen-batch", "10"], ["--max-gen-batches", "3"], ["--dataset-size", "900"]])
def test_dapo_flags_need_train_batch(capsys, args) -> None:
    code, out, err = run(capsys, "plan", SAMPLE, "-G", "8", *args, "-q")
    assert code == 2 and out == "" and "--train-batch" in err and "Traceback" not in err


def test_watch_warns_when_the_next_steps_p_raises_passes_the_threshold(capsys, tmp_path) -> None:
    """watch --once on a saturating simulated run: the dapo event key is P(Binomial(K·M, 1 − s) < B) at the
    event's own next-step forecast s (scipy), and the warning line appears exactly when it passes the threshold."""
    log = tmp_path / "run.parquet"
    assert run(capsys, "simulate", "--prompts", "300", "--num-steps", "40", "--lr", "1.5", "--rules", "grpo",
               "--log-out", str(log))[0] == 0
    events = tmp_path / "ev.jsonl"
    code, out, err = run(capsys, "watch", str(log), "--once", "--interval", "0.05", "--train-batch", "300",
                         "--gen-batch", "600", "--max-gen-batches", "3", "--warn-p-raises", "0.2",
                         "--events", str(events), "-q")
    assert code == 0, err
    last = json.loads(events.read_text().splitlines()[-1])
    s = last["forecast"]["silent"]
    want = binom.cdf(299, 3 * 600, 1 - s)
    assert last["dapo"]["p_step_raises"] == pytest.approx(want, rel=1e-9, abs=1e-300)
    assert last["dapo"]["warning"] == (want > 0.2)
    assert ("warning: step" in out) == any(json.loads(x)["dapo"]["warning"] for x in events.read_text().splitlines())


@pytest.fixture(scope="module")
def saturating(tmp_path_factory) -> str:
    """A simulated run whose pass rates saturate (written by ``simulate --log-out``)."""
    from sigmaudit.audits.simulate import rollout_log, simulate

    path = tmp_path_factory.mktemp("dapo") / "run.parquet"
    rollout_log(simulate(prompts=300, steps=40, lr=1.5, rules="grpo", seed=2, record=True)).write_parquet(path)
    return str(path)


def _check(capsys, log: str, *extra: str) -> tuple[int, dict]:
    code, out, err = run(capsys, "check", log, "--train-batch", "300", "--gen-batch", "600", "--max-gen-batches",
                         "8", "--bootstrap", "0", "-f", "json", "-q", *extra)
    assert code in (0, 1), err
    return code, json.loads(out)


@pytest.mark.slow  # three checks, each replaying the forecast (~7 s)
def test_check_gates_p_step_raises_on_the_larger_reading(capsys, saturating) -> None:
    _, d = _check(capsys, saturating, "--max-silent", "1")
    dapo = d["dapo"]
    readings = [dapo, dapo["next_step"]]
    for r in readings:  # each reading's P(raises) from its own silent share, by scipy
        assert r["p_step_raises"] == pytest.approx(binom.cdf(299, 8 * 600, 1 - r["silent"]), rel=1e-9, abs=1e-300)
    p = max(r["p_step_raises"] for r in readings)
    assert 1e-6 < p < 1 - 1e-6  # the limit bites: 8 chunks keep about 300 groups at the forecast difficulty
    assert dapo["basis"] == "the window checked" and dapo["next_step"]["silent"] > dapo["silent"]  # it drifts
    for limit, want in ((p + 1e-7, 0), (p - 1e-7, 1)):
        code, d = _check(capsys, saturating, "--max-p-raises", repr(limit))
        assert code == want and d["passed"] is (want == 0)
        (c,) = d["checks"]
        assert c["name"] == "dapo_p_step_raises" and c["value"] == pytest.approx(p, rel=1e-12)


def test_check_p_raises_needs_train_batch(capsys, saturating) -> None:
    code, out, err = run(capsys, "check", saturating, "--max-p-raises", "0.1", "-q")
    assert code == 2 and out == "" and "--train-batch" in err and "Traceback" not in err


def test_post_filter_log_flags_the_dapo_figures(capsys) -> None:
    code, out, _ = run(capsys, "plan", SAMPLE, "-G", "8", "--post-filter", "--train-batch", "512", "--bootstrap", "0",
                       "-f", "json", "-q")
    assert code == 0 and json.loads(out)["dapo"]["filtered"] is True
    code, out, _ = run(capsys, "plan", SAMPLE, "-G", "8", "--train-batch", "512", "--bootstrap", "0", "-f", "json",
                       "-q")
    assert json.loads(out)["dapo"]["filtered"] is False


def test_dataset_size_corrects_p_raises(capsys) -> None:
    """--dataset-size 2,000 with M = 1,536 (one chunk reads 77 % of an epoch): P(a step raises) is that of the
    kept count's binomial matched to the without-replacement variance m q (1 − q)(1 − ρ (m − 1)/(D − 1))
    (docs/theory.md), below the uncorrected Binomial(1536, q) figure; the JSON names D and ρ."""
    from scipy.special import betainc

    args = ("plan", SAMPLE, "-G", "8", "--train-batch", "640", "--gen-batch", "1536", "--max-gen-batches", "1",
            "--bootstrap", "0", "-f", "json", "-q")
    code, out, err = run(capsys, *args, "--dataset-size", "2000")
    assert code == 0, err
    d = json.loads(out)["dapo"]
    q, rho, m = 1 - d["silent"], d["spread"], 1536
    assert d["dataset_size"] == 2000 and 0.3 < rho < 1
    var = m * q * (1 - q) * (1 - rho * (m - 1) / 1999)
    p1 = 1 - var / (m * q)
    want = betainc(m * q / p1 - 639, 640, 1 - p1)
    assert d["p_step_raises"] == pytest.approx(want, rel=1e-9)
    code, out, _ = run(capsys, *args)
    plain = json.loads(out)["dapo"]
    assert plain["dataset_size"] is None and plain["spread"] is None
    assert plain["p_step_raises"] == pytest.approx(binom.cdf(639, 1536, q), rel=1e-9)
    assert d["p_step_raises"] > plain["p_step_raises"] + 0.02  # the mean is below B: less spread, more raises


@pytest.mark.parametrize("command", ["plan", "check"])
def test_generation_batch_larger_than_the_dataset_is_refused(capsys, command) -> None:
    extra = ("--max-p-raises", "0.1") if command == "check" else ()
    code, out, err = run(capsys, command, SAMPLE, "--train-batch", "512", "--gen-batch", "1536", "--dataset-size",
                         "1000", *extra, "-q")
    assert code == 2 and out == ""
    assert "--gen-batch" in err and "Train dataloader is empty" in err and "at most 1,000" in err
    assert "Traceback" not in err


def test_generation_batch_larger_than_the_logs_prompts_is_named(capsys) -> None:
    code, out, _ = run(capsys, "plan", SAMPLE, "-G", "8", "--train-batch", "512", "--gen-batch", "1536",
                       "--bootstrap", "0", "-q", "-f", "markdown")
    assert code == 0 and "larger than the 200 prompts this log shows" in " ".join(out.split())
