"""One set of global flags on every command: ``-q``, ``-f/--format`` (listing the formats the command writes),
``-o``, ``--color auto|always|never`` (with NO_COLOR and FORCE_COLOR) and ``--full``."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import typer
from cli_runner import run

from sigmaudit.cli.app import COMMANDS, app

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = str(ROOT / "sample_logs" / "rollouts.parquet")
ANSI = re.compile(r"\x1b\[[0-9;]*m")


def _options(name: str) -> dict[str, object]:
    cmd = typer.main.get_command(app).commands[name]  # type: ignore[attr-defined]
    return {o: p for p in cmd.params for o in (*p.opts, *p.secondary_opts)}


@pytest.mark.parametrize("name", COMMANDS)
def test_every_command_takes_the_global_flags(name):
    opts = _options(name)
    missing = {"-q", "--quiet", "-f", "--format", "-o", "--output", "--color", "--full"} - set(opts)
    assert not missing, f"{name} lacks {sorted(missing)}"


@pytest.mark.parametrize(("name", "listed"), [("watch", "table|json"), ("report", "html|json"),
                                              ("reduce", "parquet|jsonl"), ("calc", "table|json|markdown|csv|html")])
def test_help_lists_the_formats_the_command_writes(name, listed):
    assert _options(name)["--format"].metavar == f"<{listed}>"  # type: ignore[attr-defined]


@pytest.mark.parametrize(("args", "refused"), [(["watch", SAMPLE, "--once", "-f", "csv"], "csv"),
                                               (["report", SAMPLE, "-f", "markdown", "-o", "-"], "markdown")])
def test_a_format_the_help_does_not_list_is_refused(capsys, args, refused):
    code, out, err = run(capsys, *args)
    assert code == 2 and f"does not write {refused}" in err and out == ""


def test_calc_and_simulate_take_quiet(capsys):
    for args in (["calc", "-p", "0.05", "-G", "8", "-q"], ["simulate", "--prompts", "20", "--num-steps", "2", "-q"]):
        code, out, err = run(capsys, *args)
        assert code == 0 and out and err == "", (args, err)


def test_quiet_silences_notes_not_warnings(capsys):
    code, _, err = run(capsys, "forecast", SAMPLE)
    assert code == 0 and "-G not given" in err
    code, _, err = run(capsys, "forecast", SAMPLE, "-q")
    assert code == 0 and "-G not given" not in err


@pytest.mark.parametrize(("flag", "env", "coloured"), [
    ([], {}, False),  # a pipe: no colour
    ([], {"FORCE_COLOR": "1"}, True),
    ([], {"FORCE_COLOR": "0"}, False),
    ([], {"FORCE_COLOR": "1", "NO_COLOR": "1"}, False),  # NO_COLOR wins over FORCE_COLOR
    (["--color", "always"], {"NO_COLOR": "1"}, True),  # the flag wins over both
    (["--color", "never"], {"FORCE_COLOR": "1"}, False),
    (["--color", "always"], {}, True),
])
def test_color_follows_the_flag_then_no_color_then_force_color(capsys, monkeypatch, flag, env, coloured):
    for var in ("NO_COLOR", "FORCE_COLOR"):
        monkeypatch.delenv(var, raising=False)
    for var, value in env.items():
        monkeypatch.setenv(var, value)
    code, out, _ = run(capsys, "check", SAMPLE, "-q", "--max-silent", "0.1", *flag)
    assert code == 1 and bool(ANSI.search(out)) is coloured
    assert "FAIL" in ANSI.sub("", out)


def test_color_is_a_choice(capsys):
    code, _, err = run(capsys, "calc", "-p", "0.05", "-G", "8", "--color", "sometimes")
    assert code == 2 and "--color" in err and "auto" in err


def test_color_never_reaches_json(capsys):
    code, out, _ = run(capsys, "calc", "-p", "0.05", "-G", "8", "-f", "json", "--color", "always")
    assert code == 0 and not ANSI.search(out)


@pytest.mark.parametrize(("flag", "env", "coloured"), [
    ("never", {"FORCE_COLOR": "1"}, False), ("auto", {"FORCE_COLOR": "1", "NO_COLOR": "1"}, False),
    ("always", {"FORCE_COLOR": "1"}, True),
])
def test_the_progress_spinner_follows_color(capsys, monkeypatch, flag, env, coloured):
    """Issue 42: ``--color never`` left the reading spinner green (Rich coloured it on its own, FORCE_COLOR making
    stderr a terminal); it follows the report's colour rule now."""
    from sigmaudit.cli import settings
    from sigmaudit.cli.progress import rows_progress

    for key in ("NO_COLOR", "FORCE_COLOR"):
        monkeypatch.delenv(key, raising=False)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setattr(settings, "current", settings.Settings(color=settings.Color(flag)))
    with rows_progress() as callback:
        callback(1234)
    err = capsys.readouterr().err
    assert bool(re.search(r"\x1b\[(?:\d+;)*3\dm", err)) is coloured, repr(err)
