"""Expand paths, directories and globs (local, or object-store URLs) into the list of supported log files."""

from __future__ import annotations

import glob
import os
from collections.abc import Sequence
from pathlib import Path, PurePath

from ..errors import InputError
from .remote import is_remote, list_objects, normalized, parse_url

FORMATS = {".parquet": "parquet", ".pq": "parquet", ".csv": "csv", ".jsonl": "jsonl",
           ".ndjson": "jsonl", ".json": "json", ".eval": "eval"}
COMPRESSIONS = {".gz": "gz", ".zst": "zst"}
SUPPORTED = ("parquet, csv, jsonl/ndjson, json (an array of records; csv, jsonl and json also as .gz or .zst), "
             "inspect_ai .eval")


def zstd_errors() -> tuple[type[BaseException], ...]:
    """The exception class zstandard raises for data that are not valid zstd: ``zstandard.ZstdError``,
    whichever backend defines it (``zstd.ZstdError`` in 0.22-0.23, ``zstandard.backend_c.ZstdError``
    from 0.24), so ``except zstd_errors():`` matches on every supported version; () without the package."""
    try:
        import zstandard
    except ImportError:
        return ()
    return (zstandard.ZstdError,)


def file_kind(path: PurePath) -> tuple[str, str | None] | None:
    """(format, compression) of a supported file, from its suffixes; None if unsupported."""
    suffixes = [s.lower() for s in path.suffixes]
    compression = None
    if suffixes and suffixes[-1] in COMPRESSIONS:
        compression = COMPRESSIONS[suffixes.pop()]
    if not suffixes or suffixes[-1] not in FORMATS:
        return None
    fmt = FORMATS[suffixes[-1]]
    if fmt in ("parquet", "eval") and compression:
        return None
    return fmt, compression


def _has_glob(text: str) -> bool:
    return any(c in text for c in "*?[")


def expand_paths(paths: Sequence[str | Path]) -> list[Path | str]:
    """Files to read, in a stable order, each once: local files as Paths, remote ones as URLs.

    A named file must be supported; a directory (or URL prefix) contributes every supported file
    inside it (recursively, others skipped) and must hold at least one; a glob must match something
    (a folder it matches contributes its files, as a directory argument does).
    """
    if isinstance(paths, str | Path):
        paths = [paths]
    if not paths:
        raise InputError("no input paths given", remedy="pass at least one file or directory")
    out: list[Path | str] = []
    for raw in paths:
        if isinstance(raw, str) and not raw.strip():
            raise InputError("an input path is empty", location=repr(raw),
                             remedy="name a file or directory ('.' for the current one)")
        if is_remote(raw):
            out.extend(expand_remote(str(raw)))
            continue
        p = Path(raw)
        if p.is_dir():
            out.extend(_files_in(p))
        elif p.is_file():
            if file_kind(p) is None:
                raise InputError(f"unsupported file type; supported: {SUPPORTED}",
                                 location=str(p), remedy="convert it or rename it")
            out.append(p)
        elif _has_glob(str(raw)):
            out.extend(_glob(str(raw)))
        else:
            sample = "sample_logs" in Path(str(raw)).parts
            raise InputError("no such file or directory", location=str(raw),
                             remedy="the sample logs are in a checkout of the repository, not in an installed "
                                    "package: make a log with 'sigmaudit simulate --prompts 200 --num-steps 20 "
                                    "--log-out demo.parquet'" if sample else None)
    seen: set[Path | str] = set()
    unique = []
    for f in out:
        key = f if isinstance(f, str) else f.resolve()
        if key not in seen:
            seen.add(key)
            unique.append(f)
    return unique


def _files_in(folder: Path, required: bool = True) -> list[Path]:
    """The supported files under ``folder`` (recursively, symlinked folders not followed); a folder
    that cannot be listed is refused by name, never passed over. ``required``: a folder without
    supported files is refused."""
    def fail(exc: OSError) -> None:
        raise InputError(f"folder is unreadable ({exc.strerror or exc})", location=str(exc.filename or folder),
                         remedy="fix its permissions, or name the folders to read")

    found = []
    for root, _, names in os.walk(folder, onerror=fail):
        found.extend(f for f in (Path(root) / name for name in names) if f.is_file() and file_kind(f))
    if not found and required:
        raise InputError(f"directory holds no supported files ({SUPPORTED})", location=str(folder))
    return sorted(found)


def _glob(pattern: str) -> list[Path]:
    """The supported files a glob matches: the files, and the supported files in the folders it matches
    (a matched folder without any is passed over; the glob must find one file)."""
    out: list[Path] = []
    for m in sorted(Path(m) for m in glob.glob(pattern, recursive=True)):
        if m.is_dir():
            out.extend(_files_in(m, required=False))
        elif m.is_file() and file_kind(m):
            out.append(m)
    if not out:
        raise InputError("glob matches no supported files", location=pattern)
    return out


def expand_remote(text: str) -> list[str]:
    """The supported files a URL names: itself, the files under a prefix, or a glob's matches (the
    scheme in lower case: ``HTTP://`` is ``http://``)."""
    text = normalized(text)
    url = parse_url(text)
    if not url.has_glob and not url.is_prefix and file_kind(url.pure) is not None:
        return [text]
    if url.has_glob:
        pattern, what = text, "glob matches no supported files"
    else:
        pattern, what = text.rstrip("/") + "/**/*", f"prefix holds no supported files ({SUPPORTED})"
    found = sorted(u for u in list_objects(pattern) if file_kind(parse_url(u).pure) is not None)
    if not found:
        raise InputError(what, location=text)
    return found
