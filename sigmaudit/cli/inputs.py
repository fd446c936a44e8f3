"""Log inputs shared by ``scan``, ``plan``, ``check``, ``trend`` and ``report``.

Every command that reads logs takes the same paths and layout overrides; this
module holds their option declarations and the one call that turns them into
per-prompt counts (printing the loader's notes on stderr).
"""

from __future__ import annotations

import contextlib
import enum
import functools
import inspect
import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from ..errors import SigmauditError
from .options import LastStepsOpt, StepsOpt
from .settings import QuietOpt  # -q: declared once, with the other global flags

if TYPE_CHECKING:
    from ..loaders import LoadedCounts, LoadOptions

_LAYOUT = "Layout overrides"

PathsArg = Annotated[
    list[str],  # str, not Path: Path("s3://b/k") would collapse the "//"
    typer.Argument(
        metavar="PATH",
        help="Log files (parquet, jsonl/ndjson[.gz|.zst], csv), directories (read recursively) or globs; "
             "also s3://, gs://, az://, hf:// and https:// URLs (credentials from the usual environment); "
             "- reads standard input (parquet, jsonl or csv, gzip too, told apart by its first bytes).",
        show_default=False,
    ),
]
_OVERRIDE: dict[str, Any] = {"rich_help_panel": _LAYOUT, "show_default": False}
"""How every layout override's flag is shown: in its own help panel, with no default (the default is
detection, or off)."""

PromptColOpt = Annotated[str | None, typer.Option(
    "--prompt-col", help="Prompt key column (several joined by commas, e.g. run,task_id).", **_OVERRIDE)]
RewardColOpt = Annotated[str | None, typer.Option(
    "--reward-col", help="Reward column (or list column of rewards) that means 'correct'.", **_OVERRIDE)]
StepColOpt = Annotated[str | None, typer.Option("--step-col", help="Training-step column.", **_OVERRIDE)]
GroupColOpt = Annotated[str | None, typer.Option(
    "--group-col", help="Group-id column (one id per sampled group).", **_OVERRIDE)]
NColOpt = Annotated[str | None, typer.Option("--n-col", help="Counts layout: samples-per-prompt column.",
                                             **_OVERRIDE)]
KColOpt = Annotated[str | None, typer.Option("--k-col", help="Counts layout: correct-samples column.",
                                             **_OVERRIDE)]
RateColOpt = Annotated[str | None, typer.Option(
    "--rate-col", help="Counts layout: pass-rate column in [0, 1] (with --n-col or --samples).", **_OVERRIDE)]
SamplesOpt = Annotated[int | None, typer.Option(
    "--samples", min=1, help="Counts layout: samples behind each pass rate (e.g. 64).", **_OVERRIDE)]
RateScaleOpt = Annotated[float | None, typer.Option(
    "--rate-scale", help="Counts layout: full scale of the pass-rate column (100 for percentages, e.g. a "
    "leaderboard's pass@1); rates are divided by it.", **_OVERRIDE)]
LengthColOpt = Annotated[str | None, typer.Option(
    "--length-col", help="Per-rollout column of generated tokens: the share of tokens in silent groups is "
    "reported beside the share of rollouts (prime-rl and NeMo-RL dumps carry their own).", **_OVERRIDE)]
SilentShareColOpt = Annotated[str | None, typer.Option(
    "--silent-share-col", help="Per-step series: the column of each step's silent share (groups with zero "
    "reward spread / groups), read as the trainer's own share at its own G.", **_OVERRIDE)]
GroupCountColOpt = Annotated[str | None, typer.Option(
    "--group-count-col", help="Per-step series, with --silent-share-col: the column of groups per step.",
    **_OVERRIDE)]
ThresholdOpt = Annotated[float | None, typer.Option(
    "--threshold", help="Reward >= T counts as correct (needed for non-binary rewards).", **_OVERRIDE)]
ByOpt = Annotated[
    str | None,
    typer.Option("--by", metavar="COLUMN", show_default=False,
                 help="Also audit each value of this column on its own (e.g. data_source, dataset, model), "
                      "beside the pooled audit; JSON key 'by'. 'run' and 'file' (when no column has the name) "
                      "audit each run folder or each file."),
]
KeepDuplicatesOpt = Annotated[bool, typer.Option(
    "--keep-duplicates", help="Keep rows written twice (a log appended to itself, a TRL generation batch logged "
    "again) and byte-for-byte copies of an input file (dropped by default, with a note).", **_OVERRIDE)]
PoolRunsOpt = Annotated[bool, typer.Option(
    "--pool-runs", help="Pool several runs whose groups meet (two run folders with the same steps and prompts, "
    "one eval folder per model, files of one folder that are each a whole log), each logged group and each "
    "run's prompts kept its own (predictions are the runs' mean); refused by default (audit each with --by run "
    "or --by file).", **_OVERRIDE)]
PoolPromptsOpt = Annotated[bool, typer.Option(
    "--pool-prompts", help="With several runs, count a prompt's samples from every run as one prompt's (runs "
    "of one policy: seeds of one eval); implies --pool-runs. Each logged group is still kept within its run.",
    **_OVERRIDE)]
ShardsOpt = Annotated[bool, typer.Option(
    "--shards", help="The files of one folder are shards of one log, each holding part of every group (one file per "
    "engine, rank or host): read them as one log, groups summed. Without it they are read so when the data prove "
    "it (a group id in two files, or parts that differ in size while their sums do not), and refused when each "
    "file could be a whole log.", **_OVERRIDE)]
MaxGroupSizeOpt = Annotated[int | None, typer.Option(
    "--max-group-size", min=1, help="Largest group formed from a (step, prompt) key without a group-id column "
    "(default 512): a larger one is refused as several prompts sharing a key (a multimodal dump's prompt text "
    "without its images). Raise it for a run that drew more samples per prompt.", **_OVERRIDE)]
_ENGINE = "Engine (where the reduction runs)"


class EngineName(enum.StrEnum):
    """``--engine`` values (see :mod:`sigmaudit.loaders.engines`)."""

    polars = "polars"
    duckdb = "duckdb"
    spark = "spark"


EngineOpt = Annotated[
    EngineName,
    typer.Option("--engine", help="Where rows are reduced to counts: polars (here, file by file), duckdb (here, "
                                  "one SQL query) or spark (a cluster via --spark-remote/SPARK_REMOTE, else a local "
                                  "session). Trainer dumps that a Python reader restructures are read file by file "
                                  "(on Spark's executors). The rest always runs here.", rich_help_panel=_ENGINE),
]
SparkRemoteOpt = Annotated[
    str | None,
    typer.Option("--spark-remote", help="Spark Connect URL of a cluster (sc://host:15002) for --engine spark "
                                        "[default: $SPARK_REMOTE, else a local session].",
                 rich_help_panel=_ENGINE, show_default=False),
]


def load_inputs(
    paths: list[str] | list[Path],
    opts: LoadOptions | None = None,
    *,
    engine: EngineName | str = EngineName.polars,
    spark_remote: str | None = None,
    quiet: bool = False,
    progress: bool = False,
    series_ok: bool = True,
    by: str | None = None,
    steps: str | None = None,
    last_steps: int | None = None,
) -> LoadedCounts:
    """Load per-prompt counts from the given paths with the layout overrides ``opts`` (default: detect
    everything); notes go to stderr unless ``quiet``.

    ``engine`` names where the reduction runs (``spark_remote``: a Spark Connect URL).

    ``progress`` shows a Rich progress indicator on stderr (the caller decides:
    only on a terminal and never for machine-readable output). ``steps``/``last_steps`` cut the load to a
    step window (:func:`sigmaudit.loaders.window.cut`; the whole log's span otherwise).
    """
    from ..loaders import LoadOptions
    from ..loaders.window import cut

    runner = _engine_runner(engine, spark_remote)
    opts = opts if opts is not None else LoadOptions()
    if by is not None and runner is not None:
        from ..errors import ConfigError

        raise ConfigError("--by reads on --engine polars only", location="--by",
                          remedy="drop --engine, or run `sigmaudit reduce` per value")
    loaded = _load_paths(paths, opts, runner=runner, progress=progress, by=by)
    if loaded.layout == "series" and not series_ok:
        from ..errors import SchemaError

        raise SchemaError("is a per-step series of shares (no per-prompt counts to audit)",
                          location=loaded.files[0], remedy="use 'sigmaudit trend' for a series")
    loaded = cut(loaded, steps, last_steps)
    if not quiet:
        _print_notes(loaded, runner)
    return loaded


def _engine_runner(engine: EngineName | str, spark_remote: str | None) -> Any:
    """The SQL engine the reduction runs on (None: polars, here, file by file); ``--spark-remote``
    needs ``--engine spark``."""
    from ..loaders.engines import get_engine

    name = EngineName(engine).value
    if spark_remote and name != "spark":
        from ..errors import ConfigError

        raise ConfigError("--spark-remote needs --engine spark", location="--spark-remote",
                          remedy="add --engine spark")
    return get_engine(name, spark_remote)


def _load_paths(
    paths: list[str] | list[Path], opts: LoadOptions, *, runner: Any, progress: bool, by: str | None
) -> LoadedCounts:
    """Load the paths (``-``: standard input, named :data:`STDIN_NAME` in errors, notes and files), pooled
    or split ``by`` a column, with a progress indicator when asked for (polars engine only)."""
    from ..loaders import load_by, load_counts
    from ..loaders.remote import redact
    from ..writers import protect

    load = load_counts if by is None else functools.partial(load_by, column=by)
    with contextlib.ExitStack() as stack:
        paths, names = _stdin_to_file(paths, stack)
        stdin_file = next((t for t, name in names.items() if name == STDIN_NAME), None)

        def named(text: str) -> str:
            for tmp, name in names.items():
                text = text.replace(tmp, name)
            return text

        try:
            if progress and runner is None:
                from .progress import rows_progress

                with rows_progress() as callback:
                    loaded = load(paths, opts=opts, progress=callback)
            else:
                loaded = load(paths, opts=opts) if runner is None else load_counts(paths, opts, engine=runner)
        except SigmauditError as exc:
            exc.message = named(exc.message)
            exc.location = None if exc.location is None else named(exc.location)
            raise
        protect([*loaded.files, *(_stdin_descriptor() if stdin_file is not None else [])])
        if names:
            loaded = replace(loaded, files=tuple(names.get(f, f) for f in loaded.files),
                             notes=tuple(map(named, loaded.notes)))
    if any(redact(t) != t for t in (*loaded.files, *loaded.notes)):  # URLs' secrets never reach an output
        loaded = replace(loaded, files=tuple(map(redact, loaded.files)), notes=tuple(map(redact, loaded.notes)))
    return loaded


def _print_notes(loaded: LoadedCounts, runner: Any) -> None:
    """The loader's notes on stderr, then which engine reduced the rows (when not polars)."""
    from .output import note

    for line in loaded.notes:
        note(line)
    if runner is not None and loaded.layout != "series":
        note(runner.describe())


STDIN_NAME = "<stdin>"
"""How standard input (the path ``-``) is named in notes, errors and the JSON ``files``."""


def _stdin_descriptor() -> list[int]:
    """Standard input's descriptor when it has one (``- < log``: that file is an input too)."""
    try:
        return [sys.stdin.fileno()]
    except (OSError, ValueError):  # io.UnsupportedOperation: a stream without a descriptor
        return []


def is_pipe(path: str | Path) -> bool:
    """A named pipe, a character device or a socket (``<(zcat log.csv.gz)`` is ``/dev/fd/63``, a pipe):
    read once, in full, as standard input is."""
    import os
    import stat

    if str(path) == "-" or "://" in str(path):
        return False
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISCHR(mode) or stat.S_ISSOCK(mode)


def _stdin_to_file(paths: list[str] | list[Path], stack: contextlib.ExitStack) -> tuple[list[Any], dict[str, str]]:
    """Paths with ``-`` replaced by a file holding standard input (parquet, jsonl or csv, told apart by
    their first bytes; gzip-compressed too), and each pipe path (:func:`is_pipe`) by a file holding what
    it gave, kept in this run's private temp folder until the load ends; and the name of each such file
    (:data:`STDIN_NAME`, or the pipe's path) for errors, notes and the files read."""
    if not any(str(p) == "-" or is_pipe(p) for p in paths):
        return list(paths), {}
    from ..errors import ConfigError

    if sum(str(p) == "-" for p in paths) > 1:
        raise ConfigError("standard input can be read once", location="-", remedy="give '-' once")
    out, names = [], {}
    for i, p in enumerate(paths):
        if str(p) == "-" or is_pipe(p):
            name = STDIN_NAME if str(p) == "-" else str(p)
            tmp = _stream_to_file(None if str(p) == "-" else Path(p), name, "stdin" if str(p) == "-" else f"pipe{i}",
                                  stack)
            names[tmp] = name
            out.append(tmp)
        else:
            out.append(p)
    return out, names


def _stream_to_file(pipe: Path | None, name: str, stem: str, stack: contextlib.ExitStack) -> str:
    """Standard input (``pipe`` None) or a pipe read to its end into a file of the run's temp folder."""
    from ..errors import InputError
    from ..loaders.inputs import stdin_suffix
    from ..loaders.tempdirs import run_folder, temp_failure

    remedy = "pipe a log into sigmaudit, or give its path instead of '-'" if pipe is None else \
        "give the log's own path, or make sure the command feeding the pipe writes one"
    try:
        if pipe is None:
            data = sys.stdin.buffer.read()  # sys.stdin is None when it is closed (`scan - <&-`)
        else:
            with open(pipe, "rb") as fh:
                data = fh.read()
    except (AttributeError, OSError, ValueError) as exc:
        what = "standard input is closed" if pipe is None else f"cannot be read ({getattr(exc, 'strerror', exc)})"
        raise InputError(what, location=name, remedy=remedy) from exc
    if not data.strip():
        raise InputError("no data on standard input" if pipe is None else "the pipe gave no data", location=name,
                         remedy=remedy)
    target = stack.enter_context(run_folder()) / f"{stem}{stdin_suffix(data, name)}"
    try:
        target.write_bytes(data)
    except OSError as exc:
        own = temp_failure(exc, target.parent, name)
        if own is None:
            raise
        raise own from exc
    return str(target)


LAYOUT_OPTIONS: dict[str, Any] = {
    "prompt_col": PromptColOpt,
    "reward_col": RewardColOpt,
    "step_col": StepColOpt,
    "group_col": GroupColOpt,
    "n_col": NColOpt,
    "k_col": KColOpt,
    "rate_col": RateColOpt,
    "samples": SamplesOpt,
    "rate_scale": RateScaleOpt,
    "threshold": ThresholdOpt,
    "length_col": LengthColOpt,
    "keep_duplicates": KeepDuplicatesOpt,
    "pool_runs": PoolRunsOpt,
    "pool_prompts": PoolPromptsOpt,
    "silent_share_col": SilentShareColOpt,
    "group_count_col": GroupCountColOpt,
    "shards": ShardsOpt,
    "max_group_size": MaxGroupSizeOpt,
}
"""The flag of each :class:`~sigmaudit.loaders.LoadOptions` field a user sets (its default is the field's;
``subset`` is set by ``--by``, not by a flag of its own). A field added there gets its flag here, once:
tests/test_architecture.py checks the two agree."""
INTERNAL_LOAD_FIELDS = ("subset",)
"""LoadOptions fields with no flag of their own."""
_LAYOUT_DEFAULTS = {name: False if name in ("keep_duplicates", "pool_runs", "pool_prompts", "shards") else None
                    for name in LAYOUT_OPTIONS}
"""The fields' defaults, without importing the loaders (and Polars) when the CLI starts; the
architecture test checks them against LoadOptions."""
_ENGINE_PARAMS: tuple[tuple[str, Any, Any], ...] = (
    ("engine", EngineOpt, EngineName.polars),
    ("spark_remote", SparkRemoteOpt, None),
)


def reads_logs(
    command: Callable[..., Any] | None = None,
    *,
    validate: Callable[..., None] | None = None,
    series_ok: bool = False,
    formats: tuple[Any, ...] | None = None,
    by_ok: bool = False,
) -> Any:
    """Give a command the log inputs: the paths argument, the layout overrides and ``--quiet``.

    The decorated function takes ``loaded`` (the :class:`~sigmaudit.loaders.LoadedCounts`)
    instead of paths and overrides, and ``quiet`` if it asks for it. The CLI sees the
    paths first, the command's own options next, then ``--by`` (``by_ok``), ``--quiet`` and the layout
    overrides (in their own help panel). ``validate``, called with the command's own
    options before any file is read, rejects impossible options early. A progress
    indicator shows on stderr only when both streams are terminals and the output is
    the terminal table. A per-step series of shares (layout ``series``) reaches only
    commands declared ``series_ok``; the others say it has no per-prompt counts. ``formats``
    (default format first, then the others offered; default: every format, table first) lets
    ``--format``/``-o`` be checked before any file is read too.
    """
    if command is None:
        return functools.partial(reads_logs, validate=validate, series_ok=series_ok, formats=formats,
                                 by_ok=by_ok)
    params = _command_params(command, by_ok)
    wants_quiet = "quiet" in inspect.signature(command).parameters

    @functools.wraps(command)
    def wrapper(**kwargs: Any) -> Any:
        from ..loaders import LoadOptions
        from ..render import Format

        paths = kwargs.pop("paths")
        opts = LoadOptions(**{name: kwargs.pop(name) for name in LAYOUT_OPTIONS})
        engine = {name: kwargs.pop(name) for name, _, _ in _ENGINE_PARAMS}
        quiet = kwargs.pop("quiet")
        by = kwargs.pop("by", None)
        window = {"steps": kwargs.pop("steps"), "last_steps": kwargs.pop("last_steps")}
        if validate is not None:
            validate(**kwargs)
        _check_format(kwargs, formats)
        progress = sys.stderr.isatty() and sys.stdout.isatty() and kwargs.get("fmt") in (None, Format.table)
        loaded = load_inputs(paths, opts, **engine, quiet=quiet, progress=progress, series_ok=series_ok, by=by,
                             **window)
        if wants_quiet:
            kwargs["quiet"] = quiet
        return command(loaded=loaded, **kwargs)

    wrapper.__signature__ = inspect.Signature(params, return_annotation=None)  # type: ignore[attr-defined]
    wrapper.__annotations__ = {p.name: p.annotation for p in params} | {"return": None}
    del wrapper.__wrapped__  # Typer must read the new signature, not the command's
    return wrapper


def _command_params(command: Callable[..., Any], by_ok: bool) -> list[inspect.Parameter]:
    """The CLI's parameters of a command that reads logs, all keyword-only: the paths, the command's own
    (without ``loaded`` and ``quiet``), ``--by`` (``by_ok``), ``--quiet``, then the layout overrides."""
    own = inspect.signature(command)  # annotations as strings: ``loaded``'s type is only imported for checkers
    keyword = inspect.Parameter.KEYWORD_ONLY

    def resolved(p: inspect.Parameter) -> inspect.Parameter:
        ann = p.annotation
        if isinstance(ann, str):
            ann = eval(ann, command.__globals__)  # noqa: S307 - the command's own annotation
        return p.replace(kind=keyword, annotation=ann)

    params = [inspect.Parameter("paths", keyword, annotation=PathsArg)]
    params += [resolved(p) for name, p in own.parameters.items() if name not in ("loaded", "quiet")]
    params.append(inspect.Parameter("steps", keyword, default=None, annotation=StepsOpt))
    params.append(inspect.Parameter("last_steps", keyword, default=None, annotation=LastStepsOpt))
    if by_ok:
        params.append(inspect.Parameter("by", keyword, default=None, annotation=ByOpt))
    params.append(inspect.Parameter("quiet", keyword, default=False, annotation=QuietOpt))
    params += [inspect.Parameter(name, keyword, default=_LAYOUT_DEFAULTS[name], annotation=ann)
               for name, ann in LAYOUT_OPTIONS.items()]
    params += [inspect.Parameter(name, keyword, default=dflt, annotation=ann) for name, ann, dflt in _ENGINE_PARAMS]
    return params


def _check_format(kwargs: dict[str, Any], formats: tuple[Any, ...] | None) -> None:
    """Refuse a ``--format``/``-o`` the command does not offer (or that contradict), before any file is read."""
    from ..render import Format

    if "fmt" in kwargs or "output" in kwargs:
        from .output import resolve_format

        offered = formats or tuple(Format)
        resolve_format(kwargs.get("fmt"), kwargs.get("output"), offered[0], offered)
