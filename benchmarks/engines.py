"""The reduction alone (rows -> counts), in one process, on each engine; and the Narwhals probe.

    python benchmarks/engines.py benchmarks/data/long_1000.parquet --repeats 3
    python benchmarks/engines.py benchmarks/data/verl_40 --repeats 3
    python benchmarks/engines.py benchmarks/data/long_1000.parquet --narwhals   # issue 14's question

Each engine runs ``load_counts`` once untimed (a warm Spark session, DuckDB loaded), then
``--repeats`` timed runs, alternated between engines; the table shows medians of wall time and the
process's CPU time over the run (Spark's JVM threads included: they are this process's threads).
Every engine's per-prompt counts are checked equal to Polars' before any time is printed.

``--narwhals`` times the long-layout reduction written once with Narwhals (lazy: Polars, DuckDB,
PySpark backends) against sigmaudit's engines on the same file, to decide whether one Narwhals
reduction could replace the SQL one (see README, "Scaling").
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import polars as pl

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from sigmaudit.loaders import load_counts  # noqa: E402
from sigmaudit.loaders.engines import get_engine  # noqa: E402


def cpu_seconds() -> float:
    """CPU time of this process and its live children (a local Spark session's JVM is a child)."""
    import psutil

    me = psutil.Process()
    total = sum(me.cpu_times()[:2])
    for child in me.children(recursive=True):
        try:
            total += sum(child.cpu_times()[:2])
        except psutil.Error:
            pass
    return total


def timed(fn) -> tuple[float, float, object]:  # noqa: ANN001
    c0, t0 = cpu_seconds(), time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, cpu_seconds() - c0, out


def narwhals_counts(native) -> pl.DataFrame:  # noqa: ANN001
    """The long-layout reduction (step, prompt_id, reward) written once in Narwhals: the same
    per-(step, prompt) columns as the SQL one (n, k, missing, rows, bad), collected to Polars."""
    import narwhals as nw

    lf = nw.from_native(native)
    x = nw.col("reward").cast(nw.Float64)
    valid = ~x.is_null() & ~x.is_nan()
    bad = valid & ~x.is_in([0.0, 1.0, -1.0])
    return lf.group_by("step", "prompt_id").agg(
        valid.cast(nw.Int64).sum().alias("n"), (valid & (x == 1.0)).cast(nw.Int64).sum().alias("k"),
        (~valid).cast(nw.Int64).sum().alias("missing"), nw.len().alias("rows"),
        bad.cast(nw.Int64).sum().alias("bad")).collect().to_polars()


def narwhals_probe(path: str, repeats: int) -> None:
    """The per-(step, prompt) reduction alone: Narwhals on three backends against the SQL engines'
    query (``Engine.run``) and the Polars engine's whole load (which also sums per prompt)."""
    import duckdb
    from pyspark.sql import SparkSession

    from sigmaudit.loaders import LoadOptions
    from sigmaudit.loaders.detect import detect

    spark = (SparkSession.builder.master("local[*]").config("spark.ui.enabled", "false")
             .config("spark.ui.showConsoleProgress", "false").config("spark.sql.shuffle.partitions", "8")
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    con = duckdb.connect()
    natives = {
        "narwhals/polars": lambda: pl.scan_parquet(path),
        "narwhals/duckdb": lambda: con.sql(f"SELECT * FROM read_parquet('{path}')"),
        "narwhals/spark": lambda: spark.read.parquet(str(Path(path).resolve())),
    }
    schema = dict(pl.scan_parquet(path).collect_schema())
    plan, opts = detect(schema, LoadOptions(), path), LoadOptions()
    sql_engines = {"sql/duckdb": get_engine("duckdb"), "sql/spark": get_engine("spark")}
    jobs = {**{k: (lambda f=f: narwhals_counts(f())) for k, f in natives.items()},
            **{k: (lambda e=e: e.run(plan, opts, [path], schema)) for k, e in sql_engines.items()},
            "polars engine (whole load)": lambda: load_counts([path])}
    want = narwhals_counts(natives["narwhals/polars"]()).select("n", "k").sum()
    for name, job in jobs.items():  # warm-up and correctness (totals)
        out = job()
        if isinstance(out, pl.DataFrame):
            assert out.select(pl.col("n").cast(pl.Int64), pl.col("k").cast(pl.Int64)).sum().equals(want), name
    runs: dict[str, list[tuple[float, float]]] = {}
    for r in range(repeats):
        for name in (list(jobs) if r % 2 == 0 else list(jobs)[::-1]):
            wall, cpu, _ = timed(jobs[name])
            runs.setdefault(name, []).append((wall, cpu))
            print(f"  {name:26s} run {r + 1}: {wall:6.2f} s wall {cpu:6.2f} s cpu", file=sys.stderr, flush=True)
    table(path, runs, repeats)


def table(path: str, runs: dict[str, list[tuple[float, float]]], repeats: int) -> None:
    print(f"\n{path}: medians of {repeats} alternated runs (load average {os.getloadavg()[0]:.1f})")
    print(f"{'engine':26s} {'wall s':>8s} {'cpu s':>8s}")
    for name, v in runs.items():
        print(f"{name:26s} {statistics.median(w for w, _ in v):8.2f} {statistics.median(c for _, c in v):8.2f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("path")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--engines", default="polars,duckdb,spark")
    ap.add_argument("--narwhals", action="store_true")
    args = ap.parse_args()
    if args.narwhals:
        return narwhals_probe(args.path, args.repeats)
    engines = {name: get_engine(name) for name in args.engines.split(",")}
    want = load_counts([args.path]).per_prompt
    for name, engine in engines.items():  # warm-up and correctness
        got = load_counts([args.path], engine=engine).per_prompt
        assert got.equals(want), f"{name}: counts differ from polars"
    runs: dict[str, list[tuple[float, float]]] = {}
    for r in range(args.repeats):
        for name in (list(engines) if r % 2 == 0 else list(engines)[::-1]):
            wall, cpu, _ = timed(lambda e=engines[name]: load_counts([args.path], engine=e))
            runs.setdefault(name, []).append((wall, cpu))
            print(f"  {name:8s} run {r + 1}: {wall:6.2f} s wall {cpu:6.2f} s cpu", file=sys.stderr, flush=True)
    table(args.path, runs, args.repeats)


if __name__ == "__main__":
    main()
