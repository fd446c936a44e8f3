"""Issue 42's messages that contradicted themselves or left a reader without a next step: each error names what
to do, and nothing it names is wrong."""

from __future__ import annotations

from pathlib import Path

from cli_runner import run

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = str(ROOT / "sample_logs" / "rollouts.parquet")


def test_a_global_option_after_the_command_says_where_it_goes(capsys):
    """'check x --config F' answered "No such option: --config (Possible options: --confidence)"."""
    code, _, err = run(capsys, "check", SAMPLE, "--max-silent", "0.5", "--config", "x.toml")
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "--config is a global option and goes before the command ('sigmaudit --config FILE check ...')" in err
    assert "--confidence" not in err


def test_the_readmes_sample_log_missing_points_to_simulate(capsys, tmp_path, monkeypatch):
    """A wheel user running the README's 'scan sample_logs/…' got a bare "no such file"."""
    monkeypatch.chdir(tmp_path)
    code, _, err = run(capsys, "scan", "sample_logs/rollouts.parquet")
    assert code == 2 and "sigmaudit simulate --prompts 200 --num-steps 20 --log-out demo.parquet" in err
    code, _, err = run(capsys, "scan", "elsewhere/rollouts.parquet")
    assert code == 2 and "simulate" not in err


def test_by_names_the_columns_the_files_have(capsys):
    """--by data_source on a log without it suggested data_source."""
    code, _, err = run(capsys, "check", str(ROOT / "sample_logs" / "verl"), "--by", "data_source",
                       "--max-silent", "0.5")
    assert code == 2 and "pick a column the files have: input, output, gts, score, step, acc" in err
    assert err.count("data_source") == 1


def test_trend_and_forecast_on_a_log_without_steps_say_what_reads_it(capsys):
    """On an eval log both asked for --step-col, where no step exists."""
    for command in ("trend", "forecast"):
        code, _, err = run(capsys, command, str(ROOT / "sample_logs" / "counts.csv"))
        assert code == 2 and "a log without steps" in err and "'sigmaudit scan' and 'plan' read it" in err
