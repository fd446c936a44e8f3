"""--help for people: plain usage lines and metavars, no Typer internals, nothing cut at a hyphen,
and examples that copy-paste (each example line printed whole, at 60 and 80 columns)."""

from __future__ import annotations

import re
import shlex

import pytest
import typer

from sigmaudit.cli.app import _tidy_metavars, app, main

COMMANDS = ["scan", "plan", "curate", "check", "calc", "trend", "forecast", "backtest", "simulate", "report", "reduce"]
INTERNALS = ("<list[", "list[str]", "list[Path]", "range>", "x>=", "x<=", "<=x", "<int", "<float", "<path")


def _help(capsys, monkeypatch, columns: int, *args: str) -> str:
    monkeypatch.setenv("COLUMNS", str(columns))
    assert main([*args, "--help"]) == 0
    return capsys.readouterr().out


def _command(name: str):
    group = typer.main.get_command(app)
    _tidy_metavars(group)
    return group, group.commands[name]  # type: ignore[attr-defined]


def _examples(name: str) -> list[str]:
    """The example lines of a command's help, from its source: the ``\\b`` block headed "Example(s):"."""
    _, cmd = _command(name)
    block = re.search(r"\x08\n\s*Examples?:\n((?:[ \t]+\S.*\n?)+)", cmd.help)
    assert block, f"{name}: no '\\b' Example block in its help"
    return [line.strip() for line in block.group(1).splitlines() if line.strip()]


@pytest.mark.parametrize("columns", [60, 80])
@pytest.mark.parametrize("name", ["", *COMMANDS])
def test_help_shows_no_internals_and_cuts_nothing_at_a_hyphen(capsys, monkeypatch, name, columns):
    out = _help(capsys, monkeypatch, columns, *([name] if name else []))
    usage = out.splitlines()[0]
    assert usage.startswith("Usage: sigmaudit") and "{" not in usage and "}" not in usage, usage
    assert not [s for s in INTERNALS if s in out], [s for s in INTERNALS if s in out]
    assert "\x08" not in out
    cut = [line for line in out.splitlines() if re.search(r"\w-$", line)]
    assert not cut, cut  # "--min-" at a line's end: an option or a word broken at its hyphen
    assert all(len(line) <= columns for line in out.splitlines()), [x for x in out.splitlines() if len(x) > columns]


def test_usage_lines_show_plain_argument_metavars(capsys, monkeypatch):
    for name in COMMANDS:
        usage = _help(capsys, monkeypatch, 80, name).splitlines()[0]
        if name in ("calc", "simulate"):
            assert usage == f"Usage: sigmaudit {name} [OPTIONS]"
        else:
            assert usage == f"Usage: sigmaudit {name} [OPTIONS] PATH...", usage


@pytest.mark.parametrize("columns", [60, 80])
@pytest.mark.parametrize("name", COMMANDS)
def test_every_example_line_is_printed_whole(capsys, monkeypatch, name, columns):
    out = _help(capsys, monkeypatch, columns, name)
    printed = [line.strip() for line in out.splitlines()]
    for line in _examples(name):
        assert line in printed, (name, columns, line)


@pytest.mark.parametrize("name", COMMANDS)
def test_every_example_is_a_valid_command_line(name):
    """Each example (continuation lines joined) parses: its options exist and its values are valid."""
    text = "\n".join(_examples(name)).replace("\\\n", " ")
    group, cmd = _command(name)
    for example in text.splitlines():
        words = shlex.split(example)
        assert words[:2] == ["sigmaudit", name], example
        ctx = cmd.make_context(name, words[2:], parent=group.make_context("sigmaudit", [name]))
        assert ctx.params, example


def test_group_size_is_one_rule_in_every_command():
    """-G/--group-size is declared once (cli/options.py) and means a whole number in [1, 2**62] in every
    command: plan -G 1e20 overflowed, check -G 1e20 passed, and simulate alone had a bound (65,536, its
    cost, which it still checks on its own)."""
    group = typer.main.get_command(app)
    rules = {name: (p.min, p.max, p.callback.__name__) for name, cmd in group.commands.items() for p in cmd.params
             if "-G" in p.opts}
    assert set(rules) >= set(COMMANDS) - {"reduce"}
    assert set(rules.values()) == {(1, None, "group_size_bound")}


@pytest.mark.parametrize("name", ["scan", "plan", "check", "forecast", "trend", "report"])
def test_group_size_above_the_bound_is_one_line(capsys, name):
    assert main([name, "-G", "99999999999999999999", "sample_logs/rollouts.parquet"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("sigmaudit: error: -G/--group-size: must be at most 2**62") and err.count("\n") == 1


def test_simulate_keeps_its_own_cost_bound(capsys):
    assert main(["simulate", "-G", "65537"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("sigmaudit: error: -G/--group-size: simulate draws every group's answers") and "65,536" in err


def test_every_command_that_reads_logs_says_dash_is_standard_input():
    """Issue 42: reading from ``-`` worked, but no --help said so; the PATH argument of every command that reads
    logs says it now."""
    group, _ = _command("scan")
    readers = {name: cmd for name, cmd in group.commands.items()  # type: ignore[attr-defined]
               if any(p.name == "paths" for p in cmd.params)}
    assert {"scan", "plan", "check", "trend", "forecast", "watch"} <= set(readers)
    for name, cmd in readers.items():
        (paths,) = [p for p in cmd.params if p.name == "paths"]
        assert "- reads standard input" in (paths.help or ""), name
