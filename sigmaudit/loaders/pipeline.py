"""One load: the inputs resolved once (:mod:`.inputs`), the input rules applied (:mod:`.rules`), the
rows reduced to counts by an engine (polars here, or duckdb/spark: :mod:`.engines`), the counts
assembled with every note (:mod:`.assemble`)."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from pathlib import Path

from ..errors import ConfigError, InputError, SchemaError, SigmauditError
from . import trainer_state, trainers
from .assemble import conclude
from .engines import Engine
from .engines.polars import count_file, load_local, load_remote, open_file, refuse_duplicate_keys, remote_plan
from .inputs import Inputs, resolve
from .options import FileCounts, LoadedCounts, LoadOptions, length_flag
from .readers import NoDataError, remote_schema, scan
from .rules import (
    GENERIC,
    copies_of,
    drop_copied_files,
    drop_relogged,
    framework_elsewhere,
    is_plain,
    misnamed_compression,
    of_main_layout,
    passed_over,
    same_size,
    series_of,
)
from .runs import part_named, roots
from .series import series_columns
from .tempdirs import run_folder


def load_counts(paths: Sequence[str | Path] | str | Path, opts: LoadOptions | None = None,
                progress: Callable[[int], None] | None = None, engine: Engine | None = None) -> LoadedCounts:
    """Read rollout logs and reduce them to per-prompt (and per-group) counts.

    ``progress``, if given, is called after each file with the number of samples read so far.
    ``engine`` (see :func:`.engines.get_engine`) runs the reduction elsewhere (DuckDB, Spark);
    None reduces here with Polars. Raises InputError (unreadable input), SchemaError (columns or
    values fit no layout) or ConfigError (bad options); inputs are never modified. Files found in a
    directory (or by a glob) that a trainer writes beside its rollouts, or that fit no layout or
    another layout than the rest, are skipped with a note; named files never are.
    """
    opts = opts or LoadOptions()
    inputs = resolve(paths)
    if engine is not None:
        return load_on(engine, inputs, opts)
    if inputs.remote:
        from .mirror import framework_dump, load_mirrored

        if inputs.local:
            raise InputError("inputs mix local files and URLs", location=str(inputs.local[0]),
                             remedy="load them in separate runs")
        if framework_dump(inputs.remote, opts):
            return load_mirrored(inputs.args, inputs.remote, lambda local: load_counts(local, opts, progress))
        return load_remote(inputs, opts, progress)
    return load_local(inputs, opts, progress)


def load_on(engine: Engine, inputs: Inputs, opts: LoadOptions) -> LoadedCounts:
    """The layout detected from the first file (as the polars engine would: a sample), the reduction
    of all the files on ``engine``, the rest as usual. A dump whose framework reader restructures
    each file in Python (see :mod:`.trainers`), or whose rows are filtered by a Polars expression
    (verl v1), is read file by file with :func:`count_file` wherever the engine runs Python
    (:func:`load_per_file`)."""
    from .engines import reduce_with

    if opts.subset is not None:
        raise ConfigError("a subset of rows (--by) is read on the polars engine only", location="--engine")
    if opts.rate_scale is not None:
        raise ConfigError("--rate-scale is read on the polars engine only", location="--engine",
                          remedy="use --engine polars (the default)")
    kept, copies = list(inputs.files), []
    if not kept:
        raise inputs.none_left()
    if not inputs.remote and not opts.keep_duplicates:
        kept, copies = drop_copied_files(kept)
    with run_folder() as tmp:
        sample = _sample(engine, inputs, kept, opts, tmp)
    if not isinstance(sample, tuple):
        return sample
    plan, schema = sample
    if not inputs.remote and (len(set(roots(kept, [plan.layout] * len(kept)))) > 1 or (
            plan.layout in GENERIC and len(kept) > 1 and (
                not all(part_named(f) for f in kept) or not (plan.step or plan.group)))):
        # several runs, or files of one folder that may each be a whole log or a step (numbered.py): counted
        # file by file, so they are told apart as the polars engine does (runs.separate)
        return load_per_file(engine, inputs, opts)
    misnamed = misnamed_compression(kept, engine.name, remote=engine.name == "spark")
    if misnamed is not None:
        raise misnamed
    for f in kept[1:]:  # the first was checked as the sample; the engine reads the others itself
        refuse_duplicate_keys(f, f, plan, opts)
    result = reduce_with(engine, plan, opts, kept, schema)
    one = FileCounts(kept[0], plan, result.frame, result.rows, result.missing, result.duplicates,
                     null_keys=result.null_keys, missing_at=result.missing_at,
                     length_source=None if plan.length is None else length_flag(plan.length))
    return conclude(kept, [one], copies, inputs.skipped, max_group=opts.max_group_size)


def _sample(engine: Engine, inputs: Inputs, kept: list, opts: LoadOptions, tmp: Path) -> tuple | LoadedCounts:
    """(column map, schema) of the first file, for the engine's one query; or the whole load, when
    it is a per-step series or must be read file by file."""
    first = kept[0]
    if isinstance(first, str):
        from .mirror import framework_dump

        if framework_dump(kept, opts):
            raise framework_elsewhere(str(first))
        schema = remote_schema(first, tmp)  # its first lines: the engine reads the objects itself
        series = series_of(first, scan(first, tmp), opts) if len(kept) == 1 and is_plain(opts) and \
            series_columns(schema, opts.step_col) is not None else None
        return series if series is not None else (remote_plan(first, schema, opts), schema)
    if len(kept) > 1 and is_plain(opts) and all(isinstance(f, Path) and trainer_state.claims(f) for f in kept):
        # a Trainer's output_dir: its checkpoints' series are a few hundred rows each, joined here as the
        # polars engine joins them (rules.joined_series)
        from .engines.polars import load_local

        return load_local(inputs, opts)
    try:
        item = open_file(first, tmp, opts, series_ok=len(kept) == 1, peek=True)
    except SchemaError:
        if len(kept) == 1:
            raise
        # the sample fits no layout: the polars engine's rules (skip it, or refuse) file by file
        return load_per_file(engine, inputs, opts)
    if isinstance(item, LoadedCounts):  # a per-step series is a few hundred rows: read here
        return item
    if isinstance(item, trainers.TrainerReader) or item.plan.row_filter is not None:
        return load_per_file(engine, inputs, opts)
    return item.plan, item.src.schema


def load_per_file(engine: Engine, inputs: Inputs, opts: LoadOptions) -> LoadedCounts:
    """The polars engine's rules (named files, skipped files, copies, the main layout, errors in
    file order) over :func:`count_file` results that ``engine`` computed file by file."""
    if inputs.remote:
        raise framework_elsewhere(str(inputs.remote[0]))
    files = inputs.local
    if not files:
        raise inputs.none_left()
    hashed = set() if opts.keep_duplicates else same_size(files)
    results = engine.count_files(functools.partial(count_file, opts=opts), files, hashed)
    pairs = copies_of([r.path for r in results], [r.digest for r in results])
    copies = [f"{c} = {o}" for c, o in pairs]
    results = [r for r in results if r.path not in {c for c, _ in pairs}]
    kept, relogged = drop_relogged([r.path for r in results], opts)
    results = [r for r in results if r.path in set(kept)]
    files = [r.path for r in results]
    opened: list[FileCounts] = []
    errors: list[SigmauditError] = []
    for r in results:
        if r.phase == "open":
            if not isinstance(r.error, SchemaError | NoDataError) or r.path.resolve() in inputs.named \
                    or len(files) == 1:
                raise r.error
            errors.append(r.error)
            inputs.skipped[r.path] = passed_over(r.error)
            continue
        opened.append(r)
    if not opened:
        raise errors[0] if errors else inputs.none_left()
    opened = of_main_layout(opened, inputs.named, inputs.args, files, inputs.skipped)
    for r in opened:
        if r.error is not None:
            raise r.error
    return conclude([r.path for r in opened], opened, copies, inputs.skipped, relogged, opts.pooling,
                    opts.max_group_size)
