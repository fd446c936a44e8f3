"""The polars engine (the default): each file scanned lazily here, its layout detected (or its
framework reader run), and reduced by one streaming group-by (:mod:`..reduce`). Object-store files
are scanned where they lie; a framework dump on a store is copied here first (:mod:`..mirror`).

:func:`count_file` is the unit of work: one file read and reduced on its own, with its errors kept.
The other engines run it file by file for a dump whose framework reader restructures each file in
Python (see :mod:`.`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import shutil
from collections.abc import Callable
from pathlib import Path

import polars as pl

from ...errors import ConfigError, SchemaError, SigmauditError
from .. import trainer_state, trainers
from ..assemble import conclude
from ..columns import K_NAMES, N_NAMES, RATE_NAMES, REWARD_NAMES, ColumnMap
from ..detect import detect
from ..inputs import Inputs
from ..options import FileCounts, LoadedCounts, LoadOptions, length_flag
from ..readers import (
    NoDataError,
    Source,
    bad_value_line,
    csv_numbers,
    scan,
    with_numbers_as_written,
    with_text_columns,
)
from ..reduce import Partial, reduce_counts, reduce_lists, reduce_samples
from ..rules import (
    drop_copied_files,
    drop_relogged,
    file_digest,
    framework_elsewhere,
    joined_series,
    none_fit,
    of_main_layout,
    passed_over,
    series_of,
)
from ..tempdirs import native_stderr_held, run_folder

Progress = Callable[[int], None]

DEDUPE_MAX_BYTES = 256 << 20
"""Sample logs up to this size are checked for blocks of rows written twice (the whole log, or a
step's rows, repeated); larger ones are reduced in one streaming pass without the check."""


@dataclasses.dataclass(frozen=True)
class Opened:
    """One file opened: its lazy source, column map and (read by a framework reader) its frame's facts."""

    path: Path
    src: Source
    plan: ColumnMap
    norm: trainers.Normalised | None
    keys_later: bool = False
    """Its keys given twice are looked for after its reduction (:func:`_reduce_opened`)."""


def open_file(path: Path, tmp: Path, opts: LoadOptions, series_ok: bool,
              like: Source | None = None, peek: bool = False,
              keys_later: bool = False) -> Opened | LoadedCounts | trainers.TrainerReader:
    """One file's source and column map (a framework's restructured frame where it needs one);
    ``like`` is a jsonl source whose schema :func:`~..readers.scan` may reuse. With ``peek``, a file
    that a framework reader restructures is not read: its framework reader comes back. A lone file
    (``series_ok``) may be a per-step series: its counts come back. With ``keys_later`` a jsonl file's
    keys given twice are looked for after its reduction (:func:`_reduce_opened`), else here."""
    if trainer_state.claims(path):  # read in Python (a NaN it holds in a key never read is no error)
        if not series_ok:  # read first: a file half-written (a watch) is an InputError, waited for
            trainer_state.series_source(path, opts)
            raise SchemaError("a transformers trainer_state.json: a per-step series, read when no rollout file is "
                              "beside it", location=str(path), remedy="name it alone, or point at its run's folder")
        return series_of(path, None, opts)  # type: ignore[return-value]
    module = trainers.reader(path, None) if trainers.needs_reader(path) else None
    if module is None:
        src = scan(path, tmp, like, opts.reward_col)
        series = series_of(path, src, opts) if series_ok else None
        if series is not None:
            return series
        module = trainers.reader(path, src.schema)
        if module is None:
            src = csv_numbers(src, _reward_like(src.schema, opts))
            plan = detect(src.schema, opts, str(path))
            if not keys_later:
                refuse_duplicate_keys(path, src.local, plan, opts)
            return Opened(path, with_text_columns(src, plan.key_columns), plan, None, keys_later)
    if peek:
        return module
    trainers.refuse_ignored(module, opts, path)
    norm = module.read(path, opts)
    if opts.length_col is not None and norm.length_source != length_flag(opts.length_col):
        raise ConfigError(f"the {norm.layout} reader does not read a length column of its own choosing"
                          + (f" (it reads {norm.length_source})" if norm.length_source else ""),
                          location="--length-col", remedy="drop --length-col")
    src, plan = norm.source(path)
    return Opened(path, src, plan, norm)


def read_keys(plan: ColumnMap, opts: LoadOptions) -> list[str]:
    """The top-level keys whose values the counts are made of: those the reduction reads, and ``--by``'s column."""
    from . import view_columns

    return list(dict.fromkeys([*view_columns(plan), *([opts.subset[0]] if opts.subset else [])]))


def refuse_duplicate_keys(path: Path | str, local: Path | str, plan: ColumnMap, opts: LoadOptions,
                          part: Partial | None = None) -> None:
    """Refuse a jsonl (or .json) file one of whose records gives a key the counts read twice (engines read
    a different value each: :func:`..jsonl.duplicate_key`), on every engine alike. ``part``, the file's
    reduction, may prove there is none without the search: :func:`_proven_once`."""
    from ..jsonl import duplicate_error, duplicate_key
    from ..paths import file_kind

    if isinstance(local, str) or isinstance(path, str) and local == path:
        return
    kind = file_kind(Path(local))
    if kind is None or kind[0] != "jsonl":
        return
    keys = read_keys(plan, opts)
    if part is not None and _proven_once(Path(local), keys, plan, part):
        return
    found = duplicate_key(Path(local), keys)
    if found is not None:
        record = not isinstance(path, str) and (file_kind(Path(path)) or ("",))[0] == "json"
        raise duplicate_error(str(path), found[0], found[1], "record" if record else "line")


def _keys_later(files: list[Path]) -> bool:
    """Whether a load's files are big enough, together, for :func:`_proven_once`
    (:data:`..jsonl.TOKENS_MIN_BYTES`)."""
    from ..jsonl import TOKENS_MIN_BYTES

    return sum(f.stat().st_size for f in files) >= TOKENS_MIN_BYTES


def _proven_once(local: Path, keys: list[str], plan: ColumnMap, part: Partial) -> bool:
    """True when the reduction ``part`` of a one-row-per-sample file shows that no record gives one of
    ``keys`` twice: every key is the step, prompt or reward column, and the quoted keys occur in the
    file (:func:`..jsonl.key_tokens`) exactly as often as len(keys) × the valid rewards of rows with a step
    and a prompt (each of those records gives every key a value: a floor on the keys given). Issue 45 item 1:
    the search of every line cost 8 of 13 s of a scan of a 2.7 GB verl dump, this count ~1 s."""
    from ..jsonl import key_tokens

    simple = plan.layout != "counts" and not plan.list_rewards and not plan.derived and plan.row_filter is None
    if not simple or len(plan.prompt) != 1 or not set(keys) <= {plan.step, plan.prompt[0], plan.reward} - {None}:
        return False
    frame = part.frame.filter(pl.col("step").is_not_null()) if plan.step else part.frame
    floor = len(keys) * int(frame["n"].sum())
    return floor > 0 and key_tokens(local, keys) == floor


def _reward_like(schema: dict[str, pl.DataType], opts: LoadOptions) -> list[str]:
    """The columns that may hold a csv's rewards or counts: the ones named by an option, else those named like one."""
    named = [c for c in (opts.reward_col, opts.n_col, opts.k_col, opts.rate_col) if c]
    length = [opts.length_col] if opts.length_col else []
    if named:
        return named + length
    return [c for c in schema if c.lower() in (*REWARD_NAMES, *N_NAMES, *K_NAMES, *RATE_NAMES)] + length


def with_dedupe(src: Source, plan: ColumnMap, opts: LoadOptions) -> ColumnMap:
    """The column map with the repeated-block check on (one row per sample, small enough) or off
    (``--keep-duplicates``)."""
    if opts.keep_duplicates:
        return dataclasses.replace(plan, dedupe=()) if plan.dedupe else plan
    if plan.dedupe or plan.list_rewards or plan.layout == "counts" or src.local.stat().st_size > DEDUPE_MAX_BYTES:
        return plan
    return dataclasses.replace(plan, dedupe=tuple(c for c in src.schema if c not in ("image", "images")))


def subset(src: Source, opts: LoadOptions) -> Source:
    """``src`` restricted to the rows of ``opts.subset`` (column, value); value None: the rows where the
    column is null or missing (``--by``'s "(null)")."""
    if opts.subset is None:
        return src
    column, value = opts.subset
    if column not in src.schema:
        return dataclasses.replace(src, lf=src.lf.filter(pl.lit(value is None)))
    if value is None:
        return dataclasses.replace(src, lf=src.lf.filter(pl.col(column).is_null()))
    return dataclasses.replace(src, lf=src.lf.filter(pl.col(column).cast(pl.Utf8) == value))


def reduce_file(src: Source, plan: ColumnMap, opts: LoadOptions, index: int,
                tick: Progress | None = None) -> Partial:
    """One source's rows reduced to counts per (step, group, prompt), as its layout says."""
    src = subset(src, opts)
    if plan.layout == "counts":
        return reduce_counts(src, plan, opts.samples, opts.rate_scale)
    if plan.list_rewards:
        return reduce_lists(src, plan, opts.threshold, index)
    return reduce_samples(src, plan, opts.threshold, tick)


def counted(item: Opened, part: Partial, plan: ColumnMap | None = None, digest: str | None = None) -> FileCounts:
    """What the load needs to know of one reduced file."""
    norm = item.norm
    return FileCounts(item.path, plan or item.plan, part.frame, part.rows, part.missing,
                      part.duplicates + (norm.duplicates if norm else 0), part.null_keys,
                      framework=norm is not None, filtered=norm.filtered if norm else None,
                      reward_source=norm.reward_source if norm else None,
                      extra_notes=(*(norm.extra_notes if norm else ()), *part.notes), missing_at=part.missing_at,
                      digest=digest,
                      length_source=norm.length_source if norm else
                      None if (plan or item.plan).length is None else length_flag(str((plan or item.plan).length)))


def count_file(path: Path, opts: LoadOptions, index: int = 0, digest: bool = False) -> FileCounts:
    """One file read and reduced on its own, as :func:`load_local` reads each file (framework reader,
    column map, repeated-block check, reduction), with its errors kept rather than raised: the unit
    of work an engine runs where the file lies (on a Spark executor: sigmaudit must be installed
    there). ``index`` numbers the file within the load; ``digest`` asks for its sha256."""
    sha = file_digest(path) if digest else None
    with run_folder() as tmp:
        try:
            item = open_file(path, tmp, opts, series_ok=False)
        except SigmauditError as exc:
            return FileCounts(path, digest=sha, error=exc, phase="open")
        assert isinstance(item, Opened)
        bare = dataclasses.replace(item.plan, derived=(), row_filter=None)
        plan = item.plan if item.norm is not None else with_dedupe(item.src, item.plan, opts)
        try:
            part = reduce_file(item.src, plan, opts, index)
        except SigmauditError as exc:
            return FileCounts(path, bare, digest=sha, error=exc, phase="reduce")
    return counted(item, part, bare, sha)


def load_local(inputs: Inputs, opts: LoadOptions, progress: Progress | None = None) -> LoadedCounts:
    """Local files: each opened (the main layout chosen over them), then reduced in turn."""
    files, copies = inputs.local, []
    if not opts.keep_duplicates:
        files, copies = drop_copied_files(files)
    files, relogged = drop_relogged(files, opts)
    held = native_stderr_held() if progress is None else contextlib.nullcontext()
    with run_folder() as tmp, held:
        opened = _open_all(inputs, files, tmp, opts)
        if isinstance(opened, LoadedCounts):
            return opened
        out: list[FileCounts] = []
        read = 0
        for index, item in enumerate(opened):
            tick = None if progress is None else functools.partial(_tick, progress, read)
            out.append(_reduce_opened(item, tmp, opts, index, tick))
            read += out[-1].rows
            if progress is not None:
                progress(read)
    return conclude([o.path for o in opened], out, copies, inputs.skipped, relogged, opts.pooling, opts.max_group_size)


def _open_all(inputs: Inputs, files: list[Path], tmp: Path, opts: LoadOptions) -> list[Opened] | LoadedCounts:
    """Every file opened, in order; a file of a directory or glob that fits no layout is skipped
    (a named one, or a lone one, is refused); the files of the inputs' main layout come back. Files that are
    per-step series (a trainer's metrics) are one series when nothing else is read (:func:`joined_series`), else
    passed over with a note."""
    like = None  # the last jsonl file whose schema was inferred (readers.scan may reuse it)
    later = _keys_later(files)
    opened: list[Opened] = []
    series: list[LoadedCounts] = []
    errors: list[SigmauditError] = []
    for path in files:
        try:
            item = open_file(path, tmp, opts, series_ok=True, like=like, keys_later=later)
        except (SchemaError, NoDataError) as exc:
            if path.resolve() in inputs.named or (len(files) == 1 and not inputs.skipped):
                raise
            errors.append(exc)
            inputs.skipped[path] = passed_over(exc)
            continue
        if isinstance(item, LoadedCounts):
            series.append(item)
            continue
        if item.norm is None and item.src.fmt == "jsonl" and not item.src.reused:
            like = item.src
        opened.append(item)
    if series and not opened:
        return series[0] if len(files) == 1 and not inputs.skipped else joined_series(series, inputs.skipped)
    for s in series:
        if Path(s.files[0]).resolve() in inputs.named and opened:  # a file named is never skipped
            raise SchemaError(f"files mix layouts: {opened[0].path} is {opened[0].plan.layout}, this is a per-step "
                              "series of shares (a trainer's metrics)", location=s.files[0],
                              remedy="load them in separate runs")
        inputs.skipped[Path(s.files[0])] = "a per-step series of shares (a trainer's metrics), not rollouts"
    if not opened:
        raise none_fit(errors, inputs)
    return of_main_layout(opened, inputs.named, inputs.args, files, inputs.skipped)


def _reduce_opened(item: Opened, tmp: Path, opts: LoadOptions, index: int, tick: Progress | None) -> FileCounts:
    """One opened file reduced; a jsonl file scanned with an earlier file's schema that does not fit
    it is read again as if alone. A jsonl file's keys given twice are refused here (``keys_later`` of
    :func:`open_file`), before any error of its reduction, as :func:`open_file` refuses them."""
    plan = item.plan if item.norm is not None else with_dedupe(item.src, item.plan, opts)
    later = item.keys_later and item.norm is None
    try:
        part = reduce_file(item.src, plan, opts, index, tick)
    except SigmauditError as exc:
        if later:
            refuse_duplicate_keys(item.path, item.src.local, item.plan, opts)
        if item.norm is not None or item.src.fmt != "jsonl":
            raise
        return _reduce_again(item, tmp, opts, index, tick, exc)
    if later:
        refuse_duplicate_keys(item.path, item.src.local, item.plan, opts, part)
    return counted(item, part)


def _reduce_again(item: Opened, tmp: Path, opts: LoadOptions, index: int, tick: Progress | None,
                  error: SigmauditError) -> FileCounts:
    """A jsonl file whose schema (an earlier file's, or inferred from its first lines) does not fit
    all its lines (``error``): scanned as if alone, then, if a value's JSON type changes further down
    (0/1 then 0.0/1.0 or true/false), with its value columns read as written. When nothing fits, the
    error of the last schema tried that is not the fallback's (it names the value)."""
    src, plan = item.src, item.plan
    if src.reused:
        src = scan(item.path, tmp)
        plan = detect(src.schema, opts, str(item.path))
        src = with_text_columns(src, plan.key_columns)
        try:
            return counted(item, reduce_file(src, with_dedupe(src, plan, opts), opts, index, tick), plan)
        except SigmauditError as exc:
            error = exc
    widened = with_numbers_as_written(src, plan.value_columns)
    if widened is src:
        raise error
    src = widened
    try:
        return counted(item, reduce_file(src, with_dedupe(src, plan, opts), opts, index, tick), plan)
    except SigmauditError:
        raise (bad_value_line(src, plan.value_columns) or error) from None


def remote_plan(url: str, schema: dict[str, pl.DataType], opts: LoadOptions) -> ColumnMap:
    """The column map of a remote file; a dump that a framework reader restructures (see
    :mod:`..trainers`) is refused: those readers work on local files."""
    from ..remote import parse_url

    module = trainers.reader(Path(parse_url(url).key or "x"), schema)
    if module is not None:
        raise framework_elsewhere(url, module.name)
    return detect(schema, opts, url)


def load_remote(inputs: Inputs, opts: LoadOptions, progress: Progress | None = None) -> LoadedCounts:
    """Object-store inputs: each file read like a local one (a csv or jsonl object from its copy in the run
    folder, removed once reduced; a parquet object where it lies) and reduced like a local one (a dump that
    a framework reader restructures is copied here first: :func:`..mirror.load_mirrored`)."""
    files = inputs.files
    out: list[FileCounts] = []
    with run_folder() as tmp:
        for index, url in enumerate(files):
            own = Path(tmp) / f"object-{index}"  # its copy, removed once reduced: one object on disk at a time
            own.mkdir()
            src = scan(url, own)
            series = series_of(url, src, opts) if index == 0 and len(files) == 1 else None
            if series is not None:
                return series
            plan = remote_plan(url, src.schema, opts)
            src = with_text_columns(src, plan.key_columns)
            if out and plan.layout != out[0].plan.layout:
                raise SchemaError(f"files mix layouts: {files[0]} is {out[0].plan.layout}, this is {plan.layout}",
                                  location=url, remedy="load them in separate runs")
            tick = None if progress is None else functools.partial(_tick, progress, sum(c.rows for c in out))
            part = reduce_file(src, plan, opts, index, tick)
            shutil.rmtree(own, ignore_errors=True)
            out.append(FileCounts(url, plan, part.frame, part.rows, part.missing, part.duplicates, part.null_keys,
                                  missing_at=part.missing_at,
                                  length_source=None if plan.length is None else length_flag(plan.length)))
            if progress is not None:
                progress(sum(c.rows for c in out))
    return conclude(files, out, [], inputs.skipped, pooling=opts.pooling, max_group=opts.max_group_size)


def _tick(progress: Progress, before: int, rows: int) -> None:
    progress(before + rows)
