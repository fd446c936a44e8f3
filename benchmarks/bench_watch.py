"""What ``sigmaudit watch`` pays per poll and per completed step on a growing verl run.

    python benchmarks/bench_watch.py --steps 40 --prompts 128 -G 8

Writes a verl (legacy layout) dump, one ``{step}.jsonl`` per step, into a temp folder, then times in
this process (CPU seconds, ``time.process_time``; the machine is shared, so CPU is the figure to read):

- a full ``load_counts`` of the folder (what re-reading everything at every poll would cost);
- the follower's first poll (every file read once), a poll with nothing changed (stat only), and a
  poll after one more step's file appears (that file read);
- ``Watch.advance`` for the last step (its observed shares and the next-step forecast: a replay of the
  whole history, priors of earlier steps reused).

    python benchmarks/bench_watch.py --once 8000 12000 --prompts 16 -G 8

instead times whole commands on one long parquet log per step count (issue 36 item 12): ``watch --once``,
``scan`` and ``forecast`` as subprocesses, alternated over ``--rounds`` rounds, CPU seconds of the
children (user + system, ``resource.getrusage(RUSAGE_CHILDREN)``), the median per command and the ratios.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np


def write_run(folder: Path, steps: int, prompts: int, G: int, seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    pool = prompts * 4
    base = rng.normal(-1.0, 2.0, size=pool)
    for step in range(1, steps + 1):
        drawn = rng.choice(pool, size=prompts, replace=False)
        p = 1 / (1 + np.exp(-(base[drawn] + 0.05 * step)))
        right = rng.random((prompts, G)) < p[:, None]
        lines = [json.dumps({"input": f"Problem {i}: solve it.", "output": "...", "gts": "x",
                             "score": float(ok), "step": step, "acc": bool(ok)})
                 for i, row in zip(drawn, right, strict=True) for ok in row]
        (folder / f"{step}.jsonl").write_text("\n".join(lines) + "\n")


def cpu(fn):  # noqa: ANN001, ANN201
    t0 = time.process_time()
    out = fn()
    return time.process_time() - t0, out


def write_long(path: Path, steps: int, prompts: int, G: int, seed: int = 0) -> None:
    """A long parquet log: every prompt at every step, pass rates drifting slowly."""
    import polars as pl

    rng = np.random.default_rng(seed)
    base = rng.normal(-0.5, 1.5, size=prompts)
    step = np.repeat(np.arange(1, steps + 1), prompts * G)
    prompt = np.tile(np.repeat(np.arange(prompts), G), steps)
    p = 1 / (1 + np.exp(-(base[prompt] + 1e-4 * step)))
    pl.DataFrame({"step": step, "prompt_id": prompt.astype(str), "reward": (rng.random(p.size) < p).astype(float)}
                 ).write_parquet(path)


def child_cpu(argv: list[str]) -> float:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([sys.executable, "-m", "sigmaudit", *argv, "-q"], check=True, stdout=subprocess.DEVNULL)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def once(step_counts: list[int], prompts: int, G: int, rounds: int) -> None:
    print(f"whole commands, CPU s of the child (median of {rounds} alternated rounds), {prompts} prompts x G = {G}")
    print(f"{'steps':>7} {'scan':>8} {'forecast':>9} {'watch --once':>13} {'watch/scan':>11} {'forecast/scan':>14}")
    with tempfile.TemporaryDirectory() as tmp:
        for steps in step_counts:
            path = Path(tmp) / f"long_{steps}.parquet"
            write_long(path, steps, prompts, G)
            runs: dict[str, list[float]] = {"scan": [], "forecast": [], "watch": []}
            for _ in range(rounds):
                for name, argv in (("scan", ["scan", str(path)]), ("forecast", ["forecast", str(path)]),
                                   ("watch", ["watch", str(path), "--once"])):
                    runs[name].append(child_cpu(argv))
            med = {k: statistics.median(v) for k, v in runs.items()}
            print(f"{steps:>7,} {med['scan']:8.2f} {med['forecast']:9.2f} {med['watch']:13.2f} "
                  f"{med['watch'] / med['scan']:11.1f} {med['forecast'] / med['scan']:14.1f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--prompts", type=int, default=128)
    ap.add_argument("-G", type=int, default=8)
    ap.add_argument("--once", type=int, nargs="+", metavar="STEPS",
                    help="time watch --once, scan and forecast as commands on long logs of these step counts")
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    if args.once:
        once(args.once, args.prompts, args.G, args.rounds)
        return

    from sigmaudit.audits.watch import Watch
    from sigmaudit.loaders import load_counts
    from sigmaudit.loaders.follow import Follower

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "rollout_data"
        folder.mkdir()
        write_run(folder, args.steps, args.prompts, args.G)
        last = folder / f"{args.steps}.jsonl"
        held = last.read_bytes()
        last.unlink()
        rows = (args.steps - 1) * args.prompts * args.G
        full, _ = cpu(lambda: load_counts([folder]))
        follower = Follower([str(folder)])
        first, snap = cpu(follower.poll)
        idle, _ = cpu(follower.poll)
        last.write_bytes(held)
        grown, snap = cpu(follower.poll)
        watch = Watch()
        watch.advance(snap.per_group.filter(snap.per_group["step"] < args.steps - 1), final=True)
        step_cost, reports = cpu(lambda: watch.advance(snap.per_group, final=False))
        follower.close()
    print(f"run: {args.steps} steps x {args.prompts} prompts x G = {args.G} ({rows:,} lines before the last step)")
    print(f"{'what':58} {'cpu s':>8}")
    for name, value in (("full load_counts of the folder (re-reading everything)", full),
                        ("follower: first poll (every file read)", first),
                        ("follower: poll, nothing changed", idle),
                        ("follower: poll, one new step file", grown),
                        (f"watch: step {reports[-1].step} completed (shares + next-step forecast)", step_cost)):
        print(f"{name:58} {value:8.3f}")


if __name__ == "__main__":
    main()
