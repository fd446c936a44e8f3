"""Input resolution, done once per load: the path arguments (files, directories, globs, object-store
URLs) expanded to the files to read, with the files named outright and those skipped beside a
trainer's rollouts (see :mod:`.rules`). Standard input reaches the loaders as a file (the CLI
copies it to the run's temp folder first)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import InputError
from .paths import expand_paths
from .remote import unaddressable
from .rules import beside_rollouts


@dataclass(frozen=True)
class Inputs:
    """What a load reads."""

    args: tuple[str | Path, ...]
    """The path arguments as given."""
    files: list[Path | str]
    """The files to read, in order (local files as Paths, remote ones as URLs), without those skipped."""
    named: frozenset[Path]
    """Local files named outright (resolved): never skipped, and their errors are never passed over."""
    skipped: dict[Path | str, str] = field(default_factory=dict)
    """Files passed over so far, with the reason (a note each); the load adds to it."""

    @property
    def remote(self) -> list[str]:
        return [f for f in self.files if isinstance(f, str)]

    @property
    def local(self) -> list[Path]:
        return [f for f in self.files if isinstance(f, Path)]

    def where(self) -> str:
        return ", ".join(map(str, self.args))

    def none_left(self) -> InputError:
        if self.skipped:  # every file found was set aside: say why each was
            from .rules import none_fit

            return none_fit([], self)
        return InputError("no files to read", location=self.where())


def resolve(paths: Sequence[str | Path] | str | Path) -> Inputs:
    """The inputs of ``paths``: expanded (:func:`.paths.expand_paths`), files beside a trainer's
    rollouts set aside with their reason."""
    args = tuple([paths] if isinstance(paths, str | Path) else paths)
    files = expand_paths(list(args))
    named = frozenset(Path(p).resolve() for p in args if Path(p).is_file())
    skipped: dict[Path | str, str] = dict(beside_rollouts(files, named))
    for f in files:
        why = unaddressable(f) if isinstance(f, str) else None
        if why is not None:
            skipped[f] = f"an object key with {why}, which the object-store readers cannot address: " \
                         "rename it to read it"
    return Inputs(args, [f for f in files if f not in skipped], named, skipped)


def stdin_suffix(data: bytes, where: str) -> str:
    """The file suffix (``.parquet``, ``.jsonl`` or ``.csv``) of standard input's bytes, told apart by
    their first bytes (decompressed first when they start like gzip, zstd, bz2 or xz: the reader
    then decompresses them by content, bounded); InputError for what no reader takes."""
    from .readers import PARQUET_MAGIC, UTF8_BOM, compressed_as

    compression = compressed_as(head=data[:8])
    if compression == "zip":
        raise InputError("standard input is a zip archive", location=where, remedy="unzip it and pipe the log")
    head = data[:4096] if compression is None else _inflated_head(data, compression, where)
    if head[:4] == PARQUET_MAGIC:
        if compression is not None:
            name = {"gz": "gzip", "zst": "zstd"}.get(compression, compression)
            raise InputError(f"{name}-compressed parquet is not supported", location=where,
                             remedy="pipe the parquet file itself")
        return ".parquet"
    first = head.lstrip(UTF8_BOM + b" \t\r\n")[:1]
    if first == b"[":
        raise InputError("standard input holds a JSON array; sigmaudit reads JSON lines (one object per line)",
                         location=where, remedy="convert it, e.g. jq -c '.[]' < log.json | sigmaudit scan -")
    return ".jsonl" if first == b"{" else ".csv"


def _inflated_head(data: bytes, compression: str, where: str) -> bytes:
    """The first few KiB that compressed ``data`` decompresses to; InputError when it does not."""
    import bz2
    import lzma
    import zlib

    chunk = data[:65536]
    try:
        if compression == "gz":
            return zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(chunk, 4096)
        if compression == "bz2":
            return bz2.BZ2Decompressor().decompress(chunk, max_length=4096)
        if compression == "xz":
            return lzma.LZMADecompressor().decompress(chunk, max_length=4096)
        import zstandard

        return zstandard.ZstdDecompressor().decompressobj().decompress(chunk)[:4096]
    except ImportError as exc:
        raise InputError("reading zstd needs the zstandard package", location=where,
                         remedy="pip install zstandard") from exc
    except Exception as exc:  # zlib.error, OSError, EOFError, LZMAError, zstandard.ZstdError
        detail = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise InputError(f"starts like {compression} data but is not valid {compression} ({detail})",
                         location=where) from exc
