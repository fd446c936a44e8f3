"""Issue 45's figures in one alternated run: sigmaudit against its reference on each workload, as ratios.

    B=/tmp/sigmaudit-bench
    python benchmarks/gen_logs.py --verl --out $B                # verl_200/: 200 files, 819,200 lines, 2.9 GB
    python benchmarks/gen_logs.py --steps 1000 --out $B          # long_1000.parquet: 8.2M rows
    python benchmarks/gen_logs.py --steps 10000 --out $B         # long_10000.parquet: 82M rows
    python benchmarks/bench_ratios.py --data $B --rounds 3 [--before DIR] [--only verl,watch-8000]

Workloads (the reference in brackets):

- ``verl``: ``scan verl_200 -f json`` [DuckDB's hand-written query, ``baselines.py duckdb``];
- ``long-1000``, ``long-10000``: ``scan`` of the 8.2M- and 82M-row parquet logs [DuckDB];
- ``sample-check``: ``check sample_logs/rollouts.parquet --max-silent 0.9`` (terminal output) [DuckDB on it],
  and its floor (``FLOORS``): a process that only imports numpy, Polars, Typer and Rich;
- ``watch-2000``, ``watch-8000``, ``watch-12000``: ``watch LOG --once`` [``scan`` of the same log], long logs of
  16 prompts x G = 8 at every step (``bench_watch.write_long``, written into ``--data`` once).

Each round runs every workload's commands in turn (sigmaudit, the reference, and with ``--before DIR`` the
same sigmaudit command from the checkout DIR), the order flipped every other round; the table shows medians
of wall time, CPU time (user + sys of the process and its children) and peak memory (``bench.measure``), the
wall and CPU ratios to the reference, and ``watch-12000 / watch-8000``. The load average is printed at the
start and the end: the machine is shared, so read the CPU ratios first.

Both checkouts are byte-compiled first (``compileall``), as ``pip install`` leaves an installed package:
where ``PYTHONDONTWRITEBYTECODE`` is set (as in this project's sandbox) every run would otherwise compile
sigmaudit's ~80 modules again (~0.12 s CPU of a ``check``), a cost no installed copy pays.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
from pathlib import Path

from bench import PY, measure
from bench_watch import write_long

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
SAMPLE = ROOT / "sample_logs" / "rollouts.parquet"
WATCH_STEPS = (2000, 8000, 12000)
FLOORS = {"sample-check": ["env", "OPENBLAS_NUM_THREADS=1", PY, "-P", "-c",
                            "import numpy, polars, typer, rich.console, rich.panel, rich.table"]}
"""A workload's floor: a process that only imports the libraries its command cannot run without (numpy and
Polars for the counts, Typer and Rich for the command line and the terminal report; numpy with one BLAS thread,
as the CLI sets it). Its ratio to the reference is the least the command's ratio can be on this machine."""
TARGETS = {"verl": 2.5, "long-1000": 3.0, "long-10000": 2.5, "sample-check": 2.0, "watch-8000": 4.0}
"""Issue 45's done-when: sigmaudit's time at most this many times the reference's."""


def sigmaudit(tree: Path, *argv: str) -> list[str]:
    """A sigmaudit command run from the checkout ``tree`` (PYTHONPATH wins over an editable install)."""
    return ["env", f"PYTHONPATH={tree}", PY, "-P", "-m", "sigmaudit", *argv]


def workloads(data: Path) -> dict[str, tuple[list[str], list[str]]]:
    """name -> (sigmaudit's arguments, the reference command)."""
    duck = [PY, str(HERE / "baselines.py"), "duckdb"]
    out = {
        "verl": (["scan", str(data / "verl_200"), "-f", "json", "-o", os.devnull, "-q"],
                 [*duck, str(data / "verl_200"), "16"]),
        "long-1000": (["scan", str(data / "long_1000.parquet"), "-f", "json", "-o", os.devnull, "-q"],
                      [*duck, str(data / "long_1000.parquet"), "16"]),
        "long-10000": (["scan", str(data / "long_10000.parquet"), "-f", "json", "-o", os.devnull, "-q"],
                       [*duck, str(data / "long_10000.parquet"), "16"]),
        "sample-check": (["check", str(SAMPLE), "--max-silent", "0.9"], [*duck, str(SAMPLE), "8"]),
    }
    for steps in WATCH_STEPS:
        log = data / f"watch_{steps}.parquet"
        out[f"watch-{steps}"] = (["watch", str(log), "--once", "-q"], sigmaudit(ROOT, "scan", str(log), "-q"))
    return out


def load_average() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, required=True, help="folder of gen_logs.py's logs")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--before", type=Path, help="also time the sigmaudit commands from this checkout")
    ap.add_argument("--only", help="comma-separated workloads (default: all whose data exists)")
    args = ap.parse_args()
    for steps in WATCH_STEPS:
        if not (args.data / f"watch_{steps}.parquet").exists():
            write_long(args.data / f"watch_{steps}.parquet", steps, 16, 8)
    trees = {"sigmaudit": ROOT, **({"before": args.before.resolve()} if args.before else {})}
    for tree in trees.values():
        subprocess.run([PY, "-m", "compileall", "-q", str(tree / "sigmaudit")], check=True)
    every = workloads(args.data)
    names = args.only.split(",") if args.only else [n for n, (argv, _) in every.items() if Path(argv[1]).exists()]
    print(f"load average at start: {load_average()}", flush=True)
    runs: dict[tuple[str, str], list[dict[str, float]]] = {}
    for r in range(args.rounds):
        for name in names if r % 2 == 0 else names[::-1]:
            argv, ref = every[name]
            cmds = ({tool: sigmaudit(tree, *argv) for tool, tree in trees.items()} | {"reference": ref}
                    | ({"floor": FLOORS[name]} if name in FLOORS else {}))
            for tool in (cmds if r % 2 == 0 else list(cmds)[::-1]):
                m = measure(cmds[tool])
                runs.setdefault((name, tool), []).append(m)
                print(f"  round {r + 1} {name:13s} {tool:9s} {m['wall_s']:7.2f} s wall {m['cpu_s']:7.2f} s CPU "
                      f"{m['peak_mib']:6.0f} MiB  (load {load_average()})", file=sys.stderr, flush=True)
    print(f"load average at end: {load_average()}")
    _table(names, runs, trees)


def _table(names: list[str], runs: dict, trees: dict) -> None:
    med = {key: {k: statistics.median(x[k] for x in v) for k in v[0]} for key, v in runs.items()}
    print(f"\nmedians of {len(next(iter(runs.values())))} alternated rounds; reference = DuckDB's process, "
          "or scan of the same log for watch")
    print(f"{'workload':13s} {'tool':9s} {'wall s':>7s} {'CPU s':>7s} {'peak MiB':>8s} {'wall ratio':>10s} "
          f"{'CPU ratio':>9s} {'target':>6s}")
    for name in names:
        ref = med[(name, "reference")]
        for tool in [*trees, "reference", *(["floor"] if name in FLOORS else [])]:
            m = med[(name, tool)]
            target = f"{TARGETS[name]:.1f}" if name in TARGETS and tool == "sigmaudit" else ""
            print(f"{name:13s} {tool:9s} {m['wall_s']:7.2f} {m['cpu_s']:7.2f} {m['peak_mib']:8.0f} "
                  f"{m['wall_s'] / ref['wall_s']:10.2f} {m['cpu_s'] / ref['cpu_s']:9.2f} {target:>6s}")
    if {"watch-8000", "watch-12000"} <= set(names):
        for tool in trees:
            a, b = med[("watch-8000", tool)], med[("watch-12000", tool)]
            print(f"watch --once 12,000 / 8,000 steps ({tool}): wall {b['wall_s'] / a['wall_s']:.2f}, "
                  f"CPU {b['cpu_s'] / a['cpu_s']:.2f} (target <= 1.7)")


if __name__ == "__main__":
    main()
