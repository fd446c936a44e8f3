"""Time ``backtest``, ``forecast`` and ``trend`` (which replays the log for its one-step-ahead forecast).

    python benchmarks/gen_logs.py --steps 250                     # once: 2M rows, 128k groups
    python benchmarks/bench_forecast.py benchmarks/data/long_250.parquet --repeats 3

Each command runs as a whole process (``bench.measure``); the table shows medians of wall time,
CPU time (user + sys) and peak memory. The machine is shared: compare the CPU column.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench import measure  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("log")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("-G", type=int, default=16)
    args = ap.parse_args()
    py = sys.executable
    cmds = {
        "backtest": [py, "-m", "sigmaudit", "backtest", args.log, "-q", "-f", "json"],
        "forecast": [py, "-m", "sigmaudit", "forecast", args.log, "-G", str(args.G), "-q", "-f", "json"],
        "trend": [py, "-m", "sigmaudit", "trend", args.log, "-q", "-f", "json"],
    }
    runs: dict[str, list[dict[str, float]]] = {name: [] for name in cmds}
    for _ in range(args.repeats):  # alternated, so load drifts hit every command alike
        for name, cmd in cmds.items():
            runs[name].append(measure(cmd))
    print(f"{'command':10} {'wall s':>8} {'cpu s':>8} {'peak MiB':>9}")
    for name, rs in runs.items():
        med = {k: statistics.median(r[k] for r in rs) for k in rs[0]}
        print(f"{name:10} {med['wall_s']:8.1f} {med['cpu_s']:8.1f} {med['peak_mib']:9.0f}")


if __name__ == "__main__":
    main()
