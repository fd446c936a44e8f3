"""Shell completion (Typer's, for bash, zsh and fish): the script each shell installs, and the words it
completes, asked of the real ``sigmaudit`` process as each shell asks."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _ask(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if not k.startswith(("_SIGMAUDIT", "_TYPER", "COMP_"))}
    full |= {"PYTHONPATH": str(ROOT)} | env
    return subprocess.run([sys.executable, "-m", "sigmaudit", *args], capture_output=True, text=True, env=full,
                          timeout=120, cwd=ROOT)


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_show_completion_prints_the_shell_script(shell):
    done = _ask({}, "--show-completion", shell)
    assert done.returncode == 0 and "_SIGMAUDIT_COMPLETE" in done.stdout, done.stderr


def test_bash_completes_commands_and_options():
    done = _ask({"_SIGMAUDIT_COMPLETE": "complete_bash", "COMP_WORDS": "sigmaudit sc", "COMP_CWORD": "1"})
    assert done.returncode == 0 and done.stdout.split() == ["scan"]
    done = _ask({"_SIGMAUDIT_COMPLETE": "complete_bash", "COMP_WORDS": "sigmaudit check --max-si",
                 "COMP_CWORD": "2"})
    assert done.stdout.split() == ["--max-silent", "--max-silent-tokens"] or done.stdout.split() == ["--max-silent"]


def test_zsh_and_fish_complete_with_help_text():
    done = _ask({"_SIGMAUDIT_COMPLETE": "complete_zsh", "_TYPER_COMPLETE_ARGS": "sigmaudit wat"})
    assert done.returncode == 0 and '"watch"' in done.stdout
    done = _ask({"_SIGMAUDIT_COMPLETE": "complete_fish", "_TYPER_COMPLETE_ARGS": "sigmaudit pl",
                 "_TYPER_COMPLETE_FISH_ACTION": "get-args"})
    assert done.returncode == 0 and done.stdout.startswith("plan\t")


def _format_param(name: str):
    import typer

    from sigmaudit.cli.app import app

    cmd = typer.main.get_command(app).commands[name]  # type: ignore[attr-defined]
    return cmd, next(p for p in cmd.params if "--format" in p.opts)


@pytest.mark.parametrize("name", __import__("sigmaudit.cli.app", fromlist=["COMMANDS"]).COMMANDS)
def test_format_completion_offers_exactly_what_the_command_accepts(name):
    """Issue 44: watch offered markdown/csv/html, which it refuses, and reduce offered nothing. Every command's
    Tab offers the formats its --help lists (tests/test_global_flags.py: a format it does not list is refused)."""
    import click

    cmd, param = _format_param(name)
    ctx = click.Context(cmd)
    offered = [c.value for c in param.shell_complete(ctx, "")]
    assert offered == param.metavar.strip("<>").split("|")
    assert [c.value for c in param.shell_complete(ctx, "j")] == [v for v in offered if v.startswith("j")]


def test_bash_completes_the_formats_of_watch_and_reduce():
    for command, want in (("watch", ["table", "json"]), ("reduce", ["parquet", "jsonl"])):
        done = _ask({"_SIGMAUDIT_COMPLETE": "complete_bash", "COMP_WORDS": f"sigmaudit {command} x -f ",
                     "COMP_CWORD": "4"})
        assert done.returncode == 0 and done.stdout.split() == want, done.stderr
