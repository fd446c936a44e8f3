"""Issue 43 ("a key that merges groups silently") and issue 42 item 4 (the note names every column it used):
a csv ``epoch,uid,passed`` says uid serves as both prompt and group id and that epoch was left aside; every
detection note names the step, group-id, prompt, run-like and reward columns it read. Files are written as a
user's code writes them (Python's csv module, Polars' ``write_ndjson``)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from cli_runner import run

from sigmaudit.loaders import LoadOptions, load_counts


@pytest.fixture(scope="module")
def epochs(tmp_path_factory) -> tuple[Path, list[tuple[int, str, int]]]:
    """20 prompts x 3 epochs x 8 samples, ``epoch,uid,passed`` (the shape issue 42 quotes)."""
    path = tmp_path_factory.mktemp("epochs") / "train.csv"
    rng = np.random.default_rng(42)
    p = rng.beta(0.5, 0.5, 20)
    rows = [(e, f"u{i}", int(rng.random() < p[i])) for e in range(3) for i in range(20) for _ in range(8)]
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["epoch", "uid", "passed"])
        w.writerows(rows)
    return path, rows


def test_uid_as_prompt_and_group_and_an_ignored_epoch_are_said(epochs, capsys):
    """It read "0.0 % of 20 logged groups at G = 24" with a note saying only "groups by (group id)"."""
    path, _ = epochs
    code, _, err = run(capsys, "scan", str(path), "-f", "json")
    note = err.splitlines()[0]
    assert code == 0
    assert note.startswith("sigmaudit: detected long layout: prompt = uid, reward from passed, "
                           "groups by (group id: uid)")
    assert "column uid serves as both prompt key and group id" in note and "pass --step-col" in note
    assert "column epoch looks like a training step and is not read as one: pass --step-col epoch" in note


def test_epoch_named_as_the_step_gives_the_groups_of_8(epochs, capsys):
    """With --step-col epoch the groups are (epoch, uid) of 8, the observed share counted by hand; the note
    names the columns and no longer warns."""
    path, rows = epochs
    code, out, err = run(capsys, "scan", str(path), "--step-col", "epoch", "-f", "json")
    groups: dict[tuple[int, str], list[int]] = {}
    for e, u, r in rows:
        groups.setdefault((e, u), []).append(r)
    silent = sum(sum(g) in (0, len(g)) for g in groups.values()) / len(groups)
    observed = json.loads(out)["observed_silent"]
    assert code == 0 and observed["G"] == 8 and observed["groups"] == 60
    assert observed["fraction"] == pytest.approx(silent, abs=1e-12)
    note = err.splitlines()[0]
    assert "groups by (step: epoch, group id: uid)" in note and "looks like a training step" not in note
    assert "serves as both" not in note


def test_every_column_is_named_in_the_note(tmp_path):
    """Step, group id, prompt, run-like and reward columns each by name; ``iteration`` read as the step is named."""
    rows = [{"iteration": s, "group_id": f"g{s}-{i}", "model": "m", "task_id": i, "reward": (i + j) % 2}
            for s in (1, 2) for i in range(4) for j in range(4)]
    path = tmp_path / "log.jsonl"
    pl.DataFrame(rows).write_ndjson(path)
    note = load_counts([path]).notes[0]
    assert note == ("detected long layout: prompt = (model, task_id) (run-like model kept in the key), reward from "
                    "reward, groups by (step: iteration, group id: group_id)")
    counts = tmp_path / "counts.csv"
    pl.DataFrame([{"step": 1, "prompt_id": i, "n": 8, "k": i, "epoch": 0} for i in range(4)]).write_csv(counts)
    note = load_counts([counts]).notes[0]
    assert note.startswith("detected counts layout: prompt = prompt_id, n from n, k from k, step from step")
    assert note.endswith("column epoch looks like a training step and is not read as one: pass --step-col epoch if "
                         "it counts steps (each (epoch, prompt) is then a group)")
    grouped = tmp_path / "grouped.parquet"
    pl.DataFrame({"iter": [1, 2], "prompt": ["a", "b"], "rewards": [[1, 0], [1, 1]]}).write_parquet(grouped)
    note = load_counts([grouped], LoadOptions()).notes[0]
    assert note.startswith("detected grouped layout: one group per row by prompt: prompt, rewards from list column "
                           "rewards; column iter looks like a training step")
