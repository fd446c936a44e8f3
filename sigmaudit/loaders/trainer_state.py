"""transformers' ``trainer_state.json``: a Trainer's metrics, read as a per-step series (:mod:`.series`).

Writer (transformers 5.10.4, ``trainer_callback.py``): ``TrainerState.save_to_json`` writes
``json.dumps(dataclasses.asdict(self), indent=2, sort_keys=True) + "\\n"``, called from ``Trainer._save_checkpoint``
into ``{output_dir}/checkpoint-{global_step}/`` (and from ``Trainer.save_state`` into ``{output_dir}``).
``log_history`` holds one record per ``Trainer.log`` call: the logged values plus ``"step": global_step``; TRL's
``GRPOTrainer.log`` (TRL 1.16.0) adds ``frac_reward_zero_std`` (eval records ``eval_``-prefixed), and the run's
summary record (``train_runtime``...) ends it. Python's ``json.dumps`` writes a float that is not finite as a bare
``NaN`` or ``Infinity`` (``grad_norm`` on an fp16 overflow step): Python's JSON reader takes it, so the file is
read here, and only the values the series reads are checked, each error naming its ``log_history`` record.

A checkpoint's ``log_history`` holds every record logged up to it: the checkpoints of one run repeat each other's
steps (:func:`.series.merge_series` keeps a step once when the values agree).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import polars as pl

from ..errors import InputError, NoDataError, SchemaError
from .jsonfile import decode_error
from .options import LoadOptions
from .series import METRIC_STEPS, series_columns

FILE_NAME = "trainer_state.json"
STATE_KEYS = frozenset({"log_history", "global_step"})
"""Keys every ``TrainerState`` document holds."""


def claims(path: Path) -> bool:
    """A file written by ``TrainerState.save_to_json`` (its name; gzip or zstd archived alike)."""
    from .trainers._common import plain_name

    return plain_name(path) == FILE_NAME


def _document(path: Path) -> dict:
    from .trainers._common import open_text

    try:
        with open_text(path) as fh:
            value = json.load(fh)
    except json.JSONDecodeError as exc:
        raise InputError(f"malformed JSON on line {exc.lineno}: {decode_error(exc)}",
                         location=f"{path}:{exc.lineno}") from exc
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 text (byte {exc.start})", location=str(path)) from exc
    if not isinstance(value, dict) or not STATE_KEYS <= set(value) or not isinstance(value["log_history"], list):
        raise NoDataError("named trainer_state.json but no transformers TrainerState (no log_history list)",
                          location=str(path), remedy="give the trainer_state.json a Trainer saved")
    return value


def _number(value: object) -> bool:
    return value is None or (isinstance(value, int | float) and not isinstance(value, bool))


def frame(path: Path) -> pl.DataFrame:
    """``log_history`` as a frame: one row per record, one Float64 column per key whose values are all numbers
    (or null; a NaN stays NaN), any other key as its JSON text; ``_record`` numbers the records from 1."""
    records = _document(path)["log_history"]
    bad = next((i for i, r in enumerate(records, start=1) if not isinstance(r, dict)), None)
    if bad is not None:
        raise InputError(f"record {bad} of log_history is no JSON object", location=f"{path}: log_history record {bad}")
    keys = list(dict.fromkeys(k for r in records for k in r))
    columns: dict[str, pl.Series] = {"_record": pl.Series(range(1, len(records) + 1), dtype=pl.Int64)}
    for key in keys:
        values = [r.get(key) for r in records]
        if all(_number(v) for v in values):
            columns[key] = pl.Series(key, [None if v is None else float(v) for v in values], dtype=pl.Float64)
        else:
            columns[key] = pl.Series(key, [None if v is None else json.dumps(v) for v in values], dtype=pl.Utf8)
    if not records:
        raise NoDataError("log_history is empty (no step was logged yet)", location=str(path))
    return pl.DataFrame(columns)


def _check_read(df: pl.DataFrame, step: str, mapping: dict[str, str], path: Path) -> None:
    """Refuse a value the series reads that is not finite (NaN, Infinity) or a step that is no whole number,
    naming its ``log_history`` record; the other keys (``grad_norm``...) are never read, whatever they hold."""
    read = list(mapping.values())
    logged = df.filter(pl.any_horizontal(pl.col(c).is_not_null() for c in read))
    for col in read:
        bad = logged.filter(pl.col(col).is_not_null() & ~pl.col(col).is_finite())
        if bad.height:
            value = bad[col][0]
            said = "NaN" if math.isnan(value) else "Infinity" if value > 0 else "-Infinity"
            raise SchemaError(f"{col} is {said} in record {bad['_record'][0]} of log_history (counted from 1; the "
                              f"trainer logged no number there)", location=str(path),
                              remedy="remove that record, or set the value to null")
    bad = logged.filter(pl.col(step).is_null() | ~pl.col(step).is_finite() | (pl.col(step) != pl.col(step).floor()))
    if bad.height:
        raise SchemaError(f"record {bad['_record'][0]} of log_history (counted from 1) has {step} {bad[step][0]}, not "
                          "a whole step", location=str(path),
                          remedy="give the trainer_state.json as the Trainer wrote it")


def series_source(path: Path, opts: LoadOptions) -> tuple[pl.LazyFrame, str, dict[str, str]]:
    """(the records' lazy frame, step column, {field: column}) of a ``trainer_state.json``; SchemaError when it
    logs none of the shares a series reads (a Trainer without them: SFT, DPO...), naming what it does log."""
    df = frame(path)
    schema = {c: t for c, t in df.schema.items() if c != "_record"}
    found = series_columns(schema, opts.step_col, path.name, str(path), (opts.silent_share_col, opts.group_count_col))
    if found is None:
        logged = [c for c in schema if c not in METRIC_STEPS and not c.startswith("eval_")]
        raise SchemaError(f"a transformers trainer_state.json whose log_history logs no share of silent groups "
                          f"(it logs {', '.join(logged[:6])}{' ...' if len(logged) > 6 else ''})", location=str(path),
                          remedy="a GRPO run logs frac_reward_zero_std (TRL); name another column with "
                                 "--silent-share-col, or give the rollout dump")
    step, mapping = found
    _check_read(df, step, mapping, path)
    return df.drop("_record").lazy(), step, mapping
