"""--engine duckdb and --engine spark give the Polars engine's output on every sample log (every layout).

The Spark tests share one local session (Java 17+) for the whole run (``spark_engine``, tests/conftest.py);
they are skipped only when PySpark is not installed (``.ci/run`` installs it: ``pip install -e ".[test,spark]"``).
"""

from __future__ import annotations

import gzip
import json
import shutil
import socket
import sys
import warnings
from pathlib import Path

import polars as pl
import pytest
from cli_runner import run

from sigmaudit.errors import ConfigError, SigmauditError
from sigmaudit.loaders import LoadOptions, load_counts
from sigmaudit.loaders.columns import ColumnMap
from sigmaudit.loaders.engines import get_engine, reduce_with
from sigmaudit.loaders.engines.sql import DUCKDB, SPARK, reduce_sql
from sigmaudit.loaders.readers import scan
from sigmaudit.loaders.reduce import reduce_samples

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "sample_logs"
BAD = ROOT / "tests" / "fixtures" / "bad"
LOGS = sorted(p.name for p in SAMPLES.iterdir())
RUN = ["counts.csv", "grouped.parquet", "long.csv", "rollouts.parquet", "verl"]
"""Sample logs read as rows with plain columns: the engines reduce them with SQL."""
SERIES = ["dapo_fig3b_allcorrect.csv"]
"""A per-step series (a few hundred rows): read here whatever the engine."""
FRAMEWORK = ["areal", "inspect_ai", "nemo-rl", "open-instruct", "prime-rl", "roll", "skyrl", "trl", "trl-one-prompt",
             "verl-v1"]
"""Sample logs whose framework reader restructures each file in Python (or filters rows with a Polars
expression): read and reduced file by file by that reader (on Spark's executors; here for DuckDB)."""
UNREADABLE = ["lm-eval"]
"""Sample logs every engine refuses (no k of n in the file)."""
ENGINE_NOTE = ("sigmaudit: reduced by ", "sigmaudit: read and reduced ")


def _polars_json(capsys, path: Path, *extra: str) -> dict:
    code, out, err = run(capsys, "scan", str(path), "-G", "8", "-f", "json", *extra)
    assert code == 0, err
    return json.loads(out)


def _same_as_polars(capsys, engine: str, log: str) -> str:
    """``scan -f json`` on ``engine`` equals the Polars engine's output, and so do the notes on stderr
    (but for the engine's own line, which it returns)."""
    args = ("scan", str(SAMPLES / log), "-G", "8", "-f", "json")
    want = run(capsys, *args)
    got = run(capsys, *args, "--engine", engine)
    assert want[0] == got[0] == 0, got[2]
    assert json.loads(got[1]) == json.loads(want[1])
    lines = got[2].splitlines()
    mine = [line for line in lines if line.startswith(ENGINE_NOTE)]
    assert len(mine) == 1
    assert [line for line in lines if line not in mine] == want[2].splitlines()
    return mine[0]


def test_every_sample_log_is_listed():
    assert sorted(RUN + SERIES + FRAMEWORK + UNREADABLE) == LOGS


@pytest.mark.parametrize("log", SERIES)
def test_series_reads_here_on_any_engine(capsys, log):
    pytest.importorskip("duckdb")
    want = run(capsys, "trend", str(SAMPLES / log), "-f", "json")
    got = run(capsys, "trend", str(SAMPLES / log), "-f", "json", "--engine", "duckdb")
    assert want[0] == got[0] == 0
    assert json.loads(got[1]) == json.loads(want[1])


@pytest.mark.parametrize("engine", ["duckdb", "spark"])
@pytest.mark.parametrize("log", UNREADABLE)
def test_engines_refuse_in_one_line_what_polars_refuses(capsys, engine, log, request):
    pytest.importorskip("duckdb" if engine == "duckdb" else "pyspark")
    if engine == "spark":
        request.getfixturevalue("spark_engine")
    code, out, err = run(capsys, "scan", str(SAMPLES / log), "--engine", engine)
    assert (code, out) == (2, "")
    assert len(err.strip().splitlines()) == 1
    assert err == run(capsys, "scan", str(SAMPLES / log))[2]


@pytest.mark.parametrize("log", RUN + FRAMEWORK)
def test_duckdb_scan_json_equals_polars(capsys, log):
    pytest.importorskip("duckdb")
    mine = _same_as_polars(capsys, "duckdb", log)
    if log in RUN:
        assert "reduced by DuckDB" in mine
    else:
        assert "file by file by the framework's reader" in mine and "DuckDB has nothing to add" in mine


def test_duckdb_counts_equal_polars_with_missing_and_threshold(tmp_path):
    """Null and NaN rewards are missing, a threshold makes 0.5 wrong and 0.7 right, in both engines."""
    pytest.importorskip("duckdb")
    df = pl.DataFrame({"step": [1, 1, 1, 1, 2, 2, 2, 2], "prompt_id": ["a", "a", "b", "b", "a", "a", "b", "b"],
                       "reward": [0.7, None, float("nan"), 0.5, 1.0, 0.2, 0.9, 0.0]})
    df.write_parquet(tmp_path / "r.parquet")
    opts = LoadOptions(threshold=0.6)
    a = load_counts([tmp_path / "r.parquet"], opts)
    b = load_counts([tmp_path / "r.parquet"], opts, engine=get_engine("duckdb"))
    assert a.per_prompt.equals(b.per_prompt)
    assert b.per_prompt.rows() == [("a", 3, 2), ("b", 3, 1)]
    assert (b.missing_rewards, b.n_rows) == (2, 8)


@pytest.mark.parametrize(("fixture", "message"), [
    ("nonbinary_reward.csv", "is not binary (values such as"),
    ("counts_k_above_n.csv", "invalid counts: k > n"),
    ("counts_negative_k.csv", "invalid counts: negative k"),
    ("rate_not_whole_count.csv", "is not a whole number of correct samples"),
])
def test_duckdb_refuses_what_polars_refuses(capsys, fixture, message):
    pytest.importorskip("duckdb")
    code, out, err = run(capsys, "scan", str(BAD / fixture), "--engine", "duckdb", "--samples", "16")
    assert code == 2 and out == ""
    assert message in err and len(err.strip().splitlines()) == 1


def test_repeated_blocks_need_parquet(tmp_path):
    """Dropping repeated blocks needs row order, which the engines read back from parquet only."""
    pytest.importorskip("duckdb")
    pl.read_parquet(sorted((_trl_dump(tmp_path) / "completions").iterdir())[0]).write_ndjson(tmp_path / "c.jsonl")
    schema = dict(pl.read_ndjson(tmp_path / "c.jsonl").schema)
    with pytest.raises(ConfigError, match="jsonl files carry no row order"):
        reduce_with(get_engine("duckdb"), _dedupe_plan(schema), LoadOptions(), [tmp_path / "c.jsonl"], schema)


def test_spark_remote_needs_engine_spark(capsys):
    code, _, err = run(capsys, "scan", str(SAMPLES / "counts.csv"), "--spark-remote", "sc://localhost:15002")
    assert code == 2 and "--spark-remote needs --engine spark" in err


def test_unknown_derived_column_is_refused():
    plan = ColumnMap("future-trainer", ("prompt",), reward="r", derived=(("weird", pl.lit(1)),))
    with pytest.raises(ConfigError, match="future-trainer layout cannot run on --engine spark"):
        reduce_sql(plan, LoadOptions(), SPARK, "t", {}, engine="spark")


def test_sql_quotes_identifiers():
    plan = ColumnMap("long", ("run", "task id"), reward='we"ird', step="step")
    sql = reduce_sql(plan, LoadOptions(), DUCKDB, "t", {"run": "text", "task id": "int"})
    assert '"we""ird"' in sql and "concat_ws(' | ', CAST(\"run\" AS VARCHAR), CAST(\"task id\" AS VARCHAR))" in sql


# ---- Spark -----------------------------------------------------------------------------------

@pytest.mark.parametrize("log", RUN + FRAMEWORK)
def test_spark_scan_json_equals_polars(capsys, spark_engine, log):
    mine = _same_as_polars(capsys, "spark", log)
    if log in RUN:
        assert "reduced by Spark" in mine
    else:
        assert "by the framework's reader on Spark" in mine and "executors (a local Spark session)" in mine


def test_spark_refuses_nonbinary_rewards(capsys, spark_engine):
    code, _, err = run(capsys, "scan", str(BAD / "nonbinary_reward.csv"), "--engine", "spark")
    assert code == 2 and "is not binary (values such as 0.25, 0.75, 1.5)" in err and len(err.strip().splitlines()) == 1


def _trl_dump(folder: Path) -> Path:
    """TRL completions with blocks written 1, 2 and 4 times, a break at the first level only, and two
    steps in one file; one reward of 1 marks each block so a wrong cut changes the counts."""
    def rows(step: int, prompts: list[str], rewards: list[float]) -> pl.DataFrame:
        return pl.DataFrame({"step": [str(step)] * len(prompts), "prompt": prompts,
                             "completion": [f"c{i % 3}" for i in range(len(prompts))],
                             "accuracy_reward": rewards, "advantage": [0.0] * len(prompts)})

    base = rows(1, ["p1", "p1", "p2", "p2"], [1.0, 0.0, 0.0, 0.0])
    out = folder / "completions"
    out.mkdir(parents=True)
    pl.concat([base] * 4).write_parquet(out / "completions_00001.parquet")         # written 4 times
    first = rows(2, ["p1", "p2", "p1", "p2"], [1.0, 1.0, 1.0, 1.0])                # a b a b: level 2 would hold
    last = rows(2, ["p3", "p3", "p4", "p4"], [0.0, 1.0, 0.0, 0.0])                 # level 1 fails
    pl.concat([first, last]).write_parquet(out / "completions_00002.parquet")
    three = rows(3, ["p5", "p5", "p6"], [1.0, 0.0, 1.0])
    pl.concat([three, three, rows(4, ["p7", "p7"], [1.0, 1.0])]).write_parquet(out / "completions_00003.parquet")
    return folder


def _dedupe_plan(schema: dict) -> ColumnMap:
    """A column map that drops repeated step blocks (the rule of reduce.drop_repeated_blocks)."""
    return ColumnMap("trl", ("prompt",), reward="accuracy_reward", step="step", dedupe=tuple(schema))


@pytest.mark.parametrize("engine", ["duckdb", "spark"])
def test_repeated_blocks_dropped_as_polars_does(tmp_path, engine, request):
    """The SQL version of drop_repeated_blocks against the Polars one, file by file and step by step."""
    pytest.importorskip(engine if engine == "duckdb" else "pyspark")
    if engine == "spark":
        request.getfixturevalue("spark_engine")
    files = sorted((_trl_dump(tmp_path) / "completions").iterdir())
    schema = dict(pl.read_parquet(files[0]).schema)
    plan = _dedupe_plan(schema)
    parts = [reduce_samples(scan(f, tmp_path), plan, None) for f in files]
    want = pl.concat([p.frame for p in parts]).group_by("prompt").agg(pl.col("n").sum(), pl.col("k").sum())
    assert sum(p.duplicates for p in parts) == 15  # 12 (step 1) + 0 (step 2) + 3 (step 3) + 0 (step 4)
    got = reduce_with(get_engine(engine), plan, LoadOptions(), files, schema)
    assert got.duplicates == 15
    assert got.rows == sum(p.rows for p in parts) == 17  # 4 + 8 + 3 + 2 kept
    key = ["step", "prompt", "n", "k"]
    assert got.frame.select(key).sort(key).equals(pl.concat([p.frame for p in parts]).select(key).sort(key))
    assert got.frame.group_by("prompt").agg(pl.col("n").sum(), pl.col("k").sum()).sort("prompt").equals(
        want.sort("prompt"))


@pytest.mark.parametrize("how", ["option", "env", "framework"])
def test_spark_connect_equals_polars(capsys, monkeypatch, spark_engine, how):
    """--spark-remote sc://host:port (or SPARK_REMOTE) reduces through Spark Connect; a framework
    dump's files are read by mapInArrow there too."""
    pytest.importorskip("grpc")
    log = SAMPLES / {"option": "grouped.parquet", "env": "verl", "framework": "prime-rl"}[how]
    want = _polars_json(capsys, log)
    args = ["scan", str(log), "-G", "8", "-f", "json", "--engine", "spark"]
    if how != "env":
        args += ["--spark-remote", spark_engine.connect_url]
    else:
        monkeypatch.setenv("SPARK_REMOTE", spark_engine.connect_url)
    code, out, err = run(capsys, *args)
    assert code == 0, err
    assert json.loads(out) == want
    assert f"Spark Connect at {spark_engine.connect_url}" in err


@pytest.mark.parametrize("engine", ["duckdb", "spark"])
def test_file_by_file_follows_polars_rules(tmp_path, capsys, engine, request):
    """A framework dump read file by file keeps the Polars engine's rules: a file that fits no layout
    (here the first one) skipped with a note, byte-for-byte copies skipped, validation files skipped;
    a malformed line is the same one-line error, exit 2."""
    pytest.importorskip(engine if engine == "duckdb" else "pyspark")
    if engine == "spark":
        request.getfixturevalue("spark_engine")
    root = tmp_path / "n"
    shutil.copytree(SAMPLES / "nemo-rl", root)
    steps = root / "logs" / "exp_001"
    half = (steps / "train_data_step1.jsonl").read_text().splitlines(keepends=True)
    (root / "logs" / "a_copy_of_step1.jsonl").write_text("".join(half[: len(half) // 2]))  # fits no layout
    shutil.copy(steps / "train_data_step2.jsonl", steps / "train_data_step9.jsonl")       # a byte copy
    notes = _same_as_polars(capsys, engine, str(root))
    assert "file by file" in notes
    err = run(capsys, "scan", str(root), "-G", "8")[2]
    assert "skipped as a byte-for-byte copy" in err and "a_copy_of_step1.jsonl: fits no layout" in err
    with open(steps / "train_data_step3.jsonl", "a") as fh:
        fh.write('{"broken\n')
    want = run(capsys, "scan", str(root), "-G", "8")
    got = run(capsys, "scan", str(root), "-G", "8", "--engine", engine)
    assert got == want and want[0] == 2 and len(want[2].strip().splitlines()) == 1
    assert "train_data_step3.jsonl:129: malformed JSON on line 129" in want[2]


def test_spark_names_a_missing_sigmaudit_on_the_executors():
    """Executors without sigmaudit fail the file-by-file read: one line that says what to install."""
    pytest.importorskip("pyspark")
    from sigmaudit.errors import InputError

    class Failing:
        def toArrow(self):  # noqa: N802 - PySpark's name
            raise RuntimeError("An exception was thrown from the Python worker. Please see the stack trace "
                               "below.\nTraceback (most recent call last):\n  File \"worker.py\", line 1, in main\n"
                               "ModuleNotFoundError: No module named 'sigmaudit'\n")

    with pytest.raises(InputError) as info:
        get_engine("spark")._arrow(Failing(), "logs/")
    line = info.value.one_line()
    assert "No module named 'sigmaudit'" in line and "install sigmaudit" in line and "\n" not in line


# ---- issue 23: the engines read what the Polars engine reads --------------------------------------

def _write_csv(path: Path, header: str, rows: list[tuple], head: str = "") -> Path:
    path.write_text(head + header + "\n" + "".join(",".join(map(str, r)) + "\n" for r in rows), encoding="utf-8")
    return path


def _agree(capsys, engine: str, path: Path, *extra: str) -> dict:
    """``scan -f json`` on ``engine`` equals the Polars engine's, exit 0; returns it."""
    args = ("scan", str(path), "-G", "2", "-f", "json", *extra)
    want, got = run(capsys, *args), run(capsys, *args, "--engine", engine)
    assert want[0] == got[0] == 0, (want[2], got[2])
    assert json.loads(got[1]) == json.loads(want[1])
    return json.loads(got[1])


def _half_steps(tmp_path: Path) -> Path:
    """Steps 0.0, 0.5, ..., 4.5 (ten steps of 3 prompts x 8 answers): rounding or truncating them merges
    steps two by two into groups of 16 (issue 23, item 3)."""
    rows = []
    for s in range(10):
        for p in range(3):
            rows += [(s * 0.5, f"q{p}", int(i < (s + p) % 9)) for i in range(8)]
    return _write_csv(tmp_path / "half_steps.csv", "step,prompt_id,reward", rows)


@pytest.mark.parametrize("engine", ["duckdb", "spark"])
def test_non_integer_steps_are_not_merged(tmp_path, capsys, engine, request):
    """Half steps are never merged two by two (issue 23 item 3): since issue 36 item 19 every engine refuses
    them with the Polars engine's one line (an epoch or a time is not a training step)."""
    pytest.importorskip(engine if engine == "duckdb" else "pyspark")
    if engine == "spark":
        request.getfixturevalue("spark_engine")
    path = _half_steps(tmp_path)
    args = ("scan", str(path), "-G", "2", "-f", "json")
    want, got = run(capsys, *args), run(capsys, *args, "--engine", engine)
    assert want[0] == got[0] == 2 and want[1] == got[1] == ""
    assert want[2].strip().splitlines()[-1] == got[2].strip().splitlines()[-1]
    assert "not whole numbers (first 0.5, 5 such values)" in got[2]
    with pytest.raises(SigmauditError, match="not whole numbers"):
        load_counts([path], engine=get_engine(engine))


def test_text_step_that_is_not_an_integer_is_refused_as_polars_refuses(tmp_path, capsys):
    pytest.importorskip("duckdb")
    path = _write_csv(tmp_path / "s.csv", "step,prompt_id,reward", [("a1", "q", 1), ("a1", "q", 0), ("b", "q", 1)])
    want = run(capsys, "scan", str(path), "-G", "2")
    got = run(capsys, "scan", str(path), "-G", "2", "--engine", "duckdb")
    assert want[0] == got[0] == 2 and "is not an integer step" in want[2] and "is not an integer step" in got[2]
    assert len(got[2].strip().splitlines()) == 1


def test_duckdb_reads_a_hash_inside_an_unquoted_prompt_id_as_text(tmp_path, capsys):
    """Only leading comment lines are comments (as Polars reads csv); ``q#1`` is a prompt id (item 15)."""
    pytest.importorskip("duckdb")
    rows = [(s, q, int(i < j)) for s in (1, 2) for j, q in enumerate(["q#1", "q#2", "#q3"]) for i in range(4)]
    plain = _write_csv(tmp_path / "plain.csv", "step,prompt_id,reward", rows)
    headed = _write_csv(tmp_path / "headed.csv", "step,prompt_id,reward", rows, head="# written by a test\n")
    for path in (plain, headed):
        out = _agree(capsys, "duckdb", path)
        assert out["prompts"] == 3 and out["rollouts"] == 24
    both = _agree(capsys, "duckdb", tmp_path, "--pool-prompts")  # one log twice, different comment lines
    assert both["rollouts"] == 48


def test_duckdb_reads_a_dotted_column_name_as_a_column(tmp_path, capsys):
    """A csv column called ``prompt.id`` is that column, not field ``id`` of a struct ``prompt`` (item 15)."""
    pytest.importorskip("duckdb")
    rows = [(s, q, int(i < j)) for s in (1, 2) for j, q in enumerate("ab") for i in range(4)]
    path = _write_csv(tmp_path / "d.csv", "step,prompt.id,reward", rows)
    out = _agree(capsys, "duckdb", path, "--prompt-col", "prompt.id")
    assert out["prompts"] == 2 and out["rollouts"] == 16
    want = run(capsys, "scan", str(path), "-G", "8")
    got = run(capsys, "scan", str(path), "-G", "8", "--engine", "duckdb")
    assert want == got and want[0] == 2 and "no prompt key column found" in got[2]


def _hash_led(tmp_path: Path) -> dict[str, Path]:
    """csv files whose prompt ids (first column) include ``#q3``: without comment lines; with a leading
    comment line and ``"#q3"`` quoted (also gzipped); with a leading comment line and ``#q3`` bare."""
    rows = [(q, int(i < j), s) for s in (1, 2) for j, q in enumerate(["q1", "q2", "#q3"]) for i in range(4)]
    quoted = [(f'"{q}"' if q.startswith("#") else q, r, s) for q, r, s in rows]
    (tmp_path / "mixed").mkdir()
    (tmp_path / "gz").mkdir()
    files = {"plain": _write_csv(tmp_path / "mixed" / "plain.csv", "prompt_id,reward,step", rows),
             "quoted": _write_csv(tmp_path / "mixed" / "quoted.csv", "prompt_id,reward,step", quoted,
                                  head="# written by a test\n"),
             "bare": _write_csv(tmp_path / "bare.csv", "prompt_id,reward,step", rows, head="# written by a test\n")}
    files["gz"] = tmp_path / "gz" / "quoted.csv.gz"
    files["gz"].write_bytes(gzip.compress(files["quoted"].read_bytes()))
    return files


@pytest.mark.parametrize("engine", ["duckdb", "spark"])
def test_only_leading_comment_lines_are_skipped(tmp_path, capsys, engine, request):
    """Issue 23 item 18: Polars skips a csv's leading comment lines only; a later line starting with ``#``
    is data. DuckDB skips those lines by count (same answer). Spark's ``comment`` option drops every line
    starting with ``#``, and was set for all the files when one had comments: now only files with leading
    comments get it (a folder mixing both reads as Polars reads it: 48 rollouts, 3 prompts; was 32 and 2),
    and a file whose later line starts with ``#`` is refused in one line naming that line (was 16 of 24
    rollouts, ``#q3`` gone)."""
    pytest.importorskip(engine if engine == "duckdb" else "pyspark")
    if engine == "spark":
        request.getfixturevalue("spark_engine")
    files = _hash_led(tmp_path)
    # the folder holds the same log twice (one copy with comment lines): pooled as asked (issue 35 item 3)
    both = _agree(capsys, engine, tmp_path / "mixed", "--pool-prompts")
    assert (both["rollouts"], both["prompts"]) == (48, 3)
    assert _agree(capsys, engine, files["gz"])["prompts"] == 3
    if engine == "duckdb":
        assert _agree(capsys, engine, files["bare"])["prompts"] == 3
        return
    assert run(capsys, "scan", str(files["bare"]), "-G", "2")[0] == 0
    code, out, err = run(capsys, "scan", str(files["bare"]), "-G", "2", "--engine", "spark")
    assert (code, out) == (2, "")
    assert err.strip().splitlines() == [
        f"sigmaudit: error: {files['bare']}:11: line 11 starts with '#' after the file's leading comment lines: "
        "Spark's csv reader would drop it as a comment, the polars engine reads it; use --engine polars or "
        "--engine duckdb, or quote that line's first field"]


def test_a_comment_line_spark_would_not_skip_is_refused(tmp_path):
    """A leading line that Polars skips as a comment (``"#`` or an indented ``#``) but Spark's reader would
    read as the header: refused before Spark starts (no session needed)."""
    from sigmaudit.loaders.engines.spark import leading_comments

    files = _hash_led(tmp_path)
    assert [leading_comments(str(files[k])) for k in ("plain", "quoted", "gz")] == [0, 1, 1]
    odd = _write_csv(tmp_path / "odd.csv", "prompt_id,reward", [("q", 1)], head="# one\n  # two\n")
    with pytest.raises(ConfigError) as err:
        leading_comments(str(odd))
    assert err.value.one_line() == (
        f"{odd}:2: line 2 is a comment line to the polars engine, not to Spark's csv reader (it starts with a "
        "space or a quote); use --engine polars or --engine duckdb, or quote that line's first field")


@pytest.mark.parametrize("engine", ["duckdb", "spark"])
def test_compressed_data_under_a_plain_name_is_refused_by_the_sql_engines(tmp_path, capsys, engine, request):
    """Issue 23 item 10 on the engines: the polars engine reads gzip bytes in a file named .csv by content
    (4,800 rollouts); DuckDB and Spark pick the decompressor by the name (DuckDB: "Error when sniffing
    file", Spark: the gzip bytes as column names): refused in one line naming the file and the fix."""
    pytest.importorskip(engine if engine == "duckdb" else "pyspark")
    if engine == "spark":
        request.getfixturevalue("spark_engine")
    path = tmp_path / "long.csv"
    path.write_bytes(gzip.compress((SAMPLES / "long.csv").read_bytes()))
    code, out, _ = run(capsys, "scan", str(path), "-G", "8", "-f", "json")
    assert code == 0 and json.loads(out)["rollouts"] == 4800
    code, out, err = run(capsys, "scan", str(path), "-G", "8", "--engine", engine)
    assert (code, out) == (2, "")
    assert err.strip().splitlines() == [
        f"sigmaudit: error: {path}: gzip data under a name that does not say so: --engine {engine} picks the "
        "decompressor by the file's name; rename it to end in .csv.gz, or use --engine polars (it reads by content)"]


def test_spark_reads_a_quoted_newline_in_a_prompt_id(tmp_path, capsys, spark_engine, monkeypatch):
    """A csv prompt id holding a quoted newline is one field (item 18): the same answer as Polars, and
    nothing but sigmaudit's own lines on stderr; a local session's Python workers run this interpreter."""
    rows = [(s, '"q\n1"' if j else "q2", int(i < s + j)) for s in (1, 2) for j in (0, 1) for i in range(4)]
    path = _write_csv(tmp_path / "nl.csv", "step,prompt_id,reward", rows)
    args = ("scan", str(path), "-G", "2", "-f", "json")
    want, got = run(capsys, *args), run(capsys, *args, "--engine", "spark")
    assert want[0] == got[0] == 0 and json.loads(got[1]) == json.loads(want[1])
    assert json.loads(got[1])["prompts"] == 2
    assert all(line.startswith("sigmaudit: ") for line in got[2].splitlines())
    monkeypatch.delenv("PYSPARK_PYTHON", raising=False)
    from pyspark.sql import SparkSession

    from sigmaudit.loaders.engines.spark import _local_session

    _local_session(SparkSession)
    import os

    assert os.environ["PYSPARK_PYTHON"] == sys.executable


def _silent_server(seconds: float = 30.0) -> int:
    """127.0.0.1: accepts connections, never answers, stops by itself."""
    from stalling import silent_port

    return silent_port(seconds)


@pytest.mark.parametrize("how", ["refused", "silent"])
def test_spark_connect_unreachable_fails_fast_in_one_line(capsys, monkeypatch, how):
    """Item 30: an address nothing listens on, or a server that accepts and never answers, is refused
    within the connect timeout (the client alone retried for ten minutes); secrets in it are not shown.
    The clock starts after PySpark is imported (seconds on a loaded machine) and allows 15 s for a 1 s
    timeout: robust under load, and still far from the client's minutes of retries."""
    import time

    pytest.importorskip("pyspark")
    with warnings.catch_warnings():  # PySpark's notice about the pandas version
        warnings.simplefilter("ignore")
        import pyspark.sql  # noqa: F401 - imported before the clock starts
    monkeypatch.setenv("SIGMAUDIT_CONNECT_TIMEOUT", "1")
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        free = sock.getsockname()[1]
    port = free if how == "refused" else _silent_server()
    start = time.monotonic()
    code, out, err = run(capsys, "scan", str(SAMPLES / "long.csv"), "--engine", "spark",
                         "--spark-remote", f"sc://127.0.0.1:{port}/;token=SECRET")
    assert time.monotonic() - start < 15
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert ("cannot reach Spark Connect" if how == "refused" else "no answer from Spark Connect within 1 s") in err
    assert "SECRET" not in err and "SIGMAUDIT_CONNECT_TIMEOUT" in err


def test_duckdb_counts_zero_spread_groups_as_polars_does(tmp_path, capsys):
    """Shaped rewards (correct + 0.1 * format) with --threshold: DuckDB carries each group's raw reward
    range, so zero-spread groups, wasted and the gate equal the Polars engine's (they fell back to
    correctness silence, null zero_spread)."""
    pytest.importorskip("duckdb")
    rows = []
    for step in range(3):
        for p in range(6):
            for i in range(4):
                correct = float(p % 2 == 0) if p < 4 else float(i % 2)
                rows.append((step, f"q{p}", correct + (0.1 if (p == 0 or i % 2) else 0.0)))
    log = tmp_path / "shaped.parquet"
    pl.DataFrame(rows, schema=["step", "prompt_id", "reward"], orient="row").write_parquet(log)
    out = {}
    for engine in ("polars", "duckdb"):
        code, text, _ = run(capsys, "scan", str(log), "--threshold", "1", "-q", "-f", "json", "--engine", engine)
        assert code == 0
        out[engine] = json.loads(text)
    # q0: all correct, all +0.1 -> zero spread; q2: all correct, formats differ -> silent on correctness only;
    # q1, q3: all wrong, formats differ; q4, q5: mixed. Zero spread: 1 of 6 groups per step.
    assert out["duckdb"]["observed_silent"]["zero_spread"] == pytest.approx(1 / 6)
    assert out["duckdb"]["observed_silent"] == out["polars"]["observed_silent"]
    assert out["duckdb"]["wasted"] == out["polars"]["wasted"]


def _null_prompt_log(path: Path, prompt_type: pl.DataType) -> None:
    """Two steps × prompts 1, 2 and a null key × 4 answers; the prompt key of one or two columns."""
    rows = [{"step": s, "task": None if p is None else "math", "prompt_id": p, "reward": float((i + s) % 2)}
            for s in (1, 2) for p in (1, 2, None) for i in range(4)]
    pl.DataFrame(rows, schema={"step": pl.Int64, "task": pl.Utf8, "prompt_id": pl.Int64, "reward": pl.Float64}
                 ).with_columns(pl.col("prompt_id").cast(prompt_type)).write_parquet(path)


@pytest.mark.parametrize("engine", ["polars", "duckdb", "spark"])
@pytest.mark.parametrize("prompt_type", [pl.Int64, pl.Float64, pl.Utf8])
@pytest.mark.parametrize("prompt_col", ["prompt_id", "task,prompt_id"])
def test_a_null_prompt_key_is_dropped_whatever_its_column_type(tmp_path, capsys, engine, prompt_type, prompt_col,
                                                                request):
    """A null prompt key is no prompt: its rows are dropped and counted, on every engine and for every column
    type. An integer column's nulls (and a key of two columns, both null) became the text "" and pooled 16 rows
    into one prompt "" that no row names (polars, and concat_ws in SQL)."""
    if engine != "polars":
        pytest.importorskip("duckdb" if engine == "duckdb" else "pyspark")
    if engine == "spark":
        request.getfixturevalue("spark_engine")
    log = tmp_path / "log.parquet"
    _null_prompt_log(log, prompt_type)
    code, out, err = run(capsys, "scan", str(log), "--prompt-col", prompt_col, "-f", "json", "--engine", engine)
    assert code == 0, err
    got = json.loads(out)
    assert (got["prompts"], got["rollouts"]) == (2, 16)
    assert "8 rows with a null prompt key" in err
