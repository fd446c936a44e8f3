"""`sigmaudit trend`: per-step observed and forecast silent groups against exact hand computations."""

from __future__ import annotations

import json
from fractions import Fraction
from math import comb
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from cli_runner import run

from sigmaudit.audits.trend import trend
from sigmaudit.errors import SchemaError
from sigmaudit.render import Format, render
from sigmaudit.views import build_view

# step -> k of each logged group (n = 4 everywhere)
TRUTH = {1: [0, 0, 4, 2], 2: [4, 4, 1, 3], 3: [0, 2]}
N = 4


def frame(truth: dict[int | None, list[int]], n: int = N) -> pl.DataFrame:
    rows = [(s, f"q{i}", n, k) for s, ks in truth.items() for i, k in enumerate(ks)]
    return pl.DataFrame(rows, schema={"step": pl.Int64, "prompt": pl.Utf8, "n": pl.Int64, "k": pl.Int64},
                        orient="row")


def plugin(k: int, n: int, G: int) -> Fraction:
    p = Fraction(k, n)
    return p**G + (1 - p) ** G


def unbiased(k: int, n: int, G: int) -> Fraction:
    return Fraction(comb(k, G) + comb(n - k, G), comb(n, G))


def mean(values: list[Fraction]) -> float:
    return float(sum(values) / len(values))


def test_every_number_plugin() -> None:
    res = trend(frame(TRUTH), G=[2, 8], estimator="plugin")
    assert [r.step for r in res.rows] == [1, 2, 3]
    assert res.G_logged == N and res.every == 1 and res.estimator == "plugin"
    for row, ks in zip(res.rows, TRUTH.values(), strict=True):
        assert row.groups == len(ks)
        assert row.pass_rate == pytest.approx(mean([Fraction(k, N) for k in ks]), abs=1e-15)
        assert row.observed_all_wrong == pytest.approx(mean([Fraction(k == 0) for k in ks]), abs=1e-15)
        assert row.observed_all_correct == pytest.approx(mean([Fraction(k == N) for k in ks]), abs=1e-15)
        assert row.observed_silent == pytest.approx(mean([Fraction(k in (0, N)) for k in ks]), abs=1e-15)
        assert row.forecast_silent == pytest.approx(mean([plugin(k, N, N) for k in ks]), abs=1e-15)
        assert row.forecast_all_correct == pytest.approx(mean([Fraction(k, N) ** N for k in ks]), abs=1e-15)
        for g in (2, 8):
            assert row.forecast[g] == pytest.approx(mean([plugin(k, N, g) for k in ks]), abs=1e-15)
    first = res.rows[0]  # by hand: k = 0, 0, 4, 2 of 4
    assert (first.pass_rate, first.observed_silent, first.observed_all_wrong) == (0.375, 0.75, 0.5)
    assert first.forecast_silent == pytest.approx((1 + 1 + 1 + 0.125) / 4)


def test_unbiased_at_logged_size_repeats_the_observation() -> None:
    res = trend(frame(TRUTH), G=[2, 5], estimator="unbiased")
    for row, ks in zip(res.rows, TRUTH.values(), strict=True):
        assert row.forecast_silent == pytest.approx(row.observed_silent, abs=1e-15)
        assert row.forecast[2] == pytest.approx(mean([unbiased(k, N, 2) for k in ks]), abs=1e-15)
        assert row.forecast[5] is None  # G > n: undefined


def test_buckets() -> None:
    res = trend(frame(TRUTH), every=2, estimator="plugin")
    assert [(r.step, r.step_last, r.groups) for r in res.rows] == [(1, 2, 8), (3, 3, 2)]
    ks = TRUTH[1] + TRUTH[2]
    assert res.rows[0].observed_all_correct == pytest.approx(mean([Fraction(k == N) for k in ks]))


def test_bayes_forecast_properties() -> None:
    rng = np.random.default_rng(0)
    truth = {s: list(rng.binomial(8, rng.beta(1, 1, 40) ** (1 / (1 + s / 5)))) for s in range(1, 11)}
    res = trend(frame(truth, n=8), G=[1, 4, 16, 64], estimator="bayes")
    assert res.estimator == "bayes"
    for row in res.rows:
        assert row.forecast[1] == pytest.approx(1.0)  # p + (1 − p) = 1 for any p
        vals = [row.forecast[g] for g in (4, 16, 64)]
        assert all(0.0 <= v <= 1.0 for v in vals)
        assert vals == sorted(vals, reverse=True)  # silent rate falls as G grows
        assert 0.0 <= row.forecast_silent <= 1.0
    total_obs = np.mean([r.observed_silent for r in res.rows])
    total_fc = np.mean([r.forecast_silent for r in res.rows])
    assert total_fc == pytest.approx(total_obs, abs=0.05)  # run-wide, the model reproduces what was seen


def test_mixed_sizes_and_missing_steps() -> None:
    df = pl.concat([frame({1: [0, 2]}, n=4), frame({1: [8], None: [3]}, n=8)])
    res = trend(df, estimator="plugin")
    assert res.G_logged is None and res.G_logged_sizes == (4, 8)
    assert res.dropped_groups == 1 and res.rows[0].groups == 3
    assert res.rows[0].forecast_silent == pytest.approx(float((1 + plugin(2, 4, 4) + 1) / 3))


def test_no_steps() -> None:
    with pytest.raises(SchemaError) as exc:
        trend(frame({None: [1, 2]}))
    assert "--step-col" in exc.value.one_line()
    with pytest.raises(ValueError):
        trend(frame(TRUTH), every=0)
    with pytest.raises(ValueError):
        trend(frame(TRUTH), estimator="magic")  # type: ignore[arg-type]


def test_every_format_renders() -> None:
    res = trend(frame(TRUTH), G=[16])
    for fmt in Format:
        assert render(build_view(res), fmt).endswith("\n")
    assert render(build_view(res), Format.csv).splitlines()[0] == (
        "step,step_last,groups,pass_rate,observed_silent,observed_all_wrong,observed_all_correct,"
        "forecast_silent,forecast_all_wrong,forecast_all_correct,forecast_16,ahead_silent,naive_silent,silent_at_least,"
        "silent_at_most,drift_warning")


# ---------------------------------------------------------------- CLI


def write_long(path: Path, truth: dict[int, list[int]], with_step: bool = True) -> Path:
    lines = ["prompt_id,step,reward" if with_step else "prompt_id,reward"]
    for step, ks in truth.items():
        for i, k in enumerate(ks):
            rewards = [1] * k + [0] * (N - k)
            lines += [f"q{i},{step},{r}" if with_step else f"q{i}_{step},{r}" for r in rewards]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_cli_json(capsys, tmp_path: Path) -> None:
    log = write_long(tmp_path / "log.csv", TRUTH)
    code, out, err = run(capsys, "trend", str(log), "-G", "2", "--estimator", "plugin", "-f", "json")
    assert code == 0
    assert "step" in err  # loader note on stderr
    d = json.loads(out)
    assert set(d) >= {"steps", "G_logged", "every", "estimator"}
    assert (d["G_logged"], d["every"], d["estimator"]) == (4, 1, "plugin")
    assert [s["step"] for s in d["steps"]] == [1, 2, 3]
    s1 = d["steps"][0]
    assert set(s1) >= {"step", "groups", "pass_rate", "observed_silent", "observed_all_wrong",
                       "observed_all_correct", "forecast_silent", "forecast"}
    assert (s1["groups"], s1["pass_rate"], s1["observed_silent"]) == (4, 0.375, 0.75)
    assert s1["forecast"]["2"] == pytest.approx(mean([plugin(k, N, 2) for k in TRUTH[1]]))


def test_cli_table_has_sparklines(capsys, tmp_path: Path) -> None:
    log = write_long(tmp_path / "log.csv", TRUTH)
    code, out, err = run(capsys, "trend", str(log), "-q")
    assert code == 0 and err == ""
    assert "observed silent" in out and any(ch in out for ch in "▁▂▃▄▅▆▇█")


def test_cli_without_steps_is_one_line_exit_2(capsys, tmp_path: Path) -> None:
    log = write_long(tmp_path / "log.csv", TRUTH, with_step=False)
    code, out, err = run(capsys, "trend", str(log), "-q")
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and "--step-col" in err


@pytest.mark.parametrize("args", [["--every", "0"], ["-G", "0"], ["--estimator", "magic"]])
def test_cli_bad_options(capsys, tmp_path: Path, args: list[str]) -> None:
    log = write_long(tmp_path / "log.csv", TRUTH)
    code, out, err = run(capsys, "trend", str(log), "-q", *args)
    assert code == 2 and out == "" and err.count("\n") == 1


# ---------------------------------------------------------------- DAPO's published curve


def test_auto_rule_matches_check_and_plan() -> None:
    """Default ``auto``: a -G every group reaches is forecast unbiasedly (as check and plan do), a larger
    one by bayes; the logged-size forecast uses bayes (unbiased there would repeat the observation)."""
    rng = np.random.default_rng(1)
    truth = {s: list(rng.binomial(8, rng.beta(1, 1, 30))) for s in range(1, 4)}
    auto = trend(frame(truth, n=8), G=[4, 16])
    unb = trend(frame(truth, n=8), G=[4], estimator="unbiased")
    bay = trend(frame(truth, n=8), G=[16], estimator="bayes")
    assert auto.estimator == "auto"
    for a, u, b in zip(auto.rows, unb.rows, bay.rows, strict=True):
        assert a.forecast[4] == pytest.approx(u.forecast[4], rel=1e-12)
        assert a.forecast[16] == pytest.approx(b.forecast[16], rel=1e-12)
        assert a.forecast_silent == pytest.approx(b.forecast_silent, rel=1e-12)
