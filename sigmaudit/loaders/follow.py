"""Follow a run folder while a trainer writes it: the input side of ``sigmaudit watch``.

:class:`Follower` polls the paths given (files, folders, globs; object-store URLs by listing) and
keeps each file's per-group counts, read by :func:`sigmaudit.loaders.load_counts` on that file alone:

- **Unchanged files are not read again.** A local file is re-read only when its size or
  modification time changed since the last poll; its counts are cached otherwise. An object in a
  store is read once, when the listing first shows it (object stores publish whole objects).
- **A half-written file is waited for.** An uncompressed jsonl file whose last line has no newline
  yet is read up to its last complete line (a copy in this run's temp folder), and the file counts
  as *pending*. A file that fails to read while it is still changing (a parquet file without its
  footer yet, a gzip stream cut short) is pending too; one that fails although it stopped changing
  is an error, as in ``scan``.
- **Files are read one by one**, so a layout whose groups span files (one group's rows in two
  files) is not supported, and byte-for-byte copies of a file are not dropped; every trainer
  dump sigmaudit reads writes whole groups per file (one file per step or per logging call).
  Files a trainer writes beside its rollouts are skipped as in ``scan``; a file of another layout
  than the first one read is skipped with a note.
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import InputError, SchemaError, SigmauditError
from .options import LoadOptions

if TYPE_CHECKING:
    import polars as pl

    from .options import LoadedCounts


@dataclass
class _FileState:
    """What the last poll saw of one file."""

    stamp: tuple[int, int] | None
    """(size, mtime in ns) of a local file; None for an object in a store."""
    per_group: pl.DataFrame | None
    """Its per-group counts (complete lines only), None while it cannot be read yet."""
    pending: bool
    """Still being written: a last line without its newline, or a read that failed while it grew."""
    layout: str = ""
    has_steps: bool = False
    notes: tuple[str, ...] = ()
    series: pl.DataFrame | None = None
    """A per-step series of shares (a trainer's metrics log): its rows, and no groups."""


@dataclass(frozen=True)
class Snapshot:
    """Everything complete in the followed paths at one poll."""

    per_group: pl.DataFrame | None
    """step, prompt, n, k of every complete group read so far (None before any file is read)."""
    changed: bool
    """Some file appeared, grew or changed since the previous poll."""
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
    series: pl.DataFrame | None = None
    """Layout ``series``: the per-step shares of the (one) series file followed."""


@dataclass
class Follower:
    """Poll ``paths`` for complete per-group counts; see the module docstring."""

    paths: Sequence[str | Path]
    opts: LoadOptions = field(default_factory=LoadOptions)
    files_read: int = 0
    """Files (or file versions) read so far: unchanged files are not read again."""
    _state: dict[Path | str, _FileState] = field(default_factory=dict)
    _shown: set[str] = field(default_factory=set)
    _tmp: Path | None = None

    def poll(self) -> Snapshot:
        """Read what changed since the previous poll and return the complete counts so far.

        Raises what ``scan`` raises for a file that cannot be read although it stopped changing, and
        InputError for a path that does not exist; a folder (or glob) without files yet gives none."""
        files = self._list()
        changed = set(files) != set(self._state)
        self._state = {f: s for f, s in self._state.items() if f in files}
        for f in files:
            changed |= self._refresh(f)
        return self._snapshot(files, changed)

    def close(self) -> None:
        """Remove the temp folder of half-written copies."""
        if self._tmp is not None:
            shutil.rmtree(self._tmp, ignore_errors=True)
            self._tmp = None

    # ------------------------------------------------------------------ listing and reading

    def _list(self) -> list[Path | str]:
        """The files to follow now (an empty folder, or a glob matching nothing yet, gives none)."""
        from . import trainers
        from .paths import expand_paths

        try:
            files = expand_paths(self.paths)
        except InputError as exc:
            if "holds no supported files" in exc.message or "matches no supported files" in exc.message:
                return []
            raise
        local = [f for f in files if isinstance(f, Path)]
        named = {Path(p).resolve() for p in self.paths if not str(p).count("://") and Path(p).is_file()}
        skipped = {f for f in trainers.skip_reasons(local) if f.resolve() not in named}
        # a file logging again the batch of the file before it (TRL) is counted once, as a load does
        kept, _ = trainers.drop_repeats([f for f in local if f not in skipped], self.opts.keep_duplicates)
        skipped |= set(local) - set(kept)
        return [f for f in files if f not in skipped]

    def _refresh(self, f: Path | str) -> bool:
        """Re-read ``f`` when it changed (or is new); whether it changed."""
        old = self._state.get(f)
        stamp = _stamp(f)
        if old is not None and (stamp is None or stamp == old.stamp):
            if old.pending and old.per_group is None and stamp is not None:
                self._fail_if_stopped(f)
            return False
        self._state[f] = self._read(f, stamp, old)
        return True

    def _read(self, f: Path | str, stamp: tuple[int, int] | None, old: _FileState | None) -> _FileState:
        """Counts of ``f``'s complete content; pending when it is half-written or fails while changing."""
        from . import load_counts

        target, partial = self._complete_part(f)
        if target is None:  # not one complete line yet
            return _FileState(stamp, None, True)
        try:
            loaded = load_counts([target], self.opts)
        except SchemaError:
            raise
        except SigmauditError:
            if isinstance(f, Path) and (old is None or old.stamp != stamp):
                return _FileState(stamp, None, True)  # may be a file still being written: try again next poll
            raise
        self.files_read += 1
        return _state_of(loaded, stamp, partial, f, target)

    def _fail_if_stopped(self, f: Path | str) -> None:
        """A file that failed to read and has not changed since: read it again and let it raise."""
        from . import load_counts

        target, _ = self._complete_part(f)
        if target is not None:
            load_counts([target], self.opts)

    def _complete_part(self, f: Path | str) -> tuple[Path | str | None, bool]:
        """The file itself, or a copy of its complete lines when an uncompressed jsonl file ends inside a
        line (None when not one line is complete); and whether it was cut."""
        from .paths import file_kind

        if not isinstance(f, Path) or file_kind(f) != ("jsonl", None):
            return f, False
        with f.open("rb") as fh:
            data = fh.read()
        if not data or data.endswith(b"\n"):
            return (f if data else None), False
        cut = data.rfind(b"\n") + 1
        if cut == 0:
            return None, True
        copy = self._temp() / f.name
        copy.write_bytes(data[:cut])
        return copy, True

    def _temp(self) -> Path:
        if self._tmp is None:
            import tempfile

            from .tempdirs import temp_root

            self._tmp = Path(tempfile.mkdtemp(prefix="watch-", dir=temp_root()))
        return self._tmp

    # ------------------------------------------------------------------ the snapshot

    def _snapshot(self, files: list[Path | str], changed: bool) -> Snapshot:
        import polars as pl

        read = [(f, self._state[f]) for f in files if self._state[f].per_group is not None]
        pending = tuple(str(f) for f in files if self._state[f].pending)
        if not read:
            return Snapshot(None, changed, pending, "", False, files=0)
        layout = read[0][1].layout
        kept, notes = [], []
        for f, s in read:
            if s.layout != layout:
                notes.append(f"{f}: skipped, layout {s.layout} (the files before it are {layout})")
                continue
            kept.append(s)
            notes.extend(s.notes)
        new = tuple(dict.fromkeys(n for n in notes if n not in self._shown))
        self._shown.update(new)
        if layout == "series":  # one file of shares: its rows are the steps
            series = next(s.series for s in kept if s.series is not None)
            return Snapshot(None, changed, pending, layout, True, new, len(kept), series=series)
        frames = [s.per_group for s in kept if s.per_group is not None and s.per_group.height]
        per_group = (pl.concat(frames, how="vertical_relaxed") if frames
                     else pl.DataFrame(schema={"step": pl.Int64, "prompt": pl.Utf8, "n": pl.Int64, "k": pl.Int64}))
        return Snapshot(per_group, changed, pending, layout, any(s.has_steps for s in kept), new, len(kept))

    def __enter__(self) -> Follower:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _stamp(f: Path | str) -> tuple[int, int] | None:
    """(size, mtime_ns) of a local file (None for a URL; (-1, -1) for a file gone since the listing)."""
    if not isinstance(f, Path):
        return None
    try:
        st = f.stat()
    except FileNotFoundError:
        return (-1, -1)
    return (st.st_size, st.st_mtime_ns)


def _state_of(loaded: LoadedCounts, stamp: tuple[int, int] | None, partial: bool, f: Path | str,
              target: Path | str) -> _FileState:
    """The cached state of one file read: its per-group counts (an error when it has none: watch
    follows groups over steps), notes naming the real file, not a half-written copy."""
    import polars as pl

    notes = tuple(n.replace(str(target), str(f)) for n in loaded.notes if not n.startswith("read "))
    if loaded.layout == "series":
        return _FileState(stamp, pl.DataFrame(), partial, loaded.layout, True, notes, series=loaded.series)
    if loaded.per_group is None:
        raise SchemaError("has no group membership, so there are no groups to follow step by step",
                          location=str(f), remedy="name the group-id column with --group-col")
    per_group = loaded.per_group.select(pl.col("step").cast(pl.Int64), pl.col("prompt").cast(pl.Utf8),
                                        pl.col("n").cast(pl.Int64), pl.col("k").cast(pl.Int64))
    return _FileState(stamp, per_group, partial, loaded.layout, loaded.has_steps, notes)

