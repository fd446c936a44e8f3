"""`sigmaudit backtest` / `forecast` on a simulated run whose true pass rates are known, and their CLI."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from cli_runner import run

from sigmaudit.audits.backtest import backtest, score
from sigmaudit.audits.forecast import forecast, replay
from sigmaudit.audits.simulate import simulate
from sigmaudit.core.forecast import calibration, calibration_error
from sigmaudit.errors import ConfigError, SchemaError
from sigmaudit.loaders import LoadOptions, load_counts
from sigmaudit.render import Format, render
from sigmaudit.views import build_view

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "sample_logs" / "rollouts.parquet"
G = 8


@pytest.fixture(scope="module")
def sim(tmp_path_factory) -> dict:
    """A GRPO run (300 prompts, 30 steps, G = 8, lr 0.5: pass rates drift fast) written with
    ``simulate --log-out`` and read back like any log; its true p per prompt and step kept."""
    path = tmp_path_factory.mktemp("sim") / "run.parquet"
    code = _cli("simulate", "--prompts", "300", "--num-steps", "30", "-G", str(G), "--rules", "grpo", "--seed", "0",
                "--log-out", str(path), "-f", "json")
    assert code == 0
    loaded = load_counts([path], LoadOptions())
    truth = pl.read_parquet(path).group_by("step", "prompt").agg(pl.col("true_p").first())
    rp = replay(loaded.per_group)
    fc = forecast(loaded.per_group, G, max_p_silent=0.9, replayed=rp)
    return {"path": path, "loaded": loaded, "truth": truth, "replay": rp, "backtest": score(rp), "forecast": fc}


def _cli(*args: str) -> int:
    from sigmaudit.cli import main

    return main(list(args))


def test_log_out_is_the_simulated_run(sim) -> None:
    log = pl.read_parquet(sim["path"])
    assert log.columns == ["step", "prompt", "reward", "true_p"]
    assert log.height == 300 * 30 * G
    again = simulate(prompts=300, steps=30, G=G, rules="grpo", seed=0, record=True)
    run_ = again.runs[0]
    k = log.group_by("step", "prompt").agg(pl.col("reward").sum()).sort("step", "prompt")["reward"].to_numpy()
    assert np.array_equal(k.reshape(30, 300), run_.k_by_step)
    # the measured silent share per step is the simulation's own series
    silent = ((run_.k_by_step == 0) | (run_.k_by_step == G)).mean(axis=1)
    np.testing.assert_allclose(silent, run_.silent_measured, rtol=0, atol=0)


def test_calibrated_on_the_simulated_run(sim) -> None:
    bt = sim["backtest"]
    # stated tolerance: weighted mean |predicted − observed| over 10 bins <= 0.03
    assert bt.calibration_error <= 0.03
    assert sum(c.n for c in bt.calibration) == bt.visits == 300 * 29
    # against the truth: the same bins, observed replaced by the true P(silent) = p^G + (1 − p)^G
    g = sim["replay"].groups.filter(pl.col("scored")).join(sim["truth"], on=["step", "prompt"])
    p = g["true_p"].to_numpy()
    true_silent = p**G + (1 - p) ** G
    assert calibration_error(calibration(g["forecast"].to_numpy(), true_silent)) <= 0.03


def test_beats_both_baselines(sim) -> None:
    bt = sim["backtest"]
    for b in bt.baselines:
        assert bt.brier < b.brier
        assert bt.log_loss < b.log_loss


def test_sigmaudit_rule_beats_greso_at_equal_loss(sim) -> None:
    bt = sim["backtest"]
    at = bt.avoided_at_max_lost
    assert bt.max_lost == 0.05
    assert at["sigmaudit"] is not None and at["greso"] is not None
    assert at["sigmaudit"] > at["greso"] + 0.02
    # GRESO's best over its grid is at least as good as any point of its one-knob curve within the budget
    for t in bt.tradeoff:
        if t.rule == "greso" and t.informative_lost <= 0.05:
            assert at["greso"] >= t.silent_avoided - 1e-12


CUT = 11


@pytest.fixture(scope="module")
def cut(sim) -> pl.DataFrame:
    """The simulated log cut after step CUT."""
    return sim["loaded"].per_group.filter(pl.col("step") <= CUT)


def test_a_step_is_forecast_from_earlier_steps_only(sim, cut) -> None:
    """Cutting the log after step t leaves every forecast of steps <= t unchanged."""
    full = sim["replay"].groups.filter(pl.col("step") <= CUT).sort("step", "prompt")
    short = replay(cut).groups.sort("step", "prompt")
    assert short.height == 300 * CUT
    np.testing.assert_allclose(full["forecast"].to_numpy(), short["forecast"].to_numpy(), rtol=1e-12, atol=1e-15,
                               equal_nan=True)


def test_forecast_table_and_skip_list(sim) -> None:
    res = sim["forecast"]
    t = res.table
    assert t.columns == ["prompt", "visits", "last_step", "p_estimate", "p_silent", "p_all_wrong", "p_all_correct",
                         "expected_useful_rollouts", "skip"]
    assert t.height == res.prompts == 300 and res.next_step == 31
    ps = t["p_silent"].to_numpy()
    np.testing.assert_allclose(ps, t["p_all_wrong"].to_numpy() + t["p_all_correct"].to_numpy(), atol=1e-15)
    np.testing.assert_allclose(t["expected_useful_rollouts"].to_numpy(), 8 * (1 - ps), atol=1e-12)
    assert np.array_equal(t["skip"].to_numpy(), ps > 0.9)
    assert res.skipped == int((ps > 0.9).sum()) and res.rollouts_saved == pytest.approx(res.skipped / 300)
    assert res.silent_avoided == pytest.approx(ps[ps > 0.9].sum() / ps.sum())
    assert res.informative_lost == pytest.approx((1 - ps[ps > 0.9]).sum() / (1 - ps).sum())
    assert (t["visits"] == 30).all() and (t["last_step"] == 30).all()
    assert res.recalibrated  # G is the logged size
    saving = forecast(sim["loaded"].per_group, 8, target_saving=0.25, replayed=sim["replay"])
    assert saving.rollouts_saved >= 0.25 and saving.rule == "target-saving"
    skipped = saving.table.filter(pl.col("skip"))["p_silent"].min()
    kept = saving.table.filter(~pl.col("skip"))["p_silent"].max()
    assert skipped >= kept  # the most likely silent prompts go first


def test_forecast_and_backtest_refuse() -> None:
    frame = pl.DataFrame({"step": [1, 1], "prompt": ["a", "b"], "n": [4, 4], "k": [0, 2]})
    with pytest.raises(SchemaError, match="one logged step"):
        backtest(frame)
    with pytest.raises(SchemaError, match="step"):
        backtest(frame.drop("step"))
    two = pl.concat([frame, frame.with_columns(pl.lit(2, dtype=pl.Int64).alias("step"))])
    with pytest.raises(ConfigError, match="exceeds"):
        backtest(two, G=5)
    with pytest.raises(ConfigError, match="not both"):
        forecast(two, 4, max_p_silent=0.5, target_saving=0.5)


def test_every_format_renders(sim) -> None:
    for res in (sim["backtest"], sim["forecast"]):
        for fmt in Format:
            assert render(build_view(res), fmt).endswith("\n")


# ---------------------------------------------------------------- CLI


def test_backtest_cli_json_keys(capsys) -> None:
    code, out, err = run(capsys, "backtest", str(SAMPLE), "-f", "json")
    assert code == 0 and "detected" in err
    d = json.loads(out)
    assert {"brier", "log_loss", "calibration", "tradeoff", "visits", "prompts", "baselines"} <= set(d)
    assert [set(c) for c in d["calibration"]] == [{"bin", "predicted", "observed", "n"}] * 10
    assert all(set(t) == {"rule", "threshold", "silent_avoided", "informative_lost"} for t in d["tradeoff"])
    assert {t["rule"] for t in d["tradeoff"]} == {"sigmaudit", "greso", "silent-last-time"}
    assert {b["name"] for b in d["baselines"]} == {"previous-step", "last-visit"}
    assert d["visits"] == 200 * 19 and d["prompts"] == 200
    assert sum(c["n"] for c in d["calibration"]) == d["visits"]


def test_forecast_cli_writes_the_table(capsys, tmp_path: Path) -> None:
    out_path = tmp_path / "skip.parquet"
    csv_path = tmp_path / "report.csv"
    code, out, err = run(capsys, "forecast", str(SAMPLE), "-G", "8", "--max-p-silent", "0.9", "--skip-out",
                         str(out_path), "-o", str(csv_path), "-q")
    assert code == 0 and err == "" and out == ""
    table = pl.read_parquet(out_path)
    assert table.height == 200
    assert table.columns[:5] == ["prompt", "visits", "last_step", "p_estimate", "p_silent"]
    assert table.filter(pl.col("skip"))["p_silent"].min() > 0.9
    report = pl.read_csv(csv_path)  # -o x.csv: the report is the same per-prompt table, every prompt
    # the report's csv adds the drift WARNING column (empty when pass rates held) to the skip table's
    assert report.columns == [*table.columns, "drift_warning"] and report.height == 200
    code, out, err = run(capsys, "forecast", str(SAMPLE), "-G", "8", "--target-saving", "0.3", "-q")
    assert code == 0 and "skip list (target-saving)" in out
    assert re.search(r"\b([8-9]|[1-9]\d|1\d\d) prompts of 200; --full: every column", out)  # 8, more when tied
    code, out, err = run(capsys, "forecast", str(SAMPLE), "-G", "8", "--target-saving", "0.3", "-q", "--full")
    assert re.search(r"the ([2-9]\d|1\d\d) most likely silent of 200", out)  # 25, or more when the 25th ties


@pytest.mark.parametrize("suffix", [".csv", ".jsonl"])
def test_table_files_round_trip(sim, tmp_path: Path, suffix: str) -> None:
    from sigmaudit.writers import write_table

    table = sim["forecast"].table
    write_table(table, tmp_path / f"skip{suffix}", "--skip-out")
    back = (pl.read_csv if suffix == ".csv" else pl.read_ndjson)(tmp_path / f"skip{suffix}")
    assert back.columns == table.columns and back.height == table.height
    np.testing.assert_allclose(back["p_silent"].to_numpy(), table["p_silent"].to_numpy(), rtol=1e-15)


@pytest.mark.parametrize("args", [
    ["forecast", str(ROOT / "sample_logs" / "long.csv"), "-G", "8"],  # no steps
    ["backtest", str(ROOT / "sample_logs" / "counts.csv")],
    ["forecast", str(SAMPLE), "-G", "8", "--max-p-silent", "0.5", "--target-saving", "0.2"],
    ["forecast", str(SAMPLE), "-G", "8", "--max-p-silent", "1.5"],
    ["forecast", str(SAMPLE), "-G", "0"],  # -G at least 1
    ["backtest", str(SAMPLE), "-G", "9"],
    ["simulate", "--num-steps", "2", "--prompts", "5", "--log-out", "run.txt"],
    ["forecast", str(SAMPLE), "-G", "8", "--skip-out", "skip.txt"],
])
def test_cli_refusals_are_one_line_exit_2(capsys, args: list[str]) -> None:
    code, out, err = run(capsys, *args, *(["-q"] if args[0] != "simulate" else []))
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("sigmaudit: error:")


def test_trend_shows_the_honest_forecast(sim, cut) -> None:
    from sigmaudit.audits.trend import trend

    res = trend(cut)
    assert res.rows[0].ahead_silent is None and res.rows[0].naive_silent is None
    obs = np.array([r.observed_silent for r in res.rows])
    ahead = np.array([r.ahead_silent for r in res.rows[1:]])
    np.testing.assert_allclose([r.naive_silent for r in res.rows[1:]], obs[:-1], atol=1e-15)
    assert res.mae_steps == CUT - 1
    assert res.ahead_mae == pytest.approx(np.abs(obs[1:] - ahead).mean())
    assert res.naive_mae == pytest.approx(np.abs(obs[1:] - obs[:-1]).mean())
    # the forecast for a step is the replay's, which never saw that step
    by_step = (sim["replay"].groups.filter(pl.col("scored") & (pl.col("step") <= CUT)).group_by("step")
               .agg(pl.col("forecast").mean()).sort("step"))
    np.testing.assert_allclose(ahead, by_step["forecast"].to_numpy(), rtol=1e-12)
    d = res.to_dict()
    assert set(d["forecast_error"]) == {"ahead_mae", "naive_mae", "steps", "note"}
    assert d["steps"][1]["ahead_silent"] == pytest.approx(ahead[0])


def test_half_life_chosen_on_a_sample_of_prompts_in_big_logs(sim, cut, monkeypatch) -> None:
    """Past HALF_LIFE_SAMPLE groups the half-life is chosen on whole prompts sampled by name; every
    group still gets a forecast, at the half-life chosen for its step."""
    import sigmaudit.audits.forecast as F

    monkeypatch.setattr(F, "HALF_LIFE_SAMPLE", 1200)
    sample = F._sample_rows(cut["prompt"], 1200)
    assert 600 < sample.sum() < 2400
    per_prompt = pl.DataFrame({"prompt": cut["prompt"], "s": sample}).group_by("prompt").agg(pl.col("s").n_unique())
    assert (per_prompt["s"] == 1).all()  # whole prompts, never part of one
    rp = F.replay(cut)
    f = rp.groups.filter(pl.col("scored"))["forecast"].to_numpy()
    assert np.isfinite(f).all() and ((f >= 0) & (f <= 1)).all()
    assert set(rp.groups["half_life"].unique().to_list()) <= set(rp.half_lives)


def test_trend_says_when_it_skips_the_forecast(cut, monkeypatch) -> None:
    import sigmaudit.audits.trend as T

    monkeypatch.setattr(T, "AHEAD_MAX_GROUPS", 100)
    res = T.trend(cut)
    assert res.ahead_mae is None and all(r.ahead_silent is None for r in res.rows)
    assert "sigmaudit backtest" in res.ahead_note and "3,300 groups" in res.ahead_note
    assert any("sigmaudit backtest" in line for s in build_view(res).sections for line in s.lines)


def test_forecast_G_defaults_to_the_logged_group_size(capsys):
    log = str(SAMPLE)
    code, out, err = run(capsys, "forecast", log, "-f", "json")
    assert code == 0, err
    groups = load_counts([log]).per_group
    mode = groups["n"].mode().sort()[0]
    assert json.loads(out)["G"] == mode
    assert f"-G not given: forecasting groups of G = {mode}, the log's most common group size" in err
    code2, out2, _ = run(capsys, "forecast", log, "-G", str(mode), "-f", "json")
    assert code2 == 0 and json.loads(out2)["per_prompt"] == json.loads(out)["per_prompt"]


def test_the_online_recalibration_is_linear_in_the_steps(monkeypatch) -> None:
    """Issue 45 item 2 without a clock: the replay refitted its recalibration on every earlier group every
    RECAL_EVERY steps (rows fitted on grew as S² / 8: 15 of 17 s of a forecast at 8,000 steps). Counted on
    200 and 400 steps of 12 groups: the rows the recalibration's fits touch are at most those of its full
    fits (growing RECAL_FULL_GROWTH-fold: 1 / (1 − 1 / RECAL_FULL_GROWTH) times the scored groups in all),
    its updates (each group once) and the final fit (once)."""
    import sigmaudit.core.forecast as cf
    from sigmaudit.audits.forecast import RECAL_FULL_GROWTH

    def rows(steps: int) -> int:
        touched = [0]
        real = cf._penalised_newton

        def counting(X, *a, **k):
            touched[0] += len(X)
            return real(X, *a, **k)

        rng = np.random.default_rng(3)
        p = rng.beta(0.6, 0.6, 12)
        frame = pl.DataFrame({"prompt": np.tile([f"p{i}" for i in range(12)], steps),
                              "step": np.repeat(np.arange(steps), 12), "n": 8,
                              "k": rng.binomial(8, np.tile(p, steps))})
        with monkeypatch.context() as m:
            m.setattr(cf, "_penalised_newton", counting)
            replay(frame)
        return touched[0]

    bound = 1.0 / (1.0 - 1.0 / RECAL_FULL_GROWTH) + 2.0
    for steps in (200, 400):
        scored = 12 * (steps - 1)
        assert 4 * scored < rows(steps) <= bound * scored  # the old code: 25 and 50 x the scored groups


def test_a_forecast_fits_its_priors_in_one_batch(monkeypatch) -> None:
    """Issue 45 item 2, the constant: a forecast's corpus priors (the replay's, refitted each time the history
    doubles, and the prior of every group its table uses) are fitted in one fit_corpus_priors call whose
    two-Beta fits on the same pairs share one lockstep optimisation (14 calls of ~0.14 s each at 8,000 steps
    before); the priors are those fit_corpus_prior gives each alone, to the last bit, and the table's is the
    replay's, not fitted again."""
    import sigmaudit.audits.forecast as fc_mod
    import sigmaudit.core.optimize as opt
    import sigmaudit.core.prior as prior_mod
    rng = np.random.default_rng(4)
    p = rng.beta(0.7, 0.7, 16)
    steps = 70
    frame = pl.DataFrame({"prompt": np.tile([f"p{i}" for i in range(16)], steps),
                          "step": np.repeat(np.arange(steps), 16), "n": 8,
                          "k": rng.binomial(8, np.tile(p, steps))})
    batches, runs, problems = [], [], []
    real_batch, real_rows = prior_mod.fit_corpus_priors, opt.minimize_box_rows

    def batch(probs):
        batches.append(len(probs))
        problems.extend(probs)
        return real_batch(probs)

    def rows(*a, **k):
        runs.append(1)
        return real_rows(*a, **k)

    monkeypatch.setattr(fc_mod, "_PRIORS", {})
    monkeypatch.setattr(prior_mod, "fit_corpus_priors", batch)
    monkeypatch.setattr(opt, "minimize_box_rows", rows)
    result = forecast(frame, 8)
    distinct = {(np.asarray(n).tobytes(), np.asarray(k).tobytes()) for n, k, _ in problems}
    assert batches == [8]  # steps 1, 2, 4, ..., 64 and every group: the table's prior is not fitted again
    assert len(runs) == len(distinct) < 8  # one lockstep two-Beta run per distinct set of pairs
    assert float(np.sum(problems[-1][2])) == frame.height  # the last: every group
    monkeypatch.undo()
    fitted = real_batch(problems)
    assert result.prior_kind == fitted[-1].kind
    for (n, k, c), prior in zip(problems, fitted, strict=True):
        alone = prior_mod.fit_corpus_prior(n, k, c)
        assert np.array_equal(alone.weights, prior.weights) and alone.scores == prior.scores
        assert alone.kind == prior.kind and alone.theta == prior.theta
