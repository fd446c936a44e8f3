"""Rollout logs -> per-prompt counts (n samples, k right).

>>> from sigmaudit.loaders import LoadOptions, load_counts
>>> lc = load_counts(["sample_logs/rollouts.parquet"], LoadOptions())  # doctest: +SKIP

Files (parquet, csv, jsonl/ndjson, csv/jsonl as .gz/.zst), directories (recursively) and
globs are accepted together. Each file is scanned lazily and reduced by one streaming group-by;
the math layer only ever sees the resulting counts. See :mod:`.detect` for the layout rules.
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import functools
from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import polars as pl

from ..errors import InputError, SchemaError, SigmauditError
from . import trainers
from .columns import ColumnMap, key_note
from .detect import detect
from .engines import Engine
from .options import LAYOUTS, FileCounts, LoadedCounts, LoadOptions
from .paths import expand_paths
from .readers import POLARS_ERRORS, Source, scan
from .reduce import PARTIAL_SCHEMA, Partial, reduce_counts, reduce_lists, reduce_samples
from .series import read_series, series_columns
from .tempdirs import native_stderr_held, run_folder

__all__ = ["LAYOUTS", "FileCounts", "LoadOptions", "LoadedCounts", "count_file", "load_by", "load_counts"]


def _reduce(src, plan: ColumnMap, opts: LoadOptions, index: int,  # noqa: ANN001
            tick: Callable[[int], None] | None = None) -> Partial:
    if plan.layout == "counts":
        return reduce_counts(src, plan, opts.samples)
    if plan.list_rewards:
        return reduce_lists(src, plan, opts.threshold, index)
    return reduce_samples(src, plan, opts.threshold, tick)


def load_counts(paths: Sequence[str | Path], opts: LoadOptions | None = None,
                progress: Callable[[int], None] | None = None, engine: Engine | None = None) -> LoadedCounts:
    """Read rollout logs and reduce them to per-prompt (and per-group) counts.

    ``progress``, if given, is called after each file with the number of samples read so far.
    ``engine`` (see :func:`.engines.get_engine`) runs the reduction elsewhere (DuckDB, Spark);
    None reduces here with Polars. Raises InputError (unreadable input), SchemaError (columns or
    values fit no layout) or ConfigError (bad options); inputs are never modified. Files found in a directory (or by a
    glob) that a trainer writes beside its rollouts, or that fit no layout or another layout
    than the rest, are skipped with a note; named files never are.
    """
    opts = opts or LoadOptions()
    files = expand_paths(paths)
    if engine is not None:
        return _load_on(engine, paths, files, opts)
    if any(isinstance(f, str) for f in files):
        return _load_remote(paths, files, opts, progress)
    named = {Path(p).resolve() for p in ([paths] if isinstance(paths, str | Path) else paths)
             if Path(p).is_file()}
    skipped = {f: why for f, why in trainers.skip_reasons(files).items()
               if f.resolve() not in named}
    files = [f for f in files if f not in skipped]
    copies: list[str] = []
    if not opts.keep_duplicates:
        files, copies = drop_copied_files(files)
    like = None  # the last jsonl file whose schema was inferred (readers.scan may reuse it)
    held = native_stderr_held() if progress is None else contextlib.nullcontext()
    with run_folder() as tmp, held:
        opened: list[_Opened] = []
        errors: list[SchemaError] = []
        for index, path in enumerate(files):
            try:
                item = _open(path, tmp, opts, series_ok=index == 0 and len(files) == 1, like=like)
            except SchemaError as exc:
                if path.resolve() in named or len(files) == 1:
                    raise
                errors.append(exc)
                skipped[path] = f"fits no layout ({exc.message})"
                continue
            if isinstance(item, LoadedCounts):
                return item
            if item.norm is None and item.src.fmt == "jsonl" and not item.src.reused:
                like = item.src
            opened.append(item)
        if not opened:
            raise errors[0] if errors else InputError("no files to read", location=", ".join(map(str, paths)))
        opened = _of_main_layout(opened, named, paths, files, skipped)
        partials: list[pl.DataFrame] = []
        plans: list[ColumnMap] = []
        duplicates = read = missing = null_keys = 0
        extra: list[str] = []
        for index, item in enumerate(opened):
            tick = None if progress is None else functools.partial(_tick, progress, read)
            plan = item.plan if item.norm is not None else _with_dedupe(item.src, item.plan, opts)
            try:
                part = _reduce(_subset(item.src, opts), plan, opts, index, tick)
            except SigmauditError:
                if not item.src.reused:
                    raise
                # the schema reused from an earlier jsonl file did not fit: read the file as if alone
                src = scan(item.path, tmp)
                item = _Opened(item.path, src, detect(src.schema, opts, str(item.path)), None)
                part = _reduce(_subset(item.src, opts), _with_dedupe(item.src, item.plan, opts), opts, index, tick)
            plans.append(item.plan)
            partials.append(part.frame)
            duplicates += part.duplicates + (item.norm.duplicates if item.norm else 0)
            read += part.rows
            missing += part.missing
            null_keys += part.null_keys
            if item.norm:
                extra.extend(item.norm.extra_notes)
            if progress is not None:
                progress(read)
    return _conclude([o.path for o in opened], plans, partials, duplicates, read, missing, null_keys,
                     extra, [(o.norm.filtered, o.norm.reward_source) for o in opened if o.norm is not None],
                     copies, skipped)


def _conclude(files: list[Path], plans: list[ColumnMap], partials: list[pl.DataFrame],
              duplicates: int, read: int, missing: int, null_keys: int, extra: list[str],
              norms: list[tuple], copies: list[str], skipped: dict[Path, str]) -> LoadedCounts:
    """The load from its files' partial counts: assembled, checked by the framework, with every note.
    ``norms`` holds (filtered, reward_source) of each file a framework reader restructured."""
    if null_keys and read == 0:
        raise SchemaError(f"every row has a null prompt key ({key_note(plans[0].prompt)})",
                          location=", ".join(str(f) for f in files),
                          remedy="pick the key column with --prompt-col")
    loaded = _assemble(files, plans, partials, duplicates, read, missing)
    mine = []
    if null_keys:
        mine.append(f"{null_keys} rows with a null prompt key ({key_note(plans[0].prompt)}) dropped")
    if copies:
        mine.append(f"{len(copies)} file{'s' if len(copies) > 1 else ''} skipped as byte-for-byte copies of "
                    f"another input ({', '.join(copies[:3])}{', ...' if len(copies) > 3 else ''}); "
                    "--keep-duplicates reads them")
    trainers.check(loaded.layout, plans, loaded.per_group, missing, str(files[0]))
    filtered = norms[0][0] if norms and all(n[0] for n in norms) else None
    notes = [*loaded.notes, *mine, *extra[:3]]
    if len(extra) > 3:
        notes.append(f"... and {len(extra) - 3} more such notes")
    notes.extend(_skip_notes(skipped))
    source = norms[0][1] if norms else loaded.reward_source
    return dataclasses.replace(loaded, notes=tuple(notes), filtered=filtered, reward_source=source,
                               n_null_keys=null_keys)


DEDUPE_MAX_BYTES = 256 << 20
"""Sample logs up to this size are checked for blocks of rows written twice (the whole log, or a
step's rows, repeated); larger ones are reduced in one streaming pass without the check."""


def _with_dedupe(src, plan: ColumnMap, opts: LoadOptions) -> ColumnMap:  # noqa: ANN001
    """The column map with the repeated-block check on (one row per sample, small enough) or off
    (``--keep-duplicates``)."""
    if opts.keep_duplicates:
        return dataclasses.replace(plan, dedupe=()) if plan.dedupe else plan
    if plan.dedupe or plan.list_rewards or plan.layout == "counts" or src.local.stat().st_size > DEDUPE_MAX_BYTES:
        return plan
    return dataclasses.replace(plan, dedupe=tuple(c for c in src.schema if c not in ("image", "images")))


def drop_copied_files(files: list[Path]) -> tuple[list[Path], list[str]]:
    """(files without byte-for-byte copies of an earlier one, the copies' names). Only files of
    equal size are hashed."""
    import hashlib

    by_size: dict[int, list[Path]] = {}
    for f in files:
        by_size.setdefault(f.stat().st_size, []).append(f)
    copies: set[Path] = set()
    for group in by_size.values():
        if len(group) < 2:
            continue
        seen: dict[str, Path] = {}
        for f in group:
            digest = hashlib.sha256()
            with open(f, "rb") as fh:
                while chunk := fh.read(1 << 20):
                    digest.update(chunk)
            key = digest.hexdigest()
            if key in seen:
                copies.add(f)
            else:
                seen[key] = f
    return [f for f in files if f not in copies], [str(f) for f in files if f in copies]


def load_by(paths: Sequence[str | Path], column: str, opts: LoadOptions | None = None,
            progress: Callable[[int], None] | None = None) -> LoadedCounts:
    """:func:`load_counts` of every row, with ``parts``: the counts of each value of ``column``.

    Each part is its own load (its own corpus, so its own prior fit); rows whose ``column`` is
    null belong to no part (a note says how many values there are).
    """
    opts = opts or LoadOptions()
    pooled = load_counts(paths, opts, progress)
    if pooled.layout == "series":
        raise SchemaError("a per-step series has no rows to split", location=pooled.files[0],
                          remedy="drop --by")
    files = [Path(f) for f in pooled.files]
    values: set[str] = set()
    seen = False
    with run_folder() as tmp:
        for path in files:
            item = _open(path, tmp, opts, series_ok=False)
            assert isinstance(item, _Opened)
            if column in item.src.schema:
                seen = True
                col = pl.col(column).cast(pl.Utf8)
                try:
                    values.update(v for v in item.src.lf.select(col.unique()).collect().to_series()
                                  .to_list() if v is not None)
                except POLARS_ERRORS as exc:
                    raise item.src.fail(exc) from exc
    if not seen:
        raise SchemaError(f"--by column {column!r} is in none of the files read",
                          location=", ".join(map(str, files[:3])),
                          remedy="pick a column the files have (e.g. data_source, dataset, model, run)")
    if not values:
        raise SchemaError(f"--by column {column!r} holds only nulls", location=str(files[0]))
    if len(values) > MAX_BY_VALUES:
        raise SchemaError(f"--by column {column!r} holds {len(values):,} values; --by audits each value on its own "
                          f"(at most {MAX_BY_VALUES})", location=str(files[0]),
                          remedy="pick a column of runs, models or datasets; per-prompt figures are in "
                                 "'sigmaudit scan --per-prompt FILE'")
    parts = tuple((v, load_counts(files, dataclasses.replace(opts, subset=(column, v))))
                  for v in sorted(values, key=_natural))
    notes = (*pooled.notes, f"split by {column}: {len(parts)} values, each audited on its own")
    return dataclasses.replace(pooled, by=column, parts=parts, notes=notes)


MAX_BY_VALUES = 256
"""Most values a ``--by`` column may hold (each is loaded and audited on its own)."""


def _natural(value: str) -> tuple[int, float, str]:
    """Sort key: numbers in numeric order (2 before 10), then text."""
    try:
        number = float(value)
    except ValueError:
        return (1, 0.0, value)
    return (0, number, value) if number == number else (1, 0.0, value)


def _subset(src: Source, opts: LoadOptions) -> Source:
    """``src`` restricted to the rows of ``opts.subset`` (column, value)."""
    if opts.subset is None:
        return src
    column, value = opts.subset
    if column not in src.schema:
        return dataclasses.replace(src, lf=src.lf.filter(pl.lit(False)))
    return dataclasses.replace(src, lf=src.lf.filter(pl.col(column).cast(pl.Utf8) == value))


@dataclasses.dataclass(frozen=True)
class _Opened:
    path: Path
    src: Source
    plan: ColumnMap
    norm: trainers.Normalised | None


def _open(path: Path, tmp: Path, opts: LoadOptions, series_ok: bool,
          like: Source | None = None, peek: bool = False) -> _Opened | LoadedCounts | ModuleType:
    """One file's source and column map (a framework's restructured frame where it needs one);
    ``like`` is a jsonl source whose schema :func:`~.readers.scan` may reuse. With ``peek``, a file
    that a framework reader restructures is not read: its framework module comes back."""
    module = trainers.reader(path, None) if trainers.needs_reader(path) else None
    if module is None:
        src = scan(path, tmp, like)
        if series_ok and _is_plain(opts):
            found = series_columns(src.schema, opts.step_col)
            if found is not None:
                return _series(path, src, *found)
        module = trainers.reader(path, src.schema)
        if module is None:
            return _Opened(path, src, detect(src.schema, opts, str(path)), None)
    if peek:
        return module
    norm = module.read(path, opts)
    src, plan = norm.source(path)
    return _Opened(path, src, plan, norm)


def _origins(paths: Sequence[str | Path] | str | Path, files: list[Path]) -> dict[Path, int]:
    """For each file, the index of the path argument (file, directory or glob) it came from."""
    raw = [paths] if isinstance(paths, str | Path) else list(paths)
    out: dict[Path, int] = {}
    wanted = set(files)
    for i, p in enumerate(raw):
        for f in expand_paths([p]):
            if f in wanted:
                out.setdefault(f, i)
    return out


def _main_layout(opened: list[_Opened], named: set[Path], origin: dict[Path, int]) -> str:
    """The layout the load reads. Named files must all have it; within one directory (or glob)
    argument the most common layout wins, a trainer's before a generic one, and the others are
    skipped; two arguments whose layouts differ are refused (load them in separate runs)."""
    generic = ("long", "grouped", "counts")
    by_arg: dict[int, dict[str, int]] = {}
    for o in opened:
        counts = by_arg.setdefault(origin.get(o.path, -1), {})
        counts[o.plan.layout] = counts.get(o.plan.layout, 0) + 1
    chosen: list[tuple[str, Path]] = []
    for arg, counts in by_arg.items():
        members = [o for o in opened if origin.get(o.path, -1) == arg]
        layouts = {o.plan.layout for o in members if o.path.resolve() in named}
        layout = next(iter(layouts)) if len(layouts) == 1 else max(
            counts, key=lambda lay: (lay not in generic, counts[lay]))
        chosen.append((layout, next(o.path for o in members if o.plan.layout == layout)))
    for o in opened:  # named files: every one must have the chosen layout
        if o.path.resolve() in named and o.plan.layout != chosen[0][0]:
            chosen.append((o.plan.layout, o.path))
    first, where = chosen[0]
    for layout, path in chosen[1:]:
        if layout != first:
            raise SchemaError(f"files mix layouts: {where} is {first}, this is {layout}",
                              location=str(path), remedy="load them in separate runs")
    return first


def _skip_notes(skipped: dict[Path, str]) -> list[str]:
    by_reason: dict[str, list[Path]] = {}
    for path, why in skipped.items():
        by_reason.setdefault(why, []).append(path)
    out = []
    for why, paths in by_reason.items():
        more = f" and {len(paths) - 1} more" if len(paths) > 1 else ""
        out.append(f"skipped {paths[0]}{more}: {why}")
    return out


def _remote_plan(url: str, src: Source, opts: LoadOptions) -> ColumnMap:
    """The column map of a remote file; a dump that a framework reader restructures (see
    :mod:`.trainers`) is refused: those readers work on local files."""
    from .remote import parse_url

    module = trainers.reader(Path(parse_url(url).key or "x"), src.schema)
    if module is not None:
        raise InputError(f"{module.NAME} dumps on an object store are read with --engine polars only (their "
                         "reader restructures each file here)", location=url,
                         remedy="use --engine polars (the default)")
    return detect(src.schema, opts, url)


def _load_remote(paths, files: list, opts: LoadOptions,  # noqa: ANN001
                 progress: Callable[[int], None] | None) -> LoadedCounts:
    """Object-store inputs: each file scanned where it lies and reduced like a local one; a dump
    that a framework reader restructures is copied here first (:func:`.mirror.load_mirrored`)."""
    local = [f for f in files if not isinstance(f, str)]
    if local:
        raise InputError("inputs mix local files and URLs", location=str(local[0]),
                         remedy="load them in separate runs")
    from .mirror import framework_dump, load_mirrored

    if framework_dump(files, opts):
        return load_mirrored(paths, files, lambda local_paths: load_counts(local_paths, opts, progress))
    partials: list[pl.DataFrame] = []
    plans: list[ColumnMap] = []
    duplicates = read = missing = 0
    with run_folder() as tmp:
        for index, url in enumerate(files):
            src = scan(url, Path(tmp))
            if index == 0 and len(files) == 1 and _is_plain(opts):
                found = series_columns(src.schema, opts.step_col)
                if found is not None:
                    return _series(url, src, *found)
            plan = _remote_plan(url, src, opts)
            if plans and plan.layout != plans[0].layout:
                raise SchemaError(f"files mix layouts: {files[0]} is {plans[0].layout}, this is {plan.layout}",
                                  location=url, remedy="load them in separate runs")
            tick = None if progress is None else functools.partial(_tick, progress, read)
            part = _reduce(_subset(src, opts), plan, opts, index, tick)
            plans.append(plan)
            partials.append(part.frame)
            duplicates += part.duplicates
            read += part.rows
            missing += part.missing
            if progress is not None:
                progress(read)
    loaded = _assemble(files, plans, partials, duplicates, read, missing)
    trainers.check(loaded.layout, plans, loaded.per_group, missing, files[0])
    return loaded


def _load_on(engine: Engine, paths, files: list, opts: LoadOptions) -> LoadedCounts:  # noqa: ANN001
    """The layout detected from the first file (as the local engine would: a sample), the reduction
    of all the files on ``engine``, the rest as usual. Files a trainer writes beside its rollouts are
    skipped as usual. A dump whose framework reader restructures each file in Python (see
    :mod:`.trainers`), or whose rows are filtered by a Polars expression (verl v1), is read file by
    file with :func:`count_file` wherever the engine runs Python (:func:`_load_per_file`)."""
    from .engines import reduce_with

    if opts.subset is not None:
        from ..errors import ConfigError

        raise ConfigError("a subset of rows (--by) is read on the polars engine only", location="--engine")
    local = [f for f in files if isinstance(f, Path)]
    skipped = trainers.skip_reasons(local) if local else {}
    kept = [f for f in files if f not in skipped]
    if not kept:
        raise InputError("no files to read", location=", ".join(map(str, skipped)))
    with run_folder() as tmp:
        first = kept[0]
        if isinstance(first, Path):
            try:
                item = _open(first, Path(tmp), opts, series_ok=len(kept) == 1, peek=True)
            except SchemaError:
                if len(kept) == 1:
                    raise
                # the sample fits no layout: the local engine's rules (skip it, or refuse) file by file
                return _load_per_file(engine, paths, files, opts)
            if isinstance(item, LoadedCounts):  # a per-step series is a few hundred rows: read here
                return item
            if isinstance(item, ModuleType) or item.plan.row_filter is not None:
                return _load_per_file(engine, paths, files, opts)
            plan, schema = item.plan, item.src.schema
        else:
            from .mirror import framework_dump

            if framework_dump(kept, opts):
                raise InputError("a framework dump on an object store is read with --engine polars only (its "
                                 "reader restructures each file here)", location=str(first),
                                 remedy="use --engine polars (the default)")
            src = scan(first, Path(tmp))
            if len(kept) == 1 and _is_plain(opts):
                found = series_columns(src.schema, opts.step_col)
                if found is not None:
                    return _series(first, src, *found)
            plan, schema = _remote_plan(first, src, opts), src.schema
    result = reduce_with(engine, plan, opts, kept, schema)
    loaded = _assemble(kept, [plan], [result.frame], result.duplicates, result.rows, result.missing)
    trainers.check(loaded.layout, [plan], loaded.per_group, result.missing, str(first))
    notes = [*loaded.notes, *_skip_notes(skipped)]
    return dataclasses.replace(loaded, notes=tuple(notes))


def count_file(path: Path, opts: LoadOptions, index: int = 0, digest: bool = False) -> FileCounts:
    """One file read and reduced on its own, as :func:`load_counts` reads each file (framework reader,
    column map, repeated-block check, reduction), with its errors kept rather than raised: the unit
    of work an engine runs where the file lies (on a Spark executor: sigmaudit must be installed
    there). ``index`` numbers the file within the load; ``digest`` asks for its sha256."""
    sha = None
    if digest:
        import hashlib

        h = hashlib.sha256()
        with open(path, "rb") as fh:
            while chunk := fh.read(1 << 20):
                h.update(chunk)
        sha = h.hexdigest()
    with run_folder() as tmp:
        try:
            item = _open(path, tmp, opts, series_ok=False)
        except SigmauditError as exc:
            return FileCounts(path, digest=sha, error=exc, phase="open")
        assert isinstance(item, _Opened)
        bare = dataclasses.replace(item.plan, derived=(), row_filter=None)
        plan = item.plan if item.norm is not None else _with_dedupe(item.src, item.plan, opts)
        try:
            part = _reduce(_subset(item.src, opts), plan, opts, index)
        except SigmauditError as exc:
            return FileCounts(path, bare, digest=sha, error=exc, phase="reduce")
    norm = item.norm
    return FileCounts(path, bare, part.frame, part.rows, part.missing,
                      part.duplicates + (norm.duplicates if norm else 0), part.null_keys,
                      framework=norm is not None, filtered=norm.filtered if norm else None,
                      reward_source=norm.reward_source if norm else None,
                      extra_notes=norm.extra_notes if norm else (), digest=sha)


def _load_per_file(engine: Engine, paths, files: list[Path], opts: LoadOptions) -> LoadedCounts:  # noqa: ANN001
    """:func:`load_counts`'s rules (named files, skipped files, copies, the main layout, errors in
    file order) over :func:`count_file` results that ``engine`` computed file by file."""
    remote = [f for f in files if not isinstance(f, Path)]
    if remote:
        raise InputError("a framework dump on an object store is read with --engine polars only (its "
                         "reader restructures each file here)", location=str(remote[0]),
                         remedy="use --engine polars (the default)")
    named = {Path(p).resolve() for p in ([paths] if isinstance(paths, str | Path) else paths)
             if Path(p).is_file()}
    skipped = {f: why for f, why in trainers.skip_reasons(files).items() if f.resolve() not in named}
    files = [f for f in files if f not in skipped]
    if not files:
        raise InputError("no files to read", location=", ".join(map(str, paths)))
    hashed: set[int] = set()
    if not opts.keep_duplicates:
        sizes = [f.stat().st_size for f in files]
        shared = {size for size, count in collections.Counter(sizes).items() if count > 1}
        hashed = {i for i, size in enumerate(sizes) if size in shared}
    results = engine.count_files(functools.partial(count_file, opts=opts), files, hashed)
    copies: list[str] = []
    seen: set[str] = set()
    for r in results:
        if r.digest is not None:
            if r.digest in seen:
                copies.append(str(r.path))
            seen.add(r.digest)
    results = [r for r in results if str(r.path) not in copies]
    files = [r.path for r in results]
    opened: list[FileCounts] = []
    errors: list[SigmauditError] = []
    for r in results:
        if r.phase == "open":
            if not isinstance(r.error, SchemaError) or r.path.resolve() in named or len(files) == 1:
                raise r.error
            errors.append(r.error)
            skipped[r.path] = f"fits no layout ({r.error.message})"
            continue
        opened.append(r)
    if not opened:
        raise errors[0] if errors else InputError("no files to read", location=", ".join(map(str, paths)))
    opened = _of_main_layout(opened, named, paths, files, skipped)
    for r in opened:
        if r.error is not None:
            raise r.error
    extra = [note for r in opened for note in r.extra_notes]
    return _conclude([r.path for r in opened], [r.plan for r in opened], [r.frame for r in opened],
                     sum(r.duplicates for r in opened), sum(r.rows for r in opened),
                     sum(r.missing for r in opened), sum(r.null_keys for r in opened), extra,
                     [(r.filtered, r.reward_source) for r in opened if r.framework], copies, skipped)


def _tick(progress: Callable[[int], None], before: int, rows: int) -> None:
    progress(before + rows)


def _is_plain(opts: LoadOptions) -> bool:
    """No option names a prompt, reward or count column (which would rule out a series)."""
    return not any((opts.prompt_col, opts.reward_col, opts.group_col, opts.n_col, opts.k_col, opts.rate_col))


def _series(path: Path, src, step: str, mapping: dict[str, str]) -> LoadedCounts:  # noqa: ANN001
    frame = read_series(src.lf, step, mapping, str(path))
    cols = ", ".join(f"{col} as {field}" for field, col in mapping.items())
    return LoadedCounts(
        per_prompt=pl.DataFrame(schema={"prompt": pl.Utf8, "n": pl.Int64, "k": pl.Int64}), per_group=None,
        layout="series", files=(str(path),), n_rows=frame.height, missing_rewards=0, n_single_sample_prompts=0,
        notes=(f"detected a per-step series ({frame.height} steps, step from {step}; {cols}): shares only, "
               "no groups or prompts",),
        reward_source=", ".join(mapping.values()), has_steps=True, series=frame)


def _of_main_layout(opened: list[Any], named: set[Path], paths: Sequence[str | Path], files: list[Any],
                    skipped: dict[Any, str]) -> list[Any]:
    """The opened files of the inputs' main layout; the others go to ``skipped`` with the reason
    (the local load and the engines' file-by-file replay share this rule)."""
    layout = _main_layout(opened, named, _origins(paths, files))
    for item in opened:
        if item.plan.layout != layout:
            skipped[item.path] = f"{item.plan.layout} layout, not {layout}"
    return [item for item in opened if item.plan.layout == layout]


def _may_overlap(partials: list[pl.DataFrame], plans: list[ColumnMap]) -> bool:
    """Could one group be split over several files? Not if each file holds its own steps
    (per-step shards) or each row is its own group (grouped layouts)."""
    if len(partials) < 2 or all(p.list_rewards for p in plans):
        return False
    steps = [set(p["step"].unique().to_list()) for p in partials]
    if any(None in s for s in steps):
        return True
    return sum(len(s) for s in steps) != len(set().union(*steps))


def _ids_over_prompts(allp: pl.DataFrame, plans: list[ColumnMap]) -> str | None:
    """A note when a group-id column holds several prompts under one id (then a group is the rows
    of one prompt under one id: right for a batch id, wrong for an id that is not a group id)."""
    column = next((p.group for p in plans if p.group), None)
    if column is None or allp.height == 0:
        return None
    ids = allp.filter(pl.col("n") > 0).group_by("step", "gid").agg(pl.col("prompt").n_unique().alias("prompts"))
    mixed = int((ids["prompts"] > 1).sum())
    if not mixed:
        return None
    return (f"group id {column!r} holds several prompts under one id ({mixed:,} of {ids.height:,} ids): a group "
            f"is taken as one prompt's rows under one id; if {column!r} is not a group id, name the right "
            f"column with --group-col")


SLICE_ROWS = 2_000_000
"""Per-prompt sums over more groups than this are taken slice by slice (smaller hash tables)."""


def _sum_by_prompt(frame: pl.DataFrame) -> pl.DataFrame:
    """n and k summed per prompt, over zero-copy slices of ``frame`` and then over their sums."""
    sums = (pl.col("n").sum(), pl.col("k").sum())
    parts = [part.group_by("prompt").agg(*sums) for part in frame.iter_slices(SLICE_ROWS)]
    if len(parts) <= 1:
        return parts[0] if parts else frame.group_by("prompt").agg(*sums)
    return pl.concat(parts).group_by("prompt").agg(*sums)


def _assemble(files: list[Path], plans: list[ColumnMap], partials: list[pl.DataFrame],
              duplicates: int, n_rows: int, missing: int) -> LoadedCounts:
    if n_rows == 0:
        raise InputError("no data rows", location=", ".join(map(str, files)))
    allp = pl.concat(partials, how="vertical") if partials else pl.DataFrame(schema=PARTIAL_SCHEMA)
    layout = plans[0].layout
    grouped = all(p.has_groups for p in plans)
    per_group = None
    if grouped:
        if _may_overlap(partials, plans):
            allp = (allp.group_by(["step", "gid", "prompt"])
                    .agg(pl.col("n").sum(), pl.col("k").sum())
                    .sort(["step", "prompt", "gid"], nulls_last=True))
        per_group = allp.select("step", "prompt", "n", "k")
        mixed = _ids_over_prompts(allp, plans)
        if (per_group["n"] == 0).any():  # filter only when needed: it copies every column
            per_group = per_group.filter(pl.col("n") > 0)
    # One group-by gives both the per-prompt counts and the prompts whose rewards are all
    # missing: dropping per_group's n = 0 rows changes no prompt's sums.
    summed = _sum_by_prompt(allp)
    per_prompt = summed.filter(pl.col("n") > 0).sort("prompt")
    if per_prompt.height == 0:
        raise SchemaError("every reward is missing (null or NaN)", location=str(files[0]),
                          remedy="check --reward-col")
    n_all_missing = summed.height - per_prompt.height
    singles = int((per_prompt["n"] == 1).sum())
    notes = list(dict.fromkeys(p.note for p in plans))
    if len(files) > 1:
        notes.append(f"read {len(files)} files")
    if duplicates:
        notes.append(f"{duplicates} duplicate rows dropped")
    if missing:
        notes.append(f"{missing} missing (null/NaN) rewards excluded, not counted as wrong")
    if n_all_missing:
        notes.append(f"{n_all_missing} prompts dropped: all their rewards are missing")
    if singles:
        have = "prompt has" if singles == 1 else "prompts have"
        notes.append(f"{singles} {have} a single sample (counted; its p̂ is 0 or 1)")
    if grouped and mixed:
        notes.append(mixed)
    plan = plans[0]
    reward_source = (plan.k or plan.rate or "") if layout == "counts" else (plan.reward or "")
    if reward_source == "__rewards":  # the older prime-rl layout
        reward_source = "traces[].reward"
    return LoadedCounts(
        per_prompt=per_prompt, per_group=per_group, layout=layout,
        files=tuple(str(f) for f in files), n_rows=n_rows, missing_rewards=missing,
        n_single_sample_prompts=singles, notes=tuple(notes), reward_source=reward_source,
        has_steps=any(p.step for p in plans))
