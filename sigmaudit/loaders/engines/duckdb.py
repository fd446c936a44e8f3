"""The reduction on DuckDB (embedded, this machine): :func:`.sql.reduce_sql` over all the files at once.

A framework dump (a reader restructures each file in Python) is read file by file here, as on the
polars engine (:meth:`DuckDBEngine.count_files`). Local files only here (object stores would need
DuckDB's httpfs extension, which is downloaded on first use); ``pip install duckdb`` (or
``sigmaudit[duckdb]``).
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from ...errors import ConfigError, InputError, SchemaError
from ..columns import ColumnMap
from ..options import LoadOptions
from ..remote import is_remote
from . import by_format, kind_of, view_columns
from .sql import DUCKDB, FILE, ROW, bad_values_sql, duplicates_sql, reduce_sql, refuse

TABLE = "sigmaudit_logs"


def _literal(paths: list[str]) -> str:
    return "[" + ", ".join("'" + p.replace("'", "''") + "'" for p in paths) + "]"


class DuckDBEngine:
    """DuckDB in this process."""

    name = "duckdb"

    def __init__(self) -> None:
        try:
            import duckdb
        except ImportError as exc:
            raise ConfigError("--engine duckdb needs the duckdb package", location="--engine",
                              remedy='pip install "sigmaudit[duckdb]"') from exc
        self._duckdb = duckdb
        self.by_file = False

    def describe(self) -> str:
        if self.by_file:
            return ("read and reduced here file by file by the framework's reader (Python), as --engine polars "
                    "does: DuckDB has nothing to add to it")
        return f"reduced by DuckDB {self._duckdb.__version__} on this machine"

    def count_files(self, count, files: list[Path], hashed: set[int]) -> list:  # noqa: ANN001
        """Each file through ``count`` here, in order (its reader is Python: one process reads it)."""
        self.by_file = True
        return [count(f, index=i, digest=i in hashed) for i, f in enumerate(files)]

    def _connect(self, plan: ColumnMap, files: list[Path | str],
                 schema: dict[str, pl.DataType] | None = None):  # noqa: ANN202
        remote = [f for f in files if is_remote(f)]
        if remote:
            raise ConfigError("--engine duckdb reads local files only", location=str(remote[0]),
                              remedy="use --engine polars or spark for object-store URLs")
        con = self._duckdb.connect()
        names = view_columns(plan)
        cols = ", ".join(DUCKDB.ident(c) for c in names)
        if plan.dedupe:
            cols += f", filename AS {FILE}, file_row_number AS {ROW}"
        parts = []
        for fmt, paths in by_format(files).items():
            if plan.dedupe and fmt != "parquet":
                raise refuse(plan, self.name, f"{fmt} files carry no row order DuckDB can read back")
            if fmt == "parquet":
                extra = ", filename = true, file_row_number = true" if plan.dedupe else ""
                parts.append(f"SELECT {cols} FROM read_parquet({_literal(paths)}, union_by_name = true{extra})")
            elif fmt == "jsonl":
                src = f"read_json({_literal(paths)}, format = 'newline_delimited', union_by_name = true)"
                parts.append(f"SELECT {cols} FROM {src}")
            else:
                parts.extend(_csv_parts(paths, names, schema or {}))
        con.execute(f"CREATE VIEW {TABLE} AS " + " UNION ALL BY NAME ".join(parts))
        return con

    def _query(self, con, sql: str, where: str) -> pl.DataFrame:  # noqa: ANN001
        try:
            return pl.from_arrow(con.sql(sql).to_arrow_table())
        except self._duckdb.ConversionException as exc:
            raise SchemaError(f"cannot convert a value: {_first(exc)}", location=where,
                              remedy="check --step-col/--reward-col") from exc
        except self._duckdb.Error as exc:
            raise InputError(f"DuckDB could not reduce the logs: {_first(exc)}", location=where) from exc

    def run(self, plan: ColumnMap, opts: LoadOptions, files: list[Path | str],
            schema: dict[str, pl.DataType]) -> pl.DataFrame:
        self.by_file = False
        types = {c: kind_of(t) for c, t in schema.items()}
        sql = reduce_sql(plan, opts, DUCKDB, TABLE, types, engine=self.name)
        try:
            con = self._connect(plan, files, schema)
        except self._duckdb.Error as exc:
            raise InputError(f"DuckDB cannot read the logs: {_first(exc)}", location=str(files[0])) from exc
        return self._query(con, sql, str(files[0]))

    def duplicates(self, plan: ColumnMap, files: list[Path | str]) -> int:
        con = self._connect(plan, files)
        return int(self._query(con, duplicates_sql(plan, DUCKDB, TABLE), str(files[0]))["dup"][0])

    def bad_values(self, plan: ColumnMap, opts: LoadOptions, files: list[Path | str],
                   schema: dict[str, pl.DataType]) -> list[float]:
        con = self._connect(plan, files, schema)
        return self._query(con, bad_values_sql(plan, opts, DUCKDB, TABLE), str(files[0]))["x"].to_list()


CSV_TYPES = {"int": "BIGINT", "float": "DOUBLE", "bool": "BOOLEAN"}


def _csv_parts(paths: list[str], names: list[str], schema: dict[str, pl.DataType]) -> list[str]:
    """SELECTs reading csv files as the polars engine reads them: comma-separated, ``"`` quoted, only the
    leading comment lines skipped (a ``#`` inside a field is text), every field read as text and cast
    to the type Polars gave the column in the sample (a prompt id stays text when Polars keeps it so)."""
    from ..readers import csv_skip_rows

    by_skip: dict[int, list[str]] = {}
    for p in paths:
        by_skip.setdefault(csv_skip_rows(Path(p)), []).append(p)
    cols = []
    for c in names:
        sql_type = CSV_TYPES.get(kind_of(schema[c])) if c in schema else None
        cols.append(f"CAST({DUCKDB.ident(c)} AS {sql_type}) AS {DUCKDB.ident(c)}" if sql_type else DUCKDB.ident(c))
    # strict mode miscounts a file's lines after skipped comment lines (DuckDB 1.x-2.0: 0 rows or a failed sniff)
    return [f"SELECT {', '.join(cols)} FROM read_csv({_literal(group)}, header = true, delim = ',', quote = '\"', "
            f"escape = '\"', skip = {skip}, all_varchar = true, allow_quoted_nulls = false, union_by_name = true"
            f"{', strict_mode = false' if skip else ''})"
            for skip, group in by_skip.items()]


def _first(exc: Exception) -> str:
    text = str(exc).strip()
    return text.splitlines()[0][:300] if text else type(exc).__name__
