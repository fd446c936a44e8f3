"""Generate realistic rollout logs for the benchmarks (written under ``benchmarks/data/``).

Long layout: one row per answer with ``step`` (int64), ``prompt_id`` (string) and ``reward``
(float64 0/1). Each step samples ``--prompts`` prompts (without replacement) from a pool of
``--pool`` distinct prompts, each answered ``--group`` times; a prompt's pass rate p is fixed
for the run and drawn from a mix of never-solved, always-solved and Beta(0.7, 0.9) prompts.
Prompt ids are long strings (like real dataset ids: ``"openr1-math/train/000123-<hex>"``).

    python benchmarks/gen_logs.py --steps 1000      # 8.2M rows  -> data/long_1000.parquet
    python benchmarks/gen_logs.py --steps 10000     # 82M rows   -> data/long_10000.parquet
    python benchmarks/gen_logs.py --steps 250 --jsonl   # 2M rows, verl-style per-step dumps
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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=1000)
    ap.add_argument("--prompts", type=int, default=512, help="prompts per step")
    ap.add_argument("--group", type=int, default=16, help="answers per prompt per step")
    ap.add_argument("--pool", type=int, default=50_000, help="distinct prompts")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--jsonl", action="store_true", help="verl-style per-step jsonl dumps")
    args = ap.parse_args()
    DATA.mkdir(parents=True, exist_ok=True)
    if args.jsonl:
        out = DATA / f"verl_{args.steps}"
        write_jsonl(out, args.steps, args.prompts, args.group, args.pool, args.seed)
    else:
        out = DATA / f"long_{args.steps}.parquet"
        write_parquet(out, args.steps, args.prompts, args.group, args.pool, args.seed)
    print(out)


if __name__ == "__main__":
    main()
