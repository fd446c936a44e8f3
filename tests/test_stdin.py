"""'-' as an input path reads standard input (parquet, jsonl, csv, gzip-compressed text)."""

from __future__ import annotations

import gzip
import io
import json
import sys
from pathlib import Path

import pytest
from cli_runner import run

SAMPLE = Path(__file__).resolve().parents[1] / "sample_logs"


def _stdin(monkeypatch, data: bytes) -> None:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))


@pytest.mark.parametrize(("name", "pack"), [("rollouts.parquet", bytes), ("long.csv", bytes),
                                            ("long.csv", gzip.compress)])
def test_stdin_reads_like_the_file(capsys, monkeypatch, name, pack):
    code, out, _ = run(capsys, "scan", str(SAMPLE / name), "-q", "-f", "json")
    direct = json.loads(out)
    _stdin(monkeypatch, pack((SAMPLE / name).read_bytes()))
    code2, out2, _ = run(capsys, "scan", "-", "-q", "-f", "json")
    piped = json.loads(out2)
    assert code == code2 == 0
    assert {k: v for k, v in piped.items() if k != "notes"} == {k: v for k, v in direct.items() if k != "notes"}


def test_stdin_jsonl_and_its_name_in_errors(capsys, monkeypatch):
    rows = "".join(f'{{"prompt": "q{i}", "reward": {int(j < i % 9)}}}\n' for i in range(60) for j in range(8))
    _stdin(monkeypatch, rows.encode())
    code, out, err = run(capsys, "scan", "-", "-f", "json")
    d = json.loads(out)
    assert code == 0 and d["prompts"] == 60 and d["rollouts"] == 480, err
    assert d["pass_rate"]["never_solved"] == pytest.approx(7 / 60)  # i % 9 == 0: k = 0 (in the log)
    _stdin(monkeypatch, b"")
    code, out, err = run(capsys, "scan", "-")
    assert code == 2 and out == "" and err.startswith("sigmaudit: error: <stdin>: no data on standard input")
    code, _, err = run(capsys, "scan", "-", "-")
    assert code == 2 and "standard input can be read once" in err
