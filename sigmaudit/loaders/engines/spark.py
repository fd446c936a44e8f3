"""The reduction on Spark: :func:`.sql.reduce_sql` as Spark SQL over all the files at once.

``--spark-remote sc://host:15002`` (or ``SPARK_REMOTE``) connects to a running cluster through Spark
Connect (the client needs no JVM: ``pip install "pyspark[connect]"``); without either, a local
session (``local[*]``, needs Java 17+) is started. The cluster reads the inputs itself, so they must
be paths it can see (``s3a://``, ``gs://``, ``abfss://``, a shared file system); the layout is
detected first from the first file on this machine, so that one must be readable here too.
"""

from __future__ import annotations

import dataclasses
import functools
import os
from pathlib import Path

import polars as pl

from ...errors import ConfigError, InputError, SchemaError
from ..columns import ColumnMap
from ..options import LoadOptions
from ..remote import is_remote
from . import by_format, kind_of, needed_columns, view_columns
from .sql import FILE, ROW, SPARK, bad_values_sql, duplicates_sql, reduce_sql, refuse

TABLE = "sigmaudit_logs"
CSV_TYPES = {"int": "BIGINT", "float": "DOUBLE", "bool": "BOOLEAN"}
LOCAL_CONF = {"spark.ui.enabled": "false", "spark.ui.showConsoleProgress": "false", "spark.sql.shuffle.partitions": "8",
              "spark.driver.memory": "2g", "spark.sql.session.timeZone": "UTC"}
"""A local session: no web UI, few shuffle partitions (the counts are small)."""


def spark_type(dtype: pl.DataType, numeric_as_double: bool = False) -> str | None:
    """The Spark SQL type for a Polars type, or None when there is none to give."""
    if dtype == pl.Utf8:
        return "STRING"
    if dtype == pl.Boolean:
        return "BOOLEAN"
    if dtype.is_integer():
        return "DOUBLE" if numeric_as_double else "BIGINT"
    if dtype.is_float():
        return "DOUBLE"
    if isinstance(dtype, pl.List):
        inner = spark_type(dtype.inner, numeric_as_double)
        return None if inner is None else f"ARRAY<{inner}>"
    if isinstance(dtype, pl.Struct):
        fields = [(f.name, spark_type(f.dtype, numeric_as_double)) for f in dtype.fields]
        if any(t is None for _, t in fields):
            return None
        return "STRUCT<" + ", ".join(f"`{n}`: {t}" for n, t in fields) + ">"
    return None


def json_schema(plan: ColumnMap, schema: dict[str, pl.DataType]) -> str | None:
    """A DDL schema for the columns the reduction reads (so Spark parses only those, and does not
    infer types in a pass of its own); numbers that are counted (rewards, n, k, rate) as DOUBLE."""
    counted = {plan.reward, plan.n, plan.k, plan.rate} - {None}
    parts = []
    for name in needed_columns(plan):
        if name not in schema:
            return None
        t = spark_type(schema[name], numeric_as_double=name in counted or name == "traces")
        if t is None:
            return None
        parts.append(f"`{name}` {t}")
    return ", ".join(parts)


class SparkEngine:
    """A Spark session: Spark Connect to ``remote`` (or ``SPARK_REMOTE``), else local."""

    name = "spark"

    def __init__(self, remote: str | None = None) -> None:
        try:
            import pyspark  # noqa: F401
        except ImportError as exc:
            raise ConfigError("--engine spark needs PySpark", location="--engine",
                              remedy='pip install "sigmaudit[spark]"') from exc
        self.remote = remote or os.environ.get("SPARK_REMOTE") or None
        self._session = None
        self._per_file = False
        self.by_file = False

    def describe(self) -> str:
        import pyspark

        where = f"Spark Connect at {self.remote}" if self.remote else "a local Spark session"
        if self.by_file:
            return (f"read and reduced file by file by the framework's reader on Spark {pyspark.__version__}'s "
                    f"executors ({where})")
        return f"reduced by Spark {pyspark.__version__} ({where})"

    @property
    def session(self):  # noqa: ANN201
        if self._session is None:
            import warnings

            try:
                with warnings.catch_warnings():  # e.g. PySpark's notice about the pandas version
                    warnings.simplefilter("ignore")
                    from pyspark.sql import SparkSession

                    if self.remote:  # the Connect class itself: a local session may also run in this process
                        probe_connect(self.remote)
                        from pyspark.sql.connect.session import SparkSession as ConnectSession

                        self._session = ConnectSession.builder.remote(self.remote).getOrCreate()
                    else:
                        self._session = _local_session(SparkSession)
            except ConfigError:
                raise
            except Exception as exc:  # noqa: BLE001 - JVM, network and import errors alike
                where = self.remote or "local[*]"
                why = _jvm_said() if "JAVA_GATEWAY_EXITED" in str(exc) else None
                raise ConfigError(f"cannot start Spark ({where}): {why or _first(exc)}", location="--engine spark",
                                  remedy="check --spark-remote / SPARK_REMOTE, or Java 17+ for a local session"
                                  ) from exc
        return self._session

    def _parquet_per_file(self, paths: list[str], names: list[str], extra: list[str]):  # noqa: ANN202
        """Parquet files whose column types differ (e.g. TRL steps written as text in some files,
        as integers in others): each file read alone, differing columns cast to text."""
        frames = [self.session.read.parquet(p) for p in paths]
        types: dict[str, set[str]] = {}
        for df in frames:
            for field in df.schema.fields:
                types.setdefault(field.name, set()).add(field.dataType.simpleString())
        cols = [f"CAST(`{c}` AS STRING) AS `{c}`" if len(types.get(c, ())) > 1 else f"`{c}`" for c in names]
        return [df.selectExpr(*cols, *extra) for df in frames]

    def _view(self, plan: ColumnMap, files: list[Path | str], schema: dict[str, pl.DataType],
              per_file: bool = False) -> None:
        spark = self.session
        names = view_columns(plan)
        cols = [f"`{c}`" for c in names]
        extra = [f"_metadata.file_path AS {FILE}", f"_metadata.row_index AS {ROW}"] if plan.dedupe else []
        frames = []
        for fmt, paths in by_format(files).items():
            if plan.dedupe and fmt != "parquet":
                raise refuse(plan, self.name, f"{fmt} files carry no row order Spark can read back")
            if fmt == "parquet" and per_file:
                frames.extend(self._parquet_per_file(paths, names, extra))
                continue
            if fmt == "parquet":
                df = spark.read.parquet(*paths)
            elif fmt == "jsonl":
                ddl = json_schema(plan, schema)
                reader = spark.read.option("mode", "FAILFAST")
                df = reader.json(paths, schema=ddl) if ddl else reader.json(paths)
            else:
                frames.append(self._csv(paths, names, schema))
                continue
            frames.append(df.selectExpr(*cols, *extra))
        table = frames[0]
        for other in frames[1:]:
            table = table.unionByName(other)
        table.createOrReplaceTempView(TABLE)

    def _csv(self, paths: list[str], names: list[str], schema: dict[str, pl.DataType]):  # noqa: ANN202
        """csv files read as the polars engine reads them: RFC 4180 quoting (a quoted field may hold a
        newline or ``""``), every field as text cast to the type Polars gave the column in the sample;
        the files that start with comment lines read with Spark's ``comment`` option (which drops every
        line starting with ``#``), the others without it (:func:`leading_comments`)."""
        options = {"header": True, "multiLine": True, "quote": '"', "escape": '"', "mode": "FAILFAST",
                   "inferSchema": False}
        commented = {p: leading_comments(p) > 0 for p in paths}
        cols = []
        for c in names:
            sql_type = CSV_TYPES.get(kind_of(schema[c])) if c in schema else None
            cols.append(f"CAST(`{c}` AS {sql_type}) AS `{c}`" if sql_type else f"`{c}`")
        frames = []
        for comment in (False, True):
            group = [p for p in paths if commented[p] == comment]
            if group:
                reader = self.session.read.options(**options, **({"comment": "#"} if comment else {}))
                frames.append(reader.csv(group).selectExpr(*cols))
        return functools.reduce(lambda a, b: a.unionByName(b), frames)

    def _collect(self, sql: str, where: str) -> pl.DataFrame:
        try:
            return pl.from_arrow(self.session.sql(sql).toArrow())
        except Exception as exc:  # noqa: BLE001 - Spark raises many kinds; all become one line
            text = _first(exc)
            if "CAST" in text.upper() or "PARSE" in text.upper() or "MALFORMED" in text.upper():
                raise SchemaError(f"Spark could not read a value: {text}", location=where,
                                  remedy="check the column types, or --step-col/--reward-col") from exc
            raise InputError(f"Spark could not reduce the logs: {text}", location=where) from exc

    def run(self, plan: ColumnMap, opts: LoadOptions, files: list[Path | str],
            schema: dict[str, pl.DataType]) -> pl.DataFrame:
        self.by_file = False
        types = {c: kind_of(t) for c, t in schema.items()}
        sql = reduce_sql(plan, opts, SPARK, TABLE, types, engine=self.name)
        self._checked_view(plan, files, schema)
        try:
            return self._collect(sql, str(files[0]))
        except InputError as exc:
            if "DATA_TYPE_MISMATCH" not in f"{exc} {exc.__cause__}":
                raise
        self._checked_view(plan, files, schema, per_file=True)
        return self._collect(sql, str(files[0]))

    def _checked_view(self, plan: ColumnMap, files: list[Path | str], schema: dict[str, pl.DataType],
                      per_file: bool = False) -> None:
        try:
            self._view(plan, files, schema, per_file)
        except ConfigError:
            raise
        except Exception as exc:  # noqa: BLE001
            raise InputError(f"Spark cannot read the logs: {_first(exc)}", location=str(files[0])) from exc
        self._per_file = per_file

    def count_files(self, count, files: list[Path], hashed: set[int]) -> list:  # noqa: ANN001
        """``count`` (:func:`sigmaudit.loaders.count_file`) over the files on Spark's executors: a DataFrame
        of the paths, one partition per file (up to ``MAX_FILE_PARTITIONS``), ``mapInArrow`` yielding each
        file's partial counts and a pickled row of what else the load needs; only those come back.
        The executors run Python: they need sigmaudit installed and the files at the same paths."""
        import pickle

        self.by_file = True
        spark = self.session
        rows = [(i, str(f), i in hashed) for i, f in enumerate(files)]
        paths = spark.createDataFrame(rows, "i INT, path STRING, digest BOOLEAN")
        paths = paths.repartition(_file_partitions(spark, files))
        counted = paths.mapInArrow(functools.partial(_count_partition, count), COUNTS_DDL)
        where = str(files[0]) if len(files) == 1 else f"{files[0]} (and {len(files) - 1} more)"
        table = self._arrow(counted, where)
        metas = table.filter(pl.col("pos") < 0).sort("i")
        parts = table.filter(pl.col("pos") >= 0).sort("i", "pos").partition_by("i", as_dict=True)
        out = []
        for i, blob in zip(metas["i"], metas["meta"], strict=True):
            part, meta = parts.get((i,)), pickle.loads(blob)
            columns = (*PARTIAL_COLUMNS, *(LENGTH_COLUMNS if meta.length_source is not None else ()))
            frame = (part.select(*columns) if part is not None
                     else pl.DataFrame(schema=dict(zip(columns, (*PARTIAL_TYPES, pl.Int64, pl.Int64), strict=False))))
            out.append(dataclasses.replace(meta, frame=frame))
        if len(out) != len(files):
            raise InputError(f"Spark returned {len(out)} of {len(files)} files", location=where)
        return out

    def _arrow(self, df, where: str) -> pl.DataFrame:  # noqa: ANN001
        try:
            return pl.from_arrow(df.toArrow())
        except Exception as exc:  # noqa: BLE001 - Spark raises many kinds; all become one line
            text = _worker_error(exc) or _first(exc)
            remedy = ("install sigmaudit (the same version) where the executors run Python"
                      if "sigmaudit" in text and "module" in text.lower() else None)
            raise InputError(f"Spark could not read the logs file by file: {text}", location=where,
                             remedy=remedy) from exc

    def duplicates(self, plan: ColumnMap, files: list[Path | str]) -> int:
        return int(self._collect(duplicates_sql(plan, SPARK, TABLE), str(files[0]))["dup"][0])

    def bad_values(self, plan: ColumnMap, opts: LoadOptions, files: list[Path | str],
                   schema: dict[str, pl.DataType]) -> list[float]:
        self._view(plan, files, schema, self._per_file)
        return self._collect(bad_values_sql(plan, opts, SPARK, TABLE), str(files[0]))["x"].to_list()


def leading_comments(path: str) -> int:
    """The leading comment lines of a csv file, which the polars engine skips (:func:`..readers.csv_skip_rows`),
    when Spark's ``comment`` option skips exactly those lines; else a one-line ConfigError naming the line
    Spark would read otherwise: a later line starting with ``#`` (data to Polars, a comment to Spark) or a
    leading one starting with a space or a quote (a comment to Polars, not to Spark). A file that starts
    with comment lines is read here once, in a stream (decompressed, bounded); any other only to its
    first line."""
    import contextlib

    from ..readers import text_lines

    leading = 0
    with contextlib.closing(text_lines(path if is_remote(path) else Path(path))) as lines:
        for number, line in enumerate(lines, start=1):
            if number == leading + 1 and line.lstrip().startswith(("#", '"#')):
                if not line.startswith("#"):
                    raise _comment_refusal(path, number, "is a comment line to the polars engine, not to Spark's "
                                           "csv reader (it starts with a space or a quote)")
                leading += 1
            elif leading == 0:
                return 0
            elif line.startswith("#"):
                raise _comment_refusal(path, number, "starts with '#' after the file's leading comment lines: "
                                       "Spark's csv reader would drop it as a comment, the polars engine reads it")
    return leading


def _comment_refusal(path: str, number: int, why: str) -> ConfigError:
    return ConfigError(f"line {number} {why}", location=f"{path}:{number}",
                       remedy="use --engine polars or --engine duckdb, or quote that line's first field")


HTTP2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + b"\x00\x00\x00\x04\x00\x00\x00\x00\x00"
"""A client's HTTP/2 connection preface and an empty SETTINGS frame: a gRPC server answers with a frame."""


def probe_connect(remote: str) -> None:
    """Refuse in one line, within the connect timeout (``SIGMAUDIT_CONNECT_TIMEOUT``), a Spark Connect
    address that cannot be reached or does not answer; the client itself retries for about ten minutes."""
    import re
    import socket

    from ..remote import CONNECT_TIMEOUT_ENV, redact, timeouts

    m = re.match(r"^sc://(\[[^\]]+\]|[^:/;]+)(?::(\d+))?", remote)
    if m is None:
        raise ConfigError("a Spark Connect address looks like sc://host:15002", location=redact(remote),
                          remedy="check --spark-remote / SPARK_REMOTE")
    host, port = m.group(1).strip("[]"), int(m.group(2) or 15002)
    _, seconds = timeouts()
    fix = f"check --spark-remote / SPARK_REMOTE and that the server runs, or raise {CONNECT_TIMEOUT_ENV} (seconds)"
    try:
        with socket.create_connection((host, port), timeout=seconds) as sock:
            if "use_ssl=true" in remote.lower():
                return  # a TLS handshake first: the client's own errors follow
            sock.sendall(HTTP2_PREFACE)
            if not sock.recv(9):
                raise ConfigError("Spark Connect closed the connection without answering",
                                  location=redact(remote), remedy=fix)
    except TimeoutError as exc:
        raise ConfigError(f"no answer from Spark Connect within {seconds:g} s", location=redact(remote),
                          remedy=fix) from exc
    except OSError as exc:
        raise ConfigError(f"cannot reach Spark Connect: {exc.strerror or exc}", location=redact(remote),
                          remedy=fix) from exc


_JVM_LOG: list = []
"""The file the local session's JVM writes its stdout and stderr to (one per process)."""


def _local_session(session_class):  # noqa: ANN001, ANN202
    """A local session (``local[*]``) whose JVM writes to a private temporary file rather than to the
    terminal (no banner, no Java stack traces: failures come back as one-line errors), and whose Python
    workers run this interpreter (``PYSPARK_PYTHON``, unless set: not whatever ``python3`` is on PATH)."""
    import sys
    import tempfile

    from pyspark import SparkConf, SparkContext
    from pyspark.java_gateway import launch_gateway

    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")  # local: no LAN lookup
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    log4j = Path(__file__).with_name("log4j2.properties").as_uri()
    settings = {"spark.master": "local[*]", "spark.app.name": "sigmaudit",
                "spark.driver.extraJavaOptions": f"-Dlog4j2.configurationFile={log4j}", **LOCAL_CONF}
    if SparkContext._gateway is None:  # noqa: SLF001 - the documented hook (popen_kwargs) needs the launch here
        log = tempfile.TemporaryFile()
        _JVM_LOG.append(log)
        conf = SparkConf(loadDefaults=False)
        for key, value in settings.items():
            conf.set(key, value)
        SparkContext._ensure_initialized(gateway=launch_gateway(conf, popen_kwargs={"stdout": log, "stderr": log}))  # noqa: SLF001
    builder = session_class.builder
    for key, value in settings.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    return session


def _jvm_said() -> str | None:
    """The last line the local JVM wrote (why it could not start), or None."""
    if not _JVM_LOG:
        return None
    log = _JVM_LOG[-1]
    log.seek(0)
    lines = [" ".join(line.split()) for line in log.read().decode("utf-8", "replace").splitlines() if line.strip()]
    return lines[-1][:300] if lines else None


MAX_FILE_PARTITIONS = 4096
BYTES_PER_TASK = 64 << 20
"""A dump read file by file is spread over at most this many tasks, of about this many bytes each."""
PARTIAL_COLUMNS = ("step", "gid", "prompt", "n", "k")
PARTIAL_TYPES = (pl.Int64, pl.Utf8, pl.Utf8, pl.Int64, pl.Int64)
LENGTH_COLUMNS = ("tokens", "tokens_missing")
"""A file's token counts per group (``reduce.LENGTH_COLUMNS``), null in transit for a file without them."""
COUNTS_DDL = ("i INT, pos BIGINT, step BIGINT, gid STRING, prompt STRING, n BIGINT, k BIGINT, tokens BIGINT, "
              "tokens_missing BIGINT, meta BINARY")
"""What :func:`_count_partition` yields: a file's counts (``pos`` >= 0, in order) and its meta row (``pos`` -1)."""
BATCH_ROWS = 65_536


def _file_partitions(spark, files: list[Path]) -> int:  # noqa: ANN001
    """Tasks for reading ``files`` one by one: enough to spread them over the cluster
    (``spark.sql.shuffle.partitions``) and to keep about ``BYTES_PER_TASK`` in each, at most one per file."""
    try:
        spread = int(spark.conf.get("spark.sql.shuffle.partitions"))
    except Exception:  # noqa: BLE001 - an unset or odd value: Spark's default
        spread = 200
    size = sum(f.stat().st_size for f in files)
    return max(1, min(len(files), MAX_FILE_PARTITIONS, max(spread, -(-size // BYTES_PER_TASK))))


def _count_partition(count, batches):  # noqa: ANN001, ANN201
    """The ``mapInArrow`` function (runs on an executor): each file of the partition through ``count``."""
    import pickle

    import pyarrow as pa

    schema = pa.schema([("i", pa.int32()), ("pos", pa.int64()), ("step", pa.int64()), ("gid", pa.string()),
                        ("prompt", pa.string()), ("n", pa.int64()), ("k", pa.int64()), ("tokens", pa.int64()),
                        ("tokens_missing", pa.int64()), ("meta", pa.binary())])
    for batch in batches:
        cols = batch.to_pydict()
        for i, path, digest in zip(cols["i"], cols["path"], cols["digest"], strict=True):
            result = count(Path(path), index=i, digest=bool(digest))
            frame = result.frame
            meta = pickle.dumps(dataclasses.replace(result, frame=None))
            yield pa.RecordBatch.from_pydict(
                {"i": [i], "pos": [-1], "step": [None], "gid": [None], "prompt": [None], "n": [None], "k": [None],
                 "tokens": [None], "tokens_missing": [None], "meta": [meta]}, schema=schema)
            if frame is None or frame.height == 0:
                continue
            rows = frame.select(pl.lit(i, pl.Int32).alias("i"), pl.int_range(pl.len(), dtype=pl.Int64).alias("pos"),
                                *PARTIAL_COLUMNS, *(pl.col(c) if c in frame.columns else pl.lit(None, pl.Int64).alias(c)
                                                    for c in LENGTH_COLUMNS), pl.lit(None, pl.Binary).alias("meta"))
            yield from rows.to_arrow().cast(schema).to_batches(max_chunksize=BATCH_ROWS)


def _worker_error(exc: Exception) -> str | None:
    """The last ``SomeError: message`` line of a Python worker's traceback inside a Spark error, or None."""
    import re

    text = str(exc)
    if "Traceback" not in text:
        return None
    found = [line.strip() for line in text.splitlines()
             if re.match(r"\s*[A-Za-z_][\w.]*(?:Error|Exception): ", line)]
    return found[-1][:300] if found else None


def _first(exc: Exception) -> str:
    """The telling line of a Spark error: its error class (``[DATA_TYPE_MISMATCH...] ...``) or the Java
    exception's message, not Py4J's "An error occurred while calling o54.getResult"."""
    import re

    lines = [" ".join(line.split()) for line in str(exc).splitlines() if line.strip()]
    for line in lines:
        m = re.search(r"\[[A-Z][A-Z_.]+\].*", line)
        if m:
            return m.group(0)[:300]
    for line in lines:
        m = re.search(r"(?:Exception|Error): (.+)", line)
        if m and "An error occurred while calling" not in line:
            return m.group(1)[:300]
    return lines[0][:300] if lines else type(exc).__name__
