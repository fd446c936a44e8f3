"""`sigmaudit reduce`: the counts hand-off loads back to the same audit; the SQL in docs/scaling.md writes it too."""

from __future__ import annotations

import json
import re
from pathlib import Path

import polars as pl
import pytest
from cli_runner import run

from sigmaudit.loaders import load_counts
from sigmaudit.loaders.handoff import counts_table

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "sample_logs"
LOGS = sorted(p.name for p in SAMPLES.iterdir() if p.name != "dapo_fig3b_allcorrect.csv")  # a series: no counts
PROVENANCE = ("rows", "files", "layout", "reward_source", "notes")
"""Scan keys that describe the input read (a counts table, not the logs), not the audit."""


def _scan(capsys, path: Path) -> dict:
    code, out, err = run(capsys, "scan", str(path), "-G", "8", "-G", "16", "-f", "json", "-q")
    assert code == 0, err
    return {k: v for k, v in json.loads(out).items() if k not in PROVENANCE}


@pytest.mark.parametrize("log", LOGS)
@pytest.mark.parametrize("suffix", [".parquet", ".jsonl"])
def test_reduce_then_scan_equals_direct_scan(capsys, tmp_path, log, suffix):
    out = tmp_path / f"counts{suffix}"
    code, stdout, err = run(capsys, "reduce", str(SAMPLES / log), "-o", str(out))
    if run(capsys, "scan", str(SAMPLES / log))[0] == 2:  # a series, or a file with no k of n: refused alike
        assert (code, stdout) == (2, "") and not out.exists()
        return
    if load_counts([SAMPLES / log]).filtered is not None:  # a post-filter dump: refused, not silently unmarked
        assert (code, stdout) == (2, "") and "zero-variance filtering" in err and not out.exists()
        return
    assert (code, stdout) == (0, ""), err
    assert f"wrote {out}" in err
    direct = _scan(capsys, SAMPLES / log)
    assert _scan(capsys, out) == direct
    assert direct["prompts"] > 0


def test_reduce_keeps_two_groups_of_one_prompt_in_a_step(tmp_path):
    """Group ids, not (step, prompt), make a group: a prompt sampled twice in one step stays two groups."""
    log = pl.DataFrame({"step": [1] * 8, "group_id": ["g1"] * 4 + ["g2"] * 4, "prompt_id": ["a"] * 8,
                        "reward": [1, 1, 1, 1, 0, 1, 0, 1]})
    log.write_parquet(tmp_path / "log.parquet")
    loaded = load_counts([tmp_path / "log.parquet"])
    counts_table(loaded).write_parquet(tmp_path / "counts.parquet")
    back = load_counts([tmp_path / "counts.parquet"])
    assert back.layout == "counts"
    assert sorted(back.per_group.rows()) == sorted(loaded.per_group.rows()) == [(1, "a", 4, 2), (1, "a", 4, 4)]


def test_reduce_table_columns(tmp_path):
    loaded = load_counts([SAMPLES / "verl"])
    grouped = counts_table(loaded)
    assert grouped.columns == ["step", "group_id", "prompt", "n", "k"]
    assert grouped["group_id"].n_unique() == grouped.height == loaded.per_group.height > 100
    flat = counts_table(load_counts([SAMPLES / "long.csv"]))
    assert flat.columns == ["prompt", "n", "k"]
    assert int(flat["n"].sum()) == 4800


def test_reduce_on_duckdb_writes_the_same_table(capsys, tmp_path):
    pytest.importorskip("duckdb")
    for engine in ("polars", "duckdb"):
        code, _, err = run(capsys, "reduce", str(SAMPLES / "verl"), "-o", str(tmp_path / f"{engine}.parquet"),
                           "--engine", engine)
        assert code == 0, err
    a, b = (pl.read_parquet(tmp_path / f"{e}.parquet").drop("group_id").sort(pl.all()) for e in ("polars", "duckdb"))
    assert a.equals(b)


@pytest.mark.parametrize("name", ["counts.txt", "counts", "counts.csv"])
def test_reduce_refuses_unknown_output_type(capsys, tmp_path, name):
    code, out, err = run(capsys, "reduce", str(SAMPLES / "verl"), "-o", str(tmp_path / name))
    assert (code, out) == (2, "")
    assert "name a .parquet or .jsonl file" in err
    assert not (tmp_path / name).exists()


# ---- the docs' SQL (docs/scaling.md), run in DuckDB ---------------------------------------------------------

def readme_sql() -> str:
    """The SQL block of docs/scaling.md."""
    text = (ROOT / "docs" / "scaling.md").read_text()
    return re.search(r"```sql\n(.*?)```", text, re.S).group(1)


VIEWS = {
    "rollouts.parquet": "SELECT step, prompt_id, reward FROM read_parquet('{p}/rollouts.parquet')",
    "verl": "SELECT step, input AS prompt_id, CAST(acc AS DOUBLE) AS reward FROM read_json('{p}/verl/**/*.jsonl')",
}


@pytest.mark.parametrize("log", sorted(VIEWS))
def test_readme_sql_gives_the_reduce_table(capsys, tmp_path, log):
    duckdb = pytest.importorskip("duckdb")
    con = duckdb.connect()
    con.execute("CREATE VIEW rollouts AS " + VIEWS[log].format(p=SAMPLES.as_posix()))
    sql = pl.from_arrow(con.sql(readme_sql()).to_arrow_table())
    assert sql.columns == ["step", "group_id", "prompt", "n", "k"]
    mine = counts_table(load_counts([SAMPLES / log]))
    key = ["step", "prompt", "n", "k"]
    assert sql.select(pl.col(c).cast(mine.schema[c]) for c in key).sort(key).equals(mine.select(key).sort(key))
    # and the audit of the SQL's table is the audit of the logs
    sql.write_parquet(tmp_path / "warehouse.parquet")
    assert _scan(capsys, tmp_path / "warehouse.parquet") == _scan(capsys, SAMPLES / log)


def _log_with_missing_rewards(path: Path, steps: bool) -> Path:
    """A long log where about one reward in ten is null or NaN and one prompt has only missing rewards."""
    import random

    rng = random.Random(31)
    rows = []
    for s in range(3):
        for p in range(6):
            for _ in range(8):
                r = rng.random()
                rows.append((s, f"p{p}", None if r < 0.05 else float("nan") if r < 0.1 else float(rng.random() < 0.4)))
    rows += [(0, "all_missing", None)] * 4
    frame = pl.DataFrame(rows, schema={"step": pl.Int64, "prompt_id": pl.Utf8, "reward": pl.Float64}, orient="row")
    (frame if steps else frame.drop("step")).write_parquet(path)
    return path


@pytest.mark.parametrize("steps", [True, False])
@pytest.mark.parametrize("suffix", [".parquet", ".jsonl"])
def test_reduce_keeps_the_missing_reward_count(capsys, tmp_path, steps, suffix):
    """Issue 23 item 31: rows without a reward are carried by the hand-off (``missing_rewards``), so a scan
    of the counts reports the same missing rewards and the same prompts whose rewards are all missing."""
    log = _log_with_missing_rewards(tmp_path / "log.parquet", steps)
    out = tmp_path / f"counts{suffix}"
    code, _, err = run(capsys, "reduce", str(log), "-o", str(out))
    assert code == 0, err
    direct = json.loads(run(capsys, "scan", str(log), "-G", "8", "-f", "json")[1])
    back = json.loads(run(capsys, "scan", str(out), "-G", "8", "-f", "json")[1])
    assert direct["missing_rewards"] == back["missing_rewards"] > 0
    dropped = [n for n in direct["notes"] if "all their rewards are missing" in n]
    assert dropped == ["1 prompts dropped: all their rewards are missing"]
    assert dropped == [n for n in back["notes"] if "all their rewards are missing" in n]
    assert {k: v for k, v in back.items() if k not in PROVENANCE} == {k: v for k, v in direct.items()
                                                                     if k not in PROVENANCE}
    table = pl.read_parquet(out) if suffix == ".parquet" else pl.read_ndjson(out)
    assert int(table["missing_rewards"].sum()) == direct["missing_rewards"]
