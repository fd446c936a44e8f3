"""Issue 45 item 1: a big jsonl file's keys given twice are looked for by a count first (loaders/jsonl.py
``key_tokens`` against the reduction's floor of the keys given, engines/polars.py ``_proven_once``); the exact
search (``duplicate_key``) runs only when the count does not prove every key given once. The same refusals
and messages as tests/test_duplicate_keys.py, here with every file counted (TOKENS_MIN_BYTES = 0), and the
cases a count could be fooled by: a key spelled with an escape, a null value, a key inside a text."""

from __future__ import annotations

import gzip
import json

import pytest
from cli_runner import run
from test_duplicate_keys import _message, _rows, _write

import sigmaudit.loaders.jsonl as jsonl


@pytest.fixture
def counted(monkeypatch):
    """Every jsonl file takes the count's path; ``searches`` lists the files the exact search read."""
    searches: list[str] = []
    real = jsonl.duplicate_key

    def search(path, keys):
        searches.append(path.name)
        return real(path, keys)

    monkeypatch.setattr(jsonl, "TOKENS_MIN_BYTES", 0)
    monkeypatch.setattr(jsonl, "duplicate_key", search)
    return searches


def _key_line(step: int, prompt: str, reward: int, key: str = '"reward"') -> str:
    return f'{{"step": {step}, "prompt_id": "{prompt}", {key}: {reward}}}'


def test_a_clean_file_is_proven_by_the_count_without_the_search(capsys, tmp_path, counted):
    f = _write(tmp_path / "log.jsonl", _rows(6000))
    assert jsonl.key_tokens(f, ["step", "prompt_id", "reward"]) == 3 * 6000  # brute force: 3 keys a line
    code, out, _ = run(capsys, "scan", str(f), "-f", "json")
    assert code == 0 and json.loads(out)["prompts"] == 8
    assert counted == []


@pytest.mark.parametrize("at", [1, 5000])
def test_a_duplicate_is_refused_on_its_line_after_the_count(capsys, tmp_path, counted, at):
    f = _write(tmp_path / "log.jsonl", _rows(6000), dup_at=at)
    assert jsonl.key_tokens(f, ["step", "prompt_id", "reward"]) == 3 * 6000 + 1
    code, out, err = run(capsys, "scan", str(f))
    assert code == 2 and out == ""
    assert err.strip().splitlines()[-1].startswith(_message(f, at, "reward"))
    assert counted == ["log.jsonl"]


def test_a_later_file_gz_and_json_array_are_refused_as_before(capsys, tmp_path, counted):
    _write(tmp_path / "a.jsonl", _rows(200))
    _write(tmp_path / "b.jsonl", _rows(200, 1), dup_at=150, key="prompt_id")
    code, _, err = run(capsys, "scan", str(tmp_path / "a.jsonl"), str(tmp_path / "b.jsonl"))
    assert code == 2 and err.strip().splitlines()[-1].startswith(_message(tmp_path / "b.jsonl", 150, "prompt_id"))
    plain = _write(tmp_path / "x.jsonl", _rows(3000), dup_at=2999)
    gz = tmp_path / "log.jsonl.gz"
    gz.write_bytes(gzip.compress(plain.read_bytes()))
    assert jsonl.key_tokens(gz, ["step", "prompt_id", "reward"]) == 3 * 3000 + 1
    code, _, err = run(capsys, "scan", str(gz))
    assert code == 2 and err.strip().splitlines()[-1].startswith(_message(gz, 2999, "reward"))
    records = [json.dumps(r, indent=2) for r in _rows(40)]
    records[6] = records[6][:-1].rstrip() + ',\n  "step": 99\n}'
    f = tmp_path / "log.json"
    f.write_text("[\n" + ",\n".join(records) + "\n]\n")
    code, _, err = run(capsys, "scan", str(f))
    assert code == 2 and err.strip().splitlines()[-1].startswith(_message(f, 7, "step", "record"))


def test_an_escaped_key_does_not_hide_a_duplicate_elsewhere(capsys, tmp_path, counted):
    """Polars reads "rew\\u0061rd" as reward: without counting escapes, line 1's reward (given, not found as
    "reward") and line 5's second reward would cancel out and the count would equal the floor."""
    lines = [_key_line(0, f"p{i % 2}", i % 2) for i in range(8)]
    lines[0] = _key_line(0, "p0", 1, key='"rew\\u0061rd"')
    lines[4] = lines[4][:-1] + ', "reward": 1}'
    f = tmp_path / "log.jsonl"
    f.write_text("\n".join(lines) + "\n")
    assert sum(line.count('"reward"') for line in lines) == 8  # the plain spelling alone: 8 = the floor
    assert jsonl.key_tokens(f, ["step", "prompt_id", "reward"]) == 3 * 8 + 1
    code, _, err = run(capsys, "scan", str(f))
    assert code == 2 and err.strip().splitlines()[-1].startswith(_message(f, 5, "reward"))


def test_a_null_value_or_a_key_inside_a_text_takes_the_search(capsys, tmp_path, counted):
    rows = _rows(640)
    f = tmp_path / "text.jsonl"  # the key's name inside a value and a nested object: no duplicate
    f.write_text("".join(json.dumps(r)[:-1] + ', "note": "say \\"reward\\"", "meta": {"reward": 0}}\n'
                         for r in rows))
    code, _, _ = run(capsys, "scan", str(f), "-f", "json")
    assert code == 0 and counted == ["text.jsonl"]
    g = tmp_path / "null.jsonl"
    lines = [json.dumps(r) for r in rows]
    lines[3] = lines[3].replace(f'"reward": {rows[3]["reward"]}', '"reward": null')
    lines[9] = lines[9][:-1] + f', "reward": {rows[9]["reward"]}}}'
    g.write_text("\n".join(lines) + "\n")
    code, _, err = run(capsys, "scan", str(g))
    assert code == 2 and err.strip().splitlines()[-1].startswith(_message(g, 10, "reward"))


def test_the_count_is_exact_across_the_pieces_of_a_mapped_file(tmp_path, monkeypatch):
    f = _write(tmp_path / "big.jsonl", _rows(20_000), dup_at=12_345)
    whole = jsonl.key_tokens(f, ["step", "prompt_id", "reward"])
    monkeypatch.setattr(jsonl, "_MAPPED", 4099)  # pieces cut after a line break, ~100 lines each
    assert jsonl.key_tokens(f, ["step", "prompt_id", "reward"]) == whole == 3 * 20_000 + 1
    assert jsonl.key_tokens(f, ["é"]) is None  # a key's other spellings are not counted: no proof
