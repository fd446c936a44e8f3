"""Per-step series of shares (layout ``series``): the DAPO Fig. 3b curve and hand-made files."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from sigmaudit.audits.trend import trend_from_series
from sigmaudit.cli.app import main
from sigmaudit.errors import SchemaError
from sigmaudit.loaders import load_counts

DAPO = Path(__file__).parent / "data" / "dapo_fig3b_allcorrect.csv"


def _dapo_rows() -> list[tuple[int, float]]:
    """The published curve read independently: skip the ``#`` / ``"#`` header lines by hand."""
    lines = [ln for ln in DAPO.read_text().splitlines() if ln and not ln.lstrip('"').startswith("#")]
    assert lines[0] == "step,allcorrect_fraction"
    return [(int(a), float(b)) for a, b in (ln.split(",") for ln in lines[1:])]


def test_dapo_curve_loads_as_a_series():
    loaded = load_counts([DAPO])
    assert loaded.layout == "series" and loaded.has_steps and loaded.per_prompt.height == 0
    expected = _dapo_rows()
    got = list(zip(loaded.series["step"].to_list(), loaded.series["observed_all_correct"].to_list(), strict=True))
    assert got == sorted(expected)
    assert len(got) == 60


def test_dapo_trend_json_shows_the_all_correct_share_climbing(capsys):
    assert main(["trend", str(DAPO), "-f", "json", "-q"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["source"] == "series" and d["estimator"] is None
    shares = [s["observed_all_correct"] for s in d["steps"]]
    assert shares[0] == 0.0 and shares[-1] == pytest.approx(0.565)
    tenth = len(shares) // 10
    assert sum(shares[-tenth:]) / tenth > sum(shares[:tenth]) / tenth + 0.4  # mastered prompts pile up
    assert all(s["forecast_silent"] is None and s["groups"] is None for s in d["steps"])


def test_series_with_both_branches_sums_to_silent(tmp_path):
    f = tmp_path / "curve.csv"
    f.write_text("step,all_correct,all_wrong,pass_rate\n1,0.1,0.5,0.3\n2,0.2,0.4,0.4\n3,0.3,0.3,0.5\n4,0.4,0.2,0.6\n")
    res = trend_from_series(load_counts([f]).series, every=2)
    assert [(r.step, r.step_last) for r in res.rows] == [(1, 2), (3, 4)]
    assert [r.observed_silent for r in res.rows] == pytest.approx([0.6, 0.6])
    assert [r.observed_all_correct for r in res.rows] == pytest.approx([0.15, 0.35])
    assert [r.pass_rate for r in res.rows] == pytest.approx([0.35, 0.55])


def test_share_outside_unit_interval_is_an_error(tmp_path):
    f = tmp_path / "bad.csv"
    f.write_text("step,silent_fraction\n1,0.2\n2,1.5\n")
    with pytest.raises(SchemaError, match=r"silent_fraction .*\[0, 1\].*1\.5"):
        load_counts([f])


def test_a_log_with_prompts_is_not_a_series(tmp_path):
    f = tmp_path / "log.parquet"
    pl.DataFrame({"step": [1, 1], "prompt": ["a", "a"], "reward": [1, 0]}).write_parquet(f)
    assert load_counts([f]).layout == "long"


def test_scan_shows_a_series_step_by_step_and_refuses_what_needs_prompts(capsys, tmp_path):
    f = tmp_path / "curve.csv"
    f.write_text("step,allcorrect_fraction\n1,0.1\n2,0.2\n")
    assert main(["scan", str(f), "-f", "json"]) == 0
    out, err = capsys.readouterr()
    assert [s["observed_all_correct"] for s in json.loads(out)["steps"]] == [0.1, 0.2]
    assert "per-step series" in err and "need per-prompt data" in err
    assert main(["scan", str(f), "--per-prompt", str(tmp_path / "p.csv"), "-q"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "per-step series holds only shares" in err
