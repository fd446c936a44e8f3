"""Generate realistic rollout logs for the benchmarks (written under ``benchmarks/data/``).

Long layout: one row per answer with ``step`` (int64), ``prompt_id`` (string) and ``reward``
(float64 0/1). Each step samples ``--prompts`` prompts (without replacement) from a pool of
``--pool`` distinct prompts, each answered ``--group`` times; a prompt's pass rate p is fixed
for the run and drawn from a mix of never-solved, always-solved and Beta(0.7, 0.9) prompts.
Prompt ids are long strings (like real dataset ids: ``"openr1-math/train/000123-<hex>"``).

    python benchmarks/gen_logs.py --steps 1000      # 8.2M rows  -> data/long_1000.parquet
    python benchmarks/gen_logs.py --steps 10000     # 82M rows   -> data/long_10000.parquet
    python benchmarks/gen_logs.py --steps 250 --jsonl   # 2M rows, verl-style per-step dumps
    python benchmarks/gen_logs.py --verl --out /tmp/sigmaudit-bench   # 819,200 lines, 2.7 GB -> verl_200/
    python benchmarks/gen_logs.py --steps 1000 --out /tmp/sigmaudit-bench   # data anywhere (keep it out of git)
    python benchmarks/gen_logs.py --steps 40 --trl      # 328k rows, TRL completions_{step}.parquet files

``--verl`` writes what verl's ``_dump_generations`` (``trainer.rollout_data_dir``) writes for a
DAPO-style run: ``{step}.jsonl`` files whose lines hold ``input`` (the chat-templated prompt,
~350 characters), ``output`` (the completion, ~3,000 characters with newlines, LaTeX and some
non-ASCII), ``gts``, ``score`` (±1.0), ``step``, then the reward extras ``acc`` (bool) and
``request_id``, in that key order, ``json.dumps(..., ensure_ascii=False)`` per line. A step's
lines are shuffled (verl reorders a batch), so a group's answers are not contiguous.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

DATA = Path(__file__).resolve().parent / "data"


def prompt_pool(pool: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """(ids, pass rates) of the prompt pool."""
    salt = rng.integers(0, 2**32, size=pool, dtype=np.uint64)
    ids = np.array([f"openr1-math/train/{i:06d}-{s:08x}" for i, s in enumerate(salt)], dtype=object)
    kind = rng.choice(3, size=pool, p=[0.25, 0.15, 0.60])
    p = np.where(kind == 0, 0.0, np.where(kind == 1, 1.0, rng.beta(0.7, 0.9, size=pool)))
    return ids, p


def step_table(step: int, ids: np.ndarray, p: np.ndarray, prompts: int, group: int,
               rng: np.random.Generator) -> pa.Table:
    """Rows of one training step."""
    chosen = rng.choice(ids.size, size=prompts, replace=False)
    idx = np.repeat(chosen, group)
    reward = (rng.random(idx.size) < p[idx]).astype(np.float64)
    dict_ids = pa.array(ids, type=pa.string())
    return pa.table({
        "step": pa.array(np.full(idx.size, step, dtype=np.int64)),
        "prompt_id": dict_ids.take(pa.array(idx)),
        "reward": pa.array(reward),
    })


def write_parquet(path: Path, steps: int, prompts: int, group: int, pool: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    ids, p = prompt_pool(pool, rng)
    schema = pa.schema([("step", pa.int64()), ("prompt_id", pa.string()), ("reward", pa.float64())])
    tmp = path.with_suffix(".tmp")
    with pq.ParquetWriter(tmp, schema, compression="zstd") as writer:
        batch: list[pa.Table] = []
        for step in range(steps):
            batch.append(step_table(step, ids, p, prompts, group, rng))
            if len(batch) == 20:  # row groups of ~164k rows
                writer.write_table(pa.concat_tables(batch))
                batch = []
        if batch:
            writer.write_table(pa.concat_tables(batch))
    tmp.rename(path)


def write_jsonl(folder: Path, steps: int, prompts: int, group: int, pool: int, seed: int) -> None:
    """verl-style dumps: one ``<step>.jsonl`` per step with input/output/gts/score/step per line.

    ``input`` is the full prompt text (~250 characters, as verl dumps it), ``output`` a short
    stand-in for the completion."""
    rng = np.random.default_rng(seed)
    ids, p = prompt_pool(pool, rng)
    folder.mkdir(parents=True, exist_ok=True)
    template = ("<|im_start|>user\nSolve the following problem and put the final answer in "
                "\\boxed{{}}. Problem {pid}: let x be a real number such that ... find x.\n"
                "<|im_end|>\n<|im_start|>assistant\n")
    for step in range(steps):
        t = step_table(step, ids, p, prompts, group, rng)
        with open(folder / f"{step}.jsonl", "w") as fh:
            for pid, r in zip(t["prompt_id"].to_pylist(), t["reward"].to_pylist(), strict=True):
                row = {"input": template.format(pid=pid), "output": "The answer is 42.",
                       "gts": "42", "score": r, "step": step}
                fh.write(json.dumps(row) + "\n")


def _text_corpus(rng: np.random.Generator, size: int = 1 << 20) -> str:
    """~1 MB of math-flavoured text to cut completions from (escapes and non-ASCII included)."""
    words = ["Let", "x", "be", "the", "number", "of", "ways", "so", "we", "get", "\\frac{a}{b}",
             "\\sqrt{2}", "=", "+", "therefore", "\n", "\n\n", "Step", "1:", "2:", "compute", "≤",
             "π", "sum", "\\boxed{42}", "\"quoted\"", "integer", "prime", "mod", "7", "(x+1)^2",
             "which", "gives", "check", "Wait,", "case", "∑", "n", "k", "\t", "so", "is", "true."]
    picks = rng.integers(0, len(words), size=size // 5)
    return " ".join(words[i] for i in picks)[:size]


def write_verl(folder: Path, steps: int, prompts: int, group: int, pool: int, seed: int) -> None:
    """verl ``_dump_generations`` files with full prompt and completion text (see the module doc)."""
    rng = np.random.default_rng(seed)
    ids, p = prompt_pool(pool, rng)
    corpus = _text_corpus(rng)
    span = len(corpus) - 6000
    offsets = rng.integers(0, span, size=pool)
    template = ("<|im_start|>system\nPlease reason step by step, and put your final answer within "
                "\\boxed{{}}.<|im_end|>\n<|im_start|>user\nProblem {pid}: {body}<|im_end|>\n"
                "<|im_start|>assistant\n")
    prompts_text = [template.format(pid=pid, body=corpus[o:o + 190]) for pid, o in zip(ids, offsets, strict=True)]
    answers = [str(int(o) % 1000) for o in offsets]
    folder.mkdir(parents=True, exist_ok=True)
    for step in range(1, steps + 1):
        chosen = rng.choice(ids.size, size=prompts, replace=False)
        idx = np.repeat(chosen, group)
        rng.shuffle(idx)
        right = rng.random(idx.size) < p[idx]
        starts = rng.integers(0, span, size=idx.size)
        lengths = np.clip(rng.normal(3000, 600, size=idx.size), 200, 5900).astype(int)
        rid = rng.integers(0, 2**63, size=(idx.size, 2), dtype=np.int64)
        lines = []
        for j, i in enumerate(idx):
            row = {"input": prompts_text[i], "output": corpus[starts[j]:starts[j] + lengths[j]],
                   "gts": answers[i], "score": 1.0 if right[j] else -1.0, "step": step,
                   "acc": bool(right[j]), "request_id": f"{rid[j, 0]:016x}{rid[j, 1]:016x}"}
            lines.append(json.dumps(row, ensure_ascii=False))
        tmp = folder / f"{step}.jsonl.tmp"
        with open(tmp, "w") as fh:
            fh.write("\n".join(lines) + "\n")
        tmp.rename(folder / f"{step}.jsonl")


def write_trl(folder: Path, steps: int, prompts: int, group: int, pool: int, seed: int) -> None:
    """TRL ``GRPOTrainer.log`` files: ``completions/completions_{step:05d}.parquet`` with ``step``,
    ``prompt``, ``completion``, ``accuracy_reward`` and ``advantage``; a group is ``group`` consecutive
    rows of one prompt (``RepeatSampler``), one generation batch per step (no re-logged batches)."""
    rng = np.random.default_rng(seed)
    ids, p = prompt_pool(pool, rng)
    out = folder / "completions"
    out.mkdir(parents=True, exist_ok=True)
    for step in range(1, steps + 1):
        chosen = rng.choice(ids.size, size=prompts, replace=False)
        idx = np.repeat(chosen, group)
        right = (rng.random(idx.size) < p[idx]).astype(np.float64)
        mean = right.reshape(prompts, group).mean(axis=1).repeat(group)
        table = pa.table({"step": pa.array(np.full(idx.size, step, dtype=np.int64)),
                          "prompt": pa.array(ids[idx].tolist(), pa.string()),
                          "completion": pa.array([f"answer {int(r)}" for r in right], pa.string()),
                          "accuracy_reward": pa.array(right), "advantage": pa.array(right - mean)})
        pq.write_table(table, out / f"completions_{step:05d}.parquet")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=1000)
    ap.add_argument("--prompts", type=int, default=512, help="prompts per step")
    ap.add_argument("--group", type=int, default=16, help="answers per prompt per step")
    ap.add_argument("--pool", type=int, default=50_000, help="distinct prompts")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--jsonl", action="store_true", help="verl-style per-step jsonl dumps (short text)")
    ap.add_argument("--verl", action="store_true",
                    help="verl rollout_data_dir dump with full text: 200 steps x 256 prompts x 16 by default")
    ap.add_argument("--trl", action="store_true",
                    help="TRL completions_{step}.parquet files (a framework reader restructures each file)")
    ap.add_argument("--out", type=Path, default=DATA, help="output folder (default benchmarks/data)")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    if args.verl:
        steps = 200 if args.steps == 1000 else args.steps
        prompts = 256 if args.prompts == 512 else args.prompts
        out = args.out / f"verl_{steps}"
        write_verl(out, steps, prompts, args.group, args.pool, args.seed)
    elif args.trl:
        out = args.out / f"trl_{args.steps}"
        write_trl(out, args.steps, args.prompts, args.group, args.pool, args.seed)
    elif args.jsonl:
        out = args.out / f"verl_{args.steps}"
        write_jsonl(out, args.steps, args.prompts, args.group, args.pool, args.seed)
    else:
        out = args.out / f"long_{args.steps}.parquet"
        write_parquet(out, args.steps, args.prompts, args.group, args.pool, args.seed)
    print(out)


if __name__ == "__main__":
    main()
