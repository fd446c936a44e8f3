"""Expand paths, directories and globs into the list of supported log files."""

from __future__ import annotations

import glob
from collections.abc import Sequence
from pathlib import Path

from ..errors import InputError

FORMATS = {".parquet": "parquet", ".pq": "parquet", ".csv": "csv", ".jsonl": "jsonl",
           ".ndjson": "jsonl", ".eval": "eval"}
COMPRESSIONS = {".gz": "gz", ".zst": "zst"}
SUPPORTED = "parquet, csv, jsonl/ndjson (csv and jsonl also as .gz or .zst), inspect_ai .eval"


def file_kind(path: Path) -> tuple[str, str | None] | None:
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


def expand_paths(paths: Sequence[str | Path]) -> list[Path]:
    """Files to read, in a stable order, each once.

    A named file must be supported; a directory contributes every supported file inside it
    (recursively, others skipped) and must hold at least one; a glob must match something.
    """
    if isinstance(paths, str | Path):
        paths = [paths]
    if not paths:
        raise InputError("no input paths given", remedy="pass at least one file or directory")
    out: list[Path] = []
    for raw in paths:
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
            found = [m for m in matches if m.is_file() and file_kind(m)]
            if not found:
                raise InputError("glob matches no supported files", location=str(raw))
            out.extend(found)
        else:
            raise InputError("no such file or directory", location=str(raw))
    seen: set[Path] = set()
    unique = []
    for f in out:
        key = f.resolve()
        if key not in seen:
            seen.add(key)
            unique.append(f)
    return unique
