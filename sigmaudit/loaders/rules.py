"""The input rules every load route follows (local or object store, any engine, file by file).

- Files a trainer writes beside its rollouts (metadata, metrics) are skipped with a note; a file
  named on the command line never is (:func:`beside_rollouts`).
- A byte-for-byte copy of another input is read once (:func:`drop_copied_files`, :func:`copies_of`).
- A file in which a trainer logged again another file's rows (TRL's re-logged generation batch) is
  read once, only with proof from the writer's structure (:func:`drop_relogged`).
- One directory (or glob) argument whose files fit several layouts (``sample_logs/``: a folder per
  framework) is refused in one line listing the layouts and where each lies, never audited as its first
  layout with the others skipped; named files must all have one layout (:func:`of_main_layout`).
- A lone file with a step column and share columns only is a per-step series (:func:`series_of`).
- A dump that a framework reader restructures in Python is read by the polars engine from local
  files only (:func:`framework_elsewhere`).
- A csv or jsonl file is decompressed by its content; an SQL engine, which decompresses by the name,
  refuses one whose name does not say how it is compressed (:func:`misnamed_compression`).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from pathlib import Path, PurePath
from typing import Any

import polars as pl

from ..errors import InputError, SchemaError, SigmauditError, few
from . import trainers
from .options import LoadedCounts, LoadOptions
from .paths import expand_paths
from .series import PER_PROMPT, read_series, series_columns


def framework_elsewhere(where: str, name: str | None = None) -> InputError:
    """The refusal for a framework dump on an object store that would be read off the polars engine
    (or, ``name`` given, by that framework's reader off local disk): its reader restructures each
    file here, from local files."""
    what = f"a {name} dump" if name else "a framework dump"
    return InputError(f"{what} on an object store is read with --engine polars only (its reader "
                      "restructures each file here)", location=where, remedy="use --engine polars (the default)")


def beside_rollouts(files: Sequence[Path | str], named: frozenset[Path] | set[Path]) -> dict[Path, str]:
    """Files a framework writes beside its rollouts that are not rollouts, with the reason; files
    named on the command line are never skipped."""
    local = [f for f in files if isinstance(f, Path)]
    if not local:
        return {}
    return {f: why for f, why in trainers.skip_reasons(local).items() if f.resolve() not in named}


def file_digest(path: Path) -> str:
    """sha256 of a file's bytes."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


COPY_LIKE = re.compile(r"(^|[^a-z])(backup|bak|copy|copies|old|orig|tmp)([^a-z]|$)|~$|\(\d+\)", re.IGNORECASE)
"""A name that says it is a copy (``backup_x.jsonl``, ``x_copy.csv``, ``x (1).csv``, ``old/``)."""


def _copy_like(path: Any, common: int) -> bool:
    """The part of ``path`` after the ``common`` leading parts its twins share names a copy."""
    tail = PurePath(str(path)).parts[common:]
    return any(COPY_LIKE.search(part) for part in tail)


def _original(members: list[Any]) -> Any:
    """Of a set of equal files (in input order), the one to read: the first whose own name (and
    folders below the ones they share) does not say it is a copy; else the first."""
    parts = [PurePath(str(m)).parts for m in members]
    common = 0
    while all(len(p) > common + 1 and p[common] == parts[0][common] for p in parts):
        common += 1
    return next((m for m in members if not _copy_like(m, common)), members[0])


def copies_of(files: Sequence[Any], digests: Sequence[str | None]) -> list[tuple[Any, Any]]:
    """(copy, original) for each file that is a byte-for-byte copy of another input (``digests[i]``
    the sha256 of ``files[i]``, None when not hashed). Each set of equal files keeps one: the first
    whose name does not say it is a copy (``backup_``, ``_copy``, `` (1)``...), else the first."""
    groups: dict[str, list[Any]] = {}
    for f, digest in zip(files, digests, strict=True):
        if digest is not None:
            groups.setdefault(digest, []).append(f)
    pairs = []
    for members in groups.values():
        if len(members) > 1:
            keep = _original(members)
            pairs.extend((f, keep) for f in members if f is not keep)
    order = {f: i for i, f in enumerate(files)}
    return sorted(pairs, key=lambda pair: order[pair[0]])


def same_size(files: Sequence[Path]) -> set[int]:
    """Indices of the files that share their size with another (only those can be copies)."""
    sizes = [f.stat().st_size for f in files]
    counts: dict[int, int] = {}
    for size in sizes:
        counts[size] = counts.get(size, 0) + 1
    return {i for i, size in enumerate(sizes) if counts[size] > 1}


def drop_copied_files(files: list[Path]) -> tuple[list[Path], list[str]]:
    """(files without byte-for-byte copies of another one, each copy as ``copy = original``). Only
    files of equal size are hashed."""
    hashed = same_size(files)
    digests = [file_digest(f) if i in hashed else None for i, f in enumerate(files)]
    pairs = copies_of(files, digests)
    copies = {c for c, _ in pairs}
    return [f for f in files if f not in copies], [f"{c} = {o}" for c, o in pairs]


def drop_relogged(files: list[Path], opts: LoadOptions) -> tuple[list[Path], list[str]]:
    """(files without those a framework proves log again another file's rows, the notes); with
    ``--keep-duplicates`` every file is kept and the notes say so."""
    return trainers.drop_repeats(files, opts.keep_duplicates)


def copies_note(copies: Sequence[str]) -> str:
    """The note for the copies skipped (each ``copy = original``)."""
    what = "a byte-for-byte copy of another input" if len(copies) == 1 else "byte-for-byte copies of other inputs"
    return (f"{len(copies)} file{'s' if len(copies) > 1 else ''} skipped as {what} "
            f"({', '.join(copies[:3])}{', ...' if len(copies) > 3 else ''}); --keep-duplicates reads them")


def origins(args: Sequence[str | Path], files: Sequence[Any]) -> dict[Path, int]:
    """For each file, the index of the path argument (file, directory or glob) it came from."""
    out: dict[Path, int] = {}
    wanted = set(files)
    for i, p in enumerate(args):
        for f in expand_paths([p]):
            if f in wanted:
                out.setdefault(f, i)
    return out


GENERIC = ("long", "grouped", "counts")


def main_layout(opened: Sequence[Any], named: frozenset[Path] | set[Path], origin: dict[Path, int],
                args: Sequence[str | Path] = ()) -> str:
    """The layout the load reads. Named files must all have it; one directory (or glob) argument whose
    files fit several layouts is refused listing them (:func:`several_layouts`); two arguments whose
    layouts differ are refused (load them in separate runs)."""
    by_arg: dict[int, dict[str, int]] = {}
    for o in opened:
        counts = by_arg.setdefault(origin.get(o.path, -1), {})
        counts[o.plan.layout] = counts.get(o.plan.layout, 0) + 1
    chosen: list[tuple[str, Path]] = []
    for arg, counts in by_arg.items():
        members = [o for o in opened if origin.get(o.path, -1) == arg]
        layouts = {o.plan.layout for o in members if o.path.resolve() in named}
        if len(layouts) != 1 and len(counts) > 1:
            raise several_layouts(members, counts, str(args[arg]) if 0 <= arg < len(args) else str(members[0].path))
        layout = next(iter(layouts)) if len(layouts) == 1 else max(
            counts, key=lambda lay: (lay not in GENERIC, counts[lay]))
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


def several_layouts(members: Sequence[Any], counts: dict[str, int], where: str) -> SchemaError:
    """The refusal of a folder (or glob) whose files fit several layouts: each layout with its files' count
    and the folder they share, most files first (a few named, the rest counted)."""
    import os

    def folder(layout: str) -> str:
        paths = [str(o.path) for o in members if o.plan.layout == layout]
        return os.path.commonpath(paths) if len(paths) > 1 else str(Path(paths[0]).parent)

    order = sorted(counts, key=lambda lay: (-counts[lay], lay))
    shown = few(f"{lay}: {counts[lay]:,} file{'s' if counts[lay] != 1 else ''} in {folder(lay)}" for lay in order)
    return SchemaError(f"the files found hold {len(counts)} layouts ({shown}); a load reads one layout, and none is "
                       "audited in place of the others", location=where,
                       remedy=f"point at one layout's folder (e.g. {folder(order[0])}) or name its files; "
                              "audit each in its own run")


def of_main_layout(opened: list[Any], named: frozenset[Path] | set[Path], args: Sequence[str | Path],
                   files: list[Any], skipped: dict[Any, str]) -> list[Any]:
    """The opened files of the inputs' main layout; the others go to ``skipped`` with the reason."""
    layout = main_layout(opened, named, origins(args, files), args)
    for item in opened:
        if item.plan.layout != layout:
            skipped[item.path] = f"{item.plan.layout} layout, not {layout}"
    return [item for item in opened if item.plan.layout == layout]


def passed_over(exc: SigmauditError) -> str:
    """Why a file found in a folder (or by a glob) is skipped: it fits no layout, or holds no data."""
    if isinstance(exc, SchemaError):
        return f"fits no layout ({exc.message})"
    return f"holds no data ({exc.message})"


def none_fit(errors: Sequence[SigmauditError], inputs: Any) -> SchemaError:
    """The refusal of inputs none of whose files is read: "no file fits a layout", with why each was passed over
    (``inputs.skipped``: fits no layout, holds no data, written beside a trainer's rollouts), one reason each with
    the first file it was given for and how many more, most files first."""
    from ..errors import shorten

    by_reason: dict[str, list[Any]] = {}
    for path, why in inputs.skipped.items():
        by_reason.setdefault(why, []).append(path)
    order = sorted(by_reason, key=lambda why: -len(by_reason[why]))
    said = [f"{Path(str(by_reason[w][0])).name}{f' and {len(by_reason[w]) - 1} more' if len(by_reason[w]) > 1 else ''}"
            f": {shorten(w, 80)}" for w in (order if len(order) <= 4 else order[:3])]
    if len(order) > 4:
        said.append(f"{sum(len(by_reason[w]) for w in order[3:]):,} more for other reasons")
    n = len(inputs.skipped)
    return SchemaError(f"no file fits a layout ({n:,} file{'s' if n != 1 else ''} passed over: {'; '.join(said)})",
                       location=inputs.where(), remedy="point at the folder of the logs, or name a log file")


def skip_notes(skipped: dict[Any, str]) -> list[str]:
    """One note per reason: the first file skipped for it, and how many more."""
    by_reason: dict[str, list[Any]] = {}
    for path, why in skipped.items():
        by_reason.setdefault(why, []).append(path)
    out = []
    for why, paths in by_reason.items():
        more = f" and {len(paths) - 1} more" if len(paths) > 1 else ""
        out.append(f"skipped {paths[0]}{more}: {why}")
    return out


def is_plain(opts: LoadOptions) -> bool:
    """No option names a prompt, reward or count column (which would rule out a series)."""
    return not any((opts.prompt_col, opts.reward_col, opts.group_col, opts.n_col, opts.k_col, opts.rate_col))


def _series_opts(opts: LoadOptions) -> tuple[str | None, str | None]:
    return opts.silent_share_col, opts.group_count_col


def series_of(path: Path | str, src: Any, opts: LoadOptions) -> LoadedCounts | None:
    """The per-step series a file holds (step and share columns only, a trainer's metrics log, or the columns
    ``--silent-share-col`` names), or None. A ``trainer_state.json`` is read by :mod:`.trainer_state`."""
    from . import trainer_state

    named = _series_opts(opts)
    if isinstance(path, Path) and trainer_state.claims(path):
        if not is_plain(opts):
            raise SchemaError("a transformers trainer_state.json holds per-step metrics, no rollouts: a prompt, "
                              "reward or count column does not apply", location=str(path),
                              remedy="drop the column options, or give the rollout dump")
        lf, step, mapping = trainer_state.series_source(path, opts)
        return series_loaded(path, read_series(lf, step, mapping, str(path)), step, mapping)
    if not is_plain(opts):
        if named != (None, None):
            raise SchemaError("--silent-share-col reads a per-step series; a prompt, reward or count column names "
                              "a rollout log", location="--silent-share-col", remedy="give one or the other")
        return None
    lf, schema = src.lf, src.schema
    if isinstance(schema.get("data"), pl.Struct) and "step" in schema:  # verl's FileLogger: {"step", "data": {...}}
        lf = lf.select("step", *(pl.col("data").struct.field(f.name) for f in schema["data"].fields
                                 if f.name != "step"))
        schema = dict(lf.collect_schema())
    name = path.name if isinstance(path, Path) else str(path).rsplit("/", 1)[-1]
    found = series_columns(schema, opts.step_col, name, str(path), named)
    if found is None:
        return None
    step, mapping = found
    return series_loaded(path, read_series(lf, step, mapping, str(path)), step, mapping)


def _described(mapping: dict[str, str]) -> str:
    said = {"observed_mixed": "1 − observed_silent", "groups": "groups per step", "silent_groups": "silent groups "
            "per step (checked against share x groups)", "gen_batches": "DAPO's generation batches per step (they "
            "bound its silent share given --train-batch and --gen-batch)"}
    return ", ".join(f"{col} as {said.get(field, field)}" for field, col in mapping.items())


def _series_holds(mapping: dict[str, str]) -> str:
    if "groups" in mapping:
        return "shares and groups per step only, no per-prompt groups"
    return "shares only, no groups"


def series_loaded(path: Path | str, frame: pl.DataFrame, step: str, mapping: dict[str, str]) -> LoadedCounts:
    """The load of one file's per-step series."""
    return LoadedCounts(
        per_prompt=pl.DataFrame(schema={"prompt": pl.Utf8, "n": pl.Int64, "k": pl.Int64}), per_group=None,
        layout="series", files=(str(path),), n_rows=frame.height, missing_rewards=0, n_single_sample_prompts=0,
        notes=(f"detected a per-step series ({frame.height} steps, step from {step}; {_described(mapping)}): "
               f"{_series_holds(mapping)} "
               f"or prompts ({PER_PROMPT}: a rollout dump)",),
        reward_source=", ".join(mapping.values()), has_steps=True, series=frame)


def series_root(path: Path) -> Path:
    """The run a series file belongs to: the output_dir of a ``checkpoint-N/`` folder (its checkpoints log one run's
    steps again), else its folder."""
    return path.parent.parent if CHECKPOINT.fullmatch(path.parent.name) else path.parent


CHECKPOINT = re.compile(r"checkpoint-\d+")
"""A transformers Trainer's checkpoint folder (``PREFIX_CHECKPOINT_DIR-{global_step}``)."""


def joined_series(series: Sequence[LoadedCounts], skipped: dict[Any, str]) -> LoadedCounts:
    """The per-step series of several files of one run (a TRL output_dir's checkpoints, a folder of TensorBoard
    exports) as one: :func:`.series.merge_series`, steps logged in several files kept once. Files of several runs
    (folders that are not checkpoints of one output_dir) are refused, never pooled."""
    from .series import merge_series

    paths = [Path(s.files[0]) for s in series]
    runs = list(dict.fromkeys(series_root(p) for p in paths))
    if len(runs) > 1:
        raise SchemaError(f"per-step series of {len(runs)} runs ({few(map(str, runs))}): their steps would be pooled",
                          location=str(paths[0]), remedy=f"point at one run's folder (e.g. {runs[0]})")
    frame, again = merge_series([(str(p), s.series) for p, s in zip(paths, series, strict=True)],  # type: ignore[misc]
                                str(runs[0]))
    notes = list(series[0].notes) if len(series) == 1 else [
        f"detected a per-step series in {len(series)} files of {runs[0]} ({frame.height} steps; "
        f"{'; '.join(dict.fromkeys(_columns_said(s) for s in series))}): shares only, no groups or prompts "
        f"({PER_PROMPT}: a rollout dump)"]
    if again:
        notes.append(f"{again:,} step values logged again in a later file (a checkpoint's log_history holds every "
                     "record logged before it) read once: equal in every file")
    notes += skip_notes(skipped)
    return LoadedCounts(
        per_prompt=pl.DataFrame(schema={"prompt": pl.Utf8, "n": pl.Int64, "k": pl.Int64}), per_group=None,
        layout="series", files=tuple(map(str, paths)), n_rows=frame.height, missing_rewards=0,
        n_single_sample_prompts=0, notes=tuple(notes), reward_source=series[0].reward_source, has_steps=True,
        series=frame)


def _columns_said(loaded: LoadedCounts) -> str:
    note = loaded.notes[0]
    return note[note.index("; ") + 2: note.index("): shares")]


REMOTE_SNIFFS = 8
"""Objects whose first bytes an SQL engine's load checks (:func:`misnamed_compression`): each costs a request."""


def misnamed_compression(files: Sequence[Any], engine: str, remote: bool = True) -> InputError | None:
    """The one-line refusal for a csv or jsonl input whose first bytes say it is compressed (gzip, zstd,
    bz2, xz) when its name does not say so: the polars engine reads it by content, an SQL engine picks
    its decompressor by the name (DuckDB failed to sniff it, Spark read the bytes as text). Every local
    file is checked, and (``remote``: for an engine that reads object stores) the first :data:`REMOTE_SNIFFS`
    objects."""
    import contextlib

    from .paths import file_kind
    from .readers import compressed_as
    from .remote import open_object, parse_url

    sniffed = 0 if remote else REMOTE_SNIFFS
    for f in files:
        kind = file_kind(parse_url(f).pure if isinstance(f, str) else Path(f))
        if kind is None or kind[0] == "parquet" or (isinstance(f, str) and sniffed >= REMOTE_SNIFFS):
            continue
        if isinstance(f, str):
            sniffed += 1
            raw, _ = open_object(f)
            with contextlib.closing(raw):
                found = compressed_as(head=raw.read(8))
        else:
            found = compressed_as(Path(f))
        if found is not None and found != kind[1]:
            name = {"gz": "gzip", "zst": "zstd"}.get(found, found)
            return InputError(f"{name} data under a name that does not say so: --engine {engine} picks the "
                              "decompressor by the file's name", location=str(f),
                              remedy=f"rename it to end in .{kind[0]}.{found}, or use --engine polars (it reads by "
                                     "content)" if found in ("gz", "zst") else
                              "use --engine polars (it reads by content), or recompress it with gzip")
    return None
