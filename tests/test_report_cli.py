"""`sigmaudit report` as a command: the file, stdout and stderr apart; written only on success."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest
from cli_runner import run

from sigmaudit.cli.app import main

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "sample_logs" / "rollouts.parquet"
BAD = ROOT / "tests" / "fixtures" / "bad"


def small_log(folder: Path, steps: bool) -> Path:
    """8 prompts × groups of 8 over 2 steps (or one undated batch), long layout."""
    ks = (0, 1, 3, 4, 5, 7, 8, 8)
    lines = ["prompt_id,step,reward" if steps else "prompt_id,reward"]
    for step in (1, 2):
        for i, k in enumerate(ks):
            rewards = [1] * k + [0] * (8 - k)
            lines += [f"q{i},{step},{r}" if steps else f"q{i},{r}" for r in rewards]
    path = folder / ("steps.csv" if steps else "nosteps.csv")
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture(scope="module")
def sample_report(tmp_path_factory) -> tuple[int, str, str, Path]:
    out = tmp_path_factory.mktemp("report") / "report.html"
    # capsys is function-scoped: capture this one run by hand
    err, std = io.StringIO(), io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(std):
        code = main(["report", str(SAMPLE), "-o", str(out), "--max-silent", "0.5", "--title", "sample run"])
    return code, std.getvalue(), err.getvalue(), out


def test_sample_log_report(sample_report):
    code, out, err, path = sample_report
    assert code == 0
    assert out == ""  # the page goes to the file, never to stdout
    assert err.splitlines()[-1].startswith(f"sigmaudit: wrote {path} (")
    assert "detected long layout" in err
    page = path.read_text(encoding="utf-8")
    assert page.count("<svg") == 7
    assert "<title>sample run</title>" in page and "<h1>sample run</h1>" in page
    assert re.findall(r"<h2>(.*?)</h2>", page) == ["Summary", "Charts", "Recommendation", "Scan", "Per step",
                                                      "Forecast backtest", "Notes"]
    assert "<h3>Over training</h3>" in page
    assert "200 prompts" in page and "32,000 rollouts" in page and "20 steps" in page
    # the smallest whole G that `check --max-silent 0.5` passes on this log (every G searched, not just the grid)
    rec = int(re.search(r"Recommended G = <b>(\d+)</b>", page).group(1))
    assert 24 < rec <= 32 and f"G = {rec} (recommended)" in page
    assert main(["check", str(SAMPLE), "-G", str(rec), "--max-silent", "0.5", "-q", "--bootstrap", "0",
                 "-o", str(path.parent / "ok.json")]) == 0
    assert main(["check", str(SAMPLE), "-G", str(rec - 1), "--max-silent", "0.5", "-q", "--bootstrap", "0",
                 "-o", str(path.parent / "fail.json")]) == 1


def test_sample_report_is_self_contained(sample_report):
    page = sample_report[3].read_text(encoding="utf-8")
    lowered = page.lower()
    for bad in ('src="http', 'href="http', "url(http", "@import", "<script", "<link", "<img"):
        assert bad not in lowered, bad
    namespaces = set(re.findall(r'xmlns(?::\w+)?="(http[^"]*)"', page))
    assert namespaces <= {"http://www.w3.org/2000/svg", "http://www.w3.org/1999/xlink"}
    assert len(re.findall(r"https?://", page)) == len(re.findall(r'xmlns(?::\w+)?="https?://', page))


def test_no_steps_no_trend_and_default_output_in_cwd(capsys, tmp_path, monkeypatch):
    log = small_log(tmp_path, steps=False)
    monkeypatch.chdir(tmp_path)
    code, out, err = run(capsys, "report", str(log), "-G", "4", "-G", "8")
    assert code == 0 and out == ""
    page = (tmp_path / "sigmaudit-report.html").read_text(encoding="utf-8")
    assert "sigmaudit: wrote sigmaudit-report.html" in err
    assert page.count("<svg") == 4 and "Over training" not in page and "no steps" in page
    assert "Forecast calibration" not in page


def test_dash_writes_the_page_to_stdout_and_quiet_silences_notes(capsys, tmp_path):
    log = small_log(tmp_path, steps=True)
    code, out, err = run(capsys, "report", str(log), "-o", "-", "-q", "--g-main", "4")
    assert code == 0 and err == ""
    assert out.startswith("<!DOCTYPE html>") and out.count("<svg") == 7
    assert "G = 4 (--g-main)" in out
    assert not (tmp_path / "-").exists()


@pytest.mark.parametrize("bad", ["empty.csv", "header_only.csv", "no_layout_columns.csv", "nonbinary_reward.csv",
                                 "malformed_line_3.jsonl"])
def test_bad_input_exits_2_and_writes_nothing(capsys, tmp_path, bad):
    out = tmp_path / "report.html"
    code, stdout, err = run(capsys, "report", str(BAD / bad), "-o", str(out))
    assert code == 2 and stdout == ""
    assert err.startswith("sigmaudit: error:") and err.count("\n") == 1
    assert not out.exists() and list(tmp_path.iterdir()) == []


def test_failure_leaves_an_existing_report_alone(capsys, tmp_path):
    out = tmp_path / "report.html"
    out.write_text("previous report")
    code, _, _ = run(capsys, "report", str(tmp_path / "missing.parquet"), "-o", str(out))
    assert code == 2 and out.read_text() == "previous report"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.html"]


@pytest.mark.parametrize("args", [["--eps", "0"], ["--eps", "1.5"], ["--max-silent", "2"], ["--min-fidelity", "-0.1"],
                                  ["-G", "0"], ["--g-main", "0"]])
def test_bad_options_exit_2_and_write_nothing(capsys, tmp_path, args):
    log = small_log(tmp_path, steps=True)
    out = tmp_path / "report.html"
    code, stdout, err = run(capsys, "report", str(log), "-o", str(out), *args)
    assert code == 2 and stdout == "" and err.startswith("sigmaudit: error:")
    assert not out.exists()


def test_output_folder_must_exist(capsys, tmp_path):
    log = small_log(tmp_path, steps=True)
    code, _, err = run(capsys, "report", str(log), "-o", str(tmp_path / "nowhere" / "r.html"), "-G", "8")
    assert code == 2 and "folder does not exist" in err


def test_help_documents_the_options(capsys):
    code, out, _ = run(capsys, "report", "--help")
    assert code == 0
    text = " ".join(out.split())
    for opt in ("--output", "-G", "--g-main", "--eps", "--max-silent", "--min-fidelity", "--title", "--quiet",
                "--step-col"):
        assert opt in text
    assert "sigmaudit-report.html" in text and "no network request" in text
