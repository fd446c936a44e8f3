"""Lazy scans of parquet, csv and jsonl files (csv/jsonl also .gz/.zst), with clear errors.

Compressed files are decompressed in a stream to a temporary file (never into memory) and
scanned from there, bounded by :data:`MAX_EXPANSION` and the free space of the temporary folder
(see :mod:`.tempdirs` for where it lives and how leftovers are cleaned); inputs are never modified.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gzip
import io
import itertools
import json
import shutil
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, replace
from lzma import LZMAError
from pathlib import Path, PurePosixPath
from typing import Any

import polars as pl

from ..errors import InputError, NoDataError, SchemaError
from .jsonfile import as_lines, decode_error
from .paths import file_kind, zstd_errors
from .remote import comment_lines, parse_url, storage_options, store_error
from .tempdirs import FREE_RESERVE, temp_failure

PARQUET_MAGIC = b"PAR1"
UTF8_BOM = b"\xef\xbb\xbf"
PANIC = pl.exceptions.PanicException
"""A Rust panic inside polars (corrupt data pages): derives from BaseException, not Exception."""
POLARS_ERRORS = (pl.exceptions.PolarsError, OSError, ValueError, PANIC)
GLOB_CHARS = "*?[]{}"
"""Characters polars' scanners read as a glob pattern in a file name (a file named ``run[1].csv``)."""
MAX_EXPANSION = 250
"""A compressed input may expand to at most this many times its size (text logs compress 5-100x; a
1 MB gzip bomb holding 1 GB of zeros is refused); the temporary folder must also keep
:data:`FREE_RESERVE` bytes free."""
_CHUNK = 1 << 20


def _copy_bounded(src, dst, path: Path, limit: int, folder: Path) -> None:  # noqa: ANN001
    """Copy a decompressing stream in 1 MiB chunks, refusing past ``limit`` bytes or a nearly full disk."""
    written = 0
    while chunk := src.read(_CHUNK):
        written += len(chunk)
        if written > limit:
            raise bomb_error(str(path))
        if written % (64 * _CHUNK) < _CHUNK and shutil.disk_usage(folder).free < FREE_RESERVE + _CHUNK:
            raise InputError(f"not enough free space in TMPDIR ({folder.parent}) to decompress it",
                             location=str(path), remedy="point TMPDIR at a larger disk, or free space there")
        dst.write(chunk)


def _decompress(path: Path, compression: str, tmpdir: Path) -> Path:
    target = tmpdir / f"{len(list(tmpdir.iterdir()))}_{path.stem}"
    limit = MAX_EXPANSION * max(path.stat().st_size, 1024)
    try:
        if compression == "gz":
            with gzip.open(path, "rb") as src, open(target, "wb") as dst:
                _copy_bounded(src, dst, path, limit, tmpdir)
        elif compression in ("bz2", "xz"):
            import bz2
            import lzma

            opener = bz2.open if compression == "bz2" else lzma.open
            with opener(path, "rb") as src, open(target, "wb") as dst:
                _copy_bounded(src, dst, path, limit, tmpdir)
        elif compression == "zst":
            import zstandard

            with open(path, "rb") as raw, open(target, "wb") as dst:
                _copy_bounded(zstandard.ZstdDecompressor().stream_reader(raw), dst, path, limit, tmpdir)
        else:  # "bom": a copy without the UTF-8 byte-order mark polars' jsonl reader refuses
            with open(path, "rb") as src, open(target, "wb") as dst:
                src.read(len(UTF8_BOM))
                shutil.copyfileobj(src, dst, _CHUNK)
    except ImportError as exc:
        raise InputError("reading .zst needs the zstandard package", location=str(path),
                         remedy="pip install zstandard") from exc
    except InputError:
        target.unlink(missing_ok=True)
        raise
    except (OSError, EOFError, zlib.error, LZMAError) as exc:
        target.unlink(missing_ok=True)
        own = temp_failure(exc, tmpdir, str(path))  # a full or vanished temporary folder is not the input's fault
        if own is not None:
            raise own from exc
        raise InputError(f"corrupt or truncated {compression} data ({_first_line(exc)})",
                         location=str(path)) from exc
    except zstd_errors() as exc:  # "Unknown frame descriptor" and the like
        target.unlink(missing_ok=True)
        raise InputError(f"not valid zstd data ({_first_line(exc)})", location=str(path)) from exc
    return target


MAGIC = ((b"\x1f\x8b", "gz"), (b"\x28\xb5\x2f\xfd", "zst"), (b"BZh", "bz2"), (b"\xfd7zXZ\x00", "xz"),
         (b"PK\x03\x04", "zip"))
"""The first bytes of each compressed format (read by content, whatever the file's name)."""


def compressed_as(path: Path | None = None, head: bytes | None = None) -> str | None:
    """``gz``, ``zst``, ``bz2``, ``xz`` or ``zip`` when the file (or its first bytes ``head``) starts
    with that format's magic bytes; None for anything else."""
    if head is None:
        assert path is not None
        with open(path, "rb") as fh:
            head = fh.read(8)
    return next((name for magic, name in MAGIC if head.startswith(magic)), None)


def _first_line(exc: BaseException, limit: int = 160) -> str:
    """The first line of an exception's message, at most ``limit`` characters."""
    text = str(exc).strip()
    first = text.splitlines()[0] if text else type(exc).__name__
    return first if len(first) <= limit else first[: limit - 1] + "…"


def _starts_with_bom(path: Path) -> bool:
    with open(path, "rb") as fh:
        return fh.read(len(UTF8_BOM)) == UTF8_BOM


def _check_csv_text(path: Path, shown: Path, skip: int) -> None:
    """Refuse CR-only line endings and a header naming a column twice (polars would rename it)."""
    import csv

    with open(path, "rb") as fh:
        head = fh.read(1 << 16)
    if b"\r" in head and b"\n" not in head:
        raise InputError("lines end in CR only (classic Mac line endings)", location=str(shown),
                         remedy="convert them, e.g. tr '\\r' '\\n' < in.csv > out.csv")
    with open(path, encoding="utf-8-sig", errors="replace", newline="") as fh:
        for _ in range(skip):
            fh.readline()
        header = next(csv.reader([fh.readline()]), [])
    seen: set[str] = set()
    for name in header:
        if name in seen:
            raise SchemaError(f"the header names column {name!r} twice", location=f"{shown}:{skip + 1}",
                              remedy="rename one of them")
        seen.add(name)


def csv_skip_rows(path: Path | str) -> int:
    """Leading comment lines (starting with ``#`` or ``"#``) to skip."""
    if isinstance(path, str):
        return comment_lines(remote_lines(path, 1_000))
    skip = 0
    with open(path, encoding="utf-8", errors="replace") as fh:
        for line in fh:
            if line.lstrip().startswith(("#", '"#')):
                skip += 1
            else:
                break
    return skip


def _has_data_line(path: Path, skip: int) -> bool:
    """A csv has at least one non-blank line after its comments and header."""
    with open(path, encoding="utf-8", errors="replace") as fh:
        lines = (line for i, line in enumerate(fh) if i > skip and line.strip())
        return next(lines, None) is not None


JSONL_SCHEMA_LINES = 1_000
"""Lines of a jsonl file read to infer its columns and types. Trainer dumps write the same keys on
every line, and a window of 10,000 lines had polars parse a verl step file twice (2M-row verl
dump: 6.6 s -> 3.4 s, same output)."""


def _check_parquet(path: Path) -> None:
    size = path.stat().st_size
    with open(path, "rb") as fh:
        head = fh.read(4)
        fh.seek(max(size - 4, 0))
        tail = fh.read(4)
    if size < 12 or head != PARQUET_MAGIC or tail != PARQUET_MAGIC:
        raise InputError("not a parquet file (corrupt, truncated or renamed)", location=str(path))


@dataclass(frozen=True)
class Source:
    """One input file opened lazily."""

    path: Path | str
    """The file as given (a URL string for a remote file)."""
    local: Path | str
    """What is scanned: the file itself, or its decompressed temporary copy."""
    fmt: str
    """parquet, csv or jsonl."""
    lf: pl.LazyFrame
    """Lazy scan of the file."""
    schema: dict[str, pl.DataType]
    """Column names and types."""
    shape: tuple[tuple[str, str], ...] | None = None
    """jsonl: keys and value kinds of the file's first (and last) line (:func:`.jsonl.shape`)."""
    reused: bool = False
    """jsonl: ``schema`` was taken from an earlier file of the same shape, not inferred."""

    def fail(self, exc: BaseException) -> InputError:
        """The InputError for an error raised while collecting this file."""
        return read_error(self.path, self.local, self.fmt, exc)


def scan(path: Path | str, tmpdir: Path, like: Source | None = None, outcome_key: str | None = None) -> Source:
    """A lazy scan of one file (a URL string: see :mod:`.remote`); raises InputError for missing,
    empty or corrupt files.

    A jsonl file shaped like the jsonl Source ``like`` (see :mod:`.jsonl`) is scanned with its schema
    instead of inferring one. ``outcome_key``: a .json file's key of outcomes to read (:func:`.jsonfile.as_lines`)."""
    if isinstance(path, str):
        return scan_remote(path, tmpdir)
    kind = file_kind(path)
    assert kind is not None, path
    fmt, compression = kind
    if path.stat().st_size == 0:
        raise NoDataError("empty file", location=str(path))
    if fmt in ("csv", "jsonl", "json"):  # by content: gzip bytes in a file named .csv are inflated bounded too
        compression = compressed_as(path) or compression
        if compression == "zip":
            raise InputError(f"a zip archive, not {fmt} text", location=str(path), remedy="unzip it first")
    local = _decompress(path, compression, tmpdir) if compression else path
    if fmt == "json":  # records written out as JSON lines, read as a jsonl file is
        local, fmt = as_lines(local, str(path), tmpdir, outcome_key), "jsonl"
    if fmt == "jsonl" and _starts_with_bom(local):
        local = _decompress(local, "bom", tmpdir)
    if any(c in str(local) for c in GLOB_CHARS):  # polars would expand the name as a glob pattern
        link = tmpdir / f"{len(list(tmpdir.iterdir()))}_input{local.suffix}"
        link.symlink_to(local.resolve())
        local = link
    found, reused = None, False
    if local.stat().st_size == 0:
        raise NoDataError("empty file", location=str(path))
    if fmt == "csv":
        _check_csv_text(local, path, csv_skip_rows(local))
    try:
        if fmt == "parquet":
            _check_parquet(local)
            lf = pl.scan_parquet(local)
        elif fmt == "csv":
            skip = csv_skip_rows(local)
            if not _has_data_line(local, skip):
                raise NoDataError("no data rows (header only)", location=str(path))
            lf = pl.scan_csv(local, skip_rows=skip, infer_schema_length=10_000)
        else:
            from .jsonl import MAX_DEPTH, polars_bounds_depth, shape, too_deep

            deep = None if polars_bounds_depth() else too_deep(local)
            if deep is not None:  # refused as Polars >= 2.1 refuses it
                raise pl.exceptions.ComputeError(f"line {deep} is nested deeper than {MAX_DEPTH} levels")
            found = shape(local)
            if like is not None and like.fmt == "jsonl" and found is not None and found == like.shape \
                    and list(like.schema) == [key for key, _ in found]:
                lf, reused = pl.scan_ndjson(local, schema=like.schema), True
            else:
                lf = pl.scan_ndjson(local, infer_schema_length=JSONL_SCHEMA_LINES)
        schema = dict(lf.collect_schema())
    except POLARS_ERRORS as exc:
        raise read_error(path, local, fmt, exc) from exc
    if not schema:
        raise NoDataError("empty file (no columns)", location=str(path))
    return Source(path, local, fmt, lf, schema, found, reused)


def with_text_columns(src: Source, columns: list[str]) -> Source:
    """``src`` with ``columns`` (the prompt key and group id) read as the text the file holds: in a
    csv, ids "3.1" and "3.10" (or "1" and "01") inferred as numbers would become one key; a
    number in jsonl keeps its JSON text ("1", not "1.0" beside a later 1.5). Parquet values are
    typed as written and are left alone."""
    if src.fmt == "csv":
        wanted = [c for c in columns if c in src.schema and src.schema[c] != pl.Utf8]
    elif src.fmt == "jsonl":
        wanted = [c for c in columns if c in src.schema
                  and (src.schema[c].is_numeric() or src.schema[c] == pl.Boolean)]
    else:
        return src
    if not wanted:
        return src
    text = dict.fromkeys(wanted, pl.Utf8)
    try:
        if src.fmt == "csv":
            lf = pl.scan_csv(src.local, skip_rows=csv_skip_rows(src.local), infer_schema_length=10_000,
                             schema_overrides=text, **_where(src, glob=False))
            read = lf.collect_schema()  # numbers read from text by csv_numbers are read so again
            lf = lf.with_columns(_number_from_text(c) for c, t in src.schema.items()
                                 if t == pl.Float64 and read.get(c) == pl.Utf8 and c not in text)
        else:
            lf = pl.scan_ndjson(src.local, schema={**src.schema, **text}, **_where(src))
        schema = dict(lf.collect_schema())
    except POLARS_ERRORS as exc:
        raise src.fail(exc) from exc
    return replace(src, lf=lf, schema=schema)


MISSING_TEXT = ("", "nan", "na", "n/a", "null", "none")
"""Text a csv writer puts for a missing number (pandas writes ``nan`` for NaN with ``float_format`` unset in
some exports, R ``NA``); Polars infers a column holding it among numbers as text (``0, 1, nan``: String)."""


def _number_from_text(column: str) -> pl.Expr:
    """``column`` (text) as Float64: a :data:`MISSING_TEXT` value is null (missing), ``true``/``false`` 1/0,
    anything else its number (null where it is none: the caller checks there is no such value)."""
    text = pl.col(column).str.strip_chars()
    missing = text.is_null() | text.str.to_lowercase().is_in(list(MISSING_TEXT))
    number = text.str.to_lowercase().replace({"true": "1", "false": "0"}).cast(pl.Float64, strict=False)
    return pl.when(missing).then(None).otherwise(number).alias(column)


def csv_numbers(src: Source, columns: list[str]) -> Source:
    """A csv ``src`` whose ``columns`` Polars read as text only because some values are a missing
    marker (:data:`MISSING_TEXT`: ``0, 1, nan``) read as numbers, those values missing (excluded, as a
    parquet file's NaN is); a column holding any other text is left as it is (refused as text later)."""
    wanted = [c for c in columns if src.fmt == "csv" and src.schema.get(c) == pl.Utf8]
    convert = []
    for column in wanted:
        text = pl.col(column).str.strip_chars()
        marker = text.is_null() | text.str.to_lowercase().is_in(list(MISSING_TEXT))
        try:
            bad = src.lf.select(column).filter(~marker & _number_from_text(column).is_null()).head(1).collect()
        except POLARS_ERRORS as exc:
            raise src.fail(exc) from exc
        if bad.height == 0:
            convert.append(column)
    if not convert:
        return src
    return replace(src, lf=src.lf.with_columns(_number_from_text(c) for c in convert),
                   schema={**src.schema, **dict.fromkeys(convert, pl.Float64)})


def _where(src: Source, **local: Any) -> dict[str, Any]:
    """Keyword arguments of a second scan of ``src``: an object store's options for a URL (never a
    glob), ``local`` for a file here (already a glob-safe name)."""
    if isinstance(src.local, str):
        return {"storage_options": storage_options(src.local)} | ({"glob": False} if "glob" in local else {})
    return local


def bad_value_line(src: Source, columns: list[str]) -> InputError | None:
    """The error naming the first jsonl line whose value in one of ``columns`` (rewards, counts) is no
    number, boolean or null (a value past the lines the schema was inferred from); None if none is."""
    if src.fmt != "jsonl" or isinstance(src.local, str):
        return None
    with open(src.local, encoding="utf-8", errors="replace") as fh:
        for number, line in enumerate(fh, start=1):
            value, _ = json_object(line) if line.strip() else (None, None)
            for column in columns if value is not None else ():
                x = value.get(column)
                if x is not None and not isinstance(x, int | float):
                    return InputError(f"{column} on line {number} is {json.dumps(x)[:40]}, not a number or boolean",
                                      location=f"{src.path}:{number}",
                                      remedy="fix that line, or pick another column with --reward-col")
    return None


def with_numbers_as_written(src: Source, columns: list[str]) -> Source:
    """A jsonl ``src`` whose ``columns`` (rewards, counts) are read as text and turned into Float64
    (``true``/``false`` as 1/0): a value whose JSON type changes after the lines the schema was
    inferred from (0/1, then 0.0/1.0 or true/false) reads instead of failing; text that is no number
    still fails."""
    wanted = [c for c in columns if c in src.schema and (src.schema[c].is_numeric() or src.schema[c] == pl.Boolean)]
    if src.fmt != "jsonl" or not wanted:
        return src
    lf = pl.scan_ndjson(src.local, schema={**src.schema, **dict.fromkeys(wanted, pl.Utf8)}, **_where(src))
    number = [pl.col(c).str.strip_chars().replace({"true": "1", "false": "0"}).cast(pl.Float64).alias(c)
              for c in wanted]
    lf = lf.with_columns(number)
    return replace(src, lf=lf, schema={**src.schema, **dict.fromkeys(wanted, pl.Float64)}, reused=False)


def read_error(path: Path | str, local: Path | str, fmt: str, exc: BaseException) -> InputError:
    """The most specific InputError for a failed read: a bad jsonl line gets its number, a reader
    panic (corrupt data pages) says the file is corrupt."""
    if isinstance(local, str):
        return remote_read_error(local, fmt, exc)
    if local != path:  # a temporary copy: a full or vanished temporary folder is not the input's fault
        own = temp_failure(exc, local.parent, str(path))
        if own is not None:
            return own
    if fmt == "jsonl" and _json_array(local):
        return InputError("a JSON array, not JSON lines (one object a line)", location=str(path),
                          remedy="name it .json (an array of records reads as one), or write one record a line")
    if fmt == "jsonl" and "multiple fields with name" in str(exc):
        from .jsonl import duplicate_error

        twice = nested_twice(local)
        if twice is not None:  # one rule for .json and .jsonl: a record giving a key twice that is read is refused
            json_file = isinstance(path, Path) and local != path and path.name.split(".")[1:2] == ["json"]
            return duplicate_error(str(path), twice[0], twice[1], "record" if json_file else "line")
    if fmt == "jsonl":
        line = bad_json_line(local)
        if line is not None:
            kind = NoDataError if line[0] == 1 else InputError  # not JSON lines at all
            return kind(f"malformed JSON on line {line[0]}: {line[1]}",
                              location=f"{path}:{line[0]}", remedy=CUT_OFF if line[2] else None)
        constant = nonstandard_constant(local)
        if constant is not None:
            return InputError(f"{constant[1]} on line {constant[0]} is not JSON (Python's json.dumps writes it "
                              "for a float that is not finite)", location=f"{path}:{constant[0]}",
                              remedy="write null for a missing value (json.dumps(..., allow_nan=False) finds them)")
    if isinstance(exc, PANIC | MemoryError | OSError):
        from ..errors import memory_shortage

        short = memory_shortage(exc)
        if short is not None:  # a thread or an allocation refused under a memory limit is no corrupt file
            return short
    if isinstance(exc, PANIC):
        import re

        # the panic text names a thread/task id that changes from run to run: keep only what failed
        detail = re.sub(r"\b(Id|thread|task)\(\d+\)", r"\1(…)", _first_line(exc, 10_000))
        detail = detail if len(detail) <= 100 else detail[:99] + "…"
        return InputError(f"corrupt {fmt} file: the reader failed on its data ({detail})",
                          location=str(path), remedy="re-export or re-download it")
    return InputError(f"cannot read {fmt}: {_first_line(exc)}", location=str(path))


def nested_twice(path: Path) -> tuple[int, str] | None:
    """(line number, dotted key) of the first line of a jsonl file with a nested object giving a key twice
    (``metrics.correct``), or None: the read of such a field fails in Polars ("multiple fields with name")."""
    from .jsonl import _pairs_hook

    def twice(value: object, at: str) -> str | None:
        if isinstance(value, dict):
            if getattr(value, "twice", None) is not None and at:
                return f"{at}.{value.twice}"
            return next((t for k, v in value.items() if (t := twice(v, f"{at}.{k}" if at else str(k)))), None)
        if isinstance(value, list):
            return next((t for v in value if (t := twice(v, at))), None)
        return None

    with open(path, encoding="utf-8", errors="replace") as fh:
        for number, line in enumerate(fh, start=1):
            try:
                found = twice(json.loads(line, object_pairs_hook=_pairs_hook), "")
            except (ValueError, RecursionError):
                continue
            if found is not None:
                return number, found
    return None


def json_object(line: str) -> tuple[dict | None, str | None]:
    """The JSON object on one jsonl line, or (None, why it is not one). A line nested deeper than
    :data:`~sigmaudit.loaders.jsonl.MAX_DEPTH` levels is "nested too deeply" whatever Python's recursion
    limit (json.loads refuses such a line only below the limit, which test runners and libraries raise)."""
    from .jsonl import MAX_DEPTH, depth

    if line.count("[") + line.count("{") > MAX_DEPTH and depth(line.encode("utf-8", "replace")) > MAX_DEPTH:
        return None, "nested too deeply"
    try:
        value = json.loads(line)
    except json.JSONDecodeError as exc:
        return None, decode_error(exc)
    except RecursionError:
        return None, "nested too deeply"
    if not isinstance(value, dict):
        return None, "not a JSON object"
    return value, None


CUT_OFF = "the file's last line is cut off (a writer stopped mid-line?); delete that line, or re-export the file"
"""The remedy for a bad last line that has no line end: a crashed run's dump."""


def cut_off(line: str, fh: Any) -> bool:
    """``line`` (just read from ``fh``) is the file's last and has no line end."""
    return not line.endswith("\n") and not fh.read(1)


def nonstandard_constant(path: Path) -> tuple[int, str] | None:
    """(line number, constant) of the first NaN, Infinity or -Infinity written as a bare JSON value: Python's
    json reads it, the jsonl reader does not."""
    found: list[str] = []

    def constant(name: str) -> float:
        found.append(name)
        raise ValueError(name)

    with open(path, encoding="utf-8", errors="replace") as fh:
        for number, line in enumerate(fh, start=1):
            if not any(c in line for c in ("NaN", "Infinity")):
                continue
            try:
                json.loads(line, parse_constant=constant)
            except (ValueError, RecursionError):
                if found:
                    return number, found[0]
    return None


def _json_array(path: Path) -> bool:
    """The file's first non-blank character opens a JSON array (a .json document named .jsonl)."""
    with open(path, "rb") as fh:
        head = fh.read(4096).lstrip(UTF8_BOM + b" \t\r\n")
    return head.startswith(b"[")


def bad_json_line(path: Path) -> tuple[int, str, bool] | None:
    """(line number, reason, cut off) of the first line that is not a JSON object, or None;
    ``cut off``: it is the file's last line and has no line end (:func:`cut_off`)."""
    with open(path, encoding="utf-8", errors="replace") as fh:
        for number, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            _, why = json_object(line.rstrip("\r\n"))  # a string left open is unterminated, not a bad newline
            if why is not None:
                return number, why, cut_off(line, fh)
    return None


def scan_remote(url: str, tmpdir: Path) -> Source:
    """A lazy scan of one remote file, like :func:`.readers.scan`. A csv or jsonl object (and any http(s)
    file) is copied into ``tmpdir`` as stored and read there exactly as a local file: its compression
    told by its first bytes, not its name, and what it inflates to bounded (:data:`MAX_EXPANSION`). An
    object-store (or Hugging Face) parquet file is scanned where it lies (Polars reads only the parts it
    needs). A URL is one object's name here, never a glob (a listed key may hold ``?`` or ``[``)."""
    kind = file_kind(parse_url(url).pure)
    assert kind is not None, url
    fmt = kind[0]
    if fmt not in ("parquet", "csv", "jsonl", "json"):
        raise InputError(f"{fmt} files are read from local disk only", location=url,
                         remedy="download it first")
    if fmt != "parquet" or parse_url(url).store == "http":
        return _scan_copy(url, tmpdir)
    try:
        lf = pl.scan_parquet(url, glob=False, storage_options=storage_options(url))
        schema = dict(lf.collect_schema())
    except FileNotFoundError as exc:
        raise store_error(url, exc) from exc
    except POLARS_ERRORS as exc:
        raise remote_read_error(url, fmt, exc) from exc
    if not schema:
        raise NoDataError("empty file (no columns)", location=url)
    return Source(url, url, fmt, lf, schema)


PROBE_LINES = 20_000
"""Lines of a remote csv or jsonl object read to learn its columns (:func:`remote_schema`): Polars infers a
csv's types from its first 10,000 rows and a jsonl's from its first 1,000 lines."""


def remote_schema(url: str, tmpdir: Path) -> dict[str, pl.DataType]:
    """The columns of a remote file as :func:`scan_remote` reads them, without copying a csv or jsonl
    object whole: its first :data:`PROBE_LINES` lines (decompressed by content, bounded) are scanned here."""
    kind = file_kind(parse_url(url).pure)
    if kind is None or kind[0] in ("parquet", "json"):  # a JSON document is read whole
        return scan_remote(url, tmpdir).schema
    folder = tmpdir / f"probe-{len(list(tmpdir.iterdir()))}"
    folder.mkdir()
    name = PurePosixPath(parse_url(url).key).name or f"probe.{kind[0]}"
    name = name[: -len(PurePosixPath(name).suffix)] if kind[1] else name
    local = folder / "".join(c if c not in GLOB_CHARS else "_" for c in name)
    with _named_by_url(url, folder, local):
        local.write_text("".join(line + "\n" for line in remote_lines(url, PROBE_LINES)), encoding="utf-8")
        return scan(local, tmpdir).schema


def _scan_copy(url: str, tmpdir: Path) -> Source:
    """The object at ``url`` copied into ``tmpdir`` as stored (under its own name, so its suffix still
    says csv or jsonl) and scanned there by :func:`scan`; errors name the URL."""
    from .remote import download

    folder = tmpdir / f"copy-{len(list(tmpdir.iterdir()))}"
    folder.mkdir()
    name = PurePosixPath(parse_url(url).key).name or "download"
    local = folder / "".join(c if c not in GLOB_CHARS else "_" for c in name)
    with _named_by_url(url, folder, local):
        src = scan(download(url, local), tmpdir)
    return dataclasses.replace(src, path=url)


@contextlib.contextmanager
def _named_by_url(url: str, folder: Path, local: Path) -> Iterator[None]:
    """Errors of reading ``url``'s copy ``local`` (in ``folder``) name the URL, not the copy; a failed fetch
    is a full TMPDIR or a vanished temp folder when it is one (:func:`temp_failure`), else "cannot fetch"."""
    try:
        yield
    except OSError as exc:
        raise (temp_failure(exc, folder, url) or InputError(f"cannot fetch: {exc}", location=url)) from exc
    except InputError as exc:
        exc.message = exc.message.replace(str(local), url)
        exc.location = None if exc.location is None else exc.location.replace(str(local), url)
        raise


class _Counted(io.RawIOBase):
    """A raw binary stream read through, ``head`` (bytes already read from it) first; counts the bytes
    and refuses past ``limit`` (None: past :data:`MAX_EXPANSION` times the bytes ``source`` gave)."""

    def __init__(self, inner: Any, head: bytes, limit: int | None, where: str, source: _Counted | None = None):
        self.inner, self.head, self.limit, self.where, self.source, self.done = inner, head, limit, where, source, 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:  # noqa: ANN001
        data, self.head = (self.head[: len(buffer)], self.head[len(buffer):]) if self.head else \
            (self.inner.read(len(buffer)), b"")
        self.done += len(data)
        limit = self.limit if self.limit is not None or self.source is None else \
            MAX_EXPANSION * max(self.source.done, 1024)
        if limit is not None and self.done > limit:
            raise bomb_error(self.where)
        buffer[: len(data)] = data
        return len(data)


def bomb_error(where: str) -> InputError:
    """The refusal of a compressed input that inflates past :data:`MAX_EXPANSION` times its size."""
    return InputError(f"decompresses to more than {MAX_EXPANSION}x its size (a compression bomb?)",
                      location=where, remedy="decompress it yourself if the data are real")


def _inflating(raw: Any, compression: str) -> Any:
    """A stream of what ``raw`` (``compression``-compressed bytes) decompresses to."""
    import bz2
    import lzma

    if compression == "gz":
        return gzip.GzipFile(fileobj=raw)
    if compression == "bz2":
        return bz2.BZ2File(raw)
    if compression == "xz":
        return lzma.LZMAFile(raw)
    import zstandard

    return zstandard.ZstdDecompressor().stream_reader(raw)


def remote_lines(url: str, n: int | None) -> list[str]:
    """The first ``n`` lines (all for None) of a remote text file, read as a local one is (:func:`text_lines`)."""
    with contextlib.closing(text_lines(url)) as lines:
        return list(itertools.islice(lines, n))


def text_lines(path: Path | str) -> Iterator[str]:
    """The lines (without their ends) of a local file or a remote object as its text reads: decompressed
    when its first bytes say so (whatever its name), what it inflates to bounded by :data:`MAX_EXPANSION`
    times its size, a UTF-8 byte-order mark dropped; errors are one-line InputErrors naming it."""
    from .remote import READ_TIMEOUT_ENV, open_object, timeout_error, timeouts

    if isinstance(path, str):
        raw, size = open_object(path)
    else:
        raw, size = open(path, "rb"), path.stat().st_size
    where, compression = str(path), None
    try:
        with contextlib.closing(raw):
            head = raw.read(8)
            compression = compressed_as(head=head)
            if compression == "zip":
                raise InputError("a zip archive, not text", location=where, remedy="unzip it first")
            stream = source = _Counted(raw, head, None, where)
            if compression is not None:
                limit = None if size is None else MAX_EXPANSION * max(size, 1024)
                stream = _Counted(_inflating(io.BufferedReader(source), compression), b"", limit, where, source)
            text = io.TextIOWrapper(io.BufferedReader(stream), encoding="utf-8-sig", errors="replace", newline="")
            for line in text:
                yield line.rstrip("\r\n")
    except InputError:
        raise
    except TimeoutError as exc:
        raise timeout_error(where, timeouts()[0], READ_TIMEOUT_ENV) from exc
    except ImportError as exc:
        raise InputError("reading zstd needs the zstandard package", location=where,
                         remedy="pip install zstandard") from exc
    except (OSError, EOFError, zlib.error, LZMAError) as exc:
        if compression is None:
            raise (store_error(where, exc) if isinstance(path, str) else
                   InputError(f"cannot read: {_first_line(exc)}", location=where)) from exc
        raise InputError(f"corrupt or truncated {compression} data ({_first_line(exc)})", location=where) from exc
    except zstd_errors() as exc:  # "Unknown frame descriptor" and the like
        raise InputError(f"not valid zstd data ({_first_line(exc)})", location=where) from exc


def remote_read_error(url: str, fmt: str, exc: Exception) -> InputError:
    """The InputError for a failed read of a file Polars scans where it lies (parquet)."""
    if isinstance(exc, FileNotFoundError):
        return store_error(url, exc)
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    if "object-store" in first or "object_store" in first:
        return store_error(url, exc)
    return InputError(f"cannot read {fmt}: {first}", location=url)
