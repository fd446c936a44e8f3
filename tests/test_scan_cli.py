"""`sigmaudit scan` as a command: exit code, stdout and stderr apart; every format; golden markdown.

Regenerate the golden file with ``SIGMAUDIT_REGEN_GOLDEN=1 pytest tests/test_scan_cli.py``.
"""

from __future__ import annotations

import csv
import io
import json
import os
from pathlib import Path

import pytest
from cli_runner import run

from sigmaudit.render import Format

GOLDEN = Path(__file__).parent / "golden" / "scan_small.md"

CONTRACT_KEYS = {
    "schema_version", "prompts", "rollouts", "files", "steps", "samples_per_prompt", "pass_rate", "silent",
    "observed_silent", "wasted", "mass_share", "group_size", "missing_rewards", "layout", "estimator", "notes",
    "filtered_warning",
}
SILENT_KEYS = {"G", "plugin", "unbiased", "bayes", "estimate", "estimator", "all_wrong", "all_correct",
               "estimate_all_wrong", "estimate_all_correct", "estimate_ci", "bayes_ci"}


def write_long(path: Path, groups: list[tuple[str, int, list[int]]]) -> Path:
    """A long-layout CSV: one row per sample (prompt_id, step, reward)."""
    lines = ["prompt_id,step,reward"]
    for prompt, step, rewards in groups:
        lines += [f"{prompt},{step},{r}" for r in rewards]
    path.write_text("\n".join(lines) + "\n")
    return path


def small_log(path: Path) -> Path:
    """6 prompts × 2 steps × groups of 4, fixed pattern (k per group below)."""
    ks = {"a": (0, 0), "b": (4, 4), "c": (2, 2), "d": (2, 3), "e": (3, 4), "f": (0, 1)}
    groups = [(p, s + 1, [1] * k + [0] * (4 - k)) for p, pair in ks.items() for s, k in enumerate(pair)]
    return write_long(path / "small.csv", groups)


@pytest.fixture
def log(tmp_path: Path) -> Path:
    return small_log(tmp_path)


def test_json_contract(capsys, log):
    code, out, err = run(capsys, "scan", str(log), "-f", "json")
    assert code == 0
    d = json.loads(out)
    assert CONTRACT_KEYS <= d.keys()
    assert (d["prompts"], d["rollouts"], d["files"], d["steps"], d["layout"]) == (6, 48, 1, 2, "long")
    assert d["samples_per_prompt"] == {"min": 8, "median": 8.0, "max": 8}
    assert [s["G"] for s in d["silent"]] == [4, 8, 16, 32, 64]
    assert all(SILENT_KEYS <= s.keys() for s in d["silent"])
    # one estimator for the whole sweep (issue 41 item 3): G = 16 > n = 8, so bayes at every G, and the
    # predicted silent share falls with G
    assert [s["estimator"] for s in d["silent"]] == ["bayes"] * 5
    assert d["estimator"] == "bayes"
    assert d["silent"][2]["unbiased"] is None
    est = [s["estimate"] for s in d["silent"]]
    assert all(a >= b for a, b in zip(est, est[1:], strict=False))
    rec = d["recommendation"]  # plan's answer, the same call plan makes
    assert rec["budget"]["source"] == "log" and rec["choice"]["run_G"] == 4
    obs = d["observed_silent"]
    assert (obs["G"], obs["groups"]) == (4, 12)
    # silent groups: a 2 all-wrong, b 2 all-correct, e (3, 4) 1 all-correct, f (0, 1) 1 all-wrong
    assert (obs["fraction"], obs["all_wrong"], obs["all_correct"]) == (6 / 12, 3 / 12, 3 / 12)
    assert d["wasted"]["G"] == d["group_size"]["G"] == d["mass_share"]["G"] == 4  # most common logged size
    assert d["group_size"]["eps"] == 0.05
    assert set(d["mass_share"]) == {"G", "basis", "grpo", "drgrpo", "grpo_finite", "drgrpo_finite", "grpo_extreme_ci"}
    assert len(d["pass_rate"]["histogram"]) == 10 and sum(d["pass_rate"]["histogram"]) == 6
    assert d["filtered_warning"] is None
    # stderr holds the loader's note, never the report
    assert "detected long layout" in err and "{" not in err


def test_options_reach_the_audit(capsys, log):
    code, out, _ = run(capsys, "scan", str(log), "-f", "json", "-G", "2", "-G", "6", "--g-main", "6",
                       "--eps", "0.1")
    assert code == 0
    d = json.loads(out)
    assert [s["G"] for s in d["silent"]] == [2, 6]
    assert d["wasted"]["G"] == d["group_size"]["G"] == d["mass_share"]["G"] == 6
    assert d["group_size"]["eps"] == 0.1


def test_quiet_silences_notes(capsys, log):
    code, out, err = run(capsys, "scan", str(log), "-f", "json", "--quiet")
    assert code == 0 and err == "" and json.loads(out)["notes"]


@pytest.mark.parametrize("fmt", list(Format))
def test_every_format(capsys, log, fmt):
    code, out, err = run(capsys, "scan", str(log), "-f", fmt.value, "-q")
    assert code == 0 and err == "" and out.endswith("\n")
    if fmt is Format.json:
        json.loads(out)
    elif fmt is Format.csv:
        rows = list(csv.reader(io.StringIO(out)))
        assert rows[0][:3] == ["G", "plugin", "unbiased"] and "estimate" in rows[0] and len(rows) == 6
    elif fmt is Format.markdown:
        assert out.startswith("# sigmaudit scan")
    else:
        for panel in ("corpus", "silent groups", "wasted compute", "gradient mass", "group size"):
            assert panel in out


def test_output_file(capsys, log, tmp_path):
    target = tmp_path / "report.json"
    code, out, err = run(capsys, "scan", str(log), "-o", str(target), "-q")
    assert code == 0 and out == "" and err == ""
    assert json.loads(target.read_text())["prompts"] == 6


def test_filtered_log_warns_on_stderr_even_when_quiet(capsys, tmp_path):
    groups = [(f"p{i}", s, [1] + [0] * 7) for i in range(40) for s in (1, 2)]
    path = write_long(tmp_path / "dapo_dump.csv", groups)
    code, out, err = run(capsys, "scan", str(path), "-f", "json", "-q")
    assert code == 0
    d = json.loads(out)
    assert d["observed_silent"]["fraction"] == 0.0
    assert d["filtered_warning"] and "filtered" in d["filtered_warning"]
    assert err.startswith("sigmaudit: warning: the log looks filtered") and err.count("\n") == 1


@pytest.mark.parametrize("args", [
    ("-G", "0"),
    ("-G", "-3"),
    ("--g-main", "0"),
    ("--eps", "0"),
    ("--eps", "1"),
    ("--eps", "1.5"),
    ("-f", "xml"),
])
def test_bad_options_exit_2_with_one_line(capsys, log, args):
    code, out, err = run(capsys, "scan", str(log), *args)
    assert code == 2 and out == ""
    assert err.startswith("sigmaudit: error:") and err.count("\n") == 1


def test_missing_file_exits_2(capsys, tmp_path):
    code, out, err = run(capsys, "scan", str(tmp_path / "nope.csv"))
    assert code == 2 and out == "" and err.startswith("sigmaudit: error:") and err.count("\n") == 1


def test_help_lists_the_options(capsys):
    code, out, _ = run(capsys, "scan", "--help")
    assert code == 0
    for opt in ("--group-size", "--g-main", "--eps", "--format", "--output", "--quiet", "--prompt-col",
                "--reward-col", "--step-col", "--group-col", "--n-col", "--k-col", "--rate-col", "--samples",
                "--threshold"):
        assert opt in out


def test_golden_markdown(capsys, log, monkeypatch):
    """The rendered report of a fixed corpus. The prior is pinned (uniform on 11 points) so that the golden
    file tracks the layout and the closed forms, not the EM fit (tested in test_scan_properties.py)."""
    import numpy as np

    from sigmaudit.core.corpus import Corpus
    from sigmaudit.core.prior import GridPrior

    pinned = GridPrior(grid=np.linspace(0.0, 1.0, 11), weights=np.full(11, 1 / 11), iterations=0, log_likelihood=0.0)
    monkeypatch.setattr(Corpus, "prior", property(lambda self: pinned))
    code, out, _ = run(capsys, "scan", str(log), "-f", "markdown", "-q")
    assert code == 0
    if os.environ.get("SIGMAUDIT_REGEN_GOLDEN") == "1":
        GOLDEN.parent.mkdir(exist_ok=True)
        GOLDEN.write_text(out)
    assert GOLDEN.exists(), "golden file missing: run with SIGMAUDIT_REGEN_GOLDEN=1"
    assert out == GOLDEN.read_text()


def test_scan_intervals_are_checks_intervals(capsys):
    """scan --bootstrap N gives each silent[] row the bootstrap interval check computes for the silent rate at that G
    (same replicates, same seed): the default estimate's and the model-based one's; null without --bootstrap."""
    sample = Path(__file__).resolve().parents[1] / "sample_logs" / "rollouts.parquet"
    code, out, err = run(capsys, "scan", str(sample), "-G", "8", "-G", "64", "--bootstrap", "60", "-f", "json", "-q")
    assert code == 0, err
    rows = {r["G"]: r for r in json.loads(out)["silent"]}
    for G, rule in ((8, "auto"), (64, "auto"), (64, "bayes")):
        code, out, err = run(capsys, "check", str(sample), "-G", str(G), "--max-silent", "0.99", "--basis", "model",
                             "--estimator", rule, "--bootstrap", "60", "-f", "json", "-q")
        check = json.loads(out)["checks"][0]
        key = "estimate_ci" if rule == "auto" else "bayes_ci"
        assert rows[G][key] == pytest.approx(check["value_ci"], abs=1e-12)
        lo, hi = rows[G][key]
        assert lo <= rows[G]["estimate" if rule == "auto" else "bayes"] <= hi
    code, out, _ = run(capsys, "scan", str(sample), "-G", "8", "-f", "json", "-q")
    assert json.loads(out)["silent"][0]["estimate_ci"] is None
