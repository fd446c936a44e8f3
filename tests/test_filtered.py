"""Post-filter dumps: ``filtered`` in scan/check/plan output, and the gate refusing them."""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path

import pytest
from cli_runner import run

from sigmaudit.audits.filtered import pre_filter
from sigmaudit.loaders import load_counts

SAMPLE_LOGS = Path(__file__).resolve().parents[1] / "sample_logs"
OPEN_INSTRUCT = str(SAMPLE_LOGS / "open-instruct")
VERL = str(SAMPLE_LOGS / "verl")


def test_pre_filter_silent_fraction_is_exact():
    lc = load_counts([OPEN_INSTRUCT])
    logged = lc.per_group.height
    silent = int(((lc.per_group["k"] == 0) | (lc.per_group["k"] == lc.per_group["n"])).sum())
    assert silent == 0  # the filter kept mixed groups only
    pf = pre_filter(lc, 96)  # 4 steps x 24 prompts were generated
    assert pf.G == 8 and pf.groups_logged == logged
    assert Fraction(pf.silent_fraction).limit_denominator(1000) == Fraction(96 - logged, 96)


@pytest.mark.parametrize("command", ["scan", "check", "plan"])
def test_filtered_key_in_every_command(capsys, command):
    extra = {"check": ["-G", "8", "--min-fidelity", "0.1"], "plan": [], "scan": []}[command]
    code, out, _ = run(capsys, command, OPEN_INSTRUCT, *extra, "-f", "json", "-q")
    assert code == 0
    d = json.loads(out)
    assert d["filtered"]["source"] == "structure"
    assert "filter_zero_std_samples" in d["filtered"]["message"]
    code, out, _ = run(capsys, command, VERL, *extra, "-f", "json", "-q")
    assert json.loads(out)["filtered"] is None
    code, out, _ = run(capsys, command, VERL, *extra, "--post-filter", "-f", "json", "-q")
    assert json.loads(out)["filtered"]["source"] == "flag"


@pytest.mark.parametrize("threshold", ["--max-silent", "--max-all-wrong", "--max-all-correct"])
def test_check_refuses_silent_thresholds_on_a_post_filter_log(capsys, threshold):
    code, out, err = run(capsys, "check", OPEN_INSTRUCT, "-G", "8", threshold, "0.5", "-q")
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and "post-filter log (structure)" in err
    assert "--groups-generated" in err and "--allow-filtered" in err
    code, out, _ = run(capsys, "check", OPEN_INSTRUCT, "-G", "8", threshold, "0.5", "--allow-filtered",
                       "-f", "json", "-q")
    assert code in (0, 1) and json.loads(out)["filtered"]["source"] == "structure"


def test_groups_generated_checks_the_pre_filter_silent_fraction(capsys):
    lc = load_counts([OPEN_INSTRUCT])
    expected = (96 - lc.per_group.height) / 96
    code, out, _ = run(capsys, "check", OPEN_INSTRUCT, "-G", "8", "--max-silent", f"{expected + 0.01}",
                       "--groups-generated", "96", "-f", "json", "-q")
    d = json.loads(out)
    assert code == 0 and d["checks"][0]["value"] == pytest.approx(expected)
    assert d["pre_filter"]["groups_generated"] == 96 and d["estimator"].startswith("observed pre-filter")
    code, _, _ = run(capsys, "check", OPEN_INSTRUCT, "-G", "8", "--max-silent", f"{expected - 0.01}",
                     "--groups-generated", "96", "-q")
    assert code == 1
    code, _, err = run(capsys, "check", OPEN_INSTRUCT, "-G", "8", "--max-all-wrong", "0.5",
                       "--groups-generated", "96", "-q")
    assert code == 2 and "all-wrong/all-correct split" in err and "--max-all-wrong" in err
    code, _, err = run(capsys, "check", OPEN_INSTRUCT, "-G", "8", "--max-silent", "0.5",
                       "--groups-generated", "10", "-q")
    assert code == 2 and "below the" in err


def test_non_silent_thresholds_still_run_on_a_post_filter_log(capsys):
    code, _, _ = run(capsys, "check", OPEN_INSTRUCT, "-G", "8", "--min-fidelity", "0.1", "-q")
    assert code == 0


# --------------------------------------------------------------------------- every command states it

EXTRA = {"scan": [], "plan": [], "check": ["-G", "8", "--min-fidelity", "0.1"], "trend": [],
         "forecast": ["-G", "8"], "backtest": [], "report": ["-o", "-"]}


@pytest.mark.parametrize("command", ["trend", "forecast", "backtest", "report"])
def test_filtered_key_in_the_other_commands(capsys, command):
    extra = EXTRA[command]
    code, out, _ = run(capsys, command, OPEN_INSTRUCT, *extra, "-f", "json", "-q")
    assert code == 0
    d = json.loads(out)
    assert d["filtered"]["source"] == "structure"
    assert "filter_zero_std_samples" in d["filtered"]["message"]
    code, out, _ = run(capsys, command, VERL, *extra, "-f", "json", "-q")
    assert code == 0 and json.loads(out)["filtered"] is None
    code, out, _ = run(capsys, command, VERL, *extra, "--post-filter", "-f", "json", "-q")
    assert code == 0 and json.loads(out)["filtered"]["source"] == "flag"


def test_report_parts_state_the_filter_too(capsys):
    code, out, _ = run(capsys, "report", OPEN_INSTRUCT, "-f", "json", "-o", "-", "-q")
    d = json.loads(out)
    for part in ("scan", "plan", "trend", "backtest"):
        assert d[part]["filtered"] == d["filtered"], part
    # the dump holds no silent group at any step (what the filter did), and the report says so
    assert {s["observed_silent"] for s in d["trend"]["steps"]} == {0.0}
    assert d["scan"]["observed_silent"]["fraction"] == 0.0


@pytest.mark.parametrize("command", sorted(EXTRA))
def test_every_command_shows_the_warning_in_its_text_output(capsys, command):
    if command == "report":  # html: the warning box at the top, whatever the source
        code, out, err = run(capsys, command, OPEN_INSTRUCT, "-o", "-", "-q")
        warn = [line for line in out.splitlines() if line.startswith('<p class="warn">')]
        assert len(warn) == 1 and "post-filter dump (structure)" in warn[0]
        assert "filter_zero_std_samples" in warn[0]
        assert "warning: post-filter dump (structure)" in err
        code, out, _ = run(capsys, command, VERL, "-o", "-", "-q")
        assert '<p class="warn">' not in out
        code, out, _ = run(capsys, command, VERL, "-o", "-", "--post-filter", "-q")
        assert "post-filter dump (flag): --post-filter" in out
        return
    code, out, _ = run(capsys, command, OPEN_INSTRUCT, *EXTRA[command], "-f", "markdown", "-q")
    assert code == 0
    assert out.count("warning: post-filter dump (structure): open-instruct drops zero-std groups") == 1
    code, out, _ = run(capsys, command, VERL, *EXTRA[command], "-f", "markdown", "-q")
    assert "warning: post-filter" not in out and "post-filter" not in out.replace("| post-filter |", "")
    code, out, _ = run(capsys, command, VERL, *EXTRA[command], "--post-filter", "-f", "markdown", "-q")
    assert out.count("warning: post-filter dump (flag)") == 1


@pytest.mark.filterwarnings("error")
def test_backtest_on_a_post_filter_log_has_nothing_to_avoid(capsys):
    code, out, err = run(capsys, "backtest", OPEN_INSTRUCT, "-f", "json", "-q")
    d = json.loads(out)
    assert code == 0 and err == ""
    assert d["observed_silent"] == 0.0
    assert d["avoided_at_max_lost"] == {"sigmaudit": None, "greso": None, "silent-last-time": None}
