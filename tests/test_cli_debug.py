"""--debug and SIGMAUDIT_DEBUG=1: an internal error's Python traceback on stderr, for a bug report
(issue 20 item 4). Without them an error stays one line."""

from __future__ import annotations

import pytest

from sigmaudit.cli.app import main

CALC = ["calc", "-p", "0.5", "-G", "8"]


@pytest.fixture
def crashing_calc(monkeypatch):
    """The calc audit raising an exception no code expects (a bug)."""
    import sigmaudit.audits.calc

    def boom(*args, **kwargs):
        raise RuntimeError("boom in the audit")

    monkeypatch.setattr(sigmaudit.audits.calc, "calc", boom)
    monkeypatch.delenv("SIGMAUDIT_DEBUG", raising=False)


def test_internal_error_is_one_line_that_says_how_to_get_the_traceback(capsys, crashing_calc):
    assert main(CALC) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith("sigmaudit: error: internal error: RuntimeError: boom in the audit (please report this")
    assert "sigmaudit --debug" in err


@pytest.mark.parametrize("how", ["flag", "env"])
def test_debug_prints_the_traceback_of_an_internal_error(capsys, monkeypatch, crashing_calc, how):
    if how == "env":
        monkeypatch.setenv("SIGMAUDIT_DEBUG", "1")
    assert main((["--debug"] if how == "flag" else []) + CALC) == 2
    err = capsys.readouterr().err
    lines = err.splitlines()
    assert lines[0] == "Traceback (most recent call last):"
    assert "in boom" in err and "RuntimeError: boom in the audit" in lines[-2]
    assert lines[-1].startswith("sigmaudit: error: internal error: RuntimeError: boom in the audit")


def test_debug_holds_for_one_run_only(capsys, crashing_calc):
    assert main(["--debug", *CALC]) == 2
    assert main(CALC) == 2
    assert "Traceback" not in capsys.readouterr().err.split("sigmaudit: error:")[1]


def test_debug_leaves_a_usage_error_one_line(capsys, monkeypatch):
    monkeypatch.setenv("SIGMAUDIT_DEBUG", "1")
    assert main(["calc", "-p", "0.5", "-G", "0"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("sigmaudit: error: -G/--group-size: must be at least 1")


def test_debug_zero_is_off(capsys, monkeypatch, crashing_calc):
    monkeypatch.setenv("SIGMAUDIT_DEBUG", "0")
    assert main(CALC) == 2
    assert "Traceback" not in capsys.readouterr().err
