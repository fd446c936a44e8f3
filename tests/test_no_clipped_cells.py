"""Issue 42 item 2: no cell is ever clipped. Every command's first screen, on every sample log, rendered at
60, 80, 100 and 160 columns: every table part fits the room its panel gives it at the columns' least widths
(so Rich never cuts a cell; a long text cell folds over lines, every character kept), and every number in a
table shows whole on one line. (``simulate`` at 100 columns showed 7,200,000 rollouts as ``7``.)"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from cli_runner import run

import sigmaudit.render.terminal as terminal
from sigmaudit.fmt import printable

ROOT = Path(__file__).resolve().parents[1]
LOGS = sorted(p for p in (ROOT / "sample_logs").iterdir() if not p.name.startswith("."))
WIDTHS = (60, 80, 100, 160)
NUMBER = re.compile(r"^[-+]?(\d[\d,]*)?(\.\d+)?%?$")
COMMANDS = (("scan",), ("forecast",))
"""Run on every sample log (a prompt key of every shape: ids, chat templates, token lists)."""
MORE = (("plan",), ("check", "--max-silent", "0.5"), ("trend",))
"""Run on the logs in MORE_LOGS too (their tables do not hold prompt keys: a few logs show every shape)."""
MORE_LOGS = {"rollouts.parquet", "verl", "trl-one-prompt", "open-instruct"}


def _views(capsys, monkeypatch, *args: str) -> list:
    """The views a command rendered for the terminal (none when it refused the input)."""
    seen = []
    real = terminal.render_terminal

    def keep(view, **kw):  # noqa: ANN001, ANN003
        seen.append(view)
        return real(view, **kw)

    monkeypatch.setattr(terminal, "render_terminal", keep)
    code, _, err = run(capsys, *args)
    assert code in (0, 1, 2), err
    return seen


def _check_fits(view, width: int) -> None:  # noqa: ANN001
    from rich.console import Console
    from rich.measure import Measurement

    parts = []
    real = terminal._rich_tables

    def record(t, room, color):  # noqa: ANN001
        out = real(t, room, color)
        parts.append((t, room, out))
        return out

    terminal._rich_tables = record
    try:
        text = terminal.render_terminal(view, width=width, full=False)
    finally:
        terminal._rich_tables = real
    lines = text.splitlines()
    console = Console(width=width)
    for t, room, out in parts:
        from rich.table import Table as RichTable

        for rt in (o for o in out if isinstance(o, RichTable)):
            least = Measurement.get(console, console.options.update_width(room), rt).minimum
            assert least <= room, (view.title, t.title, width, least, room)
        for row in t.cells():
            for cell in row:
                c = printable(cell)
                if NUMBER.match(c) and c:
                    assert any(c in line for line in lines), (view.title, t.title, width, c)


@pytest.mark.slow
@pytest.mark.parametrize("log", LOGS, ids=lambda p: p.name)
def test_first_screens_clip_no_cell(capsys, monkeypatch, log):
    checked = 0
    for command in COMMANDS + (MORE if log.name in MORE_LOGS else ()):
        for view in _views(capsys, monkeypatch, command[0], str(log), *command[1:], "-q"):
            for width in WIDTHS:
                _check_fits(view, width)
                checked += 1
    assert checked >= len(WIDTHS)  # scan at least reads every sample log


@pytest.mark.parametrize("args", [("simulate", "--prompts", "200", "--num-steps", "5"),
                                  ("calc", "-p", "0.3", "-G", "8")])
def test_simulate_and_calc_clip_no_cell(capsys, monkeypatch, args):
    views = _views(capsys, monkeypatch, *args)
    assert views
    for view in views:
        for width in WIDTHS:
            _check_fits(view, width)
