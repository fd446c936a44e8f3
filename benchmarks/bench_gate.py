"""What the gate and its intervals cost: user CPU seconds of whole ``sigmaudit`` runs (issue 24 item 5).

    python benchmarks/bench_gate.py --data /tmp/sigmaudit-bench [--before /tmp/fast-before] [--repeat 3]

Runs each command below in a fresh interpreter under ``/usr/bin/time`` and prints its user CPU seconds
(the machine is shared, so wall time says little); with ``--before DIR`` (another checkout, e.g.
``git worktree add --detach /tmp/fast-before <commit>``) every command alternates between that tree and
this one, and the least of ``--repeat`` runs of each is printed. ``--data`` holds the generated logs
(``python benchmarks/gen_logs.py --steps 1000 --out DIR`` for long_1000.parquet, 8.2M rows, and
``--steps 49`` for long_49.parquet, 402k rows); commands whose log is missing are skipped.

- scan vs check with intervals (200 replicates) on the sample log and on the 402k-row log;
- ``check --by run`` on evalperf (34 runs): the silent gate at the logged n (no prior needed) and with
  model-based limits (every run's prior refitted 200 times);
- the prior fit alone on the 8.2M-row log (in-process: ``Corpus.prior`` on the loaded counts).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EVALPERF = "tests/data/real/evalperf_per_task_pass_rates.csv"
MODEL_LIMITS = ["--max-never-solved", "0.1", "--max-extreme-share", "0.5", "--min-fidelity", "0.5"]
FIT = ("import sys, time; from sigmaudit.loaders import load_counts; from sigmaudit.audits import corpus_of; "
       "c = corpus_of(load_counts([sys.argv[1]])); t = time.process_time(); c.prior; "
       "print(f'{time.process_time() - t:.3f}', file=sys.stderr)")


def commands(data: Path) -> list[tuple[str, list[str], Path | None]]:
    sample, mid, big = ROOT / "sample_logs" / "rollouts.parquet", data / "long_49.parquet", data / "long_1000.parquet"
    gate = ["-G", "8", "--max-silent", "0.7", "-f", "json", "-o", os.devnull, "-q"]
    return [
        ("scan sample_logs/rollouts.parquet", ["scan", str(sample), "-f", "json", "-o", os.devnull, "-q"], sample),
        ("check (intervals) sample log", ["check", str(sample), *gate, "--basis", "model", *MODEL_LIMITS], sample),
        ("scan long_49 (402k rows)", ["scan", str(mid), "-f", "json", "-o", os.devnull, "-q"], mid),
        ("check (intervals) long_49", ["check", str(mid), *gate, "--basis", "model", *MODEL_LIMITS], mid),
        ("check --by run evalperf (silent)", ["check", EVALPERF, "--by", "run", *gate], None),
        ("check --by run evalperf (model limits)", ["check", EVALPERF, "--by", "run", *gate, *MODEL_LIMITS], None),
        ("scan long_1000 (8.2M rows)", ["scan", str(big), "-f", "json", "-o", os.devnull, "-q"], big),
        ("prior fit alone, long_1000", ["-c", FIT, str(big)], big),
    ]


def user_seconds(tree: Path, args: list[str]) -> float:
    env = dict(os.environ, PYTHONPATH=str(tree))
    argv = [sys.executable, *args] if args[0] == "-c" else [sys.executable, "-m", "sigmaudit", *args]
    proc = subprocess.run(["/usr/bin/time", "-f", "TIME %U", *argv], cwd=tree, env=env, capture_output=True,
                          text=True, check=False)
    lines = [line for line in proc.stderr.splitlines() if line.startswith("TIME ")]
    if args[0] == "-c":  # the fit's own CPU seconds, printed by the snippet
        return float(proc.stderr.strip().splitlines()[0])
    return float(lines[-1].split()[1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=ROOT / "benchmarks" / "data")
    ap.add_argument("--before", type=Path, default=None)
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    trees = [("after", ROOT)] + ([("before", a.before)] if a.before else [])
    for label, args, needs in commands(a.data):
        if needs is not None and not needs.exists():
            print(f"{label}: skipped ({needs} missing)")
            continue
        best: dict[str, float] = {}
        for _ in range(a.repeat):
            for name, tree in reversed(trees):  # alternate: before, after, before, after, ...
                best[name] = min(best.get(name, float("inf")), user_seconds(tree, args))
        print(f"{label}: " + ", ".join(f"{name} {best[name]:.2f} s" for name, _ in reversed(trees)), flush=True)


if __name__ == "__main__":
    main()
