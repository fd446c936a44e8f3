"""Reading many jsonl files of one shape without inferring each one's schema.

Inferring a jsonl file's columns means parsing its first ``JSONL_SCHEMA_LINES`` lines in full; on a
verl dump (4,096 lines of ~3.4 kB per step file) that is a quarter of the file parsed twice. Trainer
dumps write the same keys with the same value types on every line of every file, so a file whose
first and last lines carry the same keys, in the same order, with the same JSON value kinds as the
first line of an already inferred file is read with that file's schema (:func:`shape`,
``readers.scan``). Anything else -- other keys (e.g. verl's ``acc`` appearing from some step on), other
value kinds, nested values, an unreadable line -- is inferred as before, and a file read with a
reused schema that then fails is read again the old way (``load_counts``), so errors and notes are
the old ones. Only the columns the layout needs are parsed into memory (projection pushdown).
"""

from __future__ import annotations

import io
import json
import mmap
import os
import re
import struct
from pathlib import Path

SCALARS = {str: "s", bool: "b", int: "i", float: "f", type(None): "n"}
TAIL_BYTES = 1 << 16


def _kinds(line: bytes) -> tuple[tuple[str, str], ...] | None:
    """(key, JSON kind) of a line holding a flat JSON object, or None (nested, malformed, empty)."""
    try:
        value = json.loads(line)
    except (ValueError, UnicodeDecodeError, RecursionError):  # a line nested too deeply: infer as before
        return None
    if not isinstance(value, dict) or not value:
        return None
    out = []
    for key, v in value.items():
        kind = SCALARS.get(type(v))
        if kind is None:
            return None
        out.append((key, kind))
    return tuple(out)


def _first_line(fh) -> bytes | None:  # noqa: ANN001
    for line in fh:
        if line.strip():
            return line
    return None


def _last_line(fh, size: int) -> bytes | None:  # noqa: ANN001
    block = TAIL_BYTES
    while True:
        start = max(size - block, 0)
        fh.seek(start)
        lines = [line for line in fh.read().split(b"\n") if line.strip()]
        if start == 0 or len(lines) >= 2:
            return lines[-1] if lines else None
        block *= 4


def shape(path: Path) -> tuple[tuple[str, str], ...] | None:
    """The keys and value kinds shared by the first and last lines of a jsonl file, or None when they
    differ or either is not a flat JSON object."""
    try:
        size = path.stat().st_size
        with open(path, "rb") as fh:
            first = _first_line(fh)
            if first is None or first.startswith(b"\xef\xbb\xbf"):
                return None
            head = _kinds(first)
            if head is None:
                return None
            tail = _kinds(_last_line(fh, size) or b"")
    except OSError:
        return None
    return head if tail == head else None


MAX_DEPTH = 1024
"""Deepest nesting of objects and arrays a jsonl line may have: Polars refuses deeper lines from 2.1
("DepthLimitExceeded"); older versions read them (or crash inferring a schema), so under those sigmaudit
finds such a line itself (:func:`too_deep`) and refuses it the same way."""


def polars_bounds_depth() -> bool:
    """The installed Polars refuses jsonl lines nested past :data:`MAX_DEPTH` levels (2.1 and later)."""
    import polars as pl

    m = re.match(r"(\d+)\.(\d+)", pl.__version__)
    return m is not None and (int(m.group(1)), int(m.group(2))) >= (2, 1)
_CHUNK = 1 << 24
_STRING = re.compile(rb'"(?:[^"\\\n]|\\.)*"')


def depth(line: bytes) -> int:
    """The deepest nesting of objects and arrays in one JSON line (strings skipped)."""
    import numpy as np

    bare = np.frombuffer(_STRING.sub(b"", line), np.uint8)
    step = np.isin(bare, (123, 91)).astype(np.int32) - np.isin(bare, (125, 93)).astype(np.int32)
    return int(np.cumsum(step).max(initial=0))


def too_deep(path: Path, limit: int = MAX_DEPTH) -> int | None:
    """The number of the first line of ``path`` nested deeper than ``limit`` levels, or None. A line
    opening at most ``limit`` objects and arrays (counted over the bytes, strings included) cannot be
    deeper; only lines opening more are parsed for their depth. One pass, in chunks."""
    import numpy as np

    number, carry = 1, b""
    with open(path, "rb") as fh:
        while True:
            chunk = fh.read(_CHUNK)
            block = carry + chunk
            end = len(block) if not chunk else block.rfind(b"\n") + 1
            if end == 0:
                if not chunk:
                    return None
                carry = block
                continue
            data = np.frombuffer(block, np.uint8, count=end)
            breaks = np.flatnonzero(data == 10)
            opens = np.flatnonzero((data == 123) | (data == 91))
            counts = np.bincount(np.searchsorted(breaks, opens), minlength=len(breaks) + 1)
            starts = np.concatenate(([0], breaks + 1))
            for i in np.flatnonzero(counts > limit):
                stop = breaks[i] if i < len(breaks) else end
                if depth(block[starts[i]:stop]) > limit:
                    return number + int(i)
            number += len(breaks)
            carry = block[end:]
            if not chunk:
                return None


DUPLICATE_REMEDY = "the file is ambiguous: fix the writer so that each key appears once per record"


def _pairs_hook(pairs: list) -> dict:
    """A JSON object as a dict that remembers the first key it was given twice (``_twice``)."""
    out = _Object(pairs)
    if len(out) != len(pairs):
        seen: set = set()
        out.twice = next(k for k, _ in pairs if k in seen or seen.add(k))
        out.pairs = pairs
    return out


class _Object(dict):
    twice: str | None = None
    pairs: list | None = None


def twice_in(line: bytes | str) -> str | None:
    """The first top-level key given twice in one JSON line, or None (also for a line that is no object)."""
    try:
        value = json.loads(line, object_pairs_hook=_pairs_hook)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return None
    return value.twice if isinstance(value, _Object) else None


def duplicate_error(shown: str, number: int, key: str, what: str = "line"):  # noqa: ANN201
    """The refusal of a record giving ``key`` twice: readers disagree on its value."""
    from ..errors import InputError

    return InputError(f"{what} {number} gives key {key!r} twice: readers disagree on which value counts "
                      "(Polars takes the first, Python's json and Spark the last, DuckDB refuses)",
                      location=f"{shown}:{number}" if what == "line" else shown, remedy=DUPLICATE_REMEDY)


def _binary(path: Path):  # noqa: ANN202
    """``path`` opened for reading its (decompressed) bytes."""
    with open(path, "rb") as fh:
        head = fh.read(4)
    if head.startswith(b"\x1f\x8b"):
        import gzip

        return gzip.open(path, "rb")
    if head.startswith(b"\x28\xb5\x2f\xfd"):
        import zstandard

        return zstandard.ZstdDecompressor().stream_reader(open(path, "rb"), closefd=True)
    return open(path, "rb")


def duplicate_key(path: Path, keys: list[str]) -> tuple[int, str] | None:
    """(line number, key) of the first line of the jsonl file ``path`` (plain, .gz or .zst) whose top-level
    object gives one of ``keys`` twice, or None. Exact over every line, not a sample.

    Only the keys sigmaudit reads are checked (the caller passes the columns the counts are made of): a
    key given twice that no count reads changes no number, and Polars, DuckDB and Spark read only the
    columns asked for. Measured on a 1M-line, 280 MB jsonl (benchmarks/gen_logs.py --jsonl, 2 shared cores;
    its load alone 1.5 s): a Python ``json.loads`` per line, or pyarrow.json (it refuses a duplicate of a
    schema column, but parses every byte: 1.2 s), cost as much as the read; this per-key regex
    ``"K"[^\n]*"K"`` (C, one pass a key) finds every line holding the quoted key twice, and only those
    lines are parsed (``object_pairs_hook``) to tell a real duplicate from the key's name inside a text or a
    nested object. Its cost is ~2 s for the 3 keys on that file (far from the few percent aimed at; issue
    36 item 20 keeps a faster pass open: ``bytes.count`` of each quoted key, ~0.17 s a key, equal to the
    key's non-null count from the reduction proves no line holds it twice).
    A key written with escapes (``"rew\\u0061rd"``) is not found by the byte search."""
    patterns = [(k, re.compile(re.escape(json.dumps(k, ensure_ascii=False).encode()) + rb"[^\n]*"
                               + re.escape(json.dumps(k, ensure_ascii=False).encode()))) for k in keys]
    offset, carry = 0, b""
    with _binary(path) as fh:
        while True:
            chunk = fh.read(_CHUNK)
            block = carry + chunk
            end = len(block) if not chunk else block.rfind(b"\n") + 1
            if end == 0 and chunk:
                carry = block
                continue
            body = block[:end]
            hits: set[int] = set()
            for _, pattern in patterns:
                at = 0
                while (m := pattern.search(body, at)) is not None:
                    start = body.rfind(b"\n", 0, m.start()) + 1
                    hits.add(start)
                    stop = body.find(b"\n", m.start())
                    at = len(body) if stop < 0 else stop + 1
            for start in sorted(hits):
                stop = body.find(b"\n", start)
                key = twice_in(body[start: len(body) if stop < 0 else stop])
                if key is not None and key in keys:
                    return _line_at(path, offset + start), key
            offset += end
            carry = block[end:]
            if not chunk:
                return None


_MAPPED = 1 << 28
"""A mapped file is counted in pieces of about this many bytes (RE2 takes at most 2 GiB at once)."""
TOKENS_MIN_BYTES = 64 << 20
"""The jsonl files of a load at least this big together (on disk) get :func:`key_tokens`' count before the
exact search of :func:`duplicate_key`; smaller loads go straight to the search. Measured on the 2-core machine
(benchmarks/README.md, issue 45): the search costs ~3 ns a byte, the count ~0.4 ns a byte plus ~0.2 s
to import ``pyarrow.compute`` once; the count pays for its import from ~64 MB on."""


def key_tokens(path: Path, keys: list[str]) -> int | None:
    """How many times the file's (decompressed) bytes hold one of ``keys`` as a quoted string (``"step"``), or
    the start of another spelling of one (a quote, a part of the key, then an escape: ``"st\\u0065p"``), all
    counted together; None when a key is not plain printable ASCII without quotes or backslashes (its other
    spellings are not all found).

    A floor on how many records give each key a value (:func:`~.engines.polars.refuse_duplicate_keys` takes
    it from the reduction) proves no record gives one twice when this count equals it: each key a record
    gives is written once at least, plainly or escaped (Polars reads ``"rew\\u0061rd"`` as ``reward``), so a
    record giving a key twice adds one more; a key inside a text or a nested object, a null value, or a text
    starting like an escaped key only makes the count larger (the exact search runs then). One pass of RE2
    (``pyarrow.compute``; every alternative starts with a quote, found by memchr) over the file mapped in
    memory: ~0.12 s for 300 MB of verl dump against ~1.2 s for :func:`duplicate_key`."""
    if not all(k.isascii() and k.isprintable() and '"' not in k and "\\" not in k for k in keys):
        return None
    import pyarrow as pa
    import pyarrow.compute as pc

    prefixes = sorted({k[:i] for k in keys for i in range(len(k))})  # an escape's plain start: a proper prefix
    pattern = ('"(?:(?:' + "|".join(_re2_bytes(k) for k in keys) + ')"|(?:'
               + "|".join(_re2_bytes(p) for p in prefixes) + ")\\\\(?:u00|/))")

    def count(buf: object, size: int) -> int:
        one = pa.LargeBinaryArray.from_buffers(pa.large_binary(), 1,
                                               [None, pa.py_buffer(struct.pack("<qq", 0, size)), pa.py_buffer(buf)])
        return int(pc.count_substring_regex(one, pattern)[0].as_py())

    total = 0
    with _binary(path) as fh:
        if isinstance(fh, io.BufferedReader) and os.fstat(fh.fileno()).st_size > 0:  # plain: mapped, not copied
            with mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mapped, memoryview(mapped) as view:
                start = 0
                while start < len(mapped):  # pieces of about _MAPPED bytes, cut after a line break
                    cut = mapped.find(b"\n", min(start + _MAPPED, len(mapped)) - 1)
                    stop = len(mapped) if cut < 0 else cut + 1
                    with view[start:stop] as piece:
                        total += count(piece, stop - start)
                    start = stop
            return total
        carry = b""
        while chunk := fh.read(_CHUNK):
            block = carry + chunk
            end = block.rfind(b"\n") + 1  # no token straddles a line break
            total += count(block[:end], end) if end else 0
            carry = block[end:]
        return total + (count(carry, len(carry)) if carry else 0)


def _re2_bytes(text: str) -> str:
    """``text`` as an RE2 pattern matching its bytes literally (letters and digits as themselves)."""
    return "".join(c if c.isalnum() else f"\\x{ord(c):02x}" for c in text)


def _line_at(path: Path, offset: int) -> int:
    """The number of the line starting at byte ``offset`` of ``path``'s (decompressed) text (the error
    path only: the search itself counts no lines)."""
    lines, done = 1, 0
    with _binary(path) as fh:
        while done < offset and (chunk := fh.read(min(_CHUNK, offset - done))):
            lines += chunk.count(b"\n")
            done += len(chunk)
    return lines
