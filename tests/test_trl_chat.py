"""TRL conversational prompts: TRL 1.16.0 (read from its wheel, ``trl/trainer/grpo_trainer.py``
``GRPOTrainer.log``) logs ``self._logs["prompt"]`` as the prompts were given -- for a conversational
dataset a list of ``{"role", "content"}`` messages -- and writes the table with
``pd.DataFrame(table).to_parquet(...)``. The files here are written that way; scan, trend and watch
must read them and agree with the per-step silent shares computed here from the rewards."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pandas as pd
import pytest
from cli_runner import run

STEPS, PROMPTS, G = 3, 5, 4


def _write_trl_chat(folder: Path, seed: int = 7) -> dict[int, list[list[float]]]:
    """Completions files as TRL 1.16.0's ``GRPOTrainer.log`` writes them (conversational prompts and
    completions, one reward-function column, ``advantage``); returns the groups' rewards per step."""
    rng = random.Random(seed)
    out = folder / "completions"
    out.mkdir(parents=True)
    groups: dict[int, list[list[float]]] = {}
    for step in range(1, STEPS + 1):
        table: dict[str, list] = {"step": [], "prompt": [], "completion": [], "accuracy_reward": [], "advantage": []}
        groups[step] = []
        for q in range(PROMPTS):
            messages = [{"role": "system", "content": "Answer with a number."},
                        {"role": "user", "content": f"What is {q} + 1?"}]
            p = (q + 0.5) / PROMPTS
            rewards = [float(rng.random() < p) for _ in range(G)]
            groups[step].append(rewards)
            for r in rewards:
                table["step"].append(step)
                table["prompt"].append(messages)
                table["completion"].append([{"role": "assistant", "content": str(int(r))}])
                table["accuracy_reward"].append(r)
                table["advantage"].append(0.0)
        pd.DataFrame(table).to_parquet(out / f"completions_{step:05d}.parquet")
    return groups


def _silent(groups: list[list[float]]) -> float:
    return sum(len(set(g)) == 1 for g in groups) / len(groups)


@pytest.fixture
def chat(tmp_path):
    return tmp_path, _write_trl_chat(tmp_path)


def test_scan_reads_conversational_prompts(capsys, chat):
    folder, groups = chat
    code, out, err = run(capsys, "scan", str(folder), "-f", "json")
    assert code == 0, err
    d = json.loads(out)
    # each step draws the same five conversations: five prompts of 3 x 4 samples
    assert d["prompts"] == PROMPTS and d["rollouts"] == STEPS * PROMPTS * G
    everything = [g for s in groups.values() for g in s]
    assert d["observed_silent"]["fraction"] == pytest.approx(_silent(everything))
    by_step = {s["step"]: s["fraction"] for s in d["observed_silent"]["by_step"]}
    assert by_step == pytest.approx({s: _silent(g) for s, g in groups.items()})
    assert "prompt = prompt (the JSON text of its messages)" in err


def test_trend_and_watch_read_conversational_prompts(capsys, chat):
    folder, groups = chat
    code, out, err = run(capsys, "trend", str(folder), "-f", "json", "-q")
    assert code == 0, err
    steps = json.loads(out)["steps"]
    assert [s["observed_silent"] for s in steps] == pytest.approx([_silent(groups[s]) for s in sorted(groups)])
    code, out, err = run(capsys, "watch", str(folder), "--once", "--interval", "0.01", "-f", "json", "-q")
    assert code == 0, err
    lines = [json.loads(line) for line in out.splitlines()]
    seen = {o["step"]: o["observed"]["silent"] for o in lines if "step" in o}
    assert seen == pytest.approx({s: _silent(g) for s, g in groups.items()})
