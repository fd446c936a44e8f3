"""Expand paths, directories and globs (local, or object-store URLs) into the list of supported log files."""

from __future__ import annotations

import glob
from collections.abc import Sequence
from pathlib import Path, PurePath

from ..errors import InputError
from .remote import is_remote, list_objects, normalized, parse_url

FORMATS = {".parquet": "parquet", ".pq": "parquet", ".csv": "csv", ".jsonl": "jsonl",
           ".ndjson": "jsonl", ".eval": "eval"}
COMPRESSIONS = {".gz": "gz", ".zst": "zst"}
SUPPORTED = "parquet, csv, jsonl/ndjson (csv and jsonl also as .gz or .zst), inspect_ai .eval"


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
            found = sorted(f for f in p.rglob("*") if f.is_file() and file_kind(f))
            if not found:
                raise InputError(f"directory holds no supported files ({SUPPORTED})",
                                 location=str(p))
            out.extend(found)
        elif p.is_file():
            if file_kind(p) is None:
                raise InputError(f"unsupported file type; supported: {SUPPORTED}",
                                 location=str(p), remedy="convert it or rename it")
            out.append(p)
        elif _has_glob(str(raw)):
            matches = sorted(Path(m) for m in glob.glob(str(raw), recursive=True))
            # a match that is a folder contributes its supported files, as a folder argument does
            found = [f for m in matches for f in ([m] if m.is_file() else sorted(m.rglob("*")) if m.is_dir() else [])
                     if f.is_file() and file_kind(f)]
            if not found:
                raise InputError("glob matches no supported files", location=str(raw))
            out.extend(found)
        else:
            raise InputError("no such file or directory", location=str(raw))
    seen: set[Path | str] = set()
    unique = []
    for f in out:
        key = f if isinstance(f, str) else f.resolve()
        if key not in seen:
            seen.add(key)
            unique.append(f)
    return unique


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
