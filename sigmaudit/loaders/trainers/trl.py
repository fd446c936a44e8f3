"""TRL: ``GRPOTrainer.log`` (``trl/trainer/grpo_trainer.py``, ``log_completions=True``), read at
huggingface/trl f2cd57710ae345ea6428ae95363267fcf38a3dc8 (the parquet files exist since 035c3ff,
"Add parquet logging for completions", with the same deques).

Each ``log`` call writes ``{output_dir}/completions/completions_{global_step:05d}.parquet`` with
``step``, ``prompt``, ``completion``, one column per reward function (named after it), any
``log_extra`` columns and ``advantage``. The rows come from ``self._logs``: deques of
``maxlen=generation_batch_size`` that are never cleared, extended once per generation (in
``_generate_and_score_completions``) with the gathered batch, whose groups are consecutive rows
(``RepeatSampler`` repeats each prompt ``num_generations`` times in a row). So a file holds the
last generation batch, each row once.

No token count: ``completion`` is decoded text (``batch_decode``; a character count is not a token
count); a reward function can log one through ``log_extra``, read with ``--length-col``.

- group = a run of consecutive rows with one prompt (runs split into blocks of the gcd of the run
  lengths, for a prompt drawn twice in a row); G identical completions are one silent group, never
  a repeat.
- A generation serves ``steps_per_generation x num_iterations / gradient_accumulation_steps``
  optimizer steps (``_prepare_inputs``): when that is r > 1 and ``logging_steps`` < r, the same
  batch is written again under the next logged steps. A file whose rows (all columns but ``step``)
  equal those of the file logged just before it is counted once only with proof of that structure
  (:meth:`TRL.repeats`): its batch is a block of two or more groups (the same prompts in the same
  order cannot be drawn again: the sampler shuffles), or the folder's files repeat with a fixed
  period (every r-th file new). Otherwise the rows are kept and a note says what looked repeated.
"""

from __future__ import annotations

import functools
import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from ...errors import InputError, SchemaError
from ..columns import split_cols
from ..options import LoadOptions, length_flag
from ..readers import POLARS_ERRORS
from ..reduce import fractional_step_error
from ..rewards import is_reward_dtype
from ._common import Normalised, Repeats, TrainerReader, plain_name, run_groups

NAME = "trl"
HF_SAVED = {
    "adapter_config.json": "PEFT's adapter config",
    "tokenizer_config.json": "a tokenizer's config", "tokenizer.json": "a tokenizer",
    "special_tokens_map.json": "a tokenizer's special tokens", "added_tokens.json": "a tokenizer's added tokens",
    "vocab.json": "a tokenizer's vocabulary", "config.json": "a model config",
    "generation_config.json": "a generation config", "preprocessor_config.json": "a processor config",
    "processor_config.json": "a processor config", "video_preprocessor_config.json": "a processor config",
    "model.safetensors.index.json": "a weights index", "pytorch_model.bin.index.json": "a weights index",
    "modelcard.json": "a model card",
}
"""JSON files ``save_pretrained`` writes into a Trainer's output_dir and its ``checkpoint-N/`` folders (transformers
5.10.4 ``utils/__init__.py`` and ``tokenization_utils_base.py`` names; PEFT 0.21.2 ``utils/constants.py``
``CONFIG_NAME``); beside them ``trainer_state.json`` (read as a per-step series), weights, ``README.md`` and
``chat_template.jinja`` (not log formats: never listed)."""
CHECKPOINT_DIR = re.compile(r"checkpoint-\d+")
NON_REWARD = {"step", "prompt", "completion", "advantage", "image", "images"}
FILE = re.compile(r"completions_(\d+)\.parquet")


def _reward(schema: dict[str, pl.DataType], opts: LoadOptions, where: str) -> str:
    if opts.reward_col:
        if opts.reward_col not in schema:
            raise SchemaError(f"column {opts.reward_col!r} not found; columns: "
                              f"{', '.join(schema)}", location=where,
                              remedy="pick one of the listed columns")
        return opts.reward_col
    candidates = [c for c, t in schema.items()
                  if c not in NON_REWARD and c != opts.length_col and is_reward_dtype(t)]
    if not candidates:
        raise SchemaError("TRL completions file has no reward columns (older TRL versions log none)",
                          location=where, remedy="log rewards, or pass --reward-col COLUMN")
    if len(candidates) > 1:
        raise SchemaError(f"several reward columns ({', '.join(candidates)}); which one means "
                          f"correct?", location=where, remedy="pass --reward-col with one of them")
    return candidates[0]


def _table(path: Path) -> pl.DataFrame:
    try:
        df = pl.read_parquet(path) if path.suffix.lower() in (".parquet", ".pq") else \
            pl.read_csv(path) if path.suffix.lower() == ".csv" else pl.read_ndjson(path)
    except POLARS_ERRORS as exc:
        raise InputError(f"cannot read: {str(exc).splitlines()[0] if str(exc) else exc}",
                         location=str(path)) from exc
    return df.drop([c for c in ("image", "images") if c in df.columns])


def _as_text(df: pl.DataFrame, column: str) -> pl.Expr:
    """One prompt column as text: a string as it is, a conversation (TRL 1.16.0 logs ``prompts``
    as given: a list of ``{"role", "content"}`` messages, ``content`` text or a list of content
    blocks) or any other nested value as its JSON text, so equal conversations have equal keys."""
    dtype = df.schema[column]
    if isinstance(dtype, pl.List | pl.Array | pl.Struct):
        return pl.struct(pl.col(column).alias("m")).struct.json_encode().str.slice(5).str.head(-1).alias(column)
    return pl.col(column).cast(pl.Utf8)


def prompt_key(df: pl.DataFrame, prompt: Sequence[str]) -> pl.Series:
    """The prompt key of every row: the text of one column (:func:`_as_text`), or the texts of several
    joined by `` | ``."""
    try:
        return df.select(pl.concat_str([_as_text(df, c) for c in prompt], separator=" | ").alias("prompt")
                         ).to_series()
    except POLARS_ERRORS as exc:
        raise SchemaError(f"prompt column {prompt[0]!r} holds {df.schema[prompt[0]]} values that cannot be read as "
                          f"a prompt key", location=f"--prompt-col {','.join(prompt)}",
                          remedy="pass --prompt-col with a text or id column") from exc


def _length(df: pl.DataFrame, column: str, where: str) -> pl.Series:
    """The ``--length-col`` column of a completions table as the frame's ``length`` (numeric, else refused)."""
    if column not in df.columns:
        raise SchemaError(f"column {column!r} not found; columns: {', '.join(df.columns)}", location=where,
                          remedy="pick one of the listed columns")
    if not df.schema[column].is_numeric():
        raise SchemaError(f"length column {column!r} holds {df.schema[column]} values, not token counts",
                          location=f"{where}: column {column}",
                          remedy="pass --length-col with a column of generated tokens per rollout")
    return df[column].cast(pl.Float64).alias("length")


@dataclass(frozen=True)
class _Batch:
    """What the repeat check needs of one completions file."""

    digest: str
    """sha256 over the row hashes of every column but ``step``."""
    groups: int
    """Groups (runs of one prompt) in the file."""
    rows: int


@functools.lru_cache(maxsize=4096)
def _batch(path: Path, mtime_ns: int, size: int) -> _Batch | None:
    try:
        df = _table(path)
    except InputError:
        return None  # the read reports it
    body = df.drop("step") if "step" in df.columns else df
    digest = hashlib.sha256(body.hash_rows(seed=0).to_numpy().tobytes()).hexdigest()
    groups = run_groups(prompt_key(df, ("prompt",)), "") if "prompt" in df.columns else None
    n = groups.n_unique() if groups is not None else 0
    return _Batch(digest, n, df.height)


def _same_rows(a: Path, b: Path) -> bool:
    """Every column but ``step`` equal, row for row (the digest's proof)."""
    x, y = _table(a), _table(b)
    return x.drop("step", strict=False).equals(y.drop("step", strict=False))


def _period(flags: list[bool]) -> tuple[int, int] | None:
    """(r, phase): the smallest r >= 2 such that every file but each r-th from ``phase`` repeats the
    file before it, over at least two whole blocks; None when there is none."""
    n = len(flags)
    for r in range(2, n // 2 + 1):
        for phase in range(r):
            if all(flags[i] for i in range(1, n) if (i - phase) % r):
                return r, phase
    return None


def _repeats_in(folder: list[Path]) -> Repeats:
    """The repeat verdicts for the completions files of one folder, in step order."""
    batches = []
    for f in folder:
        st = f.stat()
        batches.append(_batch(f, st.st_mtime_ns, st.st_size))
    flags = [False] + [a is not None and b is not None and a.digest == b.digest and _same_rows(p, q)
                       for p, q, a, b in zip(folder, folder[1:], batches, batches[1:], strict=False)]
    period = _period(flags)
    dropped: dict[Path, str] = {}
    proofs: set[str] = set()
    kept: list[Path] = []
    for i, (f, flag, b) in enumerate(zip(folder, flags, batches, strict=True)):
        if not flag or b is None:
            continue
        if b.groups >= 2:
            dropped[f] = folder[i - 1].name
            proofs.add("the same prompts in the same order over a whole block of groups")
        elif period is not None and (i - period[1]) % period[0]:
            dropped[f] = folder[i - 1].name
            proofs.add(f"a new batch every {period[0]} files over the run, the others equal to the file before")
        else:
            kept.append(f)
    notes = []
    if dropped:
        rows = sum(b.rows for f, b in zip(folder, batches, strict=True) if f in dropped and b)
        first = next(iter(dropped))
        more = f" and {len(dropped) - 1} more" if len(dropped) > 1 else ""
        verb = "log" if more else "logs"
        notes.append(f"TRL: {first.name}{more} ({rows:,} rows) {verb} again the generation batch of the file "
                     f"logged before ({dropped[first]}; proof: {'; '.join(sorted(proofs))}; one generation "
                     f"serves several optimizer steps when steps_per_generation x num_iterations > "
                     f"gradient_accumulation_steps): counted once; --keep-duplicates reads them")
    if kept:
        more = f" and {len(kept) - 1} more" if len(kept) > 1 else ""
        verb = "hold" if more else "holds"
        notes.append(f"TRL: {kept[0].name}{more} {verb} the same rows as the file logged before (one "
                     f"prompt, e.g. G identical completions: a silent group): kept, as no repeat pattern "
                     f"across the run proves a re-logged batch")
    return Repeats(dropped, tuple(notes))


@functools.lru_cache(maxsize=8)
def _saved_folders(files: frozenset[Path]) -> dict[Path, int]:
    """Per folder, how many of ``files`` are a checkpoint's saved JSON (:data:`HF_SAVED`, ``trainer_state.json``)."""
    out: dict[Path, int] = {}
    for f in files:
        if plain_name(f) in HF_SAVED or plain_name(f) == "trainer_state.json":
            out[f.parent] = out.get(f.parent, 0) + 1
    return out


def _saved_count(files: frozenset[Path], folder: Path) -> int:
    return _saved_folders(files).get(folder, 0)


class TRL(TrainerReader):
    """TRL completions tables (see the module docstring)."""

    name = NAME
    key_options = frozenset({"prompt_col", "group_col"})

    def claims(self, path: Path, schema: dict[str, pl.DataType]) -> bool:
        """TRL completions tables, by their columns."""
        return {"step", "prompt", "completion"} <= set(schema) and "input" not in schema

    def skip(self, path: Path, files: frozenset[Path]) -> str | None:
        """A model's, adapter's or tokenizer's saved JSON (:data:`HF_SAVED`) in a ``checkpoint-N/`` folder, or beside
        another such file or a ``trainer_state.json``: not a log."""
        name = plain_name(path)
        if name in HF_SAVED and (CHECKPOINT_DIR.fullmatch(path.parent.name) or _saved_count(files, path.parent) > 1):
            return f"{HF_SAVED[name]} (save_pretrained), not a log"
        return None

    def repeats(self, files: Sequence[Path]) -> Repeats:
        """Completions files that log the batch of the file logged before them again (see the
        module docstring for the proof asked), per folder."""
        folders: dict[Path, list[tuple[int, Path]]] = {}
        for f in files:
            m = FILE.fullmatch(f.name)
            if m:
                folders.setdefault(f.parent, []).append((int(m.group(1)), f))
        dropped: dict[Path, str] = {}
        notes: list[str] = []
        for members in folders.values():
            if len(members) > 1:
                found = _repeats_in([f for _, f in sorted(members)])
                dropped.update(found.dropped)
                notes.extend(found.notes)
        return Repeats(dropped, tuple(notes))

    def run_root(self, path: Path) -> Path:
        """``{output_dir}`` of ``{output_dir}/completions/completions_N.parquet``."""
        return path.parent.parent if path.parent.name == "completions" else path.parent

    def read(self, path: Path, opts: LoadOptions) -> Normalised:
        """One completions file as a long frame (every row)."""
        df = _table(path)
        where = str(path)
        reward = _reward(dict(df.schema), opts, where)
        prompt = split_cols(opts.prompt_col) or ("prompt",)
        key = prompt_key(df, prompt)
        if "step" in df.columns and (err := fractional_step_error(
                df["step"], "step", where, remedy="TRL logs its whole global_step there: restore the file's steps, "
                "or convert it to a long log and pass --step-col")):
            # a cast would truncate 1.5 to 1, merging steps (issue 36 item 19); InputError: a folder's
            # file refused for its values is not skipped as one of another layout
            raise InputError(err.message, location=err.location, remedy=err.remedy)
        try:
            step = df["step"].cast(pl.Int64)
        except POLARS_ERRORS as exc:
            raise SchemaError("step column 'step' is not an integer step",
                              location=f"{path}: column step") from exc
        if opts.group_col and opts.group_col not in df.columns:
            raise SchemaError(f"column {opts.group_col!r} not found; columns: {', '.join(df.columns)}",
                              location=where, remedy="pick one of the listed columns for --group-col")
        groups = (df.select(pl.concat_str(pl.lit(f"{path}:"), pl.col(opts.group_col).cast(pl.Utf8))).to_series()
                  if opts.group_col else run_groups(key, str(path)))
        frame = pl.DataFrame({"step": step, "group": groups, "prompt": key,
                              "reward": df[reward].cast(pl.Float64)})
        if opts.length_col is not None:  # TRL logs text only; a reward function's log_extra column may hold lengths
            frame = frame.with_columns(_length(df, opts.length_col, where))
        half = df.height // 2
        notes: tuple[str, ...] = ()
        if half and df.height % 2 == 0 and groups.head(half).n_unique() >= 2 and \
                df.head(half).drop("step").equals(df.tail(half).drop("step")):
            notes = (f"TRL: {path.name}'s second {half:,} rows repeat its first {half:,} (a file written "
                     f"twice?): kept, as TRL writes each row of a batch once per file",)
        chat = [c for c in prompt if isinstance(df.schema[c], pl.List | pl.Array | pl.Struct)]
        said = ", ".join(f"{c} (the JSON text of its messages)" if c in chat else c for c in prompt)
        grouping = f"group = {opts.group_col}" if opts.group_col else \
            "group = a run of consecutive rows with one prompt"
        return Normalised(frame, NAME, f"detected TRL completions layout: {grouping}, prompt = {said}, step from "
                          f"step, reward from {reward}", reward, extra_notes=notes,
                          length_source=None if opts.length_col is None else length_flag(opts.length_col))


READER = TRL()
