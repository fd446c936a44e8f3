"""Where the reduction (rows -> counts per (step, group, prompt)) runs.

``polars`` (the default) is :mod:`.polars` (the reduction of :mod:`..reduce`), file by file on this
machine. ``duckdb`` and
``spark`` run the same reduction as one SQL statement (:mod:`.sql`) over all the inputs at once;
the layout is detected as always, with Polars, from the first file (a sample), and only the
small counts table comes back. Everything after the reduction runs locally, unchanged.

A dump whose framework reader restructures each file in Python (TRL, open-instruct, prime-rl, NeMo-RL,
AReaL, ROLL, SkyRL, inspect_ai) or filters rows with a Polars expression (verl v1) is read file by
file instead: each file goes through the local engine's own reader and reduction
(:func:`.polars.count_file`), on Spark's executors (``mapInArrow`` over the file paths) or
here for DuckDB, and only each file's counts come back to be assembled as the local engine does.

>>> from sigmaudit.loaders.engines import ENGINES
>>> ENGINES
('polars', 'duckdb', 'spark')
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import polars as pl

from ...errors import SchemaError
from ..columns import ColumnMap
from ..options import FileCounts, LoadOptions
from ..paths import file_kind
from ..reduce import HANDOFF_MISSING, fractional_step_error, missing_at
from ..remote import is_remote, parse_url
from ..rewards import non_binary_error

ENGINES = ("polars", "duckdb", "spark")
"""Engine names, as ``--engine`` takes them."""


@dataclass(frozen=True)
class EngineResult:
    """What an engine returns: the ``reduce.PARTIAL_SCHEMA`` frame for all the files, and totals."""

    frame: pl.DataFrame
    rows: int
    missing: int
    duplicates: int = 0
    missing_at: pl.DataFrame | None = None
    null_keys: int = 0
    """Rows (samples) dropped because their prompt key is null, as the polars engine counts them
    (``reduce.Partial.of``); not in ``rows``."""


class Engine(Protocol):
    """An engine runs :func:`.sql.reduce_sql` over every input file and returns its rows."""

    name: str

    def describe(self) -> str:
        """One line for the notes: which engine, where."""

    def run(self, plan: ColumnMap, opts: LoadOptions, files: list[Path | str],
            schema: dict[str, pl.DataType]) -> pl.DataFrame:
        """The raw result of the reduction query (step, gid, prompt, n, k, missing, rows, bad)."""

    def duplicates(self, plan: ColumnMap, files: list[Path | str]) -> int:
        """Rows dropped as repeated step blocks (layouts with ``plan.dedupe``)."""

    def count_files(self, count: Callable[..., FileCounts], files: list[Path], hashed: set[int]) -> list[FileCounts]:
        """``count(file, index=i, digest=i in hashed)`` for every file (a dump whose framework reader
        restructures each file in Python), in file order; the frames in ``reduce.PARTIAL_SCHEMA``."""


def get_engine(name: str, spark_remote: str | None = None) -> Engine | None:
    """The engine called ``name`` (None for ``polars``: the loaders' own reduction)."""
    if name == "polars":
        return None
    if name == "duckdb":
        from .duckdb import DuckDBEngine

        return DuckDBEngine()
    if name == "spark":
        from .spark import SparkEngine

        return SparkEngine(spark_remote)
    from ...errors import ConfigError

    raise ConfigError(f"unknown engine {name!r}; engines: {', '.join(ENGINES)}", location="--engine")


def by_format(files: list[Path | str]) -> dict[str, list[str]]:
    """Input files grouped by format (parquet, csv, jsonl), each as a string path or URL."""
    out: dict[str, list[str]] = defaultdict(list)
    for f in files:
        kind = file_kind(parse_url(f).pure) if is_remote(f) else file_kind(Path(f))
        assert kind is not None, f
        out[kind[0]].append(str(f) if is_remote(f) else str(Path(f).resolve()))
    return dict(out)


def kind_of(dtype: pl.DataType) -> str:
    """``text``, ``int``, ``float``, ``bool`` or ``other``: what the SQL needs to know of a column."""
    if dtype == pl.Utf8:
        return "text"
    if dtype == pl.Boolean:
        return "bool"
    if dtype.is_integer():
        return "int"
    if dtype.is_float():
        return "float"
    return "other"


def needed_columns(plan: ColumnMap) -> list[str]:
    """The top-level columns the reduction reads (struct parents for derived fields)."""
    names = [*plan.prompt, plan.step, plan.group, plan.reward, plan.n, plan.k, plan.rate, plan.length]
    derived = dict(plan.derived)
    out: list[str] = []
    for name in names:
        if not name:
            continue
        if name in derived:
            out.append("traces" if name == "__rewards" else name.split(".")[0])
        else:
            out.append(name)
    return list(dict.fromkeys(out))


def view_columns(plan: ColumnMap) -> list[str]:
    """The columns an engine's view of the inputs holds: those the reduction reads, and for a
    layout that drops repeated blocks (TRL) every column it compares."""
    return list(dict.fromkeys([*needed_columns(plan), *plan.dedupe]))


def reduce_with(engine: Engine, plan: ColumnMap, opts: LoadOptions, files: list[Path | str],
                schema: dict[str, pl.DataType]) -> EngineResult:
    """Run ``engine`` and check its result as the local engine does (non-binary rewards,
    invalid counts); the frame comes back in ``PARTIAL_SCHEMA``."""
    if plan.layout == "counts" and HANDOFF_MISSING in schema:
        from .sql import refuse

        raise refuse(plan, engine.name, f"its {HANDOFF_MISSING} column (a sigmaudit hand-off) is read by the polars "
                                        "engine only")
    raw = engine.run(plan, opts, files, schema)
    where = str(files[0]) if len(files) == 1 else f"{files[0]} (and {len(files) - 1} more)"
    if plan.layout == "counts":
        bad = raw.filter(pl.col("bad").is_not_null() & (pl.col("bad") != ""))
        if bad.height:
            row = bad.sort("step", "prompt", nulls_last=True).row(0, named=True)
            at = f"prompt {row['prompt']}" + (f" at step {row['step']}" if row["step"] is not None else "")
            raise SchemaError(f"invalid counts: {row['bad']} ({at})", location=where,
                              remedy="fix the file, or pick other columns with --n-col/--k-col")
    elif int(raw["bad"].sum() or 0):
        raise non_binary_error(engine_bad_values(engine, plan, opts, files, schema), plan.reward or "", where)
    elif plan.length is not None and int(raw["bad_length"].sum() or 0):
        from ..reduce import bad_length_error

        raise bad_length_error(plan.length, where)
    null_keys = int(raw.filter(pl.col("prompt").is_null())["rows"].sum() or 0)
    frame = _labelled(raw.filter(pl.col("prompt").is_not_null()).sort("step", "prompt", "gid", "n", "k",
                                                                        nulls_last=True), plan, where)
    rows, missing = int(frame["rows"].sum()), int(frame["missing"].sum())
    duplicates = engine.duplicates(plan, files) if plan.dedupe else 0
    return EngineResult(frame.drop("missing", "rows"), rows, missing, duplicates, missing_at(frame), null_keys)


def _labelled(raw: pl.DataFrame, plan: ColumnMap, where: str) -> pl.DataFrame:
    """The query's rows in ``PARTIAL_SCHEMA`` (plus missing, rows). Groups were formed on the step as
    read; a step that is no whole number (0.5, 1.5) is refused as the polars engine refuses it
    (``reduce._finish``), and whole steps are labelled as integers by the same Polars cast."""
    if plan.step and (err := fractional_step_error(raw["step"], plan.step, where)):
        raise err
    try:
        return raw.select(pl.col("step").cast(pl.Int64), pl.col("gid").cast(pl.Utf8), pl.col("prompt").cast(pl.Utf8),
                          pl.col("n").cast(pl.Int64), pl.col("k").cast(pl.Int64),
                          pl.col("missing").cast(pl.Int64), pl.col("rows").cast(pl.Int64),
                          *(pl.col(c).cast(pl.Float64) for c in ("rmin", "rmax") if c in raw.columns),
                          *(pl.col(c).cast(pl.Int64) for c in ("tokens", "tokens_missing") if c in raw.columns))
    except (pl.exceptions.InvalidOperationError, pl.exceptions.ComputeError) as exc:
        raise SchemaError(f"step column {plan.step!r} is not an integer step", location=f"{where}: column {plan.step}",
                          remedy="pass --step-col with an integer column") from exc


def engine_bad_values(engine: Engine, plan: ColumnMap, opts: LoadOptions, files: list[Path | str],
                      schema: dict[str, pl.DataType]) -> list[float]:
    """A few of the non-binary reward values (for the error message)."""
    values = getattr(engine, "bad_values", None)
    return sorted(values(plan, opts, files, schema)) if values else []
