"""Generate the bundled sample logs in ``sample_logs/`` (fixed seed, reproducible).

Every prompt gets a true success probability from a realistic difficulty mix (many never
solved, some always solved, a spread in between) that improves slowly over training steps;
each logged group draws k ~ Binomial(G, p). One file per supported layout and trainer format:

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


def verl(rng: np.random.Generator, out: Path) -> None:
    """verl ``_dump_generations``: {step}.jsonl, rows shuffled within a step, DAPO ±1 score."""
    d = out / "verl"
    d.mkdir()
    logit = difficulty(rng, 300)
    for step in (1, 2, 3, 4, 5):
        batch = rng.choice(300, size=48, replace=False)
        r = rewards(rng, p_at(logit[batch], step * 4), 8)
        lines = []
        for j, i in enumerate(batch):
            for c in r[j]:
                pred = str(answer(i)) if c else str(int(rng.integers(0, 40)))
                lines.append({"input": f"<|user|>{problem_text(i)}<|assistant|>",
                              "output": f"... so the answer is \\boxed{{{pred}}}",
                              "gts": str(answer(i)), "score": 1.0 if c else -1.0,
                              "step": step, "acc": bool(c), "pred": pred})
        order = rng.permutation(len(lines))
        with open(d / f"{step}.jsonl", "w") as fh:
            fh.writelines(json.dumps(lines[o]) + "\n" for o in order)


def trl(rng: np.random.Generator, out: Path) -> None:
    """TRL GRPOTrainer: completions/completions_{step:05d}.parquet, 16 prompts x G=8 a step."""
    d = out / "trl" / "completions"
    d.mkdir(parents=True)
    logit = difficulty(rng, 200)
    for step in (10, 20, 30, 40):
        batch = rng.choice(200, size=16, replace=False)
        r = rewards(rng, p_at(logit[batch], step), 8).astype(np.float64)
        adv = (r - r.mean(1, keepdims=True)) / (r.std(1, keepdims=True) + 1e-4)
        pl.DataFrame({
            "step": [str(step)] * r.size if step == 10 else [step] * r.size,
            "prompt": np.repeat([problem_text(int(i)) for i in batch], 8),
            "completion": [f"<think>{'...' * int(rng.integers(5, 40))}</think> "
                           f"{answer(int(batch[j // 8])) if v else int(rng.integers(0, 40))}"
                           for j, v in enumerate(r.ravel())],
            "accuracy_reward": r.ravel(), "advantage": adv.ravel(),
        }).write_parquet(d / f"completions_{step:05d}.parquet")


def open_instruct(rng: np.random.Generator, out: Path) -> None:
    """open-instruct rollout shards: step, prompt_idx, reward; a step split over 2 shards."""
    d = out / "open-instruct"
    d.mkdir()
    logit = difficulty(rng, 256)
    for shard in (0, 1):
        rows = []
        for step in (1, 2, 3):
            batch = rng.choice(256, size=16, replace=False)
            r = rewards(rng, p_at(logit[batch], step * 5), 16)
            rows += [{"step": step, "prompt_idx": int(i), "sample_idx": s,
                      "dataset": "gsm8k", "reward": float(r[j, s]),
                      "finish_reason": "stop"} for j, i in enumerate(batch) for s in range(16)]
        with open(d / f"rollouts_shard_{shard:03d}.jsonl", "w") as fh:
            fh.writelines(json.dumps(row) + "\n" for row in rows)


def prime_rl(rng: np.random.Generator, out: Path) -> None:
    """prime-rl traces.jsonl: one group per line, nested group.id, traces[].reward."""
    d = out / "prime-rl"
    d.mkdir()
    logit = difficulty(rng, 200)
    with open(d / "traces.jsonl", "w") as fh:
        for step in (0, 1, 2, 3):
            batch = rng.choice(200, size=32, replace=False)
            r = rewards(rng, p_at(logit[batch], step * 5), 8)
            for j, i in enumerate(batch):
                fh.write(json.dumps({
                    "step": step,
                    "group": {"id": f"{step}-{j}", "example_id": int(i)},
                    "traces": [{"reward": float(v), "num_tokens": int(rng.integers(80, 900))}
                               for v in r[j]]}) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parents[1]
                        / "sample_logs")
    out = parser.parse_args().out
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    rng = np.random.default_rng(SEED)
    for make in (rollouts, long_csv, grouped_parquet, counts_csv, verl, trl, open_instruct,
                 prime_rl):
        make(rng, out)
    total = sum(f.stat().st_size for f in out.rglob("*") if f.is_file())
    print(f"wrote {out} ({total / 1e6:.2f} MB)")


if __name__ == "__main__":
    main()
