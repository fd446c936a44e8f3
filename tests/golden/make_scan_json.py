"""Write the fast-path fixtures (``tests/fixtures/fastpath/``) and the golden ``scan -f json`` outputs
(``tests/golden/scan_json/``) that ``tests/test_scan_golden.py`` compares against.

The golden files were produced by the code *before* the reading fast path (issue 13) so the test
pins today's output: rerun this script only for a deliberate change of output, and say so in
the commit message.

    PYTHONPATH=$PWD python tests/golden/make_scan_json.py [--fixtures-only | --golden-only]

It also writes ``tests/golden/scan_table/`` (the terminal table of every sample log).
"""

from __future__ import annotations

import gzip
import json
import random
import subprocess
import sys
from pathlib import Path

import polars as pl

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "fastpath"
GOLDEN = ROOT / "tests" / "golden" / "scan_json"


def _verl_lines(rng: random.Random, step: int, prompts: int, group: int, acc: bool,
                order: tuple[str, ...] | None = None, nulls: float = 0.0) -> list[str]:
    lines = []
    for _ in range(prompts * group):
        pid = rng.randrange(3 * prompts)
        right = rng.random() < (pid % 7) / 6
        row = {"input": f"<|im_start|>user\nProblem {pid}: compute ∑ x_{pid}.\n<|im_end|>",
               "output": "Let x = \\frac{1}{2}.\n" * rng.randrange(1, 4), "gts": str(pid),
               "score": None if rng.random() < nulls else (1.0 if right else -1.0), "step": step}
        if acc:
            row["acc"] = right
            row["request_id"] = f"{rng.getrandbits(64):016x}"
        if order:
            row = {k: row[k] for k in order if k in row}
        lines.append(json.dumps(row, ensure_ascii=False))
    return lines


def write_fixtures() -> None:
    rng = random.Random(13)
    verl = FIXTURES / "verl_mixed"
    verl.mkdir(parents=True, exist_ok=True)
    # 1.jsonl: no acc (reward from score), some null scores; 2.jsonl and 3.jsonl: acc, and 3 reorders
    # the keys and repeats step 2 (groups split over files)
    (verl / "1.jsonl").write_text("\n".join(_verl_lines(rng, 1, 12, 8, acc=False, nulls=0.05)) + "\n")
    (verl / "2.jsonl").write_text("\n".join(_verl_lines(rng, 2, 12, 8, acc=True)) + "\n")
    order = ("step", "acc", "score", "request_id", "gts", "output", "input")
    (verl / "3.jsonl").write_text("\n".join(_verl_lines(rng, 2, 12, 4, acc=True, order=order)) + "\n")
    acc = FIXTURES / "verl_acc"
    acc.mkdir(parents=True, exist_ok=True)
    for step in (1, 2, 10):
        (acc / f"{step}.jsonl").write_text("\n".join(_verl_lines(rng, step, 16, 8, acc=True)) + "\n")
    with gzip.open(FIXTURES / "verl_step.jsonl.gz", "wt", encoding="utf-8") as fh:
        fh.write("\n".join(_verl_lines(rng, 5, 10, 8, acc=True)) + "\n")
    # a later file's score is written as integers; a malformed line deep in a second file
    types = FIXTURES / "verl_types"
    types.mkdir(parents=True, exist_ok=True)
    (types / "1.jsonl").write_text("\n".join(_verl_lines(rng, 1, 10, 8, acc=False)) + "\n")
    ints = [line.replace('"score": 1.0', '"score": 1').replace('"score": -1.0', '"score": 0')
            for line in _verl_lines(rng, 2, 10, 8, acc=False)]
    (types / "2.jsonl").write_text("\n".join(ints) + "\n")
    bad = FIXTURES / "verl_badline"
    bad.mkdir(parents=True, exist_ok=True)
    (bad / "1.jsonl").write_text("\n".join(_verl_lines(rng, 1, 10, 8, acc=True)) + "\n")
    lines = _verl_lines(rng, 2, 10, 8, acc=True)
    lines[49] = lines[49][:-20]
    (bad / "2.jsonl").write_text("\n".join(lines) + "\n")
    # generic long jsonl: integer prompt ids, a run key, integer rewards, a few null steps/rewards
    rows = []
    for i in range(600):
        row = {"run": "ab"[i % 2], "prompt_id": rng.randrange(40), "step": i // 100,
               "reward": rng.randrange(2), "text": "x" * rng.randrange(50)}
        if i % 97 == 0:
            del row["step"]
        if i % 89 == 0:
            row["reward"] = None
        rows.append(json.dumps(row))
    (FIXTURES / "long_mixed.jsonl").write_text("\n".join(rows) + "\n")
    # non-binary scores (needs --threshold)
    rows = [json.dumps({"input": f"q{i % 9}", "output": "o", "gts": "1", "score": round(rng.random(), 2),
                        "step": i // 36}) for i in range(144)]
    (FIXTURES / "verl_graded.jsonl").write_text("\n".join(rows) + "\n")
    # parquet: string prompts with nulls, a run column, steps; integer prompt ids
    n = 2000
    frame = pl.DataFrame({
        "step": [i // 200 for i in range(n)],
        "run": ["r1" if i % 3 else "r2" for i in range(n)],
        "prompt_id": [None if i % 151 == 0 else f"task/{rng.randrange(60):04d}" for i in range(n)],
        "reward": [None if i % 83 == 0 else float(rng.random() < 0.4) for i in range(n)],
    })
    frame.write_parquet(FIXTURES / "long_run.parquet")
    frame.with_columns(pl.col("prompt_id").str.slice(5).cast(pl.Int64)).drop("run").write_parquet(
        FIXTURES / "long_int_prompt.parquet")
    frame.sample(fraction=1.0, shuffle=True, seed=3).write_parquet(FIXTURES / "long_shuffled.parquet",
                                                                  row_group_size=300)


CASES: dict[str, list[str]] = {
    "sample_counts": ["sample_logs/counts.csv"],
    "sample_grouped": ["sample_logs/grouped.parquet"],
    "sample_long_csv": ["sample_logs/long.csv"],
    "sample_rollouts": ["sample_logs/rollouts.parquet"],
    "sample_open_instruct": ["sample_logs/open-instruct"],
    "sample_prime_rl": ["sample_logs/prime-rl"],
    "sample_trl": ["sample_logs/trl"],
    "sample_trl_one_prompt": ["sample_logs/trl-one-prompt"],
    "sample_verl": ["sample_logs/verl"],
    "sample_verl_score": ["sample_logs/verl", "--reward-col", "score", "--threshold", "0.5"],
    "sample_all": ["sample_logs/verl", "sample_logs/open-instruct"],
    "sample_verl_v1": ["sample_logs/verl-v1"],
    "sample_nemo_rl": ["sample_logs/nemo-rl"],
    "sample_areal": ["sample_logs/areal"],
    "sample_roll": ["sample_logs/roll"],
    "sample_skyrl": ["sample_logs/skyrl"],
    "sample_inspect_ai": ["sample_logs/inspect_ai"],
    "sample_lm_eval": ["sample_logs/lm-eval"],
    "sample_dapo_series": ["sample_logs/dapo_fig3b_allcorrect.csv"],
    "fast_verl_mixed": ["tests/fixtures/fastpath/verl_mixed"],
    "fast_verl_acc": ["tests/fixtures/fastpath/verl_acc"],
    "fast_verl_acc_glob": ["tests/fixtures/fastpath/verl_acc/1*.jsonl"],
    "fast_verl_prompt_col": ["tests/fixtures/fastpath/verl_acc", "--prompt-col", "gts"],
    "fast_verl_types": ["tests/fixtures/fastpath/verl_types"],
    "fast_verl_badline": ["tests/fixtures/fastpath/verl_badline"],
    "fast_verl_gz": ["tests/fixtures/fastpath/verl_step.jsonl.gz"],
    "fast_long_mixed": ["tests/fixtures/fastpath/long_mixed.jsonl"],
    "fast_long_mixed_cols": ["tests/fixtures/fastpath/long_mixed.jsonl", "--prompt-col", "prompt_id",
                             "--step-col", "step"],
    "fast_verl_graded": ["tests/fixtures/fastpath/verl_graded.jsonl"],
    "fast_verl_graded_t": ["tests/fixtures/fastpath/verl_graded.jsonl", "--threshold", "0.5"],
    "fast_long_run": ["tests/fixtures/fastpath/long_run.parquet"],
    "fast_long_int_prompt": ["tests/fixtures/fastpath/long_int_prompt.parquet"],
    "fast_long_shuffled": ["tests/fixtures/fastpath/long_shuffled.parquet"],
    "fast_long_run_prompt_col": ["tests/fixtures/fastpath/long_run.parquet", "--prompt-col", "prompt_id"],
}
CASES.update({f"bad_{p.stem}": [f"tests/fixtures/bad/{p.name}"]
              for p in sorted((ROOT / "tests" / "fixtures" / "bad").iterdir())})


def run_case(args: list[str]) -> dict[str, object]:
    """Exit code, parsed JSON (or None) and stderr of ``sigmaudit scan ARGS -f json`` from ROOT."""
    proc = subprocess.run([sys.executable, "-m", "sigmaudit", "scan", *args, "-f", "json"], cwd=ROOT,
                          capture_output=True, text=True, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin",
                                                               "COLUMNS": "200"})
    return {"args": args, "exit": proc.returncode, "json": json.loads(proc.stdout) if proc.stdout.strip() else None,
            "stderr": proc.stderr}


TABLES = ROOT / "tests" / "golden" / "scan_table"


def write_table(name: str, args: list[str]) -> None:
    """The terminal table (and stderr) of ``sigmaudit scan ARGS`` at 200 columns, as
    ``tests/test_scan_golden.py::test_scan_table_unchanged`` reads it."""
    proc = subprocess.run([sys.executable, "-m", "sigmaudit", "scan", *args, "--full"], cwd=ROOT, capture_output=True,
                          text=True, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "COLUMNS": "200"})
    (TABLES / f"{name}.txt").write_text(proc.stdout + "--stderr--\n" + proc.stderr)


def main() -> None:
    if "--golden-only" not in sys.argv:  # the gzip fixtures carry a timestamp: rewrite them only when asked
        write_fixtures()
    if "--fixtures-only" in sys.argv:
        return
    GOLDEN.mkdir(parents=True, exist_ok=True)
    for name, args in CASES.items():
        result = run_case(args)
        (GOLDEN / f"{name}.json").write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n")
        print(name, result["exit"], result["stderr"].strip().splitlines()[-1:] if result["stderr"] else "")
        if name.startswith("sample_"):
            write_table(name, args)


if __name__ == "__main__":
    main()
