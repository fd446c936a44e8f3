"""Round-4 attack findings: hostile inputs a sceptical user tries, each checked against a value computed
independently (by hand or brute force)."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_runner import run

from sigmaudit.core.identify import silent_interval

ROOT = Path(__file__).resolve().parent.parent


def test_two_prompts_collinear_moments_give_the_one_moment_range():
    # Two prompts with 2 samples each, k = 1 and k = 2: per-prompt unbiased (p, p²) estimates (0.5, 0) and
    # (1, 1) lie on a line, so their 2×2 covariance is singular (it raised numpy's "Singular matrix").
    # With E[p] alone: mean 0.75, SE = sqrt(var(0.5, 1) / 2) = 0.25, ±3 SE covers all of [0, 1], so the
    # silent rate at G = 4 ranges over [min_p p⁴ + (1 − p)⁴, 1] = [2 · 0.5⁴, 1] = [0.125, 1].
    lo, hi = silent_interval([2, 2], [1, 2], [1, 1], 4)
    assert abs(lo - 0.125) < 1e-6 and hi == 1.0


def test_scan_with_a_nan_reward_on_a_tiny_log_refuses_in_one_line(tmp_path, capsys):
    # After the NaN is dropped: prompt a has (1, 0), prompt b (1, 1): the case above, through the CLI.
    f = tmp_path / "nan.csv"
    f.write_text("step,prompt_id,reward\n1,a,1\n1,a,nan\n1,a,0\n1,b,1\n1,b,1\n")
    code, out, err = run(capsys, "scan", str(f), "-G", "4")
    assert code == 2 and out == ""
    assert "Singular" not in err and "not identified" in err and "0.1250 to 1.0000" in err


def test_plan_on_a_one_rollout_per_step_log_refuses_naming_the_flag(tmp_path, capsys):
    # One row: the log's median rollouts per step R = 1, so N = floor(R / G) = 0 prompts at every G >= 2
    # (it divided by floor(1 / 2) = 0: an internal ZeroDivisionError).
    f = tmp_path / "one.csv"
    f.write_text("step,prompt_id,reward\n1,a,1\n")
    code, out, err = run(capsys, "plan", str(f))
    assert code == 2 and out == ""
    assert "internal error" not in err and "R = 1" in err and "--rollouts-per-step" in err


def test_plan_rollouts_per_step_below_two_is_refused_by_the_flag(capsys):
    code, out, err = run(capsys, "plan", str(ROOT / "sample_logs" / "rollouts.parquet"), "--rollouts-per-step", "1")
    assert code == 2 and out == "" and "internal error" not in err and "--rollouts-per-step" in err


def test_watch_summary_counts_only_the_steps_it_reported(tmp_path, capsys):
    # Two prompts, G = 2. Step 1: both (1, 0), informative; step 2: a (1, 1), b (0, 0), both silent;
    # step 3: informative again. The guard (> 50% for 1 step) trips at step 2 and the watch stops there,
    # so its summary covers steps 1–2: 4 groups, 2 silent (50.0%), all-wrong 1 (25.0%), all-correct 1 (25.0%)
    # — not the 6 groups / 33.3% of the whole file, step 3 included, that it printed.
    f = tmp_path / "run.csv"
    f.write_text("step,prompt_id,reward\n" + "".join(
        f"{s},{p},{r}\n" for s, groups in ((1, {"a": (1, 0), "b": (1, 0)}), (2, {"a": (1, 1), "b": (0, 0)}),
                                           (3, {"a": (1, 0), "b": (0, 1)}))
        for p, rs in groups.items() for r in rs))
    code, out, err = run(capsys, "watch", str(f), "--once", "--max-silent", "0.5", "--for", "1")
    assert code == 1
    assert "2 completed steps (1–2), 4 groups: observed silent 50.0% (all-wrong 25.0%, all-correct 25.0%)" in out + err


def test_watch_refuses_a_series_without_a_silent_share(tmp_path, capsys):
    # DAPO's published Fig. 3b series (tests/data) holds only the all-correct share per step: watch could
    # report no step and its guard could never trip, yet it said "no completed step … held" and exited 0.
    # check refuses the same file's --max-silent (exit 2); watch now does too, naming the file.
    rows = [ln for ln in (ROOT / "tests" / "data" / "dapo_fig3b_allcorrect.csv").read_text().splitlines()
            if not ln.lstrip('"').startswith("#")]
    f = tmp_path / "dapo.csv"
    f.write_text("\n".join(rows) + "\n")
    code, out, err = run(capsys, "watch", str(f), "--once", "--max-silent", "0.5")
    assert code == 2 and "held" not in out + err
    assert "dapo.csv" in err and "no silent share" in err and "internal error" not in err
    assert run(capsys, "check", str(f), "--max-silent", "0.5")[0] == 2


def test_watch_still_gates_a_series_with_a_silent_share(tmp_path, capsys):
    # Shares 0.2, 0.7, 0.8 over --max-silent 0.5 for 2 steps: steps 2 and 3 in a row, the guard trips at 3.
    f = tmp_path / "series.csv"
    f.write_text("step,frac_reward_zero_std\n1,0.2\n2,0.7\n3,0.8\n")
    code, out, err = run(capsys, "watch", str(f), "--once", "--max-silent", "0.5", "--for", "2")
    assert code == 1 and "FAILED at step 3" in out + err and "mean logged silent share 56.7%" in out + err


def test_reduce_refuses_shaped_rewards_whose_counts_would_audit_differently(tmp_path, capsys):
    # --threshold 0.4. Groups: step 1 a (0.6, 0.9): k = n = 2 but the rewards differ (a gradient);
    # b (0.1, 0.2): k = 0, rewards differ; step 2 a (0.6, 0.6): zero spread, k = n; b (0.1, 0.5): k = 1.
    # The log's observed silent share (zero spread) is 1/4 = 0.25; counts (n, k) would say 3/4 = 0.75, so
    # `check --max-silent 0.3` passed on the log and failed on its reduced table. 2 of 4 groups differ.
    f = tmp_path / "shaped.csv"
    f.write_text("step,prompt_id,reward\n1,a,0.6\n1,a,0.9\n1,b,0.1\n1,b,0.2\n2,a,0.6\n2,a,0.6\n2,b,0.1\n2,b,0.5\n")
    assert run(capsys, "check", str(f), "--threshold", "0.4", "--max-silent", "0.3")[0] == 0
    out_file = tmp_path / "counts.parquet"
    code, out, err = run(capsys, "reduce", str(f), "--threshold", "0.4", "-o", str(out_file))
    assert code == 2 and not out_file.exists() and "2 of 4 logged groups" in err and "shaped.csv" in err


def test_reduce_keeps_shaped_rewards_whose_counts_agree(tmp_path, capsys):
    # Every group's zero spread matches its silence on correctness: (0.5, 0.5) k = n, (0.1, 0.1) k = 0,
    # (0.2, 0.7) k = 1: silent 2 of 3 groups either way, and the reduced table gates the same 2/3.
    f = tmp_path / "shaped.csv"
    f.write_text("step,prompt_id,reward\n1,a,0.5\n1,a,0.5\n1,b,0.1\n1,b,0.1\n2,a,0.2\n2,a,0.7\n")
    out_file = tmp_path / "counts.parquet"
    assert run(capsys, "reduce", str(f), "--threshold", "0.4", "-o", str(out_file))[0] == 0
    code, out, err = run(capsys, "check", str(out_file), "--max-silent", "0.6", "-f", "json")
    import json
    assert code == 1 and abs(json.loads(out)["checks"][0]["value"] - 2 / 3) < 1e-12


@pytest.mark.parametrize("engine", ["polars", "duckdb"])
@pytest.mark.parametrize("row", ["b,inf,3", "b,10,-inf"])
def test_infinite_counts_are_refused_as_counts(tmp_path, capsys, engine, row):
    # An infinite n or k passed every check (inf is whole, inf >= 1) and failed later in a cast, reported as
    # "cannot form the group keys ... pick the key columns" (polars) or a raw DuckDB conversion error.
    pytest.importorskip(engine)
    f = tmp_path / "counts.csv"
    f.write_text(f"prompt,n,k\na,10,3\n{row}\n")
    code, out, err = run(capsys, "scan", str(f), "--engine", engine)
    assert code == 2 and out == ""
    assert "counts are infinite" in err and "counts.csv" in err and "--n-col/--k-col" in err


def test_jsonl_with_a_bare_nan_names_its_line(tmp_path, capsys):
    # json.dumps({"reward": float("nan")}) writes a bare NaN, which Python reads back but JSON (and the jsonl
    # reader) does not: the error was "cannot read jsonl: InternalError(TapeError) at character 32 ('N')".
    # Line 1 holds the words NaN and Infinity inside a string, which is valid JSON; line 3 the bare -Infinity.
    f = tmp_path / "log.jsonl"
    f.write_text('{"step": 1, "prompt": "NaN Infinity", "reward": 1}\n{"step": 1, "prompt": "a", "reward": 0}\n'
                 '{"step": 1, "prompt": "a", "reward": -Infinity}\n')
    code, out, err = run(capsys, "scan", str(f))
    assert code == 2 and out == ""
    assert "log.jsonl:3" in err and "-Infinity on line 3 is not JSON" in err and "null" in err
    assert "TapeError" not in err


def test_check_confidence_says_the_observed_share_is_tested_as_it_is(capsys):
    # sample_logs/rollouts.parquet: 2,410 of its 4,000 logged groups are silent (0.6025, counted by hand from
    # the rows). On the observed basis --confidence has no bound to test for it (its "tested bound" cell is
    # empty) and the gate compares 0.6025 itself, yet the note said every check tested "the one-sided 90% bound".
    code, out, err = run(capsys, "check", str(ROOT / "sample_logs" / "rollouts.parquet"), "--max-silent", "0.61",
                         "--confidence", "0.9", "-q", "--color", "never")
    text = " ".join(out.replace("│", " ").split())
    assert code == 0 and "60.2%" in text
    assert "silent_rate: the observed value (what the logged groups did, no interval)" in text


def test_simulate_log_out_of_a_dapo_run_with_no_step_is_refused(tmp_path, capsys):
    # 5 prompts × G = 2 × 2 steps = a budget of 20 rollouts; DAPO's first step regenerates chunks of
    # 5 × 2 = 10 rollouts until every slot holds a group with 0 < k < G, which took more than 20 here:
    # it ran 0 steps and --log-out wrote a header-only file that every command then refuses.
    f = tmp_path / "dapo.csv"
    code, out, err = run(capsys, "simulate", "--prompts", "5", "--num-steps", "2", "-G", "2", "--rules", "dapo",
                         "--log-out", str(f))
    assert code == 2 and out == "" and not f.exists()
    assert "--log-out" in err and "completed no step" in err and "--num-steps" in err
    code, out, err = run(capsys, "simulate", "--prompts", "5", "--num-steps", "40", "-G", "2", "--rules", "dapo",
                         "--log-out", str(f), "-q")
    assert code == 0 and f.exists() and len(f.read_text().splitlines()) > 1


@pytest.mark.parametrize("rules, shown", [("dapo", False), ("grpo,dapo", False), ("grpo,drgrpo", True)])
def test_simulate_names_the_matched_arm_only_when_it_ran(capsys, rules, shown):
    # the drgrpo-matched arm runs only beside drgrpo; its note was printed under --rules dapo too
    code, out, _ = run(capsys, "simulate", "--prompts", "50", "--num-steps", "5", "--rules", rules, "--full")
    assert code == 0
    flat = " ".join(out.replace("│", " ").split())  # the note wraps at the terminal's width
    assert ("drgrpo-matched: lr · Σ E[σ] / Σ E[σ²]" in flat) is shown
