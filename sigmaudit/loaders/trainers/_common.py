"""What a framework module returns when its dump needs restructuring, and shared helpers.

A framework whose files are not one row per sample with plain columns (ROLL's one JSON object
of parallel lists, inspect_ai's zip, prime-rl's nested episodes, NeMo-RL's one-element lists...)
reads a file into a :class:`Normalised` long frame: one row per rollout with ``step`` (Int64,
may be null), ``group`` (Utf8, unique within the load), ``prompt`` (Utf8) and ``reward``
(Float64; null = missing), plus any pass-through columns (``data_source``, ``dataset``...) and, when the
writer logs each rollout's generated tokens, ``length`` (Int64; null = not logged for that rollout).
The ordinary reduction then counts it like any long log.
"""

from __future__ import annotations

import functools
import gzip
import io
import json
import math
import re
import zlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import polars as pl

from ...errors import ConfigError, InputError
from ..columns import ColumnMap
from ..options import Filtered, LoadOptions
from ..paths import COMPRESSIONS, zstd_errors
from ..readers import CUT_OFF, MAX_EXPANSION, Source, cut_off, json_object

FRAME_SCHEMA = {"step": pl.Int64, "group": pl.Utf8, "prompt": pl.Utf8, "reward": pl.Float64}



def refuse_fractional_step(value: object, field: str, location: str) -> None:
    """InputError for a step value that is a float but no whole number (1.5; also inf and NaN): a row-wise
    Int64 build would truncate it to 1, merging its groups into step 1's (issue 36 item 19). An InputError,
    not a SchemaError: the file is this trainer's, and a folder's file refused for its values is not skipped
    as one of another layout."""
    if isinstance(value, float) and not (math.isfinite(value) and value.is_integer()):
        raise InputError(f"step {value!r} is not a whole number: an epoch or a time is not a training step",
                         location=f"{location}: field {field}", remedy=f"log the whole optimizer step as {field}")


def whole_steps(values: Sequence[object], field: str, where: str) -> pl.Series:
    """A trainer's step values as Int64: whole floats (1.0) are those integers; a value that is no whole
    number (1.5) is refused, naming it (:func:`refuse_fractional_step`)."""
    for v in values:
        refuse_fractional_step(v, field, where)
    try:
        return pl.Series("step", [int(v) if isinstance(v, float) else v for v in values], dtype=pl.Int64)
    except (TypeError, OverflowError) as exc:
        raise InputError(f"{field} holds a value that is not an integer step", location=f"{where}: field {field}",
                          remedy=f"log the whole optimizer step as {field}") from exc


@dataclass(frozen=True)
class Normalised:
    """One file of a framework dump as a long frame (see the module docstring)."""

    frame: pl.DataFrame
    """Columns ``step``, ``group``, ``prompt``, ``reward`` and pass-through columns."""
    layout: str
    """The framework (one of ``LAYOUTS``)."""
    note: str
    """The detection note: framework, prompt key, group key, step and reward."""
    reward_source: str
    """Where the reward came from, e.g. ``traces[].rewards.*``."""
    filtered: Filtered | None = None
    """Set when this file shows it was written after zero-variance filtering."""
    duplicates: int = 0
    """Rows dropped as written twice."""
    extra_notes: tuple[str, ...] = ()
    """Further one-line notes (e.g. a re-logged batch counted once)."""
    length_source: str | None = None
    """Where the frame's ``length`` column (generated tokens per rollout) came from, e.g.
    ``traces[].calls[].usage.completion_tokens``; None: no ``length`` column (the writer logs none)."""

    def source(self, path: Path) -> tuple[Source, ColumnMap]:
        """A :class:`Source` over the frame and the column map the reduction needs."""
        frame = self.frame
        for name, dtype in FRAME_SCHEMA.items():
            frame = frame.with_columns(pl.col(name).cast(dtype)) if name in frame.columns else \
                frame.with_columns(pl.lit(None, dtype).alias(name))
        lf = frame.lazy()
        plan = ColumnMap(self.layout, ("prompt",), reward="reward", step="step", group="group",
                         note=self.note, length="length" if "length" in frame.columns else None)
        return Source(path, path, "frame", lf, dict(frame.schema)), plan


@dataclass(frozen=True)
class Repeats:
    """Files of a load whose rows repeat another file's, as their writer logs them (a batch logged
    again), found with proof from the writer's structure."""

    dropped: dict[Path, str]
    """File -> the name of the file whose rows it repeats (read once, there)."""
    notes: tuple[str, ...] = ()
    """What was dropped and why; what looked repeated but is kept."""


class TrainerReader:
    """The protocol every framework reader implements (one instance per framework, in
    :data:`..FRAMEWORKS`); each method's default says "not mine", so a framework overrides only
    what its dump needs.

    - :meth:`recognize`: the dump is one row per sample with plain columns, read by the ordinary
      streaming reduction (verl, the older prime-rl layout).
    - :meth:`claims_path` (files that are not tables, or whose first line names the writer) or
      :meth:`claims` (by the columns a scan inferred), then :meth:`read`: the dump needs
      restructuring into a :class:`Normalised` long frame.
    - :meth:`skip`: a file the framework writes beside its rollouts that is not rollouts.
    - :meth:`repeats`: files that log again rows of another file (TRL's re-logged batches).
    - :meth:`check`: refuse group counts the dump cannot give.
    - :meth:`run_root`: the run a file belongs to (two runs are never pooled silently).
    """

    name: str = ""
    """The layout name (one of ``LAYOUTS``)."""
    key_options: frozenset[str] = frozenset()
    """The key options its :meth:`read` honours (``prompt_col``, ``group_col``); any other given is refused
    (:func:`refuse_ignored`), never silently dropped."""

    def recognize(self, schema: dict[str, pl.DataType], opts: LoadOptions, where: str) -> ColumnMap | None:
        """The column map for a dump read as rows, or None (not this framework's)."""
        return None

    def claims_path(self, path: Path) -> bool:
        """This framework reads the file, judged from its name and first line (no table scan)."""
        return False

    def claims(self, path: Path, schema: dict[str, pl.DataType]) -> bool:
        """This framework reads the file, judged from the columns a scan found."""
        return False

    def read(self, path: Path, opts: LoadOptions) -> Normalised:
        """One claimed file as a long frame."""
        raise NotImplementedError(f"{self.name} reads its dump as rows (recognize)")

    def skip(self, path: Path, files: frozenset[Path]) -> str | None:
        """Why ``path`` (one of ``files``) is not rollouts, or None."""
        return None

    def repeats(self, files: Sequence[Path]) -> Repeats:
        """Files whose rows the writer logged again from another file of ``files`` (dropped unless
        ``--keep-duplicates``); only with proof from the writer's structure, never from equal content
        alone."""
        return Repeats({})

    def check(self, per_group: pl.DataFrame, missing: int, plans: list[ColumnMap],
              where: Callable[[object], str]) -> None:
        """Raise when the group counts are ones the dump cannot give (``where``: a step -> its file(s))."""
        return None

    def run_root(self, path: Path) -> Path:
        """The folder (or file) of the run that wrote ``path``, from the writer's layout: files under
        one root are one run (their groups may be split over files); by default the dump folder."""
        return path.parent


def plain_name(path: Path) -> str:
    """The file name without a ``.gz``/``.zst`` suffix (``x.jsonl.gz`` -> ``x.jsonl``): trainer
    dumps archived with ``gzip -r`` are recognised by the names their writer gave them."""
    name = path.name
    for suffix in COMPRESSIONS:
        if name.lower().endswith(suffix):
            return name[: -len(suffix)]
    return name


def plain_suffix(path: Path) -> str:
    """The lower-case suffix of :func:`plain_name` (``.jsonl`` for ``x.jsonl.gz``)."""
    return Path(plain_name(path)).suffix.lower()


class _Bounded(io.RawIOBase):
    """A decompressing binary stream refused past ``limit`` bytes (a compression bomb)."""

    def __init__(self, inner: IO[bytes], limit: int, path: Path) -> None:
        self.inner, self.limit, self.path, self.done = inner, limit, path, 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:  # noqa: ANN001
        data = self.inner.read(len(buffer))
        self.done += len(data)
        if self.done > self.limit:
            raise InputError(f"decompresses to more than {MAX_EXPANSION}x its size (a compression bomb?)",
                             location=str(self.path), remedy="decompress it yourself if the data are real")
        buffer[: len(data)] = data
        return len(data)

    def close(self) -> None:
        self.inner.close()
        super().close()


def open_text(path: Path) -> IO[str]:
    """``path`` as UTF-8 text (a leading byte-order mark skipped), decompressed in a stream when
    it ends in ``.gz`` or ``.zst`` (bounded as :mod:`..readers` bounds its copies)."""
    compression = COMPRESSIONS.get(path.suffix.lower())
    if compression is None:
        return open(path, encoding="utf-8-sig")
    limit = MAX_EXPANSION * max(path.stat().st_size, 1024)
    if compression == "gz":
        inner: IO[bytes] = gzip.open(path, "rb")
    else:
        try:
            import zstandard
        except ImportError as exc:
            raise InputError("reading .zst needs the zstandard package", location=str(path),
                             remedy="pip install zstandard") from exc
        inner = zstandard.ZstdDecompressor().stream_reader(open(path, "rb"), closefd=True)
    return io.TextIOWrapper(io.BufferedReader(_Bounded(inner, limit, path)), encoding="utf-8-sig")


def json_lines(path: Path) -> Iterator[tuple[int, dict]]:
    """(line number, object) for every non-blank line of a jsonl file (also .gz/.zst); a bad line
    is an InputError with its number, unreadable compressed data an InputError naming the file."""
    try:
        with open_text(path) as fh:
            for number, line in enumerate(fh, start=1):
                if not line.strip():
                    continue
                value, why = json_object(line)
                if value is None:
                    text = (f"line {number} is not a JSON object" if why == "not a JSON object"
                            else f"malformed JSON on line {number}: {why}")
                    raise InputError(text, location=f"{path}:{number}",
                                     remedy=CUT_OFF if cut_off(line, fh) else None)
                yield number, value
    except (EOFError, zlib.error, gzip.BadGzipFile, UnicodeDecodeError, *zstd_errors()) as exc:
        raise InputError(f"corrupt or truncated compressed data ({exc})", location=str(path)) from exc
    except OSError as exc:
        raise InputError(f"cannot read: {exc}", location=str(path)) from exc


def read_json_lines(path: Path) -> list[dict]:
    """Every JSON object of a jsonl file (also .gz/.zst); a bad line is an InputError with its number."""
    return [value for _, value in json_lines(path)]


def first_json_line(path: Path) -> dict | None:
    """The first line of a jsonl file as an object, or None (unreadable, not an object); read
    once per file version however many framework modules ask."""
    try:
        st = path.stat()
    except OSError:
        return None
    return _first_json_line(path, st.st_mtime_ns, st.st_size)


@functools.lru_cache(maxsize=4096)
def _first_json_line(path: Path, mtime_ns: int, size: int) -> dict | None:
    try:
        with open_text(path) as fh:
            for line in fh:
                if line.strip():
                    value = json.loads(line)
                    return value if isinstance(value, dict) else None
    except (OSError, ValueError, EOFError, zlib.error, InputError):
        return None
    except zstd_errors():  # not zstd data, so not a dump
        return None
    return None


def step_from_name(path: Path, pattern: str) -> int | None:
    """The integer captured by ``pattern`` in the file name or one of its folders."""
    for part in (plain_name(path), *(p.name for p in path.parents)):
        m = re.fullmatch(pattern, part)
        if m:
            return int(m.group(1))
    return None


def run_groups(keys: pl.Series, tag: str) -> pl.Series:
    """Group ids for rows where a group is a run of consecutive equal keys.

    Runs are split into blocks of G rows, G the gcd of the run lengths, so a prompt drawn
    twice in a row (a 2G run) gives two groups when every group has G rows.
    """
    if keys.len() == 0:
        return pl.Series("group", [], pl.Utf8)
    frame = pl.DataFrame({"k": keys}).with_columns(
        (pl.col("k").ne_missing(pl.col("k").shift(1))).fill_null(True).cum_sum().alias("run"))
    lengths = frame.group_by("run").len()["len"].to_list()
    g = math.gcd(*lengths)
    frame = frame.with_columns(pl.int_range(pl.len()).over("run").alias("pos"))
    return frame.select(pl.format(f"{tag}:{{}}.{{}}", pl.col("run"), pl.col("pos") // g)
                        .alias("group"))["group"]


KEY_FLAGS = {"prompt_col": "--prompt-col", "group_col": "--group-col"}


def refuse_ignored(reader: TrainerReader, opts: LoadOptions, path: Path) -> None:
    """A ``--prompt-col`` or ``--group-col`` the framework reader ``reader`` does not read is refused in one
    line (the reader keys its dump from the writer's structure, named in its detection note)."""
    for field, flag in KEY_FLAGS.items():
        if getattr(opts, field) and field not in reader.key_options:
            raise ConfigError(f"{flag} is not read for {reader.name} dumps: their prompts and groups come from "
                              f"the writer's structure (see docs/trainers.md)", location=str(path),
                              remedy=f"drop {flag}, or write the rows as a long table (prompt, reward, group) and "
                                     f"pass {flag} there")
