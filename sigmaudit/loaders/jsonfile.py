"""A ``.json`` file of records: a JSON array of objects, or an object holding one list of objects
under a key, written out as JSON lines (one record a line, in the file's order) in the temporary
folder and read there as a jsonl file is, so both spellings of the same records read alike.

Writers that save this shape: τ-bench's ``run.py`` (sierra-research/tau-bench
59a200c6d575d595120f1cb70fea53cef0632f6b: ``json.dump([result.model_dump() for result in results], f,
indent=2)``, one ``EnvRunResult`` per task x trial), and any harness that ``json.dump``s a list.

- The document is parsed as a stream, one record at a time (:class:`_Stream`): a 138 MB array took 554 MB
  of memory parsed whole, a record at a time it takes what the jsonl read of the same records takes.
- A ``.json`` file of JSON lines (what ``datasets.Dataset.to_json`` and pandas ``to_json(orient="records",
  lines=True)`` write) is read as JSON lines (:func:`json_lines`).
- An object with several lists of records is refused with their keys, never pooled (two under known keys,
  :data:`RECORD_KEYS`, too); a document holding no records (a config, a run's metadata.json) is no log:
  skipped with a note in a folder, refused when named.
- An object mapping each problem id to its list of outcomes (booleans or 0/1) under a key, as code-eval
  harnesses write (``{"raw_scored_generations": {"sample_0": [true, false, ...]}, "pass_at_1": ...}``), is read
  as one row per problem (``id``, the key's list): a grouped log, each problem's samples one group. The key is
  one of :data:`OUTCOME_KEYS`, or the one ``--reward-col`` names.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any, TextIO

from ..errors import InputError, NoDataError

RECORD_KEYS = ("samples", "results", "records", "rollouts", "trajectories", "outputs", "data", "rows",
               "items", "logs")
"""Keys under which an object holds its list of records: one of them beside other lists of records is the log."""
OUTCOME_KEYS = ("raw_scored_generations", "scored_generations", "outcomes", "correctness", "passed",
                "results", "scores")
"""Keys under which an object may map each problem id to its list of outcomes (booleans or 0/1)."""
_CHUNK = 1 << 18
"""Characters read at a time: the parse holds about four times this, whatever the size of the file."""


def decode_error(exc: json.JSONDecodeError) -> str:
    """The reason of a JSON decoding error with its column, whole: ``Invalid control character at column
    5`` (the decoder's own ``msg`` ends mid-sentence)."""
    msg = exc.msg
    return f"{msg} column {exc.colno}" if msg.endswith(" at") else f"{msg} at column {exc.colno}"


def json_lines(path: Path) -> bool:
    """The file is JSON lines, not one document: its first non-blank line is a whole JSON object and another
    non-blank line follows (a document's first line never holds a whole object with more after it)."""
    with open(path, encoding="utf-8-sig", errors="replace") as fh:
        lines = (line for line in fh if line.strip())
        first = next(lines, None)
        if first is None or not first.lstrip().startswith("{"):
            return False
        try:
            whole = isinstance(json.loads(first), dict)
        except (ValueError, RecursionError):
            return False
        return whole and next(lines, None) is not None


class _Stream:
    """A JSON document's text read in chunks: one value at a time, every error with its line and column."""

    def __init__(self, fh: TextIO, shown: str):
        self.twice = False
        """An object decoded since this was last reset gave a key twice (its pairs are kept: :func:`as_written`)."""
        self.fh, self.shown, self.buf, self.pos, self.line, self.col0, self.eof = fh, shown, "", 0, 1, 0, False
        self.decoder = json.JSONDecoder(object_pairs_hook=self._hook)

    def _hook(self, pairs: list) -> dict:
        from .jsonl import _pairs_hook

        out = _pairs_hook(pairs)
        self.twice = self.twice or getattr(out, "pairs", None) is not None
        return out

    def _more(self) -> bool:
        chunk = self.fh.read(_CHUNK)
        if not chunk:
            self.eof = True
            return False
        done = self.buf[: self.pos]  # the text consumed: its lines counted, the column where the rest starts kept
        self.line += done.count("\n")
        newline = done.rfind("\n")
        self.col0 = len(done) - newline - 1 if newline >= 0 else self.col0 + len(done)
        self.buf, self.pos = self.buf[self.pos:] + chunk, 0
        return True

    def peek(self) -> str:
        """The next character that is not white space ("" at the end), not consumed."""
        while True:
            while self.pos < len(self.buf) and self.buf[self.pos] in " \t\r\n":
                self.pos += 1
            if self.pos < len(self.buf) or not self._more():
                return self.buf[self.pos: self.pos + 1]

    def error(self, message: str, at: int | None = None) -> InputError:
        at = self.pos if at is None else at
        line = self.line + self.buf.count("\n", 0, at)
        newline = self.buf.rfind("\n", 0, at)
        column = at - newline if newline >= 0 else self.col0 + at + 1
        return InputError(f"malformed JSON on line {line}: {message} at column {column}",
                          location=f"{self.shown}:{line}")

    def expect(self, chars: str) -> str:
        """Consume the next character, one of ``chars``; else the error Python's decoder gives there."""
        c = self.peek()
        if not c or c not in chars:
            said = {"[": "Expecting value", "{": "Expecting value", ":": "Expecting ':' delimiter"}
            raise self.error(said.get(chars[0], "Expecting ',' delimiter") if c else "Expecting value")
        self.pos += 1
        return c

    def value(self) -> Any:
        """The next JSON value, decoded whole (a record, a key, a config)."""
        self.peek()
        seen = None
        while True:
            try:
                value, self.pos = self.decoder.raw_decode(self.buf, self.pos)
                return value
            except json.JSONDecodeError as exc:
                # cut off by the chunk's end, unless more text changed nothing and the text after it spans a line
                real = self.eof or (seen == (exc.pos, exc.msg) and "\n" in self.buf[exc.pos:])
                if real:
                    raise self.error(exc.msg.removesuffix(" at").removesuffix(":"), exc.pos) from exc
                seen = (exc.pos, exc.msg)
                self._more()
            except RecursionError as exc:
                raise InputError("malformed JSON: nested too deeply", location=self.shown) from exc

    def items(self) -> Any:
        """The elements of the array that starts here, one at a time."""
        self.expect("[")
        if self.peek() == "]":
            self.pos += 1
            return
        while True:
            yield self.value()
            if self.expect(",]") == "]":
                return

    def members(self) -> Any:
        """(key, stream positioned at its value) of the object that starts here, one at a time."""
        self.expect("{")
        if self.peek() == "}":
            self.pos += 1
            return
        while True:
            if self.peek() != '"':
                raise self.error("Expecting property name enclosed in double quotes")
            key = self.value()
            self.expect(":")
            yield key
            if self.expect(",}") == "}":
                return


def _not_record(index: int, element: Any, where: str) -> InputError:
    return InputError(f"element {index} of the JSON array is {type(element).__name__}, not an object (a record)",
                      location=where, remedy="give an array of objects, one per sample")


def _write_array(stream: _Stream, out: TextIO, where: str, strict: bool) -> int | None:
    """The array's records written one a line; their count, or None (not ``strict``) when an element is
    no object (then the rest is parsed, not written)."""
    count, records = 0, True
    stream.twice = False
    for index, element in enumerate(stream.items()):
        if not isinstance(element, dict):
            if strict:
                raise _not_record(index, element, where)
            records = False
        elif records:
            out.write((as_written(element) if stream.twice else json.dumps(element, ensure_ascii=False)) + "\n")
            stream.twice = False
            count += 1
    return count if records else None


def as_written(value: Any) -> str:
    """``value`` (parsed with :func:`.jsonl._pairs_hook`) as one JSON line, a key an object gives twice kept twice
    at any depth: the jsonl read then refuses it as it refuses the same line of a .jsonl file."""
    if isinstance(value, dict):
        pairs = getattr(value, "pairs", None) or value.items()
        return "{" + ", ".join(json.dumps(str(k), ensure_ascii=False) + ": " + as_written(v) for k, v in pairs) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(as_written(v) for v in value) + "]"
    return json.dumps(value, ensure_ascii=False, allow_nan=True)


def _outcomes(value: Any) -> bool:
    """A mapping of ids to non-empty lists of booleans or 0/1."""
    return isinstance(value, dict) and bool(value) and all(
        isinstance(v, list) and v and all(x in (0, 1) and not isinstance(x, float) for x in v) for v in value.values())


def _object(stream: _Stream, where: str, tmpdir: Path, outcome_key: str | None) -> tuple[Path, str]:
    """The records of a top-level object (its one list of records, or a mapping of outcomes) written as JSON
    lines in ``tmpdir``, and where they were found."""
    lists: dict[str, Path] = {}
    others: dict[str, Any] = {}
    for key in stream.members():
        if stream.peek() == "[":
            target = Path(tempfile.mkstemp(dir=tmpdir, suffix=".jsonl")[1])
            with open(target, "w", encoding="utf-8") as out:
                count = _write_array(stream, out, where, strict=False)
            if count:
                lists[str(key)] = target
            else:
                target.unlink()
        else:
            others[str(key)] = stream.value()
    if lists:
        return _one_list(lists, where), "a list of records"
    found = [k for k in ([outcome_key] if outcome_key in others else OUTCOME_KEYS) if _outcomes(others.get(k))]
    if len(found) > 1:
        raise InputError(f"the JSON object maps problems to outcomes under {len(found)} keys ({', '.join(found)}): "
                         "which one is the log?", location=where, remedy=f"pass --reward-col {found[0]}")
    if not found:
        raise NoDataError(f"the JSON object holds no list of records (keys: {', '.join(map(str, others))[:200]})",
                          location=where, remedy="give an array of objects, one per sample, or an object holding one "
                                                 "under a key (a mapping of ids to lists of outcomes under a key "
                                                 "--reward-col names)")
    key = found[0]
    target = Path(tempfile.mkstemp(dir=tmpdir, suffix=".jsonl")[1])
    with open(target, "w", encoding="utf-8") as out:
        for problem, outcomes in others[key].items():
            out.write(json.dumps({"id": str(problem), key: [int(x) for x in outcomes]}) + "\n")
    return target, f"outcomes under {key!r}"


def _one_list(lists: dict[str, Path], where: str) -> Path:
    """The one list of records of an object (the one under a known key beside others); several refused."""
    keys = list(lists)
    named = [k for k in RECORD_KEYS if k in lists]
    if len(keys) > 1 and len(named) != 1:
        shown = named if len(named) > 1 else keys
        raise InputError(f"the JSON object holds {len(keys)} lists of records ({', '.join(shown[:4])}"
                         f"{f' and {len(shown) - 4} more' if len(shown) > 4 else ''}): which one is the log?",
                         location=where, remedy="save each list as a file of its own, e.g. "
                                                f"jq '.{shown[0]}' {Path(where).name}")
    key = named[0] if len(keys) > 1 else keys[0]
    for k, p in lists.items():
        if k != key:
            p.unlink()
    return lists[key]


def as_lines(path: Path, shown: str, tmpdir: Path, outcome_key: str | None = None) -> Path:
    """The records of the JSON file ``path`` as a jsonl file (record N on line N; ``path`` itself when it is
    JSON lines); a malformed document is refused with its line and column. ``outcome_key``: the key of a
    mapping of outcomes to read (``--reward-col``)."""
    if json_lines(path):
        return path
    folder = Path(tempfile.mkdtemp(dir=tmpdir, prefix=f"{len(list(tmpdir.iterdir()))}_json_"))
    try:
        with open(path, encoding="utf-8-sig") as fh:
            stream = _Stream(fh, shown)
            first = stream.peek()
            if first == "[":
                target = folder / f"{path.stem}.jsonl"
                with open(target, "w", encoding="utf-8") as out:
                    _write_array(stream, out, shown, strict=True)
            elif first == "{":
                target, _ = _object(stream, shown, folder, outcome_key)
            else:
                value = stream.value()
                raise NoDataError(f"the JSON document is a {type(value).__name__}, not an array of records",
                                  location=shown, remedy="give an array of objects, one per sample")
            if stream.peek():
                raise stream.error("Extra data")
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 text (byte {exc.start})", location=shown) from exc
    return target
