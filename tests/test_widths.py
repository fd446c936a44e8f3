"""Every command's table output at COLUMNS=60 and 80, piped (not a terminal): no line wider than
the screen, no "…" anywhere (Rich's mark of a cut number or header), no ANSI codes."""

from __future__ import annotations

import unicodedata
from pathlib import Path

import pytest
from cli_runner import run

SAMPLE = str(Path(__file__).resolve().parents[1] / "sample_logs" / "rollouts.parquet")
COMMANDS = [
    ("scan", SAMPLE, "-q"),
    ("scan", SAMPLE, "-q", "--estimator", "plugin", "-G", "2", "-G", "64"),
    ("plan", SAMPLE, "-q", "--max-silent", "0.5", "--budget", "2000", "--bootstrap", "20"),
    ("plan", SAMPLE, "-q", "--eps", "0.05", "--bootstrap", "20"),
    ("check", SAMPLE, "-q", "-G", "8", "--max-silent", "0.5", "--min-fidelity", "0.7", "--bootstrap", "20",
     "--confidence", "0.95"),
    ("calc", "-p", "0.05", "-G", "8"),
    ("trend", SAMPLE, "-q", "-G", "16"),
    ("simulate", "--prompts", "40", "--num-steps", "6", "--seed", "1"),
]


def _display_width(line: str) -> int:
    """Terminal cells of a line: combining marks (the hat of p̂) take none."""
    return sum(0 if unicodedata.combining(ch) else 1 for ch in line)


@pytest.mark.parametrize("columns", [60, 80])
@pytest.mark.parametrize("args", COMMANDS, ids=lambda a: " ".join(x for x in a if x != SAMPLE))
def test_tables_fit_without_cutting(capsys, monkeypatch, columns, args):
    monkeypatch.setenv("COLUMNS", str(columns))
    code, out, err = run(capsys, *args)
    assert code in (0, 1), err
    assert out.strip()
    assert "…" not in out
    assert "\x1b[" not in out
    too_wide = [line for line in out.splitlines() if _display_width(line) > columns]
    assert not too_wide, too_wide[:3]


@pytest.mark.parametrize("command", [["plan", SAMPLE, "-q", "--bootstrap", "20", "--full"],
                                     ["forecast", SAMPLE, "-q"], ["scan", SAMPLE, "-q", "--full"]])
def test_piped_without_COLUMNS_reads_as_a_100_column_terminal(capsys, monkeypatch, command):
    """A pipe or a file has no screen: its text is what a terminal of 100 columns shows (what the docs show),
    not as wide as the widest table (plan's sweep took 184 columns)."""
    monkeypatch.delenv("COLUMNS", raising=False)
    code, out, _ = run(capsys, *command)
    monkeypatch.setenv("COLUMNS", "100")
    code_100, out_100, _ = run(capsys, *command)
    assert code == code_100 == 0 and out == out_100
    assert max(_display_width(line) for line in out.splitlines()) <= 100


@pytest.mark.parametrize("width", [60, 80])
def test_terminal_rendering_fits_and_colours_the_verdict(monkeypatch, width):
    """As on a colour terminal of that width: the same fit, FAIL in red, pass in green."""
    import re

    import numpy as np

    from sigmaudit.audits.check import Threshold, check
    from sigmaudit.audits.plan import Targets, plan
    from sigmaudit.core.corpus import Corpus
    from sigmaudit.render import Format, render
    from sigmaudit.views import build_view

    monkeypatch.delenv("NO_COLOR", raising=False)
    rng = np.random.default_rng(0)
    n = rng.integers(4, 20, 300)
    corpus = Corpus(n, rng.binomial(n, rng.beta(0.7, 0.7, 300)))
    res = check(corpus, 8, [Threshold("silent_rate", 0.1), Threshold("fidelity", 0.1)], replicates=20)
    text = render(build_view(res), Format.table, color=True, width=width)
    plain = re.sub(r"\x1b\[[0-9;]*m", "", text)
    assert "…" not in plain and all(_display_width(line) <= width for line in plain.splitlines())
    assert re.search(r"\x1b\[[0-9;]*31m\s*FAIL", text) and re.search(r"\x1b\[[0-9;]*32m\s*pass", text)
    swept = render(build_view(plan(corpus, targets=Targets(max_silent=0.5), replicates=20)), Format.table,
                   color=True, width=width)
    assert "…" not in re.sub(r"\x1b\[[0-9;]*m", "", swept)



def test_scan_summary_is_a_dozen_lines_or_so(capsys):
    code, out, _ = run(capsys, "scan", SAMPLE, "--summary", "-q")
    lines = out.splitlines()
    assert code == 0 and len(lines) == 14
    assert lines[0] == "window: steps 1–20 (20 steps, whole log)" and lines[1].startswith("corpus: 200 prompts")
    assert "never solved in the log" in lines[4] and lines[5].startswith("range the data allow")
    assert lines[6].startswith("observed silent groups: 60.2%")
    assert lines[7].startswith("per step (observed, steps 1–20)") and lines[8].startswith("generated tokens: not known")
    assert "(observed)" in lines[9] and "posterior" in lines[11] and all(len(line) < 250 for line in lines)
