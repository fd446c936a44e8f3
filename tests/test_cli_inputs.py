"""The shared log inputs of scan, plan, check, trend and report (commands/inputs.py)."""

from __future__ import annotations

import pytest

from sigmaudit.cli.app import main

LOG_COMMANDS = ["scan", "plan", "check", "trend", "report"]
LAYOUT_FLAGS = ["--prompt-col", "--reward-col", "--step-col", "--group-col", "--n-col", "--k-col", "--rate-col",
                "--samples", "--threshold", "--quiet"]


@pytest.mark.parametrize("command", LOG_COMMANDS)
def test_every_log_command_takes_the_layout_overrides(capsys, command):
    assert main([command, "--help"]) == 0
    out = capsys.readouterr().out
    usage = out.splitlines()[0]
    assert usage.endswith("[OPTIONS] PATH...") and "{" not in usage  # the log paths, by their plain metavar
    for flag in LAYOUT_FLAGS:
        assert flag in out, (command, flag)


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["check", "-G", "8"], "give at least one threshold"),
        (["check", "-G", "8", "--max-silent", "2"], "--max-silent"),
        (["plan", "--min-g", "4", "--max-g", "2"], "--min-g"),
        (["trend", "--estimator", "foo"], "--estimator"),
    ],
)
def test_options_are_checked_before_any_file_is_read(capsys, tmp_path, args, needle):
    missing = str(tmp_path / "missing.parquet")
    code = main([*args[:1], missing, *args[1:]])
    err = capsys.readouterr().err
    assert code == 2
    assert needle in err and "missing.parquet" not in err


@pytest.mark.parametrize("command", ["scan", "plan", "trend"])
def test_missing_path_is_one_line_exit_2(capsys, tmp_path, command):
    code = main([command, str(tmp_path / "nope.parquet")])
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and "nope.parquet" in err and "no such file" in err
