"""What a user would write instead of ``sigmaudit scan``: the same two group-bys in DuckDB,
Polars (hand-written) or pandas, and a plain pyarrow read of the columns (the I/O floor).

    python benchmarks/baselines.py duckdb  benchmarks/data/long_1000.parquet
    python benchmarks/baselines.py polars  benchmarks/data/long_1000.parquet
    python benchmarks/baselines.py pandas  benchmarks/data/verl_250          # a folder of jsonl
    python benchmarks/baselines.py pyarrow benchmarks/data/long_1000.parquet

Each prints one JSON line: the observed silent fraction (share of logged (step, prompt) groups
whose rewards all agree) and the plug-in silent rate at G (mean over prompts of
p̂^G + (1 − p̂)^G), so the answers can be checked against ``sigmaudit scan``'s.
Long parquet logs have columns ``step, prompt_id, reward``; verl jsonl dumps ``step, input, score``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def _columns(path: Path) -> tuple[str, str, str, bool]:
    """(step, prompt, reward column, is_jsonl)."""
    if path.is_dir() or path.suffix == ".jsonl":
        return "step", "input", "score", True
    return "step", "prompt_id", "reward", False


def run_duckdb(path: Path, G: int) -> dict[str, float]:
    import duckdb

    step, prompt, reward, jsonl = _columns(path)
    if jsonl:
        pattern = str(path / "*.jsonl") if path.is_dir() else str(path)
        src = (f"read_json('{pattern}', format='newline_delimited', "
               f"columns={{'{step}': 'BIGINT', '{prompt}': 'VARCHAR', '{reward}': 'DOUBLE'}})")
    else:
        src = f"read_parquet('{path}')"
    sql = f"""
        WITH g AS (
            SELECT {step} AS step, {prompt} AS prompt, count({reward}) AS n,
                   count(*) FILTER (WHERE {reward} = 1) AS k
            FROM {src} GROUP BY ALL),
        p AS (SELECT prompt, sum(n) AS n, sum(k) AS k FROM g GROUP BY prompt)
        SELECT (SELECT avg(CASE WHEN k = 0 OR k = n THEN 1.0 ELSE 0.0 END) FROM g WHERE n > 0),
               (SELECT avg(pow(k / n, {G}) + pow(1 - k / n, {G})) FROM p WHERE n > 0)
    """
    observed, plugin = duckdb.sql(sql).fetchall()[0]
    return {"observed_silent_fraction": observed, "plugin_silent_rate": plugin}


def run_polars(path: Path, G: int) -> dict[str, float]:
    """The same two group-bys hand-written in Polars: an explicit three-key schema for jsonl (no
    inference, other keys skipped), the streaming engine for the (step, prompt) group-by."""
    import polars as pl

    step, prompt, reward, jsonl = _columns(path)
    if jsonl:
        files = sorted(path.glob("*.jsonl")) if path.is_dir() else [path]
        lf = pl.scan_ndjson(files, schema={step: pl.Int64, prompt: pl.String, reward: pl.Float64})
    else:
        lf = pl.scan_parquet(path)
    r = pl.col(reward)
    g = (lf.group_by(step, prompt).agg(r.count().alias("n"), (r == 1).sum().alias("k"))
         .filter(pl.col("n") > 0).collect(engine="streaming"))
    observed = g.select(((pl.col("k") == 0) | (pl.col("k") == pl.col("n"))).mean()).item()
    p = g.group_by(prompt).agg(pl.col("n").sum(), pl.col("k").sum())
    rate = p["k"] / p["n"]
    plugin = float((rate**G + (1 - rate) ** G).mean())
    return {"observed_silent_fraction": observed, "plugin_silent_rate": plugin}


def run_pandas(path: Path, G: int) -> dict[str, float]:
    import pandas as pd

    step, prompt, reward, jsonl = _columns(path)
    if jsonl:
        files = sorted(path.glob("*.jsonl")) if path.is_dir() else [path]
        df = pd.concat([pd.read_json(f, lines=True)[[step, prompt, reward]] for f in files],
                       ignore_index=True)
    else:
        df = pd.read_parquet(path, columns=[step, prompt, reward])
    df["correct"] = df[reward] == 1
    g = df.groupby([step, prompt], sort=False).agg(n=(reward, "count"), k=("correct", "sum"))
    g = g[g["n"] > 0]
    observed = float(((g["k"] == 0) | (g["k"] == g["n"])).mean())
    p = g.groupby(level=prompt, sort=False)[["n", "k"]].sum()
    rate = p["k"] / p["n"]
    plugin = float((rate**G + (1 - rate) ** G).mean())
    return {"observed_silent_fraction": observed, "plugin_silent_rate": plugin}


def run_pyarrow(path: Path, G: int) -> dict[str, float]:
    """Read the three columns into memory and nothing else."""
    step, prompt, reward, jsonl = _columns(path)
    if jsonl:
        import pyarrow as pa
        import pyarrow.json as pj

        files = sorted(path.glob("*.jsonl")) if path.is_dir() else [path]
        table = pa.concat_tables([pj.read_json(f).select([step, prompt, reward]) for f in files])
    else:
        import pyarrow.parquet as pq

        table = pq.read_table(path, columns=[step, prompt, reward])
    return {"rows": table.num_rows}


def main() -> None:
    tool, path = sys.argv[1], Path(sys.argv[2])
    G = int(sys.argv[3]) if len(sys.argv) > 3 else 8
    fn = {"duckdb": run_duckdb, "polars": run_polars, "pandas": run_pandas, "pyarrow": run_pyarrow}[tool]
    print(json.dumps(fn(path, G)))


if __name__ == "__main__":
    main()
