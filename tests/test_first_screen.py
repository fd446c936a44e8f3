"""A command's default terminal output is its first screen: at most 30 lines at 100 columns, leading with what
was wasted (observed) and what to do; ``--full`` prints every panel; the other formats always carry everything."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_runner import run

from sigmaudit.views.model import FIRST_SCREEN_LINES

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = str(ROOT / "sample_logs" / "rollouts.parquet")
LOGS = ["rollouts.parquet", "verl", "counts.csv", "trl", "prime-rl", "grouped.parquet", "nemo-rl"]


@pytest.fixture(scope="module")
def drifting(tmp_path_factory) -> str:
    from sigmaudit.cli.app import main

    path = tmp_path_factory.mktemp("drift") / "drift.parquet"
    assert main(["simulate", "--prompts", "500", "--num-steps", "100", "--log-out", str(path), "-q", "-o",
                 str(path.with_suffix(".json"))]) == 0
    return str(path)


@pytest.mark.parametrize("log", LOGS)
def test_scan_fits_one_screen_and_leads_with_the_waste(capsys, monkeypatch, log):
    monkeypatch.setenv("COLUMNS", "100")
    code, out, _ = run(capsys, "scan", str(ROOT / "sample_logs" / log), "-q")
    lines = out.splitlines()
    assert code == 0 and len(lines) <= FIRST_SCREEN_LINES, out
    assert lines[0] == "sigmaudit scan" and "headline" in lines[1] and "what to do" in out
    first = next(i for i, line in enumerate(lines) if "wasted at G" in line or "observed silent groups" in line)
    assert first <= 4, out  # after the title, the panel's border and the window line
    assert lines[-1].startswith("--full adds: corpus; silent groups; wasted compute")


def test_a_drifting_log_keeps_its_warning_on_the_first_screen(capsys, monkeypatch, drifting):
    monkeypatch.setenv("COLUMNS", "100")
    code, out, _ = run(capsys, "scan", drifting, "-q")
    assert code == 0 and len(out.splitlines()) <= FIRST_SCREEN_LINES
    assert out.splitlines()[3].startswith("│ warning: pass rates moved")


def test_full_prints_every_panel_and_other_formats_are_whole(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "100")
    _, brief, _ = run(capsys, "scan", SAMPLE, "-q")
    _, full, _ = run(capsys, "scan", SAMPLE, "-q", "--full")
    for panel in ("corpus", "silent groups", "wasted compute", "gradient mass", "group size"):
        assert f"╭─ {panel} " in full and f"╭─ {panel} " not in brief
    assert "--full adds" not in full and len(full.splitlines()) > 3 * len(brief.splitlines())
    _, markdown, _ = run(capsys, "scan", SAMPLE, "-q", "-f", "markdown")
    _, markdown_full, _ = run(capsys, "scan", SAMPLE, "-q", "-f", "markdown", "--full")
    assert markdown == markdown_full and "## group size" in markdown.lower() or markdown == markdown_full
    _, data, _ = run(capsys, "scan", SAMPLE, "-q", "-f", "json")
    _, data_full, _ = run(capsys, "scan", SAMPLE, "-q", "-f", "json", "--full")
    assert json.loads(data) == json.loads(data_full)


def test_the_first_screen_says_curation_comes_first_with_its_figure(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "100")
    _, out, _ = run(capsys, "scan", SAMPLE, "-q")
    flat = " ".join(line.strip("│ ") for line in out.splitlines())
    # 21.0% never solved + 14.0% always solved in the sample log's 200 prompts (42 + 28 of them)
    assert "data first: 35.0% of prompts were never or always solved in the log" in flat
    assert "`sigmaudit curate` says which to drop" in flat and "speak" not in flat


def test_scan_headline_keeps_to_lines_a_user_acts_on(capsys, monkeypatch):
    """Issue 42 item 5: the identified ranges of p = 0 / p = 1 and the extreme-band share of gradient mass need
    their panel's note: the first screen leaves them to --full; the summary says them in words; the per-step line
    of a 55–64 % series says "flat" (on a 0–100 % scale it draws one block twenty times), one file is "1 file"."""
    monkeypatch.setenv("COLUMNS", "100")
    code, out, _ = run(capsys, "scan", SAMPLE, "-q")
    assert code == 0
    assert "range the data allow" not in out and "extreme-band" not in out and "G → ∞ limit" not in out
    assert "1 file," in out and "file(s)" not in out
    assert "flat on a 0–100% scale;" in out and "▅▅▅" not in out
    code, summary, _ = run(capsys, "scan", SAMPLE, "-q", "--summary")
    assert "flat on a 0–100% scale; first 60.5%, last 55.0%, range 55.0%–64.0%" in summary
    (rng,) = [line for line in summary.splitlines() if line.startswith("range the data allow")]
    assert "truly unsolvable (p = 0) 0.0%–21.0%, truly always solved (p = 1) 0.0%–14.0%" in rng
    (mass,) = [line for line in summary.splitlines() if line.startswith("share of the gradient signal")]
    assert "(p < 0.1 or p > 0.9) at G = 8 (posterior): GRPO 9.2%, Dr. GRPO 7.4%" in mass
    code, full, _ = run(capsys, "scan", SAMPLE, "-q", "--full")
    assert "never solved (p = 0): range the data allow" in full and "GRPO G→∞" in full


def test_a_sparkline_with_a_visible_trend_is_drawn(capsys, monkeypatch, drifting):
    """The "flat" wording is only for a series that draws as one block: a drifting log keeps its chart."""
    code, out, _ = run(capsys, "scan", drifting, "-q", "--summary")
    (line,) = [x for x in out.splitlines() if x.startswith("per step")]
    assert "flat" not in line and any(b in line for b in "▁▂▃▄▅▆▇█")
