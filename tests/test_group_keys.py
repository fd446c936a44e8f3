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


VERL = "volcengine/verl b178a3cd56f58b2d502255daba591e92833930a7"


def _multimodal_dump(folder: Path, prompts: int = 16, G: int = 64, steps: int = 2, uid: bool = False) -> list[dict]:
    """A verl ``rollout_data_dir`` as ``RayPPOTrainer._dump_generations`` writes it (VERL,
    verl/trainer/ppo/ray_trainer.py: ``{global_steps}.jsonl``, keys input, output, gts, score, step, then each
    reward-extra list of one entry per sample) for a vision-language run: ``input`` is
    ``tokenizer.batch_decode(prompts, skip_special_tokens=True)``, which drops the image tokens, so every prompt of a
    geometry set asked with one instruction decodes to the same text. ``uid``: the v1 trainer's per-sample id."""
    rng = np.random.default_rng(7)
    folder.mkdir()
    rows = []
    text = "system\nYou are a helpful assistant.\nuser\nSolve the problem in the image.\nassistant\n"
    for step in range(1, steps + 1):
        lines = []
        for i, p in enumerate(rng.beta(0.5, 0.5, prompts)):
            for j in range(G):
                row = {"input": text, "output": "ans", "gts": str(i), "score": float(rng.random() < p), "step": step}
                if uid:
                    row["uid"] = f"{step:04d}{i:028x}_{j}_0"
                rows.append({**row, "prompt": i})
                lines.append(json.dumps(row, ensure_ascii=False))
        (folder / f"{step}.jsonl").write_text("\n".join(lines) + "\n")
    return rows


def test_a_multimodal_verl_dump_of_one_prompt_text_is_refused(tmp_path, capsys):
    """Issue 43: all 1,024 rows of a step held one ``input``; check passed "at G = 1024" and plan said G = 195."""
    _multimodal_dump(tmp_path / "rollout_data")
    for command in (["scan"], ["plan"], ["check", "--max-silent", "0.5"]):
        code, out, err = run(capsys, *command, str(tmp_path / "rollout_data"), "-q")
        assert code == 2 and out == "" and err.count("\n") == 1, (command, err)
        assert "rollout_data/1.jsonl: all 1,024 rows of step 1 share one prompt key (input = 'system\\nYou are " in err
        assert "a group of 1,024 is more than --max-group-size 512, so several prompts share that key" in err
        assert err.rstrip().endswith("name the key with --prompt-col or --group-col, or pass --max-group-size 1024 if "
                                     "the run drew G = 1024")
    code, out, _ = run(capsys, "scan", str(tmp_path / "rollout_data"), "--max-group-size", "1024", "-f", "json")
    assert code == 0 and json.loads(out)["observed_silent"]["G"] == 1024  # as asked


def test_the_same_dump_with_uid_or_a_named_key_reads_its_groups(tmp_path, capsys):
    """With the v1 trainer's uid the groups are read from it (16 x 64 a step); without, --prompt-col gts does it."""
    rows = _multimodal_dump(tmp_path / "v1", uid=True)
    groups: dict = {}
    for r in rows:
        groups.setdefault((r["step"], r["prompt"]), []).append(r["score"])
    silent = sum(sum(g) in (0, len(g)) for g in groups.values()) / len(groups)
    code, out, err = run(capsys, "scan", str(tmp_path / "v1"), "-f", "json")
    observed = json.loads(out)["observed_silent"]
    assert code == 0, err
    assert observed["G"] == 64 and observed["groups"] == 32 and observed["fraction"] == pytest.approx(silent, abs=1e-12)
    _multimodal_dump(tmp_path / "legacy")
    code, out, _ = run(capsys, "scan", str(tmp_path / "legacy"), "--prompt-col", "gts", "-f", "json")
    observed = json.loads(out)["observed_silent"]
    assert code == 0 and observed["G"] == 64 and observed["groups"] == 32
    assert observed["fraction"] == pytest.approx(silent, abs=1e-12)


@pytest.fixture(scope="module")
def eval_log(tmp_path_factory) -> tuple[Path, list[dict]]:
    """An eval jsonl (``model, alias, task_id, sample, score, score_binarized``) of four models, two of which share
    the model code ``m3`` (aliases ``m3-base`` and ``m3-instruct``); 8 samples per task mostly, 2-10 for some."""
    rng = np.random.default_rng(3)
    rows = []
    for model, alias in (("m1", "m1"), ("m2", "m2"), ("m3", "m3-base"), ("m3", "m3-instruct")):
        for t in range(60):
            n = 8 if rng.random() < 0.7 else int(rng.integers(2, 11))
            q = rng.beta(0.5, 0.5)
            for j in range(n):
                score = round(float(np.clip(rng.normal(q, 0.2), 0, 1)), 3)
                rows.append({"model": model, "alias": alias, "task_id": f"t{t}", "sample": j, "score": score,
                             "score_binarized": int(score >= 0.5)})
    path = tmp_path_factory.mktemp("eval") / "results.jsonl"
    pl.DataFrame(rows).write_ndjson(path)
    return path, rows


def test_a_continuous_score_refusal_names_its_binary_twin(eval_log, capsys):
    path, rows = eval_log
    code, out, err = run(capsys, "scan", str(path))
    assert code == 2 and out == "" and err.count("\n") == 1
    assert "reward column 'score' is not binary (values such as" in err
    assert err.rstrip().endswith("column 'score_binarized' beside it holds 0/1 only; pass --reward-col score_binarized "
                                 "to read it, or --threshold T (reward >= T counts as correct)")
    code, out, _ = run(capsys, "scan", str(path), "--reward-col", "score_binarized", "-f", "json")
    assert code == 0 and json.loads(out)["rollouts"] == len(rows)


def test_keys_pooling_two_aliases_are_flagged_with_the_column_that_splits_them(eval_log, capsys):
    """With a threshold the key (model, task_id) pooled m3-base and m3-instruct without a note; now the keys past
    1.5x the modal size are counted and alias named, the counts checked by hand."""
    path, rows = eval_log
    sizes: dict = {}
    aliases: dict = {}
    for r in rows:
        key = (r["model"], r["task_id"])
        sizes[key] = sizes.get(key, 0) + 1
        aliases.setdefault(key, set()).add(r["alias"])
    values = list(sizes.values())
    modal = min(v for v in set(values) if values.count(v) == max(values.count(u) for u in set(values)))
    big = [k for k, n in sizes.items() if n > 1.5 * modal]
    assert modal == 8 and big and all(len(aliases[k]) == 2 for k in big)
    code, _, err = run(capsys, "scan", str(path), "--threshold", "0.5", "-f", "json")
    assert code == 0
    assert (f"{len(big)} of 180 prompt keys hold more than 1.5x the usual 8 samples (up to {max(values)}), and column "
            f"alias takes several values within each of them (60 keys in all) and one within most keys") in err
    assert "to split them: --prompt-col model,task_id,alias" in err
    code, out, err = run(capsys, "scan", str(path), "--threshold", "0.5", "--prompt-col", "model,task_id,alias",
                         "-f", "json")
    assert code == 0 and json.loads(out)["prompts"] == 240 and "keys hold more than" not in err


def test_a_counts_file_with_steps_and_many_samples_is_not_a_group_too_large(tmp_path):
    """A counts row's n is as many samples as were drawn (a pass rate over 1,000): no group bound applies."""
    path = tmp_path / "counts.csv"
    pl.DataFrame([{"step": 1, "prompt_id": i, "n": 1000, "k": 10 * i} for i in range(10)]).write_csv(path)
    assert load_counts([path]).per_group["n"].to_list() == [1000] * 10
