"""Issue 43, "JSON as people write it": a ``.json`` file of JSON lines (``datasets.Dataset.to_json`` and pandas
``to_json(orient="records", lines=True)``, both written here by those libraries) reads as JSON lines; an object
with two record lists under known keys is refused naming both; a key given twice inside a nested object is one
rule for .json and .jsonl; a mapping of problem ids to lists of outcomes reads per problem; a JSON array is parsed
one record at a time (memory measured with tracemalloc)."""

from __future__ import annotations

import json
import tracemalloc

import numpy as np
import pytest
from cli_runner import run

from sigmaudit.errors import InputError
from sigmaudit.loaders import LoadOptions, load_counts
from sigmaudit.loaders.jsonfile import as_lines


def _rows(seed: int = 3, prompts: int = 30, G: int = 6) -> list[dict]:
    rng = np.random.default_rng(seed)
    p = rng.beta(0.4, 0.4, prompts)
    return [{"step": s, "task_id": f"t{i}", "reward": int(rng.random() < p[i])}
            for s in (1, 2) for i in range(prompts) for _ in range(G)]


def _truth(rows: list[dict]) -> tuple[int, float]:
    groups: dict = {}
    for r in rows:
        groups.setdefault((r["step"], r["task_id"]), []).append(r["reward"])
    return len(groups), sum(sum(g) in (0, len(g)) for g in groups.values()) / len(groups)


@pytest.mark.slow  # importing datasets
def test_json_lines_in_a_json_file_read_as_json_lines(tmp_path, capsys):
    """pandas and datasets write JSON lines under .json; it was refused as "Extra data"."""
    pd = pytest.importorskip("pandas")
    datasets = pytest.importorskip("datasets")
    rows = _rows()
    pd.DataFrame(rows).to_json(tmp_path / "pandas.json", orient="records", lines=True)
    datasets.Dataset.from_list(rows).to_json(str(tmp_path / "hf.json"))  # lines=True is its default
    groups, silent = _truth(rows)
    for name in ("pandas.json", "hf.json"):
        code, out, err = run(capsys, "scan", str(tmp_path / name), "-f", "json")
        observed = json.loads(out)["observed_silent"]
        assert code == 0, err
        assert observed["groups"] == groups and observed["fraction"] == pytest.approx(silent, abs=1e-12)


def test_two_record_lists_under_known_keys_are_refused_naming_both(tmp_path, capsys):
    """It read "samples" and dropped the 720 records under "results" without a word."""
    rows = _rows()
    path = tmp_path / "eval.json"
    path.write_text(json.dumps({"config": {"model": "m"}, "samples": rows[:720], "results": rows[:720]}, indent=2))
    code, out, err = run(capsys, "scan", str(path))
    assert code == 2 and out == "" and err.count("\n") == 1
    assert "the JSON object holds 2 lists of records (samples, results): which one is the log?" in err
    assert "jq '.samples' eval.json" in err


def test_a_nested_key_given_twice_is_one_rule_for_json_and_jsonl(tmp_path):
    """Refused from both when the counts read it (it was read silently from .json, the last value winning);
    read from both when they do not."""
    lines = ['{"id": 1, "reward": 1, "m": {"c": 1, "c": 0}}', '{"id": 2, "reward": 0, "m": {"c": 0, "c": 0}}']
    (tmp_path / "a.jsonl").write_text("\n".join(lines) + "\n")
    (tmp_path / "a.json").write_text("[\n" + ",\n".join(lines) + "\n]\n")
    for name, where in (("a.jsonl", "line 1"), ("a.json", "record 1")):
        with pytest.raises(InputError) as exc:
            load_counts([tmp_path / name], LoadOptions(reward_col="m.c"))
        assert f"{where} gives key 'm.c' twice" in exc.value.one_line()
        loaded = load_counts([tmp_path / name])  # m.c is not read: the counts of reward
        assert loaded.per_prompt["k"].to_list() == [1, 0]


def test_a_mapping_of_ids_to_outcomes_reads_per_problem(tmp_path, capsys):
    """``{"raw_scored_generations": {"sample_0": [true, false, ...]}, "pass_at_1": ...}`` was refused as holding
    no records; another key is read when --reward-col names it."""
    rng = np.random.default_rng(5)
    outcomes = {f"sample_{i}": [bool(x) for x in rng.random(10) < rng.random()] for i in range(40)}
    pass1 = float(np.mean([np.mean(v) for v in outcomes.values()]))
    path = tmp_path / "scores.json"
    path.write_text(json.dumps({"raw_scored_generations": outcomes, "pass_at_1": pass1}))
    code, out, err = run(capsys, "scan", str(path), "-f", "json")
    scan = json.loads(out)
    assert code == 0, err
    assert scan["prompts"] == 40 and scan["rollouts"] == 400
    assert "rewards from list column raw_scored_generations" in err
    silent = np.mean([all(v) or not any(v) for v in outcomes.values()])
    assert scan["observed_silent"]["fraction"] == pytest.approx(silent, abs=1e-12)
    other = tmp_path / "mine.json"
    other.write_text(json.dumps({"per_problem": {k: [int(x) for x in v] for k, v in outcomes.items()}}))
    code, _, err = run(capsys, "scan", str(other))
    assert code == 2 and "holds no list of records (keys: per_problem)" in err and "--reward-col" in err
    code, out, _ = run(capsys, "scan", str(other), "--reward-col", "per_problem", "-f", "json")
    assert code == 0 and json.loads(out)["rollouts"] == 400


@pytest.mark.slow  # tracemalloc
def test_a_json_array_is_parsed_one_record_at_a_time(tmp_path):
    """A 137 MB array took 554 MB parsed whole (measured: /usr/bin/time -v sigmaudit scan, 138 MB array; 250 MB
    now, as its jsonl twin takes). Here: Python's peak allocation while the array is written out as lines stays
    under the file's size, where parsing it whole peaks at several times the file."""
    path = tmp_path / "big.json"
    rng = np.random.default_rng(1)
    with open(path, "w") as fh:
        fh.write("[\n" + ",\n".join(json.dumps({"task_id": i // 8, "reward": int(rng.random() < 0.4),
                                                "output": "x" * 200, "info": {"a": [1, 2]}}) for i in range(20_000))
                 + "\n]\n")
    size = path.stat().st_size
    tracemalloc.start()
    target = as_lines(path, str(path), tmp_path)
    streamed = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    tracemalloc.start()
    with open(path) as fh:
        whole = json.load(fh)
    parsed = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert sum(1 for _ in open(target)) == len(whole) == 20_000
    assert streamed < 0.5 * size < 2 * size < parsed, (streamed, size, parsed)
