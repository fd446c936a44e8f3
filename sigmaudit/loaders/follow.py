"""Follow a run folder while a trainer writes it: the input side of ``sigmaudit watch``.

:class:`Follower` polls the paths given (files, folders, globs; object-store URLs by listing). Each
file is read on its own by the loader's unit of work (:func:`.engines.polars.count_file`, as ``scan``
reads every file), and the files' counts are put together as ``scan`` puts them
(:func:`.assemble.conclude`): one owner for what a file holds, so a group whose rows lie in two files
(a prime-rl group straddling two ``step_N`` folders) is one group, and shaped rewards keep their
zero-spread flag. What a file holds at each poll:

- **Unchanged files are not read again.** A local file is re-read when its size, modification time
  or inode changed; an object in a store when its size or modification time changed (an object
  uploaded again).
- **A half-written file is waited for.** A line file (uncompressed jsonl or csv) is read up to its
  last complete line, and is pending while its last line has no newline: a jsonl line that parses as
  one JSON object is complete (a finished file without a trailing newline) and is read; a csv line cut
  in a field cannot be told from a whole one, so a csv file's last line counts once its newline is
  written. A parquet file without its footer yet (a ``ParquetWriter`` still open) is waited for, never an
  error. Any other file failing to read while it changes is waited for; one that fails although it
  stopped changing is an error, as in ``scan``.
- **What was read is never lost.** A file that grew (its content starts with the bytes read before)
  is re-read whole. A new version of a file (a line file that shrank or whose start changed: logrotate's
  copytruncate, a writer reopening it with "w"; a parquet file or an object written again; a file
  replaced by a rename) keeps the rows of the version before it, unless the new version holds them all
  (per step and prompt, at least as many samples, right and wrong answers: a file rewritten whole with
  more rows replaces it), or the version before holds all of the new one (a rewrite in progress: it
  is waited for). A file renamed (rotated with ``mv``: the same inode) keeps what was read of it under
  its new name; a file that disappears keeps its rows.
- **The command's own outputs are never read as logs** (``outputs``: ``--events``, ``--skip-out``,
  ``-o``); an output that names a log (a file given as input, or one in a followed folder that reads
  as a log) is refused before anything is written.
- Per-step series (a trainer's metrics: each ``checkpoint-N/trainer_state.json`` a Trainer saves) are read as
  they appear and put together as ``scan`` puts them (:func:`.series.merge_series`: a step logged in several
  files once); a checkpoint deleted later (``save_total_limit``) keeps its steps.
- Files a trainer writes beside its rollouts are skipped as in ``scan``; a file found in a folder that
  fits no layout or holds no data is skipped with a note, as in ``scan``; a file of another layout
  than the first one read is skipped with a note.
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError, InputError, SchemaError, SigmauditError
from .options import LoadOptions

if TYPE_CHECKING:
    import polars as pl

    from .options import FileCounts

RECHECKS = 3
"""Within one poll, the files are looked at again (their size, time, inode) up to this many times after
they were read, until none changed: the counts then hold every file as it was at one moment (a file
found unchanged before another was read may have grown meanwhile: a writer's earlier step missing
beside its later one)."""
GONE = (-1,)
"""The stamp of a path no longer listed."""
PARQUET_MAGIC = b"PAR1"
"""A parquet file starts and ends with these bytes; its footer is written last (at close)."""


@dataclass
class _FileState:
    """What the polls saw of one file (or object)."""

    name: Path | str
    """Where it is now (a rename moves it)."""
    stamp: tuple | None = None
    """(size, mtime in ns, device, inode) of a local file; (size, mtime) of an object; None unknown."""
    versions: list[FileCounts] = field(default_factory=list)
    """Counts of its versions still counted, oldest first; the last one is the current content."""
    shadowed: bool = False
    """The current version repeats rows of an earlier one (a rewrite in progress): not counted."""
    read_len: int = 0
    digest: bytes = b""
    """How many bytes of a line file were read, and their digest (growth keeps them)."""
    pending: str = ""
    """Why the file is waited for ("" when it is not)."""
    still: int = 0
    """Polls in a row that found it unchanged."""
    layout: str = ""
    has_steps: bool = False
    series: pl.DataFrame | None = None
    """A per-step series of shares (a trainer's metrics log): its rows, and no groups."""
    notes: tuple[str, ...] = ()
    """The series' loader notes."""


@dataclass(frozen=True)
class Snapshot:
    """Everything complete in the followed paths at one poll."""

    per_group: pl.DataFrame | None
    """step, prompt, n, k (and rmin, rmax with --threshold) of every complete group read so far (None
    before any file is read)."""
    changed: bool
    """Some file appeared, grew, changed or disappeared since the previous poll."""
    pending: tuple[str, ...]
    """Files still being written (waited for)."""
    layout: str
    """Layout of the files read (the first file's)."""
    has_steps: bool
    """The files carry training steps."""
    new_notes: tuple[str, ...] = ()
    """Loader notes not shown before (what was detected, what was skipped)."""
    files: int = 0
    """Files read."""
    waiting: tuple[str, ...] = ()
    """``file: why`` for each file waited for."""
    series: pl.DataFrame | None = None
    """Layout ``series``: the per-step shares of the (one) series file followed."""


@dataclass
class Follower:
    """Poll ``paths`` for complete per-group counts; see the module docstring."""

    paths: Sequence[str | Path]
    opts: LoadOptions = field(default_factory=LoadOptions)
    outputs: Mapping[Path, str] = field(default_factory=dict)
    """Files the command writes (path -> flag): never read, refused when they name a log."""
    files_read: int = 0
    """Files (or file versions) read so far: unchanged files are not read again."""
    _state: dict[Path | str | tuple, _FileState] = field(default_factory=dict)
    """Each followed file by its path (or URL); a file no longer at its path by ("aside", device, inode)."""
    _shown: set[str] = field(default_factory=set)
    _skipped: dict[Any, str] = field(default_factory=dict)
    _checked: set[Path] = field(default_factory=set)
    _tmp: Path | None = None
    _reads: int = 0
    _last: Snapshot | None = None

    def poll(self) -> Snapshot:
        """Read what changed since the previous poll and return the complete counts so far.

        Raises what ``scan`` raises for a file that cannot be read although it stopped changing, and
        InputError for a path that does not exist; a folder (or glob) without files yet gives none."""
        files, stamps = self._list()
        changed = self._follow_moves(files, stamps)
        for f in files:
            changed |= self._refresh(f, stamps[f])
        for _ in range(RECHECKS):  # a file read here may hold rows written after another was found unchanged
            stamps = _stamps(files)
            again = False
            for f in files:
                again |= f in self._state and self._refresh(f, stamps[f], recheck=True)
            if not again:
                break
        if changed or self._last is None:
            self._last = self._snapshot(changed)
        elif self._last.changed:
            self._last = dataclasses.replace(self._last, changed=False, new_notes=())
        return self._last

    def local_files(self) -> list[Path]:
        """The local files read so far (to protect from being written over)."""
        return [f for f in self._state if isinstance(f, Path)]

    def close(self) -> None:
        """Remove the temp folder of half-written copies."""
        if self._tmp is not None:
            shutil.rmtree(self._tmp, ignore_errors=True)
            self._tmp = None

    # ------------------------------------------------------------------ listing

    def _list(self) -> tuple[list[Path | str], dict[Path | str, tuple | None]]:
        """The files to follow now, with their stamps (an empty folder, or a glob matching nothing yet,
        gives none)."""
        from . import trainers
        from .paths import expand_paths

        try:
            files = expand_paths(self.paths)
        except InputError as exc:
            if "holds no supported files" in exc.message or "matches no supported files" in exc.message:
                return [], {}
            raise
        files = self._without_outputs(files)
        local = [f for f in files if isinstance(f, Path)]
        named = self._named()
        skipped = {f for f in trainers.skip_reasons(local) if f.resolve() not in named}
        # a file logging again the batch of the file before it (TRL) is counted once, as a load does
        kept, _ = trainers.drop_repeats([f for f in local if f not in skipped], self.opts.keep_duplicates)
        skipped |= set(local) - set(kept)
        files = [f for f in files if f not in skipped and f not in self._skipped]
        return files, _stamps(files)

    def _named(self) -> set[Path]:
        return {Path(p).resolve() for p in self.paths if "://" not in str(p) and Path(p).is_file()}

    def _without_outputs(self, files: list[Path | str]) -> list[Path | str]:
        """``files`` without the command's outputs (the same path, or a link to the same file);
        ConfigError for an output that names a log."""
        if not self.outputs:
            return files
        import os

        targets = {os.path.realpath(p): flag for p, flag in self.outputs.items()}
        for p, flag in self.outputs.items():
            try:
                st = os.stat(p)
            except OSError:
                continue
            targets[(st.st_dev, st.st_ino)] = flag
        kept = []
        for f in files:
            flag = _output_flag(f, targets) if isinstance(f, Path) else None
            if flag is None:
                kept.append(f)
            elif f not in self._checked:
                self._checked.add(f)
                self._refuse_log(f, flag)
        return kept

    def _refuse_log(self, f: Path, flag: str) -> None:
        """An output found among the inputs: refused when it is a log (named, or read as one)."""
        from .engines.polars import count_file

        if f.resolve() not in self._named() and f not in {s.name for s in self._state.values()}:
            if count_file(f, self.opts).error is not None:
                return  # not a log: a file this command wrote before (its events, its skip list)
        raise ConfigError(f"{flag} names one of the input logs; sigmaudit never writes over its inputs",
                          location=str(f), remedy=f"choose another {flag} path, outside the logs")

    def _follow_moves(self, files: list[Path | str], stamps: dict[Path | str, tuple | None]) -> bool:
        """A file no longer at its path (renamed, replaced, deleted) is set aside with its counts, under its
        device and inode; found again under another name (rotated with ``mv``), it is followed there. Whether
        the set of files changed."""
        changed = False
        for key, state in list(self._state.items()):
            if isinstance(key, tuple):
                continue
            now = stamps.get(key, GONE) if isinstance(key, Path) else (None if key in stamps else GONE)
            if isinstance(key, Path) and now is not None and now[0] < 0 and key in stamps:
                continue  # gone between the listing and its stat: the next poll tells
            same = now != GONE and (not isinstance(key, Path) or state.stamp is None or now is None
                                    or now[2:] == state.stamp[2:])
            if not same:
                del self._state[key]
                state.pending = ""
                self._state[("aside", *(state.stamp[2:] if isinstance(key, Path) and state.stamp else (key,)))] = state
                changed = True
        listed = {stamp[2:]: f for f, stamp in stamps.items()
                  if isinstance(f, Path) and stamp and stamp[0] >= 0 and f not in self._state}
        for key, state in list(self._state.items()):
            if isinstance(key, tuple) and key[1:] in listed:
                f = listed.pop(key[1:])
                del self._state[key]
                state.name = f
                self._state[f] = state
                changed = True
        return changed | any(f not in self._state for f in files)

    def _aside_covered_by(self, counts: FileCounts) -> None:
        """Files set aside whose rows ``counts`` holds all of (a file replaced by a rename with a copy
        holding more rows) are dropped: their rows are counted there."""
        for key, state in list(self._state.items()):
            if isinstance(key, tuple) and all(_covers(counts, v) for v in state.versions):
                del self._state[key]

    # ------------------------------------------------------------------ reading

    def _refresh(self, f: Path | str, stamp: tuple | None, recheck: bool = False) -> bool:
        """Re-read ``f`` when it changed (or is new); whether it changed. ``recheck``: a second look within
        one poll (an unchanged file is not counted as still)."""
        state = self._state.get(f)
        if stamp is not None and stamp[0] < 0:
            return False  # gone between the listing and its stat (renamed, deleted): the next poll tells
        if state is None:
            state = self._state[f] = _FileState(f)
        elif recheck and (stamp is None or state.stamp is None or stamp[2:] != state.stamp[2:]):
            return False  # another file at this path now: the next poll follows the move
        elif stamp is None or stamp == state.stamp:
            if recheck:
                return False
            state.still += 1
            if state.pending.startswith("could not be read") and isinstance(f, Path):
                self._raise_if_still(state)
            return False
        state.still = 0
        state.stamp = stamp
        self._read(state)
        return True

    def _read(self, state: _FileState) -> None:
        """The new content of one file: a growth, a new version, or something to wait for."""
        from .paths import file_kind
        from .remote import parse_url

        f = state.name
        kind = file_kind(f if isinstance(f, Path) else parse_url(f).pure)
        if isinstance(f, Path) and kind is not None and kind[1] is None and kind[0] in ("jsonl", "csv"):
            self._read_lines(state, kind[0])
            return
        if kind is not None and kind[0] == "parquet" and isinstance(f, Path) and not _has_footer(f):
            state.pending = "a parquet file without its footer yet (still being written)"
            return
        counts = self._count(f, None, changing=True)
        if counts is not None:
            self._new_version(state, counts, grown=False)

    def _read_lines(self, state: _FileState, fmt: str) -> None:
        """A jsonl or csv file read up to its last complete line (the whole of it when it ends in one)."""
        f = state.name
        assert isinstance(f, Path)
        import os

        try:
            with f.open("rb") as fh:
                st = os.fstat(fh.fileno())
                if state.stamp is not None and (st.st_dev, st.st_ino) != tuple(state.stamp[2:]):
                    # renamed and replaced since it was listed: these bytes are another file's; the stamp is
                    # kept (size unknown) so that the next poll follows the move and reads both files
                    state.stamp = (-2, -2, *state.stamp[2:])
                    return
                data = fh.read()
        except FileNotFoundError:
            return
        except OSError as exc:
            raise InputError(f"cannot be read ({exc.strerror or exc})", location=str(f)) from exc
        grown = bool(state.versions) and not state.shadowed and len(data) >= state.read_len and \
            hashlib.blake2b(data[:state.read_len]).digest() == state.digest
        cut = len(data) if data.endswith(b"\n") else data.rfind(b"\n") + 1
        if cut < len(data) and fmt == "jsonl" and _is_json_object(data[cut:]):
            cut = len(data)  # only the newline is missing
        tail = cut < len(data)
        complete = data[:cut]
        if not complete.strip() or (fmt == "csv" and complete.count(b"\n") < 2 and tail):
            state.pending = "not one complete line yet" if not complete.strip() else "a header only so far"
            return
        # the bytes read, never the path again: a file truncated or rewritten since would give counts that are
        # not of these bytes (and a memory map of a file cut short under it is a SIGBUS)
        counts = self._count(f, complete, changing=True)
        if counts is None:
            return
        state.read_len, state.digest = cut, hashlib.blake2b(complete).digest()
        self._new_version(state, counts, grown=grown)
        if tail and not state.pending:
            state.pending = "its last line has no newline yet"

    def _count(self, f: Path | str, part: bytes | None, *, changing: bool) -> FileCounts | None:
        """One file (or ``part``: its bytes read, its complete lines) counted by the loader's unit of work;
        None (and the file pending) when it fails while it may still be written (``changing``), or skipped
        (a file found in a folder beside others that fits no layout or holds no data, as ``scan`` skips it)."""
        from .engines.polars import count_file
        from .readers import NoDataError

        state = self._state[f]
        target = self._local_copy(f, part)
        self._reads += 1
        counts = count_file(target, self.opts, index=self._reads)
        if counts.error is None:
            self.files_read += 1
            state.pending = ""
            return dataclasses.replace(counts, path=f)
        error = _renamed(counts.error, target, f)
        if isinstance(error, SchemaError | NoDataError) and counts.phase == "open" and self._series(state, target):
            return None
        if isinstance(error, SchemaError | NoDataError) and counts.phase == "open" and not state.versions \
                and self._in_folder(f) and len(self._state) > 1:
            from .rules import passed_over

            self._skipped[f] = passed_over(error)
            del self._state[f]
            return None
        if not isinstance(error, SchemaError) and changing:
            state.pending = f"could not be read yet ({error.message})"
            return None
        raise error

    def _series(self, state: _FileState, target: Path) -> bool:
        """A file that is a per-step series of shares (a trainer's metrics), read as a load reads a lone file."""
        from . import load_counts

        try:
            loaded = load_counts([target], self.opts)
        except SigmauditError:
            # deleted while read (a Trainer's save_total_limit removes old checkpoints): the next poll sees it gone
            return not target.exists()
        if loaded.layout != "series":
            return False
        self.files_read += 1
        state.series, state.layout, state.has_steps, state.pending = loaded.series, "series", True, ""
        state.notes = tuple(n.replace(str(target), str(state.name)) for n in loaded.notes if not n.startswith("read "))
        return True

    def _raise_if_still(self, state: _FileState) -> None:
        """A file that failed to read and has not changed since: read it again and let it raise."""
        state.pending = ""
        counts = self._count(state.name, None, changing=False)
        if counts is not None:
            self._new_version(state, counts, grown=False)

    def _in_folder(self, f: Path | str) -> bool:
        """Found in a folder or by a glob, not named (such a file that fits no layout is skipped)."""
        return not isinstance(f, Path) or f.resolve() not in self._named()

    def _local_copy(self, f: Path | str, part: bytes | None) -> Path:
        """The file itself, a copy of its complete lines, or an object downloaded (under its key's folders,
        which name steps and runs as the local files' do)."""
        if isinstance(f, Path) and part is None:
            return f
        from .remote import download, parse_url

        self._reads += 1
        folder = self._temp() / str(self._reads)
        if isinstance(f, Path):
            copy = folder / f.name
            copy.parent.mkdir(parents=True)
            copy.write_bytes(part or b"")
            return copy
        u = parse_url(f)
        copy = folder / u.bucket / u.key
        copy.parent.mkdir(parents=True)
        return download(f, copy)

    def _new_version(self, state: _FileState, counts: FileCounts, grown: bool) -> None:
        """``counts`` as the file's current content: the same version grown, or a new one (kept beside the
        earlier versions unless it holds all of one, or one holds all of it)."""
        if counts.plan is not None:
            state.layout, state.has_steps = counts.plan.layout, bool(counts.plan.step)
        self._aside_covered_by(counts)
        if grown or not state.versions:
            state.versions[-1:] = [counts]
            state.shadowed = False
            return
        if state.shadowed:
            state.versions.pop()
        state.versions = [v for v in state.versions if not _covers(counts, v)]
        state.shadowed = any(_covers(v, counts) for v in state.versions)
        state.versions.append(counts)
        if state.shadowed:
            state.pending = "rewritten: the rows so far repeat the earlier version's"

    def _temp(self) -> Path:
        if self._tmp is None:
            import tempfile

            from .tempdirs import temp_root

            self._tmp = Path(tempfile.mkdtemp(prefix="watch-", dir=temp_root()))
        return self._tmp

    # ------------------------------------------------------------------ the snapshot

    def _snapshot(self, changed: bool) -> Snapshot:
        """Every counted version of every file of the first layout read, put together as a load puts
        them (:func:`.assemble.conclude`)."""
        from .rules import skip_notes

        states = [s for s in self._state.values() if s.versions or s.series is not None]
        pending = tuple(str(s.name) for s in self._state.values() if s.pending)
        waiting = tuple(f"{s.name}: {s.pending}" for s in self._state.values() if s.pending)
        notes = skip_notes(self._skipped)
        if not states:
            return Snapshot(None, changed, pending, "", False, self._new(notes), 0, waiting)
        layout = states[0].layout
        kept = []
        for s in states:
            if s.layout != layout:
                notes.append(f"{s.name}: skipped, layout {s.layout} (the files before it are {layout})")
            else:
                kept.append(s)
        if layout == "series":  # files of shares (a run's checkpoints): the union of their steps, each once
            from .series import merge_series

            series, _ = merge_series([(str(k.name), k.series) for k in kept], ", ".join(map(str, self.paths)))
            return Snapshot(None, changed, pending, layout, True, self._new([*kept[0].notes, *notes]), len(kept),
                            waiting, series=series)
        per_group, loaded_notes = _assemble(kept, self.opts.max_group_size)
        return Snapshot(per_group, changed, pending, layout, any(s.has_steps for s in kept),
                        self._new([*loaded_notes, *notes]), len(kept), waiting)

    def _new(self, notes: Sequence[str]) -> tuple[str, ...]:
        """The notes not shown before (a note whose wording differs only in its counts is shown once)."""
        out = []
        for n in notes:
            shape = re.sub(r"\d[\d,.]*", "#", n)
            if shape not in self._shown and not n.startswith("read "):
                self._shown.add(shape)
                out.append(n)
        return tuple(out)

    def __enter__(self) -> Follower:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _assemble(states: list[_FileState], max_group: int | None = None) -> tuple[pl.DataFrame, list[str]]:
    """(per-group counts, notes) of the counted versions of ``states``; versions of one file kept apart."""
    import polars as pl

    from .assemble import conclude

    counted, files = [], []
    for s in states:
        versions = s.versions[:-1] if s.shadowed else s.versions
        for j, v in enumerate(versions):
            if len(versions) > 1:  # two versions of one file are never one group
                assert v.frame is not None
                v = dataclasses.replace(v, frame=v.frame.with_columns(
                    pl.concat_str([pl.lit(f"v{j}|"), pl.col("gid").fill_null("")]).alias("gid")))
            counted.append(v)
            files.append(s.name)
    empty = pl.DataFrame(schema={"step": pl.Int64, "prompt": pl.Utf8, "n": pl.Int64, "k": pl.Int64})
    if not counted or sum(c.rows for c in counted) == 0:
        return empty, []
    loaded = conclude(files, counted, [], {}, max_group=max_group)
    if loaded.per_group is None:
        raise SchemaError("has no group membership, so there are no groups to follow step by step",
                          location=str(files[0]), remedy="name the group-id column with --group-col")
    return loaded.per_group, list(loaded.notes)


def _output_flag(f: Path, targets: dict[Any, str]) -> str | None:
    """The flag of the output ``f`` is (by real path, or device and inode), else None."""
    import os

    flag = targets.get(os.path.realpath(f))
    if flag is None:
        try:
            st = os.stat(f)
        except OSError:
            return None
        flag = targets.get((st.st_dev, st.st_ino))
    return flag


def _stamps(files: list[Path | str]) -> dict[Path | str, tuple | None]:
    """(size, mtime_ns, device, inode) of each local file ((-1, -1, -1, -1) for one gone since the
    listing); (size, mtime) of each object (None where the store does not say)."""
    import os

    from .remote import object_stamps

    out: dict[Path | str, tuple | None] = {}
    for f in files:
        if isinstance(f, Path):
            try:
                st = os.stat(f)
                out[f] = (st.st_size, st.st_mtime_ns, st.st_dev, st.st_ino)
            except OSError:
                out[f] = (-1, -1, -1, -1)
    urls = [f for f in files if isinstance(f, str)]
    if urls:
        out.update(object_stamps(urls))
    return out


def _has_footer(f: Path) -> bool:
    """The file ends with parquet's magic bytes (its footer is written), or is not parquet at all
    (then the reader says what it is)."""
    try:
        with f.open("rb") as fh:
            head = fh.read(4)
            if head != PARQUET_MAGIC:
                return True
            fh.seek(0, 2)
            if fh.tell() < 12:
                return False
            fh.seek(-4, 2)
            return fh.read(4) == PARQUET_MAGIC
    except OSError:
        return True


def _is_json_object(line: bytes) -> bool:
    """A line that parses as one JSON object: complete, only its newline missing."""
    import json

    text = line.strip()
    if not text.startswith(b"{") or not text.endswith(b"}"):
        return False
    try:
        return isinstance(json.loads(text), dict)
    except ValueError:
        return False


def _covers(big: FileCounts, small: FileCounts) -> bool:
    """``big`` holds every group of ``small``: for each (step, prompt) of ``small``, at least as many
    samples, right answers and wrong answers (a partial group completed later counts as held)."""
    import polars as pl

    def sums(c: FileCounts) -> pl.DataFrame:
        assert c.frame is not None
        return (c.frame.filter(pl.col("n") > 0)
                .with_columns(pl.col("step").fill_null(-(2 ** 63)))
                .group_by("step", "prompt").agg(pl.col("n").sum(), pl.col("k").sum()))

    s = sums(small)
    if s.height == 0:
        return True
    joined = s.join(sums(big), on=["step", "prompt"], how="left", suffix="_b")
    held = (pl.col("n_b") >= pl.col("n")) & (pl.col("k_b") >= pl.col("k")) & \
        ((pl.col("n_b") - pl.col("k_b")) >= (pl.col("n") - pl.col("k")))
    return bool(joined.select(held.fill_null(False).all()).item())


def _renamed(error: Exception, target: Path, f: Path | str) -> SigmauditError:
    """``error`` naming the followed file rather than its copy."""
    if not isinstance(error, SigmauditError):
        raise error
    if target != f:
        error.message = error.message.replace(str(target), str(f))
        error.location = None if error.location is None else error.location.replace(str(target), str(f))
    return error
