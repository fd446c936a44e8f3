"""Outputs of a run are reserved before the work and committed together after it (issue 23 items 7, 8,
28): a run that exits 2 leaves no output of any kind, old files untouched, no temporary file; the
GitHub step summary is never appended to an input; two outputs never share standard output."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from cli_runner import run

ROOT = Path(__file__).resolve().parents[1]
ROLLOUTS = str(ROOT / "sample_logs" / "rollouts.parquet")
GATE = ["--max-silent", "0.9", "--bootstrap", "0", "-q"]


def _leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".tmp"))


def test_scan_with_unwritable_o_does_not_write_per_prompt(capsys, tmp_path):
    old = tmp_path / "pp.csv"
    old.write_text("old table\n")
    new = tmp_path / "pp2.csv"
    for per_prompt in (old, new):
        code, out, err = run(capsys, "scan", ROLLOUTS, "-q", "-o", "/nonexistent-folder/x.json",
                             "--per-prompt", str(per_prompt))
        assert code == 2 and out == "" and "folder does not exist" in err
    assert old.read_text() == "old table\n" and not new.exists()
    assert _leftovers(tmp_path) == []


def test_check_with_unwritable_junit_does_not_write_o(capsys, tmp_path):
    report = tmp_path / "x.json"
    code, out, err = run(capsys, "check", ROLLOUTS, *GATE, "-o", str(report), "--junit", "/proc/self/j.xml")
    assert code == 2 and out == "" and "/proc/self/j.xml: cannot write" in err
    assert not report.exists() and _leftovers(tmp_path) == []


def test_plan_with_unwritable_o_does_not_write_alloc_out(capsys, tmp_path):
    alloc = tmp_path / "a.csv"
    code, _, err = run(capsys, "plan", ROLLOUTS, "-q", "--bootstrap", "0", "--budget", "4000",
                       "--alloc-out", str(alloc), "-o", str(tmp_path / "no-such-folder" / "r.json"))
    assert code == 2 and "folder does not exist" in err
    assert not alloc.exists() and _leftovers(tmp_path) == []


def test_output_refused_after_the_work_takes_the_other_outputs_and_stdout_with_it(capsys, tmp_path):
    """--junit naming the input log is refused only once the log is read: the report already rendered
    (to -o, or to stdout) is dropped too."""
    log = tmp_path / "log.parquet"
    shutil.copy(ROLLOUTS, log)
    before = log.read_bytes()
    report = tmp_path / "x.json"
    code, out, err = run(capsys, "check", str(log), *GATE, "-o", str(report), "--junit", str(log))
    assert code == 2 and "is one of the input logs" in err and not report.exists()
    code, out, err = run(capsys, "check", str(log), *GATE, "-f", "json", "--junit", str(log))
    assert code == 2 and out == "" and "is one of the input logs" in err
    assert log.read_bytes() == before and _leftovers(tmp_path) == []


def test_failed_gate_still_writes_every_output(capsys, tmp_path):
    """Exit 1 is a verdict, not a failure to run: -o and --junit are both written."""
    report, junit = tmp_path / "x.json", tmp_path / "j.xml"
    code, out, err = run(capsys, "check", ROLLOUTS, "-q", "--bootstrap", "0", "--max-silent", "0.01",
                         "-o", str(report), "--junit", str(junit))
    assert code == 1 and out == ""
    assert json.loads(report.read_text())["passed"] is False and "<failure" in junit.read_text()
    assert err.splitlines()[-1].startswith("sigmaudit: check FAILED")
    assert _leftovers(tmp_path) == []


def test_two_outputs_naming_one_file_are_refused_before_any_work(capsys, tmp_path):
    same = tmp_path / "x.csv"
    code, _, err = run(capsys, "scan", "no-such-log.parquet", "-o", str(same), "--per-prompt", str(same))
    assert code == 2 and "-o and --per-prompt name the same file" in err and not same.exists()


@pytest.mark.parametrize("args", [["-f", "json", "--junit", "-"], ["--junit", "-"], ["-o", "-", "--junit", "-"]])
def test_check_json_and_junit_both_on_stdout_is_refused_before_any_work(capsys, args):
    """Item 28: the input does not exist, and the refusal still names the two outputs (nothing was read)."""
    code, out, err = run(capsys, "check", "no-such-log.parquet", "--max-silent", "0.5", *args)
    assert code == 2 and out == ""
    assert err == ("sigmaudit: error: --junit: the report and --junit would both go to standard output; "
                   "give all but one of them a file\n")


def test_check_junit_on_stdout_with_the_report_in_a_file_is_fine(capsys, tmp_path):
    code, out, _ = run(capsys, "check", ROLLOUTS, *GATE, "-o", str(tmp_path / "x.json"), "--junit", "-")
    assert code == 0 and out.startswith("<?xml")


def test_step_summary_pointed_at_an_input_log_is_not_appended_to(capsys, monkeypatch, tmp_path):
    """Item 8: $GITHUB_STEP_SUMMARY naming the log read is refused (a warning: the gate's exit code stands)."""
    log = tmp_path / "log.parquet"
    shutil.copy(ROLLOUTS, log)
    before = log.read_bytes()
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(log))
    code, _, err = run(capsys, "check", str(log), *GATE)
    assert code == 0 and log.read_bytes() == before
    assert "could not append the step summary" in err and "is one of the input logs" in err


def test_step_summary_is_not_appended_by_a_run_that_fails(capsys, monkeypatch, tmp_path):
    summary = tmp_path / "summary.md"
    summary.write_text("earlier step\n")
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    code, _, _ = run(capsys, "check", ROLLOUTS, *GATE, "-o", str(tmp_path / "x.json"), "--junit", "/proc/self/j.xml")
    assert code == 2 and summary.read_text() == "earlier step\n"
    code, _, _ = run(capsys, "check", ROLLOUTS, *GATE)
    assert code == 0 and summary.read_text().startswith("earlier step\n") and "silent_rate" in summary.read_text()
