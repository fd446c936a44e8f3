"""Issue 36 items 15-21 and 25-30: gates that keep their flags, windows cut per run, and the interfaces
that must refuse what the CLI refuses. Every expected figure is recomputed here from the rows written."""

from __future__ import annotations

import json

import numpy as np
import polars as pl
import pytest
from cli_runner import run


def _write(path, rows):
    pl.DataFrame(rows).write_parquet(path)
    return str(path)


def _json(capsys, *args):
    code, out, err = run(capsys, *args, "--bootstrap", "0", "-f", "json", "-q")
    return code, (json.loads(out) if out else None), err


@pytest.fixture
def alternating(tmp_path):
    """4 steps × 10 prompts × 8 answers of source a: at the odd steps 6 of 10 groups are all wrong, at the even
    steps none, so the window's silent share is 12/40 = 0.3 and no two consecutive steps exceed 0."""
    rows = [{"step": s, "prompt_id": f"p{p}", "reward": 0 if (s % 2 and p < 6) else int(j < 4), "src": "a"}
            for s in range(1, 5) for p in range(10) for j in range(8)]
    return _write(tmp_path / "alt.parquet", rows)


def test_by_values_keep_consecutive(capsys, alternating):
    """Item 15: --by gated each value without --consecutive (0.3 > 0.2, FAIL) though the pooled gate, with
    the same rows, holds (the largest share held 2 steps running is 0)."""
    code, d, _ = _json(capsys, "check", alternating, "--max-silent", "0.2", "--consecutive", "2", "--by", "src")
    shares = [0.6, 0.0, 0.6, 0.0]
    held = max(min(shares[i:i + 2]) for i in range(3))
    part = d["by"]["groups"][0]
    assert held == 0.0 and code == 0 and d["passed"]
    assert part["consecutive"] == 2 and part["passed"]
    assert part["checks"][0]["value"] == pytest.approx(np.mean(shares)) and part["checks"][0]["tested"] == held


def test_by_values_keep_silent_by(capsys, tmp_path):
    """Item 15: --by gated each value by zero spread whatever --silent-by said: 0.2 passed where the value's
    correctness share is 1.0 (every reward below --threshold 0.5)."""
    rows = [{"step": s, "prompt_id": f"p{p}", "reward": (0.1 + 0.01 * j) if p < 8 else 0.3, "src": "a"}
            for s in (1, 2) for p in range(10) for j in range(8)]
    path = _write(tmp_path / "shaped.parquet", rows)
    code, d, _ = _json(capsys, "check", path, "--threshold", "0.5", "--max-silent", "0.5",
                       "--silent-by", "correctness", "--by", "src")
    part = d["by"]["groups"][0]
    assert code == 1 and part["silent_by"] == "correctness" and not part["passed"]
    assert part["checks"][0]["value"] == 1.0  # every group all below the threshold
    code, d, _ = _json(capsys, "check", path, "--threshold", "0.5", "--max-silent", "0.5", "--by", "src")
    assert code == 0 and d["by"]["groups"][0]["checks"][0]["value"] == pytest.approx(4 / 20)  # 2 flat prompts of 10


def test_consecutive_on_fewer_steps_than_k(capsys, alternating):
    """Item 17: 4 steps and --consecutive 5 failed on a NaN bound ('bound — > limit'); no run of 5 steps
    exists, so the limit cannot be crossed 5 steps running: the checks pass, and a warning says why."""
    code, d, _ = _json(capsys, "check", alternating, "--max-silent", "0.2", "--consecutive", "5")
    assert code == 0 and d["checks"][0]["tested"] == 0.0 and d["checks"][0]["value"] == pytest.approx(0.3)
    assert any("fewer than --consecutive 5" in w for w in d["warnings"])
    code, d, _ = _json(capsys, "check", alternating, "--max-silent", "0.2", "--consecutive", "1")
    assert code == 1 and d["checks"][0]["tested"] == pytest.approx(0.6)  # K = 1: the worst step


@pytest.fixture
def two_runs(tmp_path):
    """runA: steps 1-10, every group mixed (k = 4 of 8); runB: steps 1-5, every group all wrong."""
    a = _write(tmp_path / "runA.parquet", [{"step": s, "prompt_id": f"a{p}", "reward": int(j < 4)}
                                           for s in range(1, 11) for p in range(10) for j in range(8)])
    b = _write(tmp_path / "runB.parquet", [{"step": s, "prompt_id": f"b{p}", "reward": 0}
                                           for s in range(1, 6) for p in range(10) for j in range(8)])
    return a, b


def test_by_file_last_steps_cut_per_file(capsys, two_runs):
    """Item 16: --by file --last-steps 3 cut the pooled steps 8-10, so runB (steps 1-5, all silent) vanished
    and the gate passed (exit 0) where the whole log fails. Each file keeps its own last 3 steps now."""
    code, d, err = _json(capsys, "check", *two_runs, "--by", "file", "--max-silent", "0.5", "--last-steps", "3")
    windows = {g["value"]: (g["window"]["first_step"], g["window"]["last_step"], g["passed"])
               for g in d["by"]["groups"]}
    assert code == 1 and windows == {"runA.parquet": (8, 10, True), "runB.parquet": (3, 5, False)}
    assert d["checks"][0]["value"] == pytest.approx(30 / 60)  # the union of the two windows: 30 silent of 60
    code, d, _ = _json(capsys, "check", *two_runs, "--by", "file", "--max-silent", "0.5")
    assert code == 1  # the whole log fails too


def test_groups_generated_refused_with_a_window(capsys, tmp_path):
    """Item 18: N is the whole run's; with --last-steps 1 it was mixed with one step's 10 groups
    ((80 - 10) / 80 = 0.875 where that step's own share is (40 - 10) / 40 = 0.75). Refused now, one line."""
    path = _write(tmp_path / "dump.parquet", [{"step": s, "prompt_id": f"p{g}", "reward": int(j < 4)}
                                              for s in (1, 2) for g in range(10) for j in range(8)])
    code, d, err = _json(capsys, "check", path, "--groups-generated", "80", "--last-steps", "1", "--max-silent", "0.9")
    assert code == 2 and d is None and err.count("\n") == 1
    assert "--groups-generated" in err and "window (--last-steps 1)" in err
    code, d, _ = _json(capsys, "check", path, "--groups-generated", "80", "--max-silent", "0.9")
    assert code == 0 and d["checks"][0]["value"] == pytest.approx((80 - 20) / 80)
