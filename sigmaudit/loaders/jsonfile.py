"""A ``.json`` file of records: a JSON array of objects, or an object holding one list of objects
under a key, written out as JSON lines (one record a line, in the file's order) in the temporary
folder and read there as a jsonl file is, so both spellings of the same records read alike.

Writers that save this shape: τ-bench's ``run.py`` (sierra-research/tau-bench
59a200c6d575d595120f1cb70fea53cef0632f6b: ``json.dump([result.model_dump() for result in results], f,
indent=2)``, one ``EnvRunResult`` per task x trial), and any harness that ``json.dump``s a list.
An object with several lists of records (e.g. one per task) is refused with their keys, never pooled;
a document holding no records (a config, a run's metadata.json) is no log: skipped with a note in a
folder, refused when named.
"""

from __future__ import annotations

import json
from pathlib import Path

from ..errors import InputError, NoDataError

RECORD_KEYS = ("samples", "results", "records", "rollouts", "trajectories", "outputs", "data", "rows",
               "items", "logs")
"""Keys under which an object holds its list of records, tried in this order when it holds several lists."""


def decode_error(exc: json.JSONDecodeError) -> str:
    """The reason of a JSON decoding error with its column, whole: ``Invalid control character at column
    5`` (the decoder's own ``msg`` ends mid-sentence)."""
    msg = exc.msg
    return f"{msg} column {exc.colno}" if msg.endswith(" at") else f"{msg} at column {exc.colno}"


def _records(value: object, where: str) -> tuple[list[dict], str]:
    """The records and where in the document they were found."""
    if isinstance(value, list):
        bad = next((i for i, r in enumerate(value) if not isinstance(r, dict)), None)
        if bad is not None:
            raise InputError(f"element {bad} of the JSON array is {type(value[bad]).__name__}, not an object "
                             f"(a record)", location=where, remedy="give an array of objects, one per sample")
        return value, "the top-level array"
    if not isinstance(value, dict):
        raise NoDataError(f"the JSON document is a {type(value).__name__}, not an array of records",
                         location=where, remedy="give an array of objects, one per sample")
    lists = [k for k, v in value.items() if isinstance(v, list) and v and all(isinstance(r, dict) for r in v)]
    if not lists:
        raise NoDataError(f"the JSON object holds no list of records (keys: {', '.join(map(str, value))[:200]})",
                         location=where, remedy="give an array of objects, one per sample, or an object "
                                                "holding one under a key")
    if len(lists) > 1:
        named = [k for k in RECORD_KEYS if k in lists]
        if not named:
            raise InputError(f"the JSON object holds {len(lists)} lists of records ({', '.join(lists[:4])}"
                             f"{f' and {len(lists) - 4} more' if len(lists) > 4 else ''}): which one is the log?",
                             location=where, remedy="save each list as a file of its own, e.g. "
                                                    f"jq '.{lists[0]}' {Path(where).name}")
        lists = named[:1]
    key = lists[0]
    return value[key], f"key {key!r}"


def as_lines(path: Path, shown: str, tmpdir: Path) -> Path:
    """The records of the JSON file ``path`` written as a jsonl file in ``tmpdir`` (record N on line N);
    a malformed document is refused with its line and column."""
    from .jsonl import _pairs_hook, as_written

    try:
        with open(path, encoding="utf-8-sig") as fh:  # a key given twice is kept twice (jsonl.duplicate_key)
            value = json.load(fh, object_pairs_hook=_pairs_hook)
    except json.JSONDecodeError as exc:
        raise InputError(f"malformed JSON on line {exc.lineno}: {decode_error(exc)}",
                         location=f"{shown}:{exc.lineno}") from exc
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 text (byte {exc.start})", location=shown) from exc
    except RecursionError as exc:
        raise InputError("malformed JSON: nested too deeply", location=shown) from exc
    records, _ = _records(value, shown)
    target = tmpdir / f"{len(list(tmpdir.iterdir()))}_{path.stem}.jsonl"
    with open(target, "w", encoding="utf-8") as out:
        for record in records:
            out.write(as_written(record) + "\n")
    return target
