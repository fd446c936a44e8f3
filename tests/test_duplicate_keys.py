"""A jsonl (or .json) record giving a key the counts read twice is refused on every engine with one message
(issue 36 item 20: Polars read the first value silently, json.loads and Spark the last, DuckDB refused)."""

from __future__ import annotations

import gzip
import json
import random

import pytest
from cli_runner import run

from sigmaudit.loaders.jsonl import duplicate_key


def _rows(n: int, seed: int = 0) -> list[dict]:
    rng = random.Random(seed)
    return [{"step": i // 64, "prompt_id": f"p{(i // 8) % 8}", "reward": rng.randint(0, 1)} for i in range(n)]


def _write(path, rows, dup_at: int | None = None, key: str = "reward"):
    lines = [json.dumps(r) for r in rows]
    if dup_at is not None:  # line dup_at (1-based) gives `key` twice: first 1 - value, then the value
        r = rows[dup_at - 1]
        lines[dup_at - 1] = json.dumps(r)[:-1] + f', "{key}": {json.dumps(r[key])}}}'
        first = json.dumps(1 - r[key]) if key == "reward" else json.dumps(r[key] + "x")
        lines[dup_at - 1] = lines[dup_at - 1].replace(f'"{key}": {json.dumps(r[key])},', f'"{key}": {first},', 1)
    path.write_text("\n".join(lines) + "\n")
    return path


def _message(path, line, key, what="line"):
    return (f"sigmaudit: error: {path}:{line}: {what} {line} gives key {key!r} twice" if what == "line"
            else f"sigmaudit: error: {path}: {what} {line} gives key {key!r} twice")


def test_the_written_line_really_gives_the_key_twice_with_two_values(tmp_path):
    f = _write(tmp_path / "a.jsonl", _rows(16), dup_at=3)
    line = f.read_text().splitlines()[2]
    assert line.count('"reward"') == 2
    pairs = json.loads(line, object_pairs_hook=lambda p: p)
    assert [v for k, v in pairs if k == "reward"] in ([0, 1], [1, 0])


@pytest.mark.parametrize("engine", ["polars", "duckdb"])
@pytest.mark.parametrize("at", [1, 5000])
def test_a_duplicate_reward_is_refused_on_its_line(capsys, tmp_path, engine, at):
    f = _write(tmp_path / "log.jsonl", _rows(6000), dup_at=at)
    code, out, err = run(capsys, "scan", str(f), "--engine", engine)
    assert code == 2 and out == ""
    assert err.strip().splitlines()[-1].startswith(_message(f, at, "reward"))
    assert "fix the writer" in err and "Traceback" not in err


def test_same_message_on_polars_and_duckdb_for_a_later_file(capsys, tmp_path):
    _write(tmp_path / "a.jsonl", _rows(200))
    _write(tmp_path / "b.jsonl", _rows(200, 1), dup_at=150, key="prompt_id")
    errs = []
    for engine in ("polars", "duckdb"):
        code, _, err = run(capsys, "scan", str(tmp_path / "a.jsonl"), str(tmp_path / "b.jsonl"), "--engine", engine)
        assert code == 2
        errs.append(err.strip().splitlines()[-1])
    assert errs[0] == errs[1]
    assert errs[0].startswith(_message(tmp_path / "b.jsonl", 150, "prompt_id"))


def test_a_duplicate_in_a_gzipped_jsonl(capsys, tmp_path):
    plain = _write(tmp_path / "x.jsonl", _rows(3000), dup_at=2999)
    gz = tmp_path / "log.jsonl.gz"
    gz.write_bytes(gzip.compress(plain.read_bytes()))
    plain.unlink()
    for engine in ("polars", "duckdb"):
        code, _, err = run(capsys, "scan", str(gz), "--engine", engine)
        assert code == 2 and err.strip().splitlines()[-1].startswith(_message(gz, 2999, "reward"))


def test_a_duplicate_in_a_json_array_names_its_record(capsys, tmp_path):
    rows = _rows(40)
    records = [json.dumps(r, indent=2) for r in rows]
    records[6] = records[6][:-1].rstrip() + ',\n  "step": 99\n}'  # record 7 gives step twice
    text = "[\n" + ",\n".join(records) + "\n]\n"
    assert json.loads(text)[6]["step"] == 99 and text.count('"step"') == 41
    f = tmp_path / "log.json"
    f.write_text(text)
    code, out, err = run(capsys, "scan", str(f))
    assert code == 2 and out == ""
    assert err.strip().splitlines()[-1].startswith(_message(f, 7, "step", "record"))


def test_a_clean_file_reads_as_before_and_an_unread_key_twice_changes_nothing(capsys, tmp_path):
    rows = _rows(640)
    clean = _write(tmp_path / "clean.jsonl", rows)
    extra = tmp_path / "extra.jsonl"  # a key no count reads, given twice: the same numbers
    extra.write_text("".join(json.dumps(r)[:-1] + ', "note": 1, "note": 2}\n' for r in rows))
    code, out, _ = run(capsys, "scan", str(clean), "-f", "json")
    assert code == 0
    got = json.loads(out)
    code, out2, _ = run(capsys, "scan", str(extra), "-f", "json")
    assert code == 0 and json.loads(out2)["pass_rate"] == got["pass_rate"]
    # the mean pass rate by hand: per prompt, solved / answered
    by: dict[str, list[int]] = {}
    for r in rows:
        by.setdefault(r["prompt_id"], []).append(r["reward"])
    mean = sum(sum(v) / len(v) for v in by.values()) / len(by)
    assert got["pass_rate"]["mean"] == pytest.approx(mean, abs=1e-12)


def test_the_search_is_exact_far_into_a_file_and_ignores_the_key_inside_text(tmp_path):
    rows = _rows(900_000)
    f = _write(tmp_path / "big.jsonl", rows, dup_at=900_000)
    assert duplicate_key(f, ["step", "prompt_id", "reward"]) == (900_000, "reward")
    g = tmp_path / "text.jsonl"  # the key's name inside a value and in a nested object is no duplicate
    g.write_text('{"reward": 1, "note": "\\"reward\\": 0", "meta": {"reward": 0}}\n' * 3)
    assert duplicate_key(g, ["reward"]) is None


def test_spark_refuses_with_the_same_message(capsys, tmp_path, spark_engine):
    _write(tmp_path / "a.jsonl", _rows(200))
    _write(tmp_path / "b.jsonl", _rows(200, 1), dup_at=120)
    code, _, err = run(capsys, "scan", str(tmp_path / "a.jsonl"), str(tmp_path / "b.jsonl"), "--engine", "spark")
    assert code == 2 and err.strip().splitlines()[-1].startswith(_message(tmp_path / "b.jsonl", 120, "reward"))
