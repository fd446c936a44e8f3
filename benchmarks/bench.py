"""Time ``sigmaudit scan`` against DuckDB, pandas and a plain pyarrow read, whole process.

    python benchmarks/gen_logs.py --steps 1000          # once: 8.2M rows
    python benchmarks/bench.py benchmarks/data/long_1000.parquet --repeats 5
    python benchmarks/bench.py --startup --repeats 9    # sigmaudit --help / calc start-up
    git worktree add /tmp/sigmaudit-before <rev>         # then: before/after in one session
    python benchmarks/bench.py benchmarks/data/long_1000.parquet --before /tmp/sigmaudit-before --compare

Runs are alternated (scan, duckdb, pandas, pyarrow, scan, ...) so machine load drifts hit every
tool alike; the table shows medians of wall time, CPU time (user + sys) and peak memory.
Peak memory is the larger of the kernel's max RSS for the process (``wait4``) and psutil's
polled RSS summed over the process and its children. The machine is shared, so compare
medians and the CPU column, not single runs. Raw runs go to ``benchmarks/data/results.jsonl``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil

HERE = Path(__file__).resolve().parent
PY = sys.executable


def commands(path: str, G: int) -> dict[str, list[str]]:
    base = [PY, str(HERE / "baselines.py")]
    scan = ["-m", "sigmaudit", "scan", path, "-G", str(G), "--format", "json"]
    return {
        # the checkout this script is in (PYTHONPATH wins over an editable install of another one)
        "scan": ["env", f"PYTHONPATH={HERE.parent}", PY, "-P", *scan],
        # the same command from another checkout (see --before); PYTHONPATH wins over the editable install
        "before": ["env", f"PYTHONPATH={os.environ.get('SIGMAUDIT_BEFORE', '')}", PY, "-P", *scan],
        # the same scan with the reduction on another engine (issue 14); spark starts a local JVM each run
        "scan-duckdb": [PY, *scan, "--engine", "duckdb"],
        "scan-spark": [PY, *scan, "--engine", "spark"],
        "duckdb": [*base, "duckdb", path, str(G)],
        "polars": [*base, "polars", path, str(G)],
        "pandas": [*base, "pandas", path, str(G)],
        "pyarrow": [*base, "pyarrow", path, str(G)],
    }


def startup_commands() -> dict[str, list[str]]:
    here = ["env", f"PYTHONPATH={HERE.parent}", PY, "-P"]
    return {
        "help": [*here, "-m", "sigmaudit", "--help"],
        "calc": [*here, "-m", "sigmaudit", "calc", "-p", "0.05", "-G", "8"],
        "python": [PY, "-c", "pass"],
    }


def measure(cmd: list[str]) -> dict[str, float]:
    """Wall seconds, CPU seconds and peak RSS (MiB) of one whole process (with children)."""
    peak = 0
    done = threading.Event()
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)

    def poll() -> None:
        nonlocal peak
        try:
            root = psutil.Process(proc.pid)
            while not done.is_set():
                try:
                    rss = root.memory_info().rss + sum(
                        c.memory_info().rss for c in root.children(recursive=True))
                except psutil.Error:
                    break
                peak = max(peak, rss)
                done.wait(0.01)
        except psutil.Error:
            pass

    watcher = threading.Thread(target=poll, daemon=True)
    watcher.start()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    done.set()
    watcher.join()
    proc.returncode = os.waitstatus_to_exitcode(status)
    err = proc.stderr.read().decode() if proc.stderr else ""
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}):\n{err}")
    peak = max(peak, usage.ru_maxrss * 1024)  # ru_maxrss is KiB on Linux
    return {"wall_s": wall, "cpu_s": usage.ru_utime + usage.ru_stime, "peak_mib": peak / 2**20}


def compare(cmds: dict[str, list[str]]) -> None:
    """Run ``scan`` and ``before`` once each and say whether stdout (the JSON) and stderr agree."""
    out = {t: subprocess.run(cmds[t], capture_output=True, text=True) for t in ("scan", "before")}
    for stream in ("stdout", "stderr"):
        same = getattr(out["scan"], stream) == getattr(out["before"], stream)
        print(f"scan vs before, {stream}: {'identical' if same else 'DIFFERENT'}", file=sys.stderr)
    if out["scan"].stdout != out["before"].stdout:
        new, old = json.loads(out["scan"].stdout), json.loads(out["before"].stdout)
        print("  keys that differ: " + ", ".join(k for k in new if new[k] != old.get(k)), file=sys.stderr)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("path", nargs="?", help="a log file or folder (see gen_logs.py)")
    ap.add_argument("-G", type=int, default=8)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--tools", default="scan,duckdb,pandas,pyarrow",
                    help="comma-separated subset of scan, scan-duckdb, scan-spark, duckdb, polars, pandas, "
                         "pyarrow (and before)")
    ap.add_argument("--startup", action="store_true", help="time sigmaudit --help and calc instead")
    ap.add_argument("--before", metavar="DIR",
                    help="also time `scan` from the checkout DIR (e.g. a `git worktree` of an older commit)")
    ap.add_argument("--compare", action="store_true",
                    help="with --before: first check that both print the same JSON and notes")
    args = ap.parse_args()
    if args.before:
        os.environ["SIGMAUDIT_BEFORE"] = str(Path(args.before).resolve())
        args.tools = "before," + args.tools
    if args.startup:
        cmds = startup_commands()
        label = "start-up"
    else:
        if not args.path:
            ap.error("give a log path, or --startup")
        every = commands(args.path, args.G)
        cmds = {t: every[t] for t in args.tools.split(",")}
        label = args.path
        if args.compare and args.before:
            compare(every)
    runs: dict[str, list[dict[str, float]]] = {t: [] for t in cmds}
    log = HERE / "data" / "results.jsonl"
    log.parent.mkdir(exist_ok=True)
    for r in range(args.repeats):
        order = list(cmds) if r % 2 == 0 else list(cmds)[::-1]  # alternate, and flip the order
        for tool in order:
            m = measure(cmds[tool])
            runs[tool].append(m)
            with open(log, "a") as fh:
                fh.write(json.dumps({"label": label, "tool": tool, "repeat": r, **m,
                                     "time": time.time()}) + "\n")
            print(f"  {tool:8s} run {r + 1}: {m['wall_s']:7.2f} s wall {m['cpu_s']:7.2f} s cpu "
                  f"{m['peak_mib']:7.0f} MiB", file=sys.stderr, flush=True)
    med = {t: {key: statistics.median(x[key] for x in v) for key in v[0]} for t, v in runs.items()}
    print(f"\n{label}: medians of {args.repeats} alternated runs")
    ref = [t for t in ("duckdb", "pandas") if t in med]
    head = f"{'tool':8s} {'wall s':>8s} {'cpu s':>8s} {'peak MiB':>9s}" + "".join(
        f" {'wall/' + t:>12s}" for t in ref)
    print(head)
    for tool, m in med.items():
        ratios = "".join(f" {m['wall_s'] / med[t]['wall_s']:12.2f}" for t in ref)
        print(f"{tool:8s} {m['wall_s']:8.2f} {m['cpu_s']:8.2f} {m['peak_mib']:9.0f}{ratios}")


if __name__ == "__main__":
    main()
