"""``.json`` files of records, a JSON array misnamed ``.jsonl``, JSON errors with their column, and nested
per-sample fields named ``a.b``. Files are written as their writers write them: τ-bench's ``run.py``
(sierra-research/tau-bench 59a200c6d575d595120f1cb70fea53cef0632f6b: ``json.dump([result.model_dump()
for result in results], f, indent=2)`` of ``EnvRunResult(task_id, reward, info, traj, trial)``) and
verifiers' ``save_outputs`` (PrimeIntellect-ai/verifiers a60a606ecc4d309247edf9ff92c3eabca362781f,
``verifiers/legacy/utils/save_utils.py``: ``json.dumps(output)`` per line of ``results.jsonl``, the
output built by ``state_to_output``, ``metadata.json`` beside it)."""

from __future__ import annotations

import json
import random
from collections import defaultdict
from pathlib import Path

import pytest
from cli_runner import run

from sigmaudit.errors import InputError
from sigmaudit.loaders import load_counts

TASKS, TRIALS = 7, 4


def _tau_results(seed: int = 2) -> list[dict]:
    """``EnvRunResult.model_dump()`` per task x trial, in run.py's order (trial-major)."""
    rng = random.Random(seed)
    out = []
    for trial in range(TRIALS):
        for task_id in range(TASKS):
            solved = rng.random() < task_id / TASKS
            out.append({"task_id": task_id, "reward": 1.0 if solved else 0.0,
                        "info": {"task": {"user_id": f"u{task_id}", "actions": []}, "source": "user"},
                        "traj": [{"role": "system", "content": "policy"}, {"role": "user", "content": "hi"}],
                        "trial": trial})
    return out


def _counts(records: list[dict], key: str, reward: str) -> dict[str, tuple[int, int]]:
    n: dict[str, int] = defaultdict(int)
    k: dict[str, int] = defaultdict(int)
    for r in records:
        n[str(r[key])] += 1
        k[str(r[key])] += int(r[reward] >= 1 - 1e-6)
    return {p: (n[p], k[p]) for p in n}


def _loaded(path: Path, **opts) -> dict[str, tuple[int, int]]:
    from sigmaudit.loaders import LoadOptions

    pp = load_counts([path], LoadOptions(**opts)).per_prompt
    return {p: (n, k) for p, n, k in pp.select("prompt", "n", "k").iter_rows()}


def test_tau_bench_results_json_reads_per_task(tmp_path):
    records = _tau_results()
    f = tmp_path / "tool-calling-gpt-4o-0.0_range_0--1_user-gpt-4o-llm_0101.json"
    with open(f, "w") as fh:
        json.dump(records, fh, indent=2)
    assert _loaded(f) == _counts(records, "task_id", "reward")
    lines = tmp_path / "same.jsonl"
    lines.write_text("".join(json.dumps(r) + "\n" for r in records))
    assert _loaded(lines) == _loaded(f)


def test_object_holding_records_under_a_key(tmp_path):
    records = _tau_results(5)
    f = tmp_path / "results.json"
    f.write_text(json.dumps({"config": {"model": "m", "num_trials": TRIALS}, "results": records}))
    assert _loaded(f) == _counts(records, "task_id", "reward")


def test_object_with_two_lists_of_records_is_refused_naming_them(capsys, tmp_path):
    f = tmp_path / "both.json"
    f.write_text(json.dumps({"airline": _tau_results(1), "retail": _tau_results(2)}))
    code, _, err = run(capsys, "scan", str(f))
    assert code == 2 and err.count("\n") == 1
    assert "2 lists of records (airline, retail)" in err and "jq '.airline'" in err


def test_json_array_in_a_jsonl_file_is_diagnosed_as_such(capsys, tmp_path):
    f = tmp_path / "results.jsonl"
    with open(f, "w") as fh:
        json.dump(_tau_results(), fh, indent=2)
    code, _, err = run(capsys, "scan", str(f))
    assert code == 2 and err.count("\n") == 1
    assert "a JSON array, not JSON lines" in err and "name it .json" in err and "cut off" not in err


@pytest.mark.parametrize(("name", "text", "line", "reason"), [
    ("a.json", '[\n  {"task_id": 1, "reward": "a\tb"}\n]', 2, "Invalid control character at column 30"),
    ("a.jsonl", '{"task_id": 1, "reward": 1}\n{"task_id": 1, "answer": "unterminated}\n', 2,
     "Unterminated string starting at column 26"),
    ("b.json", '[{"task_id": 1, "reward": 1} {"task_id": 2}]', 1, "Expecting ',' delimiter at column 30"),
])
def test_json_errors_name_line_and_column_whole(capsys, tmp_path, name, text, line, reason):
    f = tmp_path / name
    f.write_text(text)
    # the column as Python's own decoder counts it, for the line the error names
    try:
        (json.loads(text) if name.endswith(".json") else [json.loads(x) for x in text.splitlines()])
    except json.JSONDecodeError as exc:
        assert reason.endswith(f"column {exc.colno}")
    code, _, err = run(capsys, "scan", str(f))
    assert code == 2 and err.count("\n") == 1
    assert f"{name}:{line}: malformed JSON on line {line}: {reason}" in err


def _vf_eval(folder: Path, seed: int = 4) -> list[dict]:
    """``results.jsonl`` as ``save_outputs`` writes ``state_to_output``'s dicts (empty answer/info popped),
    and ``metadata.json`` beside it."""
    rng = random.Random(seed)
    folder.mkdir(parents=True)
    outputs = []
    for example_id in range(6):
        for _ in range(4):
            correct = float(rng.random() < (example_id + 0.5) / 6)
            outputs.append({"example_id": example_id, "prompt": [{"role": "user", "content": f"q{example_id}"}],
                            "completion": [{"role": "assistant", "content": "42"}], "answer": "42",
                            "reward": 0.5 * correct + 0.25, "error": None,
                            "timing": {"generation_ms": 10.0, "scoring_ms": 1.0, "total_ms": 11.0},
                            "is_completed": True, "is_truncated": False, "stop_condition": "no_tools_called",
                            "metrics": {"correct_answer": correct, "format": 1.0}, "tool_defs": None})
    (folder / "results.jsonl").write_text("".join(json.dumps(o) + "\n" for o in outputs))
    (folder / "metadata.json").write_text(json.dumps({"env_id": "gsm8k", "model": "m", "num_examples": 6,
                                                      "rollouts_per_example": 4, "avg_reward": 0.5}))
    return outputs


def test_nested_field_named_as_the_writer_nests_it(tmp_path):
    outputs = _vf_eval(tmp_path / "run")
    got = _loaded(tmp_path / "run" / "results.jsonl", reward_col="metrics.correct_answer")
    want = _counts([{**o, "c": o["metrics"]["correct_answer"]} for o in outputs], "example_id", "c")
    assert got == want


def test_metadata_json_beside_results_is_skipped_in_a_folder_and_refused_named(capsys, tmp_path):
    _vf_eval(tmp_path / "run")
    code, _, err = run(capsys, "scan", str(tmp_path), "--reward-col", "metrics.correct_answer")
    assert code == 0 and "skipped" in err and "metadata.json" in err
    with pytest.raises(InputError, match="no list of records"):
        load_counts([tmp_path / "run" / "metadata.json"])
