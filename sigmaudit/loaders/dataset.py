"""The training set a trainer reads (``curate --dataset``): read it, match logged prompts to its rows, and
give back its kept rows in the same format and schema (``--curated-out``).

docs/commands.md, "curate", says what is matched and its limits. In short:

- **Reading.** A parquet file, a jsonl file or a folder of them (files in sorted path order; rows are
  numbered across them). The prompt column (``--dataset-col``, default ``prompt``) holds either text (TRL's
  standard ``prompt`` strings, any plain text column) or a list of chat messages ``[{role, content}]``
  (verl's ``prompt``: ``RLHFDataset._build_messages``, verl b178a3cd56f58b2d502255daba591e92833930a7
  ``verl/utils/dataset/rl_dataset.py``; TRL's conversational ``prompt``). A message's content may be text or
  a list of parts, whose ``text`` parts count. A row's **text** is its user messages' contents joined by a
  blank line (the whole value for a text column); its key is that text's sha256.
- **Matching, without a tokenizer.** The log holds a prompt either as the user message itself (TRL's
  standard prompts) or as the chat-templated prompt decoded from token ids (verl's dumps:
  ``tokenizer.batch_decode(prompts, skip_special_tokens=True)``, ``RayPPOTrainer``, ``ray_trainer.py`` at that
  commit; TRL's ``prompts_text``, the same decode, huggingface/trl f2cd57710ae345ea6428ae95363267fcf38a3dc8
  ``trl/trainer/grpo_trainer.py``; SkyRL and AReaL dumps). Either way each of the row's user contents
  (stripped of surrounding white space, which templates often trim) appears in the logged text, in order.
  A logged prompt matches the row(s) whose contents all appear in it; one row is a match. Several: the
  candidates whose *skeleton* (the logged text with the contents cut out: the template) is the skeleton
  of some unique match are kept; if that leaves one row, it is the match, else the prompt is listed as
  matching several rows. No candidate: listed as matching none. Nothing is guessed.
- **Writing.** Kept rows only, in their order: parquet through pyarrow with the input's schema (and its
  metadata); jsonl as the input's own bytes, line by line (only a last line without a newline gets one when
  another line follows it). The caller writes the bytes (atomically: :mod:`sigmaudit.writers`).
"""

from __future__ import annotations

import hashlib
import io
import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import ConfigError, InputError, SchemaError

DATASET_SUFFIXES = {".parquet": "parquet", ".jsonl": "jsonl", ".ndjson": "jsonl"}
"""File types of a training set, by suffix."""
DEFAULT_COLUMN = "prompt"
"""The prompt column verl (``data.prompt_key``) and TRL read by default."""
KEY_LENGTH = 24
"""Characters of the window a row is looked up by in a logged text (a lookup index, not a threshold: every
candidate is then checked in full)."""
KEY_STRIDE = 12
"""Characters between the windows a row's key is chosen from."""


@dataclass(frozen=True)
class DatasetFile:
    """One file of the training set."""

    path: Path
    kind: str
    """``parquet`` or ``jsonl``."""
    first_row: int
    """Index of its first row among all the set's rows."""
    rows: int
    lines: tuple[bytes, ...] = ()
    """jsonl only: each row's raw line, as read."""


@dataclass(frozen=True)
class TrainingSet:
    """A training set's rows as the matcher and the writer need them."""

    root: Path
    """The ``--dataset`` path (a file or a folder)."""
    files: tuple[DatasetFile, ...]
    column: str
    shape: str
    """``messages`` (chat message lists) or ``text``."""
    contents: tuple[tuple[str, ...], ...]
    """Per row: the stripped user contents (the whole text for a text column), in order."""
    texts: tuple[str, ...]
    """Per row: its text (user contents joined by a blank line)."""

    @property
    def rows(self) -> int:
        return len(self.contents)

    def locate(self, row: int) -> tuple[DatasetFile, int]:
        """The file holding global row ``row`` and its index within that file."""
        for f in self.files:
            if f.first_row <= row < f.first_row + f.rows:
                return f, row - f.first_row
        raise IndexError(row)


def text_hash(text: str) -> str:
    """sha256 of a row's text (UTF-8), the drop list's join key."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def dataset_files(path: Path) -> list[tuple[Path, str]]:
    """The files of ``--dataset``: the file, or a folder's parquet/jsonl files (recursively, sorted)."""
    if path.is_dir():
        found = sorted(p for p in path.rglob("*") if p.is_file() and p.suffix.lower() in DATASET_SUFFIXES
                       and not p.name.startswith("."))
        if not found:
            raise InputError("holds no .parquet or .jsonl file", location=str(path),
                             remedy="give --dataset the training set's file or folder")
        return [(p, DATASET_SUFFIXES[p.suffix.lower()]) for p in found]
    if not path.is_file():
        raise InputError("no such file or folder", location=str(path), remedy="check the --dataset path")
    kind = DATASET_SUFFIXES.get(path.suffix.lower())
    if kind is None:
        raise ConfigError(f"unknown training-set file type {path.suffix or '(none)'!r}", location="--dataset",
                          remedy="give a .parquet or .jsonl file, or a folder of them")
    return [(path, kind)]


def read_dataset(path: Path | str, column: str | None = None) -> TrainingSet:
    """Read the training set at ``path`` (file or folder), its prompts from ``column`` (default ``prompt``)."""
    root = Path(path)
    files, contents, texts = [], [], []
    col = column or DEFAULT_COLUMN
    shapes: set[str] = set()
    for file, kind in dataset_files(root):
        values, lines = _read_parquet(file, col) if kind == "parquet" else _read_jsonl(file, col)
        files.append(DatasetFile(file, kind, len(contents), len(values), tuple(lines)))
        for i, value in enumerate(values):
            shape, parts, text = row_prompt(value, f"{file}: row {i}" if kind == "parquet" else f"{file}:{i + 1}",
                                            col)
            shapes.add(shape)
            contents.append(parts)
            texts.append(text)
    if not contents:
        raise InputError("has no rows", location=str(root), remedy="give --dataset the training set")
    shape = "messages" if shapes == {"messages"} else "text" if shapes == {"text"} else "mixed"
    return TrainingSet(root, tuple(files), col, shape, tuple(contents), tuple(texts))


def _read_parquet(path: Path, column: str) -> tuple[list[Any], list[bytes]]:
    import pyarrow.parquet as pq

    try:
        names = pq.read_schema(path).names
        if column not in names:
            raise SchemaError(f"has no column {column!r} (columns: {', '.join(names[:12])})", location=str(path),
                              remedy="name the prompt column with --dataset-col")
        return pq.read_table(path, columns=[column]).column(column).to_pylist(), []
    except (OSError, ValueError) as exc:  # pyarrow's ArrowInvalid is a ValueError
        raise InputError(f"is not a readable parquet file ({exc})", location=str(path),
                         remedy="check the --dataset file") from exc


def _read_jsonl(path: Path, column: str) -> tuple[list[Any], list[bytes]]:
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise InputError(f"cannot be read ({exc.strerror})", location=str(path),
                         remedy="check the --dataset path") from exc
    values, lines = [], []
    for number, line in enumerate(raw.splitlines(keepends=True), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except (ValueError, UnicodeDecodeError) as exc:
            raise InputError(f"is not a JSON object ({exc})", location=f"{path}:{number}",
                             remedy="give --dataset a jsonl file: one JSON object per line") from exc
        if not isinstance(record, dict) or column not in record:
            raise SchemaError(f"has no key {column!r}", location=f"{path}:{number}",
                              remedy="name the prompt column with --dataset-col")
        values.append(record[column])
        lines.append(line)
    return values, lines


def row_prompt(value: Any, where: str, column: str) -> tuple[str, tuple[str, ...], str]:
    """(shape, stripped user contents, text) of one row's prompt value: a string, or chat messages."""
    if isinstance(value, str):
        return "text", (value.strip(),) if value.strip() else (), value
    if isinstance(value, list | tuple) and value and all(isinstance(m, dict) and "content" in m for m in value):
        users = [m for m in value if m.get("role") == "user"] or list(value)
        parts = [_content_text(m["content"], where, column) for m in users]
        return "messages", tuple(p.strip() for p in parts if p.strip()), "\n\n".join(parts)
    raise SchemaError(f"{column!r} is neither text nor a list of chat messages ({{role, content}})", location=where,
                      remedy="name the prompt column with --dataset-col")


def _content_text(content: Any, where: str, column: str) -> str:
    """A message's text: the string, or the ``text`` of its parts (multimodal content lists)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list | tuple):
        return "".join(p.get("text") or "" for p in content if isinstance(p, dict) and p.get("type") == "text")
    raise SchemaError(f"a message of {column!r} has content that is neither text nor a list of parts",
                      location=where, remedy="name the prompt column with --dataset-col")


# ---------------------------------------------------------------- matching


@dataclass(frozen=True)
class Match:
    """One logged prompt's rows in the training set."""

    status: str
    """``row`` (one row), ``none`` or ``several``."""
    row: int | None
    """The row (status ``row``)."""
    candidates: tuple[int, ...]
    """Status ``several``: the rows it could be."""


def match_prompts(logged: Sequence[str], data: TrainingSet) -> list[Match]:
    """Each logged prompt's row in ``data`` (module docstring): one row, none, or several (never guessed)."""
    index = _key_index(data)
    found = [_candidates(text, data, index) for text in logged]
    skeletons = Counter(_skeleton(text, data.contents[c[0]]) for text, c in zip(logged, found, strict=True)
                        if len(c) == 1)
    out = []
    for text, cands in zip(logged, found, strict=True):
        if len(cands) > 1:
            fits = [r for r in cands if _skeleton(text, data.contents[r]) in skeletons]
            if fits and len({data.contents[r] for r in fits}) == 1:
                cands = fits
        if not cands:
            out.append(Match("none", None, ()))
        elif len(cands) == 1:
            out.append(Match("row", cands[0], ()))
        else:
            out.append(Match("several", None, tuple(cands)))
    return out


def _key_index(data: TrainingSet) -> dict[int, dict[str, list[int]]]:
    """Key length -> (key -> rows): each row indexed by its rarest window of :data:`KEY_LENGTH` characters
    (windows every :data:`KEY_STRIDE` characters of its contents, and each content's last), so an instruction
    that every row of a set starts or ends with does not make every row a candidate of every prompt."""
    windows = [_windows(parts) for parts in data.contents]
    counts = Counter(w for ws in windows for w in set(ws))
    index: dict[int, dict[str, list[int]]] = {}
    for row, ws in enumerate(windows):
        if ws:
            key = min(ws, key=lambda w: (counts[w], ws.index(w)))
            index.setdefault(len(key), {}).setdefault(key, []).append(row)
    return index


def _windows(parts: tuple[str, ...]) -> list[str]:
    out = []
    for part in parts:
        if len(part) <= KEY_LENGTH:
            out.append(part)
            continue
        out += [part[i:i + KEY_LENGTH] for i in range(0, len(part) - KEY_LENGTH + 1, KEY_STRIDE)]
        out.append(part[-KEY_LENGTH:])
    return out


def _candidates(text: str, data: TrainingSet, index: dict[int, dict[str, list[int]]]) -> list[int]:
    """Rows whose every content appears in ``text``, in order."""
    seen: set[int] = set()
    for length, keys in index.items():
        for i in range(len(text) - length + 1):
            rows = keys.get(text[i:i + length])
            if rows:
                seen.update(rows)
    return sorted(r for r in seen if _in_order(text, data.contents[r]))


def _in_order(text: str, parts: tuple[str, ...]) -> bool:
    at = 0
    for part in parts:
        found = text.find(part, at)
        if found < 0:
            return False
        at = found + len(part)
    return True


def _skeleton(text: str, parts: tuple[str, ...]) -> str:
    """``text`` with ``parts`` (found in order) replaced by a NUL: the template around the contents."""
    out, at = [], 0
    for part in parts:
        found = text.find(part, at)
        out.append(text[at:found])
        at = found + len(part)
    out.append(text[at:])
    return "\0".join(out)


# ---------------------------------------------------------------- writing


def curated_files(data: TrainingSet, keep: Sequence[bool]) -> list[tuple[Path, bytes]]:
    """Each file of ``data`` with only its kept rows: (path relative to the set's root, bytes). A file
    ``--dataset`` names directly has the relative path of its own name."""
    out = []
    for f in data.files:
        mask = [bool(x) for x in keep[f.first_row:f.first_row + f.rows]]
        rel = Path(f.path.name) if data.root.is_file() else f.path.relative_to(data.root)
        out.append((rel, _parquet_rows(f.path, mask) if f.kind == "parquet" else _jsonl_rows(f.lines, mask)))
    return out


def _parquet_rows(path: Path, mask: list[bool]) -> bytes:
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pq.read_table(path)
    kept = table.filter(pa.array(mask, type=pa.bool_()))
    buf = io.BytesIO()
    pq.write_table(kept, buf)
    return buf.getvalue()


def _jsonl_rows(lines: tuple[bytes, ...], mask: list[bool]) -> bytes:
    kept = [line for line, k in zip(lines, mask, strict=True) if k]
    return b"".join(line if line.endswith(b"\n") or i == len(kept) - 1 else line + b"\n"
                    for i, line in enumerate(kept))
