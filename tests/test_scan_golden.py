"""`scan -f json` output (exit code, JSON, stderr notes/errors) is unchanged on every sample log and on the
fast-path fixtures: the golden files in ``tests/golden/scan_json/`` were written by the code before the
reading fast path of issue 13 (``tests/golden/make_scan_json.py``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_runner import run

ROOT = Path(__file__).resolve().parents[1]
GOLDEN = ROOT / "tests" / "golden" / "scan_json"
CASES = sorted(GOLDEN.glob("*.json"))


def test_every_sample_log_has_a_golden_case():
    pinned = {tuple(json.loads(p.read_text())["args"][:1]) for p in CASES}
    for entry in sorted((ROOT / "sample_logs").iterdir()):
        assert (f"sample_logs/{entry.name}",) in pinned, entry


@pytest.mark.parametrize("case", CASES, ids=[p.stem for p in CASES])
def test_scan_json_unchanged(capsys, monkeypatch, case):
    want = json.loads(case.read_text())
    monkeypatch.chdir(ROOT)
    monkeypatch.setenv("COLUMNS", "200")
    code, out, err = run(capsys, "scan", *want["args"], "-f", "json")
    assert code == want["exit"], err
    assert (json.loads(out) if out.strip() else None) == want["json"]
    assert err == want["stderr"]
