"""`sigmaudit check`: exit codes on both sides of each threshold; stdout, stderr and GitHub output apart."""

from __future__ import annotations

import json

import numpy as np
import pytest
from cli_runner import run

from sigmaudit.audits.check import METRICS, metric_values
from sigmaudit.core.corpus import Corpus

N = [8, 8, 8, 8, 8, 8, 20, 12]
K = [0, 2, 4, 8, 8, 5, 1, 11]


@pytest.fixture
def counts(tmp_path):
    path = tmp_path / "counts.csv"
    path.write_text("prompt,n,k\n" + "".join(f"q{i},{n},{k}\n" for i, (n, k) in enumerate(zip(N, K, strict=True))))
    return str(path)


@pytest.fixture(autouse=True)
def _no_github(monkeypatch):
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)


VALUES = metric_values(Corpus(np.array(N), np.array(K)), 4)[1]


@pytest.mark.parametrize("name", list(METRICS))
@pytest.mark.parametrize("side", ["holds", "fails"])
def test_exit_code_each_side_of_each_threshold(capsys, counts, name, side):
    kind, flag, _ = METRICS[name]
    value = VALUES[name]
    step = 1e-6 if (side == "holds") == (kind == "max") else -1e-6
    limit = min(max(value + step, 0.0), 1.0)
    if side == "fails" and name == "extreme_share":
        limit = value / 2  # value > 0 here (p̂ = 1/20 and 11/12 are extreme)
    code, out, err = run(capsys, "check", counts, "-G", "4", flag, repr(limit), "-f", "json", "-q")
    assert err == ""
    d = json.loads(out)
    assert code == (0 if side == "holds" else 1)
    assert d["passed"] is (side == "holds")
    (c,) = d["checks"]
    assert c["name"] == name and c["limit"] == limit
    assert c["value"] == pytest.approx(value, rel=1e-12, abs=1e-15)


def test_table_output_and_notes_on_stderr(capsys, counts):
    code, out, err = run(capsys, "check", counts, "-G", "4", "--max-silent", "0.1", "--max-never-solved", "0.5")
    assert code == 1
    assert "FAILED: 1 of 2 checks" in out
    assert "silent_rate" in out and "FAIL" in out and "never_solved_rate" in out
    assert "unbiased" in out
    assert err.startswith("sigmaudit: detected counts layout")
    assert "::error" not in out + err


def test_json_contract(capsys, counts):
    code, out, _ = run(capsys, "check", counts, "-G", "16", "--max-silent", "0.9", "-f", "json", "-q")
    d = json.loads(out)
    assert code == 0
    assert list(d) == ["schema_version", "passed", "G", "estimator", "fidelity_estimator", "prompts", "checks",
                       "filtered", "pre_filter", "by"]
    assert d["filtered"] is None and d["pre_filter"] is None
    assert d["G"] == 16 and d["estimator"] == "bayes" and d["prompts"] == len(N)
    assert set(d["checks"][0]) == {"name", "value", "limit", "kind", "op", "passed"}


def test_github_annotations_on_stderr_and_step_summary(capsys, counts, tmp_path, monkeypatch):
    summary = tmp_path / "summary.md"
    summary.write_text("previous step\n")
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    code, out, err = run(capsys, "check", counts, "-G", "4", "--max-silent", "0.1", "--min-fidelity", "0.1",
                         "-f", "json", "-q")
    assert code == 1
    json.loads(out)  # stdout stays clean JSON
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("::error title=sigmaudit check (silent_rate)::silent_rate ")
    text = summary.read_text()
    assert text.startswith("previous step\n# sigmaudit check")  # appended, not overwritten
    assert "| silent_rate |" in text and "| FAIL |" in text and "| fidelity |" in text


def test_github_pass_prints_no_annotation(capsys, counts, tmp_path, monkeypatch):
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    code, out, err = run(capsys, "check", counts, "-G", "4", "--max-silent", "1", "-q")
    assert code == 0 and "PASSED" in out and err == ""


def test_report_to_file(capsys, counts, tmp_path):
    dest = tmp_path / "gate.json"
    code, out, err = run(capsys, "check", counts, "-G", "4", "--max-silent", "1", "-o", str(dest), "-q")
    assert code == 0 and out == "" and err == ""
    assert json.loads(dest.read_text())["passed"] is True


@pytest.mark.parametrize(("args", "message"), [
    ([], "check: give at least one threshold"),
    (["--max-silent", "1.5"], "Invalid value for '--max-silent': must lie in [0, 1], got 1.5"),
    (["--min-fidelity", "-0.1"], "Invalid value for '--min-fidelity': must lie in [0, 1], got -0.1"),
    (["--max-extreme-share", "2"], "Invalid value for '--max-extreme-share': must lie in [0, 1]"),
])
def test_bad_options_exit_2(capsys, counts, args, message):
    code, out, err = run(capsys, "check", counts, "-G", "4", *args, "-q")
    assert code == 2 and out == ""
    assert err.startswith(f"sigmaudit: error: {message}") and len(err.splitlines()) == 1


def test_missing_G_and_missing_file_exit_2(capsys, counts, tmp_path):
    code, out, err = run(capsys, "check", counts, "--max-silent", "0.5")
    assert code == 2 and out == "" and "-G" in err
    code, out, err = run(capsys, "check", str(tmp_path / "nope.csv"), "-G", "4", "--max-silent", "0.5")
    assert code == 2 and out == "" and err.startswith("sigmaudit: error:") and "nope.csv" in err
