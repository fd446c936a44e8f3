"""One number style in every command's output for people (table, markdown, HTML): integers with
thousands separators, every decimal in a table cell with the decimals of its quantity (4 for a rate,
2 for an expected count or ratio), and one quantity printed alike by scan, plan, check and report.
JSON and CSV keep raw numbers (tests/test_output_contract.py)."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import pytest
from cli_runner import run

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = str(ROOT / "sample_logs" / "rollouts.parquet")
RATE, AMOUNT = 4, 2  # decimals of a rate / of an expected count or ratio (sigmaudit.fmt's rule, restated)

COMMANDS = {
    "scan": ("scan", SAMPLE, "-q"),
    "scan-by": ("scan", SAMPLE, "-q", "--by", "step", "-G", "8"),
    "plan-budget": ("plan", SAMPLE, "-q", "--max-silent", "0.5", "--budget", "2000", "--bootstrap", "20"),
    "plan-eps": ("plan", SAMPLE, "-q", "--eps", "0.05", "--bootstrap", "20"),
    "check": ("check", SAMPLE, "-q", "-G", "8", "--max-silent", "0.5", "--min-fidelity", "0.7", "--bootstrap", "20"),
    "calc-one": ("calc", "-p", "0.05", "-G", "8"),
    "calc-many": ("calc", "-p", "0.05", "-p", "0.3", "-G", "8", "-G", "4096"),
    "trend": ("trend", SAMPLE, "-q", "-G", "16"),
    "simulate": ("simulate", "--prompts", "60", "--num-steps", "6", "--seed", "1"),
    "forecast": ("forecast", SAMPLE, "-q", "-G", "8", "--max-p-silent", "0.9"),
    "backtest": ("backtest", SAMPLE, "-q"),
}

UNSEPARATED = re.compile(r"(?<![\d.,\w])\d{4,}(?![\d,]|\.\d)|(?<![\d.,\w])\d{4,}\.\d")
"""An integer part of 4 or more digits written without thousands separators."""
NUMBER = re.compile(r"^[<>]?-?(\d{1,3}(,\d{3})*|\d+)(\.(\d+))?$")


BIN = re.compile(r"^\[\d\.\d, \d\.\d[)\]]$")
"""A p̂ bin label such as ``[0.9, 1.0]`` (a label, not an interval estimate)."""


def _unseparated(text: str) -> list[str]:
    text = re.sub(r"et al\. \d{4}", "", text)  # a citation's year
    text = text.replace(str(ROOT), "")  # the checkout's path in a file name (a CI folder such as /tmp/ci-3.12-7217)
    return [m.group(0) for m in UNSEPARATED.finditer(text)]


def _markdown_cells(text: str) -> list[str]:
    return [c.strip() for line in text.splitlines() if line.startswith("| ") for c in line.strip("|").split(" | ")]


def _html_text(page: str) -> str:
    """The words a reader sees: no SVG, style or script, no tags."""
    page = re.sub(r"<(svg|style|script)\b.*?</\1>", " ", page, flags=re.S)
    return html.unescape(re.sub(r"<[^>]+>", " ", page))


def _numbers_in_cells(cells: list[str]) -> list[str]:
    """Numbers in table cells, intervals ``[lo, hi]`` split into their bounds."""
    out = []
    for cell in cells:
        if BIN.match(cell):
            continue
        parts = cell.strip("[]").split(", ") if cell.startswith("[") and cell.endswith("]") else [cell]
        out += [p for p in parts if NUMBER.match(p)]
    return out


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_table_and_markdown_follow_the_number_style(capsys, monkeypatch, name):
    monkeypatch.setenv("COLUMNS", "100")
    args = COMMANDS[name]
    code, table, err = run(capsys, *args)
    assert code in (0, 1), err
    code, markdown, err = run(capsys, *args, "-f", "markdown")
    assert code in (0, 1), err
    for text in (table, markdown):
        bad = _unseparated(text)
        assert not bad, (name, bad[:5])
    numbers = _numbers_in_cells(_markdown_cells(markdown))
    assert numbers, name
    decimals = {len(NUMBER.match(n).group(4) or "") for n in numbers}
    assert decimals <= {0, AMOUNT, RATE}, (name, sorted(decimals), numbers[:20])


@pytest.mark.parametrize("args", [("report", SAMPLE, "-q", "--max-silent", "0.5"), ("scan", SAMPLE, "-q")])
def test_html_follows_the_number_style(capsys, tmp_path, args):
    target = tmp_path / "r.html"
    code, _, err = run(capsys, *args, "-o", str(target))
    assert code == 0, err
    text = _html_text(target.read_text(encoding="utf-8"))
    bad = _unseparated(text)
    assert not bad, bad[:5]
    assert "32,000" in text  # the rollouts of the sample log


def test_reduce_note_separates_thousands(capsys, tmp_path):
    code, _, err = run(capsys, "reduce", SAMPLE, "-o", str(tmp_path / "c.parquet"))
    assert code == 0 and "4,000 rows" in err, err


def test_one_quantity_prints_alike_in_scan_plan_check_and_report(capsys, tmp_path):
    """The silent rate and the fidelity at G = 8: the same text (RATE decimals) in every command."""
    _, out, _ = run(capsys, "scan", SAMPLE, "-q", "-G", "8", "-f", "json")
    silent = next(s for s in json.loads(out)["silent"] if s["G"] == 8)["estimate"]
    _, out, _ = run(capsys, "plan", SAMPLE, "-q", "-G", "8", "-f", "json", "--bootstrap", "20")
    fidelity = next(r for r in json.loads(out)["sweep"] if r["G"] == 8)["fidelity"]
    want_silent, want_fidelity = f"{silent:.{RATE}f}", f"{fidelity:.{RATE}f}"
    assert want_silent != f"{silent:.3f}"

    _, scan_md, _ = run(capsys, "scan", SAMPLE, "-q", "-G", "8", "-f", "markdown")
    _, plan_md, _ = run(capsys, "plan", SAMPLE, "-q", "-G", "8", "-f", "markdown", "--bootstrap", "20", "--full")
    _, check_md, _ = run(capsys, "check", SAMPLE, "-q", "-G", "8", "--max-silent", "0.9", "--min-fidelity", "0.1",
                         "-f", "markdown", "--bootstrap", "20", "--basis", "model")
    _, check_table, _ = run(capsys, "check", SAMPLE, "-q", "-G", "8", "--max-silent", "0.9", "--min-fidelity", "0.1",
                            "--bootstrap", "20", "--basis", "model")
    code, _, err = run(capsys, "report", SAMPLE, "-q", "-G", "8", "-o", str(tmp_path / "r.html"))
    assert code == 0, err
    report = _html_text((tmp_path / "r.html").read_text(encoding="utf-8"))
    assert want_silent in _markdown_cells(scan_md)
    from sigmaudit.fmt import pct

    # plan's sweep shows a share as a percentage (issue 41 item 3), the same text at the same G
    assert pct(silent) in _markdown_cells(plan_md) and want_fidelity in _markdown_cells(plan_md)
    # check's table shows a share as a percentage too (issue 41 item 3); the report's scan tables keep RATE
    assert pct(silent) in _markdown_cells(check_md) and want_fidelity in _markdown_cells(check_md)
    assert want_silent in report.split() and want_fidelity in report.split()
    assert re.search(rf"│ silent_rate +│ +{re.escape(pct(silent))} │", check_table)


def test_format_value_rule():
    import numpy as np

    from sigmaudit.fmt import AMOUNT as A
    from sigmaudit.fmt import RATE as R
    from sigmaudit.fmt import format_count, format_value

    assert (R, A) == (RATE, AMOUNT)
    assert format_value(240000) == "240,000" and format_value(np.int64(1024)) == "1,024"
    assert format_value(2395.8, A) == "2,395.80" and format_value(np.float32(0.5), R) == "0.5000"
    assert format_value(3e-11) == "<0.0001" and format_value(0.99999) == ">0.9999" and format_value(1.0) == "1.0000"
    assert format_value(-1234.5, A) == "-1,234.50" and format_value(float("nan")) == "—"
    assert format_count(160.0) == "160" and format_count(12345.5) == "12,345.50"


def test_plural_groups_and_agrees():
    from sigmaudit.fmt import plural

    assert plural(1, "file") == "1 file" and plural(0, "file") == "0 files" and plural(4000, "group") == "4,000 groups"
    assert plural(1, "prompt has", "prompts have") == "1 prompt has" and plural(2, "prompt has", "prompts have") == \
        "2 prompts have"


def test_counts_in_sentences_are_grouped_and_grammatical(capsys, monkeypatch):
    """Issue 42 item 5: watch's summary said "4000 groups" beside "4,000", plan "1 prompts/step", scan "1 file(s)"."""
    monkeypatch.setenv("COLUMNS", "200")
    root = Path(__file__).resolve().parents[1] / "sample_logs"
    code, out, err = run(capsys, "watch", str(root / "rollouts.parquet"), "--once", "-q")
    assert code == 0, err
    assert "20 completed steps (1–20), 4,000 groups: observed" in out and "4000" not in out
    code, out, _ = run(capsys, "plan", str(root / "trl-one-prompt"), "-q")
    assert "(1 prompt/step)" in out and "1 prompts" not in out
    code, out, _ = run(capsys, "scan", str(root / "rollouts.parquet"), "-q", "--full")
    assert "1 file ·" in out and "file(s)" not in out
