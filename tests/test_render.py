"""Renderers: every format renders every view; values formatted, never computed."""

from __future__ import annotations

import json

import pytest

from sigmaudit.audits.calc import calc
from sigmaudit.cli.output import resolve_format
from sigmaudit.errors import ConfigError
from sigmaudit.fmt import format_value
from sigmaudit.render import Format, render
from sigmaudit.views import build_view
from sigmaudit.writers import write_file


@pytest.mark.parametrize("fmt", list(Format))
def test_every_format_renders(fmt):
    text = render(build_view(calc([0.05, 0.5], [8])), fmt)
    assert text.endswith("\n")
    if fmt is Format.json:
        assert json.loads(text)["schema_version"] == 1
    else:
        assert "0.05" in text


def test_json_has_no_nan():
    text = render(build_view(calc([0.0], [8])), Format.json)
    assert "NaN" not in text and "Infinity" not in text
    assert json.loads(text)["results"][0]["difficulty_weight"] is None


@pytest.mark.parametrize(
    ("value", "expected"),
    [(None, "—"), (float("nan"), "—"), (0.0, "0.0000"), (3e-11, "<0.0001"), (1.0, "1.0000"),
     (0.99999, ">0.9999"), (0.12345, "0.1235"), (7, "7"), (True, "yes"), (float("inf"), "∞")],
)
def test_format_value(value, expected):
    assert format_value(value) == expected


def test_resolve_format_from_suffix(tmp_path):
    assert resolve_format(None, tmp_path / "a.json") is Format.json
    assert resolve_format(None, tmp_path / "a.md") is Format.markdown
    assert resolve_format(None, tmp_path / "a.csv") is Format.csv
    assert resolve_format(None, tmp_path / "a.txt") is Format.table
    assert resolve_format(None, tmp_path / "a.html") is Format.html
    assert resolve_format(Format.json, tmp_path / "a.json") is Format.json
    assert resolve_format(Format.csv, tmp_path / "a.dat") is Format.csv  # no known suffix: --format decides
    assert resolve_format(None, None) is Format.table
    assert resolve_format(None, None, default=Format.html) is Format.html


@pytest.mark.parametrize(("fmt", "name", "says"), [
    (Format.csv, "a.json", "says json but --format says csv"),   # suffix and --format contradict
    (None, "a.out", "cannot tell the format"),                   # unknown suffix, no --format
    (Format.markdown, "a.html", "says html but --format says markdown"),
])
def test_resolve_format_refuses_contradictions(tmp_path, fmt, name, says):
    with pytest.raises(ConfigError) as err:
        resolve_format(fmt, tmp_path / name)
    assert says in err.value.message and err.value.location == f"-o {tmp_path / name}"


def test_resolve_format_refuses_a_format_the_command_does_not_offer():
    with pytest.raises(ConfigError, match="does not write csv"):
        resolve_format(Format.csv, None, offered=(Format.html, Format.json))


def test_write_atomic_replaces_and_leaves_no_temp(tmp_path):
    target = tmp_path / "out.txt"
    target.write_text("old")
    write_file(target, "new")
    assert target.read_text() == "new"
    assert [p.name for p in tmp_path.iterdir()] == ["out.txt"]


def test_write_atomic_gives_ordinary_permissions(tmp_path):
    import os

    target = tmp_path / "new.txt"
    old = os.umask(0o022)
    try:
        write_file(target, "x")
    finally:
        os.umask(old)
    assert target.stat().st_mode & 0o777 == 0o644


def test_format_value_large_floats_in_scientific_notation():
    """A float beyond a double's ~16 significant digits is shown as d.dddde+NN, not hundreds of digits."""
    from sigmaudit.fmt import LARGE, format_value

    assert format_value(-1.25e293) == "-1.2500e+293"
    assert format_value(1e150, digits=2) == "1.00e+150"
    assert format_value(LARGE) == "1.0000e+15"
    assert format_value(123456.5) == "123,456.5000"  # thousands separators (the number style)
    assert max(len(format_value(float(10.0 ** e))) for e in range(-300, 308)) <= 24  # 100,000,000,000,000.0000


def test_calc_extreme_p_fits_80_columns(capsys, monkeypatch):
    from cli_runner import run

    monkeypatch.setenv("COLUMNS", "80")
    code, out, err = run(capsys, "calc", "-p", "1e-300", "-G", "1000000")
    assert code == 0, err
    # attenuation 1/(8Gp(1-p)) = 1.25e+293 is far outside the approximation's range: flagged, not printed
    assert "outside its range" in out and "1.2500e+293" not in out and max(map(len, out.splitlines())) <= 80


def test_a_panel_drawn_expanded_is_the_panel_rich_measures(monkeypatch):
    """A panel whose text fills the screen is drawn expanded (render/terminal.py ``_fills``: Rich then skips
    measuring its tables): the same text as the measured panel, at every width, with and without colour, on
    views whose panels fill the screen, and on narrow ones that do not."""
    from sigmaudit.audits.scan import audit
    from sigmaudit.loaders import load_counts
    from sigmaudit.render import terminal
    from sigmaudit.views.model import Section, Table, View

    narrow = View("t", (Section("s", ("short line",), (Table("x", ("a", "bb"), ((1, 0.5), (2, 0.25)), note="n"),)),))
    views = [build_view(audit(load_counts("sample_logs/rollouts.parquet"))), build_view(calc([0.05, 0.5], [8])),
             narrow]
    cases = [(view, width, color) for view in views for width in (24, 40, 61, 80, 100, 160, None)
             for color in (False, True)]
    fills, said = terminal._fills, []
    monkeypatch.setattr(terminal, "_fills", lambda parts, width: said.append(fills(parts, width)) or said[-1])
    expanded = [terminal.render_terminal(v, color=c, width=w) for v, w, c in cases]
    monkeypatch.setattr(terminal, "_fills", lambda parts, width: False)
    measured = [terminal.render_terminal(v, color=c, width=w) for v, w, c in cases]
    assert expanded == measured
    assert 0 < sum(said) < len(said)  # panels drawn both ways


@pytest.mark.parametrize("color", [False, True])
def test_the_terminal_prints_a_logs_text_as_written(color):
    """Labels from a log reach the terminal as written, with and without colour: not read as Rich markup (a
    prompt ``[bold]p1`` lost its tag and turned bold) nor as emoji codes (``:fire:`` became an emoji), in cells,
    headers and panel titles."""
    from sigmaudit.render.terminal import render_terminal
    from sigmaudit.views.model import Section, Table, View

    table = Table("most likely silent", ("prompt", "[red]visits"), (("[bold]p1", 3), ("p2 :fire:", 4)))
    view = View("sigmaudit forecast", (Section("next visit [dim]:x:", ("window: [i]",), (table,)),))
    out = render_terminal(view, color=color, width=100)
    for text in ("[bold]p1", "p2 :fire:", "[red]visits", "next visit [dim]:x:", "window: [i]"):
        assert text in out, (text, out)
    assert "🔥" not in out and "❌" not in out
