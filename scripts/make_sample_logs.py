"""Generate the bundled sample logs in ``sample_logs/`` (fixed seed, reproducible).

Every prompt gets a true success probability from a realistic difficulty mix (many never
solved, some always solved, a spread in between) that improves slowly over training steps;
each logged group draws k ~ Binomial(G, p). One file per generic layout, and one folder per
trainer in the layout its writer uses (``sample_logs/<framework>/...``); each framework's
generator returns the true counts of what it wrote (tests/test_sample_logs.py checks them):

    python scripts/make_sample_logs.py [--out sample_logs]
"""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path

import numpy as np
import polars as pl

SEED = 20250611


def difficulty(rng: np.random.Generator, n: int) -> np.ndarray:
    """Logits of p: 40% hopeless, 15% trivial, 45% spread over (0, 1)."""
    kind = rng.choice(3, size=n, p=[0.40, 0.15, 0.45])
    p = np.where(kind == 0, rng.beta(0.2, 30, n),
                 np.where(kind == 1, 1 - rng.beta(0.2, 30, n), rng.beta(1.1, 1.3, n)))
    p = np.clip(p, 1e-4, 1 - 1e-4)
    return np.log(p / (1 - p))


def p_at(logit: np.ndarray, step: int, speed: float = 0.04) -> np.ndarray:
    """Success probability at a training step: prompts in reach improve, hopeless ones do not."""
    gain = speed * step * (logit > -5)
    return 1 / (1 + np.exp(-(logit + gain)))


def rewards(rng: np.random.Generator, p: np.ndarray, g: int) -> np.ndarray:
    """(len(p), g) 0/1 rewards."""
    return (rng.random((p.size, g)) < p[:, None]).astype(np.int8)


def problem_text(i: int) -> str:
    a, b = 7 + 13 * i % 89, 3 + 7 * i % 31
    return f"Problem {i}: find the remainder when {a}^{b} is divided by {b + 10}."


def answer(i: int) -> int:
    i = int(i)
    a, b = 7 + 13 * i % 89, 3 + 7 * i % 31
    return pow(a, b, b + 10)


def rollouts(rng: np.random.Generator, out: Path) -> None:
    """Long parquet: 200 prompts x 20 steps x G=8 (the README's main example)."""
    logit = difficulty(rng, 200)
    frames = []
    for step in range(1, 21):
        r = rewards(rng, p_at(logit, step), 8)
        frames.append(pl.DataFrame({
            "step": np.full(r.size, step, dtype=np.int64),
            "prompt_id": np.repeat([f"p{i:04d}" for i in range(200)], 8),
            "reward": r.ravel().astype(np.float32)}))
    pl.concat(frames).write_parquet(out / "rollouts.parquet", compression="zstd")


def long_csv(rng: np.random.Generator, out: Path) -> None:
    """Long csv without steps: 300 prompts x 16 samples (an eval-style dump)."""
    p = p_at(difficulty(rng, 300), 0)
    r = rewards(rng, p, 16)
    pl.DataFrame({"problem_id": np.repeat([f"q{i:03d}" for i in range(300)], 16),
                  "sample_idx": np.tile(np.arange(16), 300),
                  "correct": r.ravel()}).write_csv(out / "long.csv")


def grouped_parquet(rng: np.random.Generator, out: Path) -> None:
    """Grouped: one row per (step, prompt) group with a list of 8 rewards; 64 prompts a step."""
    logit = difficulty(rng, 300)
    rows = []
    for step in range(1, 9):
        batch = rng.choice(300, size=64, replace=False)
        r = rewards(rng, p_at(logit[batch], step), 8)
        rows += [{"step": step, "prompt_id": f"q{i:03d}", "rewards": r[j].tolist()}
                 for j, i in enumerate(batch)]
    pl.DataFrame(rows).write_parquet(out / "grouped.parquet")


def counts_csv(rng: np.random.Generator, out: Path) -> None:
    """Counts: 300 prompts with n=16 samples and the number correct."""
    p = p_at(difficulty(rng, 300), 0)
    k = rng.binomial(16, p)
    pl.DataFrame({"prompt_id": [f"q{i:03d}" for i in range(300)], "n_samples": 16,
                  "n_correct": k}).write_csv(out / "counts.csv")


class Truth:
    """What a dump holds, counted from the generated rewards (never through sigmaudit)."""

    def __init__(self) -> None:
        self.groups: list[tuple[str, list[int]]] = []

    def add(self, prompt: str, rewards_: list[int] | np.ndarray) -> None:
        self.groups.append((prompt, [int(r) for r in rewards_]))

    def counts(self) -> dict[str, float | int]:
        """prompts, rollouts, groups, silent (share of logged groups all right or all wrong),
        never / always (share of prompts never / always right over all their samples)."""
        n: dict[str, int] = {}
        k: dict[str, int] = {}
        for prompt, r in self.groups:
            n[prompt] = n.get(prompt, 0) + len(r)
            k[prompt] = k.get(prompt, 0) + sum(r)
        return {"prompts": len(n), "rollouts": sum(n.values()), "groups": len(self.groups),
                "silent": sum(len(set(r)) == 1 for _, r in self.groups) / len(self.groups),
                "never": sum(k[p] == 0 for p in n) / len(n),
                "always": sum(k[p] == n[p] for p in n) / len(n)}


def _batches(rng: np.random.Generator, n_prompts: int, steps, size: int, g: int,
             speed_steps: int = 4):
    """(step, prompt indices, (size, g) rewards) per step."""
    logit = difficulty(rng, n_prompts)
    for step in steps:
        batch = rng.choice(n_prompts, size=size, replace=False)
        yield step, batch, rewards(rng, p_at(logit[batch], step * speed_steps), g)


def _jsonl(path: Path, rows) -> None:  # noqa: ANN001
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as fh:
        fh.writelines(json.dumps(r) + "\n" for r in rows)


def _chat(i: int) -> str:
    return f"<|im_start|>user\n{problem_text(int(i))}<|im_end|>\n<|im_start|>assistant\n"


def _response(rng: np.random.Generator, i: int, right: int) -> str:
    pred = answer(i) if right else int(rng.integers(0, 40))
    return f"... so the answer is \\boxed{{{pred}}}"


def verl(rng: np.random.Generator, out: Path) -> Truth:
    """verl legacy ``RayPPOTrainer._write_generations``: ``{rollout_data_dir}/{step}.jsonl``, keys
    input, output, gts, score, step + reward extras (acc, pred) + request_id; DAPO ±1 score;
    rows of a step shuffled (no uid, so groups are (step, input))."""
    truth = Truth()
    d = out / "verl" / "rollout_data"
    d.mkdir(parents=True)
    for step, batch, r in _batches(rng, 300, (1, 2, 3, 4, 5), 32, 8):
        lines = []
        for j, i in enumerate(batch):
            truth.add(_chat(i), r[j])
            for c in r[j]:
                pred = str(answer(i)) if c else str(int(rng.integers(0, 40)))
                lines.append({"input": _chat(i), "output": f"... \\boxed{{{pred}}}",
                              "gts": str(answer(i)), "score": 1.0 if c else -1.0, "step": step,
                              "acc": bool(c), "pred": pred,
                              "request_id": f"{rng.integers(1 << 40):x}"})
        _jsonl(d / f"{step}.jsonl", [lines[o] for o in rng.permutation(len(lines))])
    return truth


def verl_v1(rng: np.random.Generator, out: Path) -> Truth:
    """verl v1 ``PPOTrainer._write_generations``: as legacy plus ``uid`` =
    ``{uuid4}_{session}_{index}`` per sample, rows sorted by it; one prompt is drawn twice in
    step 2 (two groups, two uuids) and one session has two agent-loop outputs (the last one
    carries the session's reward)."""
    truth = Truth()
    d = out / "verl-v1" / "rollout_data"
    d.mkdir(parents=True)
    for step, batch, r in _batches(rng, 200, (1, 2, 3), 24, 8):
        if step == 2:
            batch[1] = batch[0]  # the same prompt drawn twice in one step
        lines = []
        for j, i in enumerate(batch):
            truth.add(_chat(i), r[j])
            uuid = f"{rng.integers(1 << 62):016x}-{j:04x}"
            for s, c in enumerate(r[j]):
                outputs = 2 if (step, j, s) == (1, 0, 0) else 1
                for o in range(outputs):
                    last = o == outputs - 1
                    score = float(c) if last else 0.0
                    lines.append({"input": _chat(i), "output": _response(rng, i, c),
                                  "gts": str(answer(i)), "score": score, "step": step,
                                  "uid": f"{uuid}_{s}_{o}"})
        lines.sort(key=lambda e: (e["uid"].rsplit("_", 2)[0], *map(int, e["uid"].rsplit("_", 2)[1:])))
        _jsonl(d / f"{step}.jsonl", lines)
    return truth


def trl(rng: np.random.Generator, out: Path) -> Truth:
    """TRL ``GRPOTrainer.log``: ``completions/completions_{global_step:05d}.parquet`` with step,
    prompt, completion, one column per reward function, advantage. ``num_iterations=2``: every
    generation batch is logged at two consecutive steps (the deque is not cleared), and counted
    once. Groups are consecutive rows; in the first batch a prompt is drawn twice in a row."""
    truth = Truth()
    d = out / "trl" / "completions"
    d.mkdir(parents=True)
    for gen, batch, r in _batches(rng, 200, (1, 2, 3), 12, 8, speed_steps=8):
        if gen == 1:
            batch[1] = batch[0]
        for j, i in enumerate(batch):
            truth.add(problem_text(int(i)), r[j])
        rf = r.astype(np.float64)
        adv = (rf - rf.mean(1, keepdims=True)) / (rf.std(1, keepdims=True) + 1e-4)
        table = {"prompt": np.repeat([problem_text(int(i)) for i in batch], 8).tolist(),
                 "completion": [_response(rng, int(batch[j // 8]), v) for j, v in
                                enumerate(r.ravel())],
                 "accuracy_reward": rf.ravel(), "advantage": adv.ravel()}
        for step in (2 * gen - 1, 2 * gen):
            pl.DataFrame({"step": [step] * r.size, **table}).write_parquet(
                d / f"completions_{step:05d}.parquet")
    return truth


def trl_one_prompt(rng: np.random.Generator, out: Path, folder: str = "trl-one-prompt",
                   num_iterations: int = 1, steps: int = 40) -> Truth:
    """TRL ``GRPOTrainer.log`` with ``per_device_train_batch_size=6``, ``num_generations=6`` on one
    process: one prompt x G = 6 per generation batch, one file per step. Right answers are written
    the same way every time, so an all-right group is six identical completions (advantage 0), and
    two steps drawing the same easy prompt give two equal files: real rows, a silent group each.
    With ``num_iterations=2`` each batch is logged at two consecutive steps (counted once)."""
    truth = Truth()
    d = out / folder / "completions"
    d.mkdir(parents=True)
    logit = difficulty(rng, 30)
    easy = int(np.argmax(logit))
    for gen in range(1, steps // num_iterations + 1):
        i = easy if gen in (7, 8) else int(rng.integers(30))  # the same easy prompt twice in a row
        r = rewards(rng, np.array([0.999 if gen in (7, 8) else p_at(logit[i:i + 1], gen)[0]]), 6)[0]
        if gen in (7, 8):
            r[:] = 1
        truth.add(problem_text(i), r)
        rf = r.astype(np.float64)
        table = {"prompt": [problem_text(i)] * 6, "completion": [_response(rng, i, v) for v in r],
                 "accuracy_reward": rf, "advantage": (rf - rf.mean()) / (rf.std() + 1e-4)}
        for step in range(num_iterations * (gen - 1) + 1, num_iterations * gen + 1):
            pl.DataFrame({"step": [step] * 6, **table}).write_parquet(d / f"completions_{step:05d}.parquet")
    return truth


def open_instruct(rng: np.random.Generator, out: Path, folder: str = "open-instruct",
                  filter_zero_std: bool = True) -> Truth:
    """open-instruct ``rl_utils._save_rollouts``: ``{run}_rollouts_{shard:06d}.jsonl`` beside
    ``{run}_metadata.jsonl``; RolloutRecord keys; rewards 0 / verification_reward 10; the
    default ``filter_zero_std_samples=True`` drops zero-std groups before the dump, so
    ``prompt_idx`` numbers the kept groups of the step. Without the filter every group is written,
    and ``dataset`` (``batch.datasets[i]``) is a string in the first steps and a list later, as in a
    real unfiltered dump."""
    truth = Truth()
    d = out / folder / "rollouts"
    d.mkdir(parents=True)
    run = "grpo_qwen3_rlzero"
    _jsonl(d / f"{run}_metadata.jsonl", [{"run_name": run, "git_commit": "e6c3044",
                                          "model_name": "Qwen/Qwen3-0.6B",
                                          "timestamp": "2026-08-20T22:05:01+00:00"}])
    rows = []
    for step, batch, r in _batches(rng, 120, (1, 2, 3, 4), 24, 8):
        kept = [(i, r[j]) for j, i in enumerate(batch) if 0 < r[j].sum() < 8 or not filter_zero_std]
        for g, (i, rr) in enumerate(kept):
            truth.add(str(int(i)), rr)
            tokens = [151644, 872, *(100 + (int(i) * 7 + t) % 900 for t in range(12)), 151645]
            adv = (rr - rr.mean()) / (rr.std() + 1e-8)
            dataset = "gsm8k" if filter_zero_std or step < 3 else ["gsm8k"]
            for s, c in enumerate(rr):
                rows.append({"step": step, "sample_idx": g * 8 + s, "prompt_idx": g,
                             "prompt_tokens": tokens, "response_tokens": [11, 22, 33],
                             "reward": 10.0 * float(c), "advantage": float(adv[s]),
                             "finish_reason": "stop", "dataset": dataset,
                             "ground_truth": [int(answer(i))], "request_info": None,
                             "logprobs": None})
    _jsonl(d / f"{run}_rollouts_{0:06d}.jsonl", rows)
    return truth


def prime_rl(rng: np.random.Generator, out: Path) -> Truth:
    """prime-rl ``FileMonitor.log_episodes`` of verifiers ``Episode.to_record()``:
    ``rollouts/step_{N}/train/{all,effective}/traces.jsonl`` (one line per episode) beside
    ``metrics.jsonl``. ``effective`` keeps the groups with a non-zero advantage."""
    truth = Truth()
    root = out / "prime-rl"
    metrics = []
    for step, batch, r in _batches(rng, 200, (0, 1, 2, 3), 16, 8, speed_steps=5):
        episodes, effective = [], []
        for j, i in enumerate(batch):
            truth.add(f"gsm8k-{int(i)}", r[j])
            gid = f"{rng.integers(1 << 62):016x}"
            for c in r[j]:
                ep = {"id": f"{rng.integers(1 << 62):016x}",
                      "env": {"id": "primeintellect/gsm8k", "name": "gsm8k"},
                      "task": {"type": "Task", "data": {"question": problem_text(int(i))},
                               "key": f"gsm8k-{int(i)}", "hash": f"{int(i) * 2654435761:x}"},
                      "group": {"id": gid},
                      "run": {"type": "train", "id": "run-1",
                              "work": {"type": "train", "step": step}},
                      "ok": True,
                      "traces": [{"version": 1, "id": f"{rng.integers(1 << 62):016x}",
                                  "task": {"type": "Task", "data": {}},
                                  "agent": {"config": {}, "name": "agent", "trainable": True},
                                  "rewards": {"correct_answer": {"score": float(c),
                                                                 "weight": 1.0}},
                                  "metrics": {"num_turns": 1.0}, "is_completed": True,
                                  "ok": True}]}
                episodes.append(ep)
                if 0 < r[j].sum() < 8:
                    effective.append(ep)
        base = root / "rollouts" / f"step_{step}" / "train"
        _jsonl(base / "all" / "traces.jsonl", episodes)
        _jsonl(base / "effective" / "traces.jsonl", effective)
        metrics.append({"step": step, "time": 1.7e9 + step, "reward/mean": float(r.mean())})
    _jsonl(root / "metrics.jsonl", metrics)
    return truth


def nemo_rl(rng: np.random.Generator, out: Path) -> Truth:
    """NeMo-RL ``Logger.log_batched_dict_as_jsonl`` from ``grpo_train``:
    ``{log_dir}/train_data_step{N}.jsonl``, every field a one-element list (microbatches of
    one) plus ``idx``; rows from ``repeat_interleave`` (a group = G consecutive lines); a
    ``val_data_step{N}.jsonl`` beside them."""
    truth = Truth()
    d = out / "nemo-rl" / "logs" / "exp_001"
    d.mkdir(parents=True)
    for step, batch, r in _batches(rng, 200, (1, 2, 3, 4), 16, 8):
        rows = []
        for j, i in enumerate(batch):
            truth.add(problem_text(int(i)), r[j])
            rows += [{"content": [[problem_text(int(i)), _response(rng, int(i), c)]],
                      "rewards": [float(c)], "input_lengths": [40],
                      "advantages": [[0.0]], "idx": len(rows) + s}
                     for s, c in enumerate(r[j])]
        _jsonl(d / f"train_data_step{step}.jsonl", rows)
    _jsonl(d / "val_data_step4.jsonl", [{"content": [[problem_text(0), "4"]], "rewards": [1.0],
                                         "idx": 0}])
    return truth


def areal(rng: np.random.Generator, out: Path) -> Truth:
    """AReaL ``WorkflowExecutor._dump_trajectory``:
    ``{fileroot}/logs/{user}/{exp}/{trial}/rollout/{tail_version}/{task_id}.jsonl``, one file
    per group, beside ``eval-rollout/``."""
    truth = Truth()
    root = out / "areal" / "logs" / "user" / "gsm8k-grpo" / "trial0"
    task_id = 0
    for version, batch, r in _batches(rng, 200, (1, 2, 3, 4), 12, 8):
        for j, i in enumerate(batch):
            truth.add(_chat(i), r[j])
            _jsonl(root / "rollout" / str(version) / f"{task_id}.jsonl", [
                {"task_id": task_id, "sample_idx": s, "seqlen": 120, "prompt_len": 40,
                 "head_version": version - 1 if s == 0 else version, "tail_version": version,
                 "reward": float(c), "prompt": _chat(i), "completion": _response(rng, int(i), c)}
                for s, c in enumerate(r[j])])
            task_id += 1
    _jsonl(root / "eval-rollout" / "4" / f"{task_id}.jsonl", [
        {"task_id": task_id, "sample_idx": 0, "seqlen": 90, "prompt_len": 40, "head_version": 4,
         "tail_version": 4, "reward": 1.0, "prompt": _chat(0), "completion": "4"}])
    return truth


def roll(rng: np.random.Generator, out: Path) -> Truth:
    """ROLL ``dump_rollout_to_specific_path``: ``rollout_dump_data.step_{N}.jsonl`` holding ONE
    JSON object of parallel lists (``COLUMMNS_CONFIG`` keys), ``global_step`` 0-based, groups
    concatenated (consecutive rows of one ``id``)."""
    truth = Truth()
    d = out / "roll" / "rollout_dump"
    d.mkdir(parents=True)
    for step, batch, r in _batches(rng, 200, (0, 1, 2, 3), 16, 8, speed_steps=5):
        data: dict[str, list] = {k: [] for k in ("global_step", "id", "source", "prompt",
                                                 "ground_truth", "tag", "domain", "responses",
                                                 "scores", "sampling_params")}
        for j, i in enumerate(batch):
            truth.add(f"math-{int(i)}", r[j])
            for c in r[j]:
                for key, value in (("global_step", step), ("id", f"math-{int(i)}"),
                                   ("source", "deepmath"), ("prompt", _chat(i)),
                                   ("ground_truth", str(answer(i))), ("tag", "math_rule"),
                                   ("domain", "math_rule"),
                                   ("responses", _response(rng, int(i), c)),
                                   ("scores", float(c)),
                                   ("sampling_params", json.dumps({"global_step": step}))):
                    data[key].append(value)
        (d / f"rollout_dump_data.step_{step}.jsonl").write_text(json.dumps(data) + "\n")
    return truth


def skyrl(rng: np.random.Generator, out: Path) -> Truth:
    """SkyRL ``dump_per_dataset_eval_results``:
    ``dumped_evals/global_step_{N}_evals/{data_source}.jsonl`` (score a per-token list, reward
    on the last token) beside ``aggregated_results.jsonl``."""
    truth = Truth()
    logit = difficulty(rng, 80)
    for step in (10, 20):
        d = out / "skyrl" / "dumped_evals" / f"global_step_{step}_evals"
        d.mkdir(parents=True)
        for source, idx in (("gsm8k", range(0, 40)), ("math500", range(40, 80))):
            r = rewards(rng, p_at(logit[list(idx)], step), 4)
            rows = []
            for j, i in enumerate(idx):
                truth.add(_chat(i), r[j])
                rows += [{"input_prompt": _chat(i), "output_response": _response(rng, i, c),
                          "score": [0.0, 0.0, float(c)], "stop_reason": "stop",
                          "env_class": "gsm8k", "env_extras": {"id": i},
                          "data_source": source} for c in r[j]]
            _jsonl(d / f"{source}.jsonl", rows)
        _jsonl(d / "aggregated_results.jsonl", [{"eval/all/avg_score": 0.4}])
    return truth


def _zip_member(name: str, data: bytes, zstd: bool, offset: int) -> tuple[bytes, bytes]:
    """(local header + data, central directory entry) of one zip member, stored or zstd."""
    import struct
    import zlib

    crc = zlib.crc32(data)
    body = data
    method = 0
    if zstd:
        import zstandard

        body = zstandard.ZstdCompressor().compress(data)
        method = 93
    fname = name.encode()
    local = struct.pack("<IHHHHHIIIHH", 0x04034B50, 63, 0, method, 0, 0x21, crc, len(body),
                        len(data), len(fname), 0) + fname + body
    central = struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 63, 63, 0, method, 0, 0x21, crc,
                          len(body), len(data), len(fname), 0, 0, 0, 0, 0, offset) + fname
    return local, central


def _write_zip(path: Path, members: dict[str, bytes], zstd: bool) -> None:
    import struct

    parts, central, offset = [], [], 0
    for name, data in members.items():
        local, entry = _zip_member(name, data, zstd, offset)
        parts.append(local)
        central.append(entry)
        offset += len(local)
    cd = b"".join(central)
    end = struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, len(members), len(members), len(cd),
                      offset, 0)
    path.write_bytes(b"".join(parts) + cd + end)


def inspect_ai(rng: np.random.Generator, out: Path) -> Truth:
    """inspect_ai ``EvalRecorder``: ``logs/*.eval`` zips with ``header.json`` and
    ``samples/{id}_epoch_{n}.json`` (scores {scorer: {value: C/I}}); members zstd-compressed
    (method 93) as inspect writes them, one log stored uncompressed."""
    truth = Truth()
    d = out / "inspect_ai" / "logs"
    d.mkdir(parents=True)
    logit = difficulty(rng, 60)
    for n, (task, idx, zstd) in enumerate((("gsm8k", range(0, 30), True),
                                           ("math", range(30, 60), False))):
        r = rewards(rng, p_at(logit[list(idx)], 0), 5)
        members = {"header.json": json.dumps({"version": 2, "status": "success",
                                              "eval": {"task": task, "model": "m"}}).encode()}
        for j, i in enumerate(idx):
            truth.add(f"{task} | {i}", r[j])
            for e, c in enumerate(r[j], start=1):
                members[f"samples/{i}_epoch_{e}.json"] = json.dumps({
                    "id": i, "epoch": e, "input": problem_text(i), "target": str(answer(i)),
                    "scores": {"match": {"value": "C" if c else "I",
                                         "answer": str(answer(i))}}}).encode()
        members["summaries.json"] = b"[]"
        _write_zip(d / f"2026-08-22T12-00-0{n}+00-00_{task}_abc{n}.eval", members, zstd)
    return truth


def lm_eval(rng: np.random.Generator, out: Path) -> None:
    """lm-evaluation-harness ``EvaluationTracker.save_results_samples``:
    ``{output_path}/{model}/samples_{task}_{date}.jsonl``, one line per (doc, filter) with a
    single score even with repeats: sigmaudit refuses it."""
    d = out / "lm-eval" / "results" / "Qwen__Qwen3-0.6B"
    rows = [{"doc_id": i, "doc": {"question": problem_text(i)}, "target": str(answer(i)),
             "arguments": {"gen_args_0": {"arg_0": problem_text(i)}},
             "resps": [[f"{answer(i)}", "7", "8", "9"]],
             "filtered_resps": [f"{answer(i)}"], "filter": "strict-match",
             "metrics": ["exact_match"], "doc_hash": f"{i:x}",
             "exact_match": float(rng.random() < 0.5)} for i in range(20)]
    _jsonl(d / "samples_gsm8k_2026-08-22T12-00-00.jsonl", rows)


FRAMEWORKS = {"verl": verl, "verl-v1": verl_v1, "trl": trl, "trl-one-prompt": trl_one_prompt,
              "open-instruct": open_instruct,
              "prime-rl": prime_rl, "nemo-rl": nemo_rl, "areal": areal, "roll": roll,
              "skyrl": skyrl, "inspect_ai": inspect_ai}
"""Folder name -> generator; each gets its own seeded generator (so one can be regenerated
alone) and returns the :class:`Truth` of what it wrote."""


ADDED = ("trl-one-prompt",)
"""Generators added later, seeded after the first ones (so the older folders keep their bytes)."""


def make_framework(name: str, out: Path) -> Truth:
    """Write ``out/<name>/...`` and return its truth."""
    first = sorted(n for n in FRAMEWORKS if n not in ADDED)
    index = first.index(name) if name in first else len(first) + ADDED.index(name)
    return FRAMEWORKS[name](np.random.default_rng([SEED, index]), out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parents[1]
                        / "sample_logs")
    out = parser.parse_args().out
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    rng = np.random.default_rng(SEED)
    for make in (rollouts, long_csv, grouped_parquet, counts_csv):
        make(rng, out)
    for name in FRAMEWORKS:
        make_framework(name, out)
    lm_eval(np.random.default_rng(SEED), out)
    total = sum(f.stat().st_size for f in out.rglob("*") if f.is_file())
    print(f"wrote {out} ({total / 1e6:.2f} MB)")


if __name__ == "__main__":
    main()
