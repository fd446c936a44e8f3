"""`sigmaudit check`: exit codes on both sides of each threshold; stdout, stderr and GitHub output apart."""

from __future__ import annotations

import json

import numpy as np
import pytest
from cli_runner import run

from sigmaudit.audits.check import METRICS, OBSERVED_ONLY, metric_values
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


N_SIDES, K_SIDES = N + [32, 32], K + [0, 0]
"""Two more prompts at 0 of 32 make a never-solved share the prior holds (0.11 at G = 4), so both sides of its
limit exist (with one prompt at 0 of 8 the prior puts no mass at p = 0, and a share of 0 cannot fail a maximum)."""
VALUES = metric_values(Corpus(np.array(N_SIDES), np.array(K_SIDES)), 4)[1]


@pytest.mark.parametrize("name", [m for m in METRICS if m not in OBSERVED_ONLY])  # tokens: tests/test_tokens.py
@pytest.mark.parametrize("side", ["holds", "fails"])
def test_exit_code_each_side_of_each_threshold(capsys, tmp_path, name, side):
    counts = tmp_path / "counts.csv"
    counts.write_text("prompt,n,k\n" + "".join(f"q{i},{n},{k}\n" for i, (n, k) in enumerate(zip(N_SIDES, K_SIDES,
                                                                                                   strict=True))))
    counts = str(counts)
    kind, flag, _ = METRICS[name]
    value = VALUES[name]
    assert value > 1e-3  # a real value on each side of the limit, not rounding noise
    step = 1e-6 if (side == "holds") == (kind == "max") else -1e-6
    limit = min(max(value + step, 0.0), 1.0)
    if side == "fails" and name == "extreme_share":
        limit = value / 2  # value > 0 here (p̂ = 1/20 and 11/12 are extreme)
    code, out, err = run(capsys, "check", counts, "-G", "4", flag, repr(limit), "-f", "json", "-q",
                         "--bootstrap", "0")
    verdict = "check passed (1 of 1 holds)" if side == "holds" else "check FAILED (1 of 1)"
    assert err.startswith(f"sigmaudit: {verdict}") and len(err.splitlines()) == 1  # the one-line verdict
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
    assert err.splitlines()[-1].startswith("sigmaudit: check FAILED (1 of 2): silent_rate 0.5976 > limit 0.1000")
    assert "::error" not in out + err


def test_json_contract(capsys, counts):
    code, out, _ = run(capsys, "check", counts, "-G", "16", "--max-silent", "0.9", "-f", "json", "-q")
    d = json.loads(out)
    assert code == 0
    assert list(d) == ["schema_version", "passed", "G", "G_source", "estimator", "estimator_rule",
                       "fidelity_estimator", "prompts", "level", "replicates", "confidence", "checks", "warnings",
                       "filtered", "pre_filter", "basis", "consecutive", "silent_by", "by",
                       "window", "drift", "dapo", "config"]
    assert d["filtered"] is None and d["pre_filter"] is None and d["config"] is None
    assert d["G"] == 16 and d["estimator"] == "bayes" and d["prompts"] == len(N)
    assert set(d["checks"][0]) == {"name", "value", "value_ci", "tested", "limit", "kind", "op", "passed", "estimator",
                                   "sentence", "meaning"}
    lo, hi = d["checks"][0]["value_ci"]
    assert lo <= d["checks"][0]["value"] <= hi and d["replicates"] == 200 and d["level"] == 0.9
    assert any("only 8 prompts" in w for w in d["warnings"])


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
    assert len(lines) == 2 and lines[0].startswith("sigmaudit: check FAILED (1 of 2)")
    assert lines[1].startswith("::error title=sigmaudit check (silent_rate)::silent_rate ")
    text = summary.read_text()
    assert text.startswith("previous step\n# sigmaudit check")  # appended, not overwritten
    assert "| silent_rate |" in text and "| FAIL |" in text and "| fidelity |" in text


def test_github_pass_prints_no_annotation(capsys, counts, tmp_path, monkeypatch):
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    code, out, err = run(capsys, "check", counts, "-G", "4", "--max-silent", "1", "-q")
    assert code == 0 and "PASSED" in out and err == "sigmaudit: check passed (1 of 1 holds) at G = 4\n"


def test_report_to_file(capsys, counts, tmp_path):
    dest = tmp_path / "gate.json"
    code, out, err = run(capsys, "check", counts, "-G", "4", "--max-silent", "1", "-o", str(dest), "-q")
    assert code == 0 and out == "" and err == "sigmaudit: check passed (1 of 1 holds) at G = 4\n"
    assert json.loads(dest.read_text())["passed"] is True


@pytest.mark.parametrize(("args", "message"), [
    ([], "check: give at least one threshold"),
    (["--max-silent", "1.5"], "--max-silent: must lie in [0, 1], got 1.5"),
    (["--min-fidelity", "-0.1"], "--min-fidelity: must lie in [0, 1], got -0.1"),
    (["--max-extreme-share", "2"], "--max-extreme-share: must lie in [0, 1]"),
])
def test_bad_options_exit_2(capsys, counts, args, message):
    code, out, err = run(capsys, "check", counts, "-G", "4", *args, "-q")
    assert code == 2 and out == ""
    assert err.startswith(f"sigmaudit: error: {message}") and len(err.splitlines()) == 1


def test_missing_G_and_missing_file_exit_2(capsys, counts, tmp_path):
    code, out, err = run(capsys, "check", counts, "--max-silent", "0.5")
    assert code == 2 and out == "" and "-G" in err and "no groups" in err
    code, out, err = run(capsys, "check", str(tmp_path / "nope.csv"), "-G", "4", "--max-silent", "0.5")
    assert code == 2 and out == "" and err.startswith("sigmaudit: error:") and "nope.csv" in err


@pytest.fixture
def groups(tmp_path):
    """A per-sample log with groups: 6 groups of 4, 2 groups of 8."""
    rows = ["prompt,group,reward"]
    for g in range(8):
        size = 4 if g < 6 else 8
        rows += [f"q{g},{g},{int(i < g % (size + 1))}" for i in range(size)]
    path = tmp_path / "groups.csv"
    path.write_text("\n".join(rows) + "\n")
    return str(path)


def test_G_defaults_to_the_logs_group_size_and_says_so(capsys, groups):
    code, out, err = run(capsys, "check", groups, "--max-silent", "1", "-f", "json", "-q")
    d = json.loads(out)
    assert code == 0 and d["G"] == 4 and d["G_source"] == "log"
    code, out, err = run(capsys, "check", groups, "--max-silent", "1", "-q")
    assert "G = 4 (the log's most common group size; -G to change)" in out


def test_unwritable_step_summary_is_a_warning_not_exit_2(capsys, counts, tmp_path, monkeypatch):
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(tmp_path / "no-such-dir" / "summary.md"))
    code, out, err = run(capsys, "check", counts, "-G", "4", "--max-silent", "0.1", "-q")
    assert code == 1  # the gate's own verdict, not "could not run"
    assert "warning: could not append the step summary" in err and "::warning " in err


def test_exit_2_is_annotated_under_github(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    code, out, err = run(capsys, "check", str(tmp_path / "nope.csv"), "-G", "4", "--max-silent", "0.5")
    assert code == 2 and out == ""
    lines = err.splitlines()
    assert lines[0].startswith("sigmaudit: error:") and lines[1].startswith("::error title=sigmaudit could not run::")


def test_junit_report_parses(capsys, counts, tmp_path):
    import xml.etree.ElementTree as ET

    dest = tmp_path / "gate.xml"
    code, _, _ = run(capsys, "check", counts, "-G", "4", "--max-silent", "0.1", "--min-fidelity", "0.1",
                     "--junit", str(dest), "-q", "--bootstrap", "30")
    assert code == 1
    root = ET.parse(dest).getroot()
    # the JUnit XML shape GitLab / Jenkins read: testsuites > testsuite > testcase [> failure]
    assert root.tag == "testsuites" and root.get("tests") == "2" and root.get("failures") == "1"
    (suite,) = root.findall("testsuite")
    assert suite.get("tests") == "2" and suite.get("failures") == "1" and suite.get("errors") == "0"
    cases = suite.findall("testcase")
    assert [c.get("name") for c in cases] == ["silent_rate", "fidelity"]
    assert all(c.get("classname") == "sigmaudit.check" and c.get("time") is not None for c in cases)
    (failure,) = cases[0].findall("failure")
    assert failure.get("message").startswith("silent_rate 0.5976 > limit 0.1000")
    assert failure.get("type") and not cases[1].findall("failure")
    props = {p.get("name"): p.get("value") for p in suite.find("properties")}
    assert props["G"] == "4" and props["estimator"] == "auto"


@pytest.mark.parametrize("reps", ["1", "19"])
def test_too_few_bootstrap_replicates_refused(capsys, reps):
    from cli_runner import run

    code, out, err = run(capsys, "check", "sample_logs/rollouts.parquet", "--max-silent", "0.5",
                         "--confidence", "0.9", "--bootstrap", reps)
    assert code == 2 and out == ""
    assert err.strip().endswith(f"--bootstrap: must be 0 (no intervals) or at least 20 (a percentile interval from "
                                f"{reps} replicates is noise), got {reps} (see 'sigmaudit check --help')")
