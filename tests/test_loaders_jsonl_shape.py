"""jsonl files of one shape are read with the first file's schema (no per-file inference); any other
shape, and any reused schema that does not fit, is inferred as before. Counts are checked against
a reference computed line by line with the json module."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import polars as pl
import pytest

from sigmaudit.loaders import LoadOptions, load_counts, readers
from sigmaudit.loaders.jsonl import shape


def verl_file(path: Path, step: int, rows: list[tuple[str, float | int | str | None]], acc: bool = True) -> Path:
    lines = []
    for prompt, score in rows:
        row = {"input": prompt, "output": "x \\boxed{1}\n" * 3, "gts": "1", "score": score, "step": step}
        if acc:
            row["acc"] = None if score is None else score == 1
        lines.append(json.dumps(row, ensure_ascii=False))
    path.write_text("\n".join(lines) + "\n")
    return path


def reference(paths: list[Path], key: str, prompt: str = "input") -> Counter:
    """(step, prompt, "n" or "k") -> count, from the json module (null rewards excluded)."""
    out: Counter = Counter()
    for p in paths:
        for line in p.read_text().splitlines():
            row = json.loads(line)
            value = row.get(key)
            if value is None:
                continue
            out[(row["step"], row[prompt], "n")] += 1
            out[(row["step"], row[prompt], "k")] += int(value == 1)
    return out


def counts(loaded) -> Counter:  # noqa: ANN001
    out: Counter = Counter()
    for step, prompt, n, k in loaded.per_group.select("step", "prompt", "n", "k").iter_rows():
        out[(step, prompt, "n")] += n
        out[(step, prompt, "k")] += k
    return out


@pytest.fixture
def schema_calls(monkeypatch):
    """Records, per pl.scan_ndjson call made by the readers, whether a schema was given."""
    calls: list[bool] = []
    real = pl.scan_ndjson

    def spy(*args, **kwargs):
        calls.append("schema" in kwargs)
        return real(*args, **kwargs)

    monkeypatch.setattr(readers.pl, "scan_ndjson", spy)
    return calls


def rows_for(step: int, n: int) -> list[tuple[str, float]]:
    return [(f"p{(i * 7 + step) % 5}", 1.0 if (i * step) % 3 == 0 else -1.0) for i in range(n)]


def test_shape_of_flat_lines(tmp_path):
    p = verl_file(tmp_path / "1.jsonl", 1, rows_for(1, 4))
    assert shape(p) == (("input", "s"), ("output", "s"), ("gts", "s"), ("score", "f"), ("step", "i"), ("acc", "b"))


def test_shape_is_none_when_first_and_last_lines_differ_or_nest(tmp_path):
    p = tmp_path / "a.jsonl"
    p.write_text('{"a": 1, "b": "x"}\n{"a": 1.5, "b": "x"}\n')
    assert shape(p) is None  # int then float
    p.write_text('{"a": 1, "b": {"c": 1}}\n{"a": 1, "b": {"c": 1}}\n')
    assert shape(p) is None  # nested
    p.write_text('{"a": 1\n{"a": 1}\n')
    assert shape(p) is None  # malformed first line
    p.write_bytes(b'\xef\xbb\xbf{"a": 1}\n{"a": 1}\n')
    assert shape(p) is None  # byte-order mark: left to the inferring reader
    long_line = json.dumps({"a": 1, "b": "y" * 200_000})
    p.write_text('{"a": 2, "b": "x"}\n' + long_line + "\n")
    assert shape(p) == (("a", "i"), ("b", "s"))  # a last line longer than the tail block


def test_same_shape_reuses_the_schema_and_counts_match(tmp_path, schema_calls):
    files = [verl_file(tmp_path / f"{s}.jsonl", s, rows_for(s, 40)) for s in (1, 2, 3, 4)]
    loaded = load_counts([tmp_path], LoadOptions())
    assert schema_calls == [False, True, True, True]
    assert counts(loaded) == reference(files, "acc")
    assert loaded.reward_source == "acc"


def test_a_late_key_is_found_by_re_inferring(tmp_path, schema_calls):
    first = verl_file(tmp_path / "1.jsonl", 1, rows_for(1, 30), acc=False)
    later = [verl_file(tmp_path / f"{s}.jsonl", s, rows_for(s, 30)) for s in (2, 3)]
    loaded = load_counts([tmp_path], LoadOptions())
    assert schema_calls == [False, False, True]  # 2.jsonl has acc: inferred; 3.jsonl reuses 2's schema
    assert any("reward from acc" in note for note in loaded.notes)
    assert any("reward from score" in note for note in loaded.notes)
    assert counts(loaded) == reference([first], "score") + reference(later, "acc")


def test_a_reused_schema_that_does_not_fit_falls_back_to_inference(tmp_path, schema_calls):
    files = [verl_file(tmp_path / "1.jsonl", 1, rows_for(1, 20), acc=False)]
    rows = rows_for(2, 20)
    rows[6] = ("p2", "1.0")  # a string score in the middle: the reused Float64 schema fails on it
    files.append(verl_file(tmp_path / "2.jsonl", 2, rows, acc=False))
    with pytest.raises(Exception) as caught:
        load_counts([tmp_path], LoadOptions())
    # the error is the one reading 2.jsonl alone gives (inferred schema): a text reward column
    with pytest.raises(type(caught.value)) as alone:
        load_counts([files[1]], LoadOptions())
    assert str(caught.value) == str(alone.value)
    assert schema_calls[:2] == [False, True] and schema_calls[2] is False


def test_fallback_that_succeeds_counts_every_row(tmp_path, schema_calls):
    a = tmp_path / "1.jsonl"
    a.write_text("\n".join(json.dumps({"prompt_id": f"q{i % 4}", "step": 1, "reward": i % 2})
                           for i in range(40)) + "\n")
    b = tmp_path / "2.jsonl"
    lines = [json.dumps({"prompt_id": f"q{i % 4}", "step": 2, "reward": i % 2}) for i in range(40)]
    lines[10] = json.dumps({"prompt_id": "q1", "step": 2, "reward": 1.0})  # a float among integers
    b.write_text("\n".join(lines) + "\n")
    loaded = load_counts([tmp_path], LoadOptions())
    assert schema_calls == [False, True, False]  # reused for 2.jsonl, failed, inferred
    assert counts(loaded) == reference([a, b], "reward", "prompt_id")
    assert loaded.n_rows == 80
