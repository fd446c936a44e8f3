"""One streaming group-by per file: rows -> partial counts per (step, group, prompt).

Each file is reduced on its own (so an error names its file and a progress callback can tick),
grouping on the raw key columns; keys are turned into strings only on the small result.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import pairwise

import polars as pl

from ..errors import SchemaError, SigmauditError
from .columns import ColumnMap
from .readers import POLARS_ERRORS, Source, csv_skip_rows
from .rewards import non_binary_error, reward_flags

PARTIAL_SCHEMA = {"step": pl.Int64, "gid": pl.Utf8, "prompt": pl.Utf8, "n": pl.Int64, "k": pl.Int64}
HANDOFF_MISSING = "missing_rewards"
"""A counts table's column of rewards missing (null/NaN) in each row, excluded from n (``sigmaudit reduce``)."""
RATE_TOLERANCE = 5e-5
"""A pass rate r gives k = round(r * n) when |r * n - k| <= RATE_TOLERANCE * n, i.e. rates
written with at least 4 decimals are accepted; anything further off is an error."""


@dataclass(frozen=True)
class Partial:
    """Counts from one file."""

    frame: pl.DataFrame
    """Columns of ``PARTIAL_SCHEMA``: one row per (step, group, prompt) seen in the file."""
    duplicates: int
    """Exact duplicate rows dropped."""
    rows: int
    """Samples read (rows of a long log, list entries of a grouped log, rows of a counts file)."""
    missing: int
    """Missing (null/NaN) rewards among them."""
    null_keys: int = 0
    """Rows (samples) dropped because their prompt key is null; not in ``rows``."""
    missing_at: pl.DataFrame | None = field(default=None, compare=False)
    """``step``, ``prompt``, ``missing``: where the missing rewards were (rows with missing > 0 only),
    for the counts hand-off (``handoff.counts_table``)."""
    notes: tuple[str, ...] = ()
    """What looked odd in the file's keys (:func:`pooled_keys`)."""

    @classmethod
    def of(cls, frames: list[pl.DataFrame], duplicates: int) -> Partial:
        """From ``_finish`` frames: their ``rows``/``missing`` columns summed, then dropped
        (one frame at a time, so big logs never hold those columns for every group); rows with a
        null prompt key are counted in ``null_keys`` and dropped."""
        rows = missing = null_keys = 0
        kept, where = [], []
        for frame in frames:
            if frame["prompt"].null_count():
                null_keys += int(frame.filter(pl.col("prompt").is_null())["rows"].sum())
                frame = frame.filter(pl.col("prompt").is_not_null())
            rows += int(frame["rows"].sum())
            missing += int(frame["missing"].sum())
            where.append(missing_at(frame))
            kept.append(frame.drop("missing", "rows"))
        return cls(pl.concat(kept) if len(kept) > 1 else kept[0], duplicates, rows, missing, null_keys,
                   pl.concat(where))


MISSING_AT = {"step": pl.Int64, "prompt": pl.Utf8, "missing": pl.Int64}


def missing_at(frame: pl.DataFrame) -> pl.DataFrame:
    """The (step, prompt) of a reduced frame's missing rewards (``MISSING_AT``), rows with some only."""
    if not int(frame["missing"].sum()):
        return pl.DataFrame(schema=MISSING_AT)
    return (frame.filter(pl.col("missing") > 0).group_by("step", "prompt", maintain_order=True)
            .agg(pl.col("missing").sum()).select(*(pl.col(c).cast(t) for c, t in MISSING_AT.items())))


def _collect(src: Source, lf: pl.LazyFrame) -> pl.DataFrame:
    try:
        return lf.collect(engine="streaming")
    except POLARS_ERRORS as exc:
        raise src.fail(exc) from exc


def fractional_step_error(values: pl.Series, column: str, where: str,
                          remedy: str = "pass --step-col with the column of whole training steps",
                          ) -> SchemaError | None:
    """The refusal of a step column holding a value that is no whole number (0.5, 1.5), or None. A trainer's
    step is a whole optimizer step; a fractional one is an epoch or a time, and casting it to an integer
    would merge steps 1.0 and 1.5 into one "step 1" (issue 36 item 19). Whole floats (1.0, 2.0) are steps."""
    if not values.dtype.is_float():
        return None
    finite = values.filter(values.is_finite())
    bad = finite.filter(finite != finite.floor())
    if bad.is_empty():
        return None
    first = bad.sort()[0]
    return SchemaError(f"step column {column!r} holds steps that are not whole numbers (first {float(first)!r}, "
                       f"{bad.n_unique():,} such values): an epoch or a time is not a training step",
                       location=f"{where}: column {column}", remedy=remedy)


def prompt_key(columns: tuple[str, ...] | list[str], schema: pl.Schema | dict[str, pl.DataType]) -> pl.Expr:
    """The prompt key as text: one column as itself (cast to text), several joined by " | " past their nulls.
    A key whose every part is null is null (dropped and counted as a null prompt key, as a null text prompt
    is), never the text "": an integer prompt column with nulls would otherwise pool those rows into one
    prompt "" that no row names."""
    if len(columns) == 1:
        c = columns[0]
        return pl.col(c) if schema[c] == pl.Utf8 else pl.col(c).cast(pl.Utf8)  # a text column is the key itself
    joined = pl.concat_str([pl.col(c).cast(pl.Utf8) for c in columns], separator=" | ", ignore_nulls=True)
    return pl.when(pl.all_horizontal(pl.col(c).is_null() for c in columns)).then(None).otherwise(joined)


def _finish(src: Source, plan: ColumnMap, df: pl.DataFrame, gid: pl.Expr) -> pl.DataFrame:
    """Raw-keyed aggregate -> ``PARTIAL_SCHEMA`` (string prompt key, Int64 step)."""
    prompt = prompt_key(plan.prompt, df.schema)
    step = pl.col(plan.step) if plan.step else pl.lit(None)
    if plan.step and plan.step in df.columns and (err := fractional_step_error(df[plan.step], plan.step,
                                                                                 str(src.path))):
        raise err
    order = [c for c in (plan.step, *plan.prompt, plan.group, "__row") if c and c in df.columns]
    try:
        # sort on the raw keys (cheap) and project in one plan: the rows are gathered once
        out = df.lazy().sort(list(dict.fromkeys(order)), nulls_last=True).select(
            step.cast(pl.Int64).alias("step"), gid.cast(pl.Utf8).alias("gid"),
            prompt.alias("prompt"), *(pl.col(c).cast(pl.Int64) for c in ("n", "k", "missing", "rows")),
            *(pl.col(c).cast(pl.Float64) for c in SPREAD_COLUMNS if c in df.columns),
            *(pl.col(c).cast(pl.Int64) for c in LENGTH_COLUMNS if c in df.columns)).collect()
    except POLARS_ERRORS as exc:
        raise _key_error(src, plan, df, exc) from exc
    return out  # rows with a null prompt key are counted and dropped by Partial.of


def _key_error(src: Source, plan: ColumnMap, df: pl.DataFrame, exc: BaseException) -> SchemaError:
    """The error for a key that cannot become a prompt key, a step or a group id, naming the column at
    fault: a nested prompt or group column (a list, a struct), a step that is no integer; any other
    failure as the reader's own words, never blamed on a column it did not come from."""
    for role, columns, flag in (("prompt key", plan.prompt, "--prompt-col"),
                                ("group id", (plan.group,), "--group-col")):
        for column in (c for c in columns if c and c in df.columns):
            if df.schema[column].is_nested():
                return SchemaError(f"{role} column {column!r} holds {df.schema[column]} values (a list or a record, "
                                   "not an id)", location=f"{src.path}: column {column}",
                                   remedy=f"pass {flag} with a column of ids (text or numbers)")
    if plan.step and plan.step in df.columns:
        try:
            df.select(pl.col(plan.step).cast(pl.Int64))
        except POLARS_ERRORS:
            return SchemaError(f"step column {plan.step!r} is not an integer step ({df.schema[plan.step]} values)",
                               location=f"{src.path}: column {plan.step}",
                               remedy="pass --step-col with an integer column")
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return SchemaError(f"cannot form the group keys ({', '.join(c for c in plan.key_columns if c)}): {text[:160]}",
                       location=str(src.path), remedy="pick the key columns with --prompt-col, --step-col, --group-col")


SPREAD_COLUMNS = ("rmin", "rmax")
"""With ``--threshold`` (rewards that need not be 0/1): each group's smallest and largest raw reward, so a
group whose rewards have zero spread (no gradient at all) is told from one silent only on correctness."""


LENGTH_COLUMNS = ("tokens", "tokens_missing")
"""With a length column (generated tokens per rollout): each group's tokens over its rollouts with a reward,
and how many of those rollouts had no length (then the group's tokens are not known in full)."""


def _lengths(plan: ColumnMap, valid: pl.Expr) -> tuple[pl.Expr, ...]:
    """A group's token aggregations (none without a length column): ``tokens``, ``tokens_missing`` and
    ``bad_length`` (lengths that are no token count: negative, fractional or infinite)."""
    if plan.length is None:
        return ()
    length = pl.col(plan.length).cast(pl.Float64)
    known = valid & length.is_not_null() & ~length.is_nan()
    bad = known & ((length < 0) | length.is_infinite() | (length != length.round(0)))
    return (length.filter(known).sum().alias("tokens"), (valid & ~known).sum().alias("tokens_missing"),
            bad.sum().alias("bad_length"))


def bad_length_error(column: str, where: str) -> SchemaError:
    """The error for a length column whose values are not token counts (the same on every engine)."""
    return SchemaError(f"length column {column!r} holds values that are not token counts (negative, fractional "
                       "or infinite): a length is a whole number of tokens >= 0", location=where,
                       remedy="pass --length-col with a column of generated tokens per rollout")


def _spread(valid_rewards: pl.Expr, threshold: float | None) -> tuple[pl.Expr, ...]:
    """The raw-reward range aggregations of a group (none without a threshold: rewards are 0/1 there)."""
    if threshold is None:
        return ()
    return valid_rewards.min().alias("rmin"), valid_rewards.max().alias("rmax")


def _prepared(src: Source, plan: ColumnMap) -> pl.LazyFrame:
    lf = src.lf
    if plan.derived:
        lf = lf.with_columns([expr.alias(name) for name, expr in plan.derived])
    if plan.row_filter is not None:
        lf = lf.filter(plan.row_filter)
    return lf


TWIN_SUFFIXES = ("_binarized", "_binarised", "_binary", "_bin", "_bool", "_correct", "_passed")
"""Name endings of a binary column written beside a continuous one (``score`` and ``score_binarized``)."""


def binary_twin(src: Source, column: str) -> str | None:
    """A column beside the reward ``column`` named after it (``score_binarized``, ``score_binary``, ``is_score``...)
    whose values are all 0/1 or booleans, for the non-binary refusal to name (issue 43); None when none is."""
    low = column.lower()
    names = [c for c in src.schema if c != column and (c.lower().startswith(low) or c.lower().endswith(low))
             and (src.schema[c] == pl.Boolean or src.schema[c].is_numeric())]
    names.sort(key=lambda c: not c.lower().endswith(TWIN_SUFFIXES))
    for name in names:
        values = pl.col(name).cast(pl.Float64).drop_nulls()
        try:
            binary = _collect(src, src.lf.select((values.is_in([0.0, 1.0]).all() & (values.len() > 0)).alias("b")))
        except SigmauditError:
            continue
        if binary["b"][0]:
            return name
    return None


def reduce_samples(src: Source, plan: ColumnMap, threshold: float | None,
                   tick: Callable[[int], None] | None = None) -> Partial:
    """Long and trainer layouts: one row per sample. ``tick`` gets the rows done so far within the
    file after each step range of a big log (for a progress indicator)."""
    lf = _prepared(src, plan)
    duplicates = 0
    deduped = False
    keys = [plan.step, plan.group, *plan.prompt] if plan.has_groups else list(plan.prompt)
    keys = list(dict.fromkeys(k for k in keys if k))
    rows = lf  # what the group-by reads: the file, or the file's rows already read into memory
    if plan.dedupe:
        # TRL writes a step's rows twice; any other log is checked for the whole file appended to itself
        trl = plan.layout == "trl"
        may_repeat, held = _screen(src, lf, plan, [*keys, plan.reward, *([plan.length] if plan.length else [])])
        if held is not None:
            rows = held.lazy()
        if may_repeat:  # the full check, on every column (the screen held only the needed ones)
            table = _collect(src, lf.select(plan.dedupe))
            table, duplicates = drop_repeated_blocks(table, plan.step if trl else None, distinct=not trl,
                                                     steps_col=plan.step)
            deduped = trl or duplicates > 0
            if deduped:
                lf = rows = table.lazy()
    x = pl.col(plan.reward).cast(pl.Float64)
    valid, correct, bad = reward_flags(x, threshold)
    # missing = rows − n, taken after the group-by (an aggregation fewer over every row)
    aggs = (valid.sum().alias("n"), correct.sum().alias("k"), pl.len().alias("rows"), bad.sum().alias("bad"),
            *_spread(x.filter(valid), threshold), *_lengths(plan, valid))
    gid = pl.col(plan.group) if plan.group and plan.has_groups else pl.lit(None)
    key_types: dict[str, pl.DataType] = {}

    def reduced(part: pl.LazyFrame) -> Partial:
        df = _collect(src, part.group_by(keys).agg(*aggs)).with_columns(missing=pl.col("rows") - pl.col("n"))
        key_types.update((k, df.schema[k]) for k in keys)
        if df["bad"].sum():
            sample = _collect(src, lf.select(x).filter(bad).unique(maintain_order=True).head(5)).to_series().to_list()
            raise non_binary_error(sorted(sample), plan.reward, str(src.path), binary_twin(src, plan.reward))
        if plan.length is not None and df["bad_length"].sum():
            raise bad_length_error(plan.length, str(src.path))
        return Partial.of([_finish(src, plan, df, gid)], duplicates)

    ranges = None if deduped or rows is not lf else step_ranges(src, plan)
    if ranges is None:
        part = reduced(rows)
        return _noted(src, plan, part, keys_one_to_one(plan, key_types))
    # Groups never straddle steps, so each step range is reduced and sorted on its own; the
    # ranges come in step order (null steps last), so their concatenation is sorted too.
    parts = []
    for r in ranges:
        parts.append(reduced(lf.filter(r)))
        if tick is not None:
            tick(sum(p.rows for p in parts))
    return _noted(src, plan, Partial(pl.concat([p.frame for p in parts]), duplicates, sum(p.rows for p in parts),
                                     sum(p.missing for p in parts), sum(p.null_keys for p in parts),
                                     pl.concat([p.missing_at for p in parts if p.missing_at is not None]
                                               or [pl.DataFrame(schema=MISSING_AT)])),
                  keys_one_to_one(plan, key_types))


def keys_one_to_one(plan: ColumnMap, key_types: dict[str, pl.DataType]) -> bool:
    """Whether :func:`_finish` maps the raw keys of :func:`reduce_samples`' group-by (of types ``key_types``)
    one to one onto (step, gid, prompt): an integer step (cast to Int64), a text or integer group id (cast to
    text), one text or integer prompt column (a prompt of several columns is joined into one text, where
    ("a", null) and (null, "a") meet). Then the reduced frame holds each (step, gid, prompt) once: the raw keys
    are distinct within a group-by, and step ranges share no step."""
    def text_or_int(column: str) -> bool:
        return column in key_types and (key_types[column] == pl.Utf8 or key_types[column].is_integer())

    return (len(plan.prompt) == 1 and text_or_int(plan.prompt[0])
            and (not plan.step or (plan.step in key_types and key_types[plan.step].is_integer()))
            and (not (plan.group and plan.has_groups) or text_or_int(plan.group)))


OUTLIER_SIZE = 1.5
"""A key holding more than this many times the modal number of samples is an outlier: halfway between one key's
samples (1x) and two keys' pooled into one (2x)."""


def _noted(src: Source, plan: ColumnMap, part: Partial, unique: bool = False) -> Partial:
    note = pooled_keys(src, plan, part.frame, unique)
    return part if note is None else dataclasses.replace(part, notes=(*part.notes, note))


def _modal(sizes: pl.Series) -> int:
    """The most common size (the smallest among ties)."""
    return int(sizes.value_counts(name="count").sort(["count", sizes.name], descending=[True, False])[sizes.name][0])


def pooled_keys(src: Source, plan: ColumnMap, frame: pl.DataFrame, unique: bool = False) -> str | None:
    """The note for keys (groups, or prompts without groups) whose sizes jump past the rest -- more than
    :data:`OUTLIER_SIZE` x the modal size -- naming the columns that would split them: a column the key leaves out
    that takes several values within every such key and one value within most keys of two or more rows (a column
    telling runs apart is constant within one run's key; one that varies sample by sample, a trial or seed,
    varies within most keys). The modal size must be 2 or more (keys of one sample say nothing).
    Issue 43: (model, task_id) pooled two ``alias`` values of one model code, 831 prompts read as 748, sizes 121 and
    122 beside 1-96. None when no key is so, or no column splits them; the extra pass over the rows is made only
    when the counts show such keys. ``unique``: ``frame`` holds each (step, gid, prompt) once
    (:func:`keys_one_to_one`), so its ``n`` are the sizes without a group-by (4-6 s CPU over 5M groups)."""
    sizes = frame["n"] if unique else frame.group_by("step", "gid", "prompt").agg(pl.col("n").sum())["n"]
    modal = _modal(sizes) if sizes.len() >= 3 else 0
    if modal < 2 or not 0 < int((sizes > OUTLIER_SIZE * modal).sum()) * 2 <= sizes.len():
        return None
    used = {*plan.prompt, plan.step, plan.group, plan.reward, plan.length, *(d for d, _ in plan.derived)}
    candidates = [c for c, t in src.schema.items() if c not in used and (t == pl.Utf8 or t.is_integer()
                                                                         or t == pl.Categorical)]
    keys = [k for k in dict.fromkeys([plan.step, plan.group, *plan.prompt]) if k]
    if not candidates or not keys:
        return None
    per_key = _collect(src, _prepared(src, plan).group_by(keys).agg(
        pl.len().alias("__rows"), *(pl.col(c).n_unique().alias(c) for c in candidates)))
    modal = _modal(per_key["__rows"])
    big = per_key.filter(pl.col("__rows") > OUTLIER_SIZE * modal)
    several = per_key.filter(pl.col("__rows") > 1)  # a key of one row has one value of every column
    splits = [c for c in candidates if big.height and bool((big[c] > 1).all())
              and int((several[c] == 1).sum()) * 2 > several.height]
    if not splits:
        return None
    varying = int(per_key.select(pl.any_horizontal(pl.col(splits) > 1).sum()).item())
    return (f"{big.height:,} of {per_key.height:,} prompt keys hold more than {OUTLIER_SIZE:g}x the usual {modal:,} "
            f"samples (up to {int(big['__rows'].max()):,}), and column {', '.join(splits)} takes several values within "
            f"each of them ({varying:,} keys in all) and one within most keys: they may pool what it tells apart (two "
            f"models sharing a code?); to split them: --prompt-col {','.join([*plan.prompt, *splits])}")


def _screen(src: Source, lf: pl.LazyFrame, plan: ColumnMap, needed: list[str]) -> tuple[bool, pl.DataFrame | None]:
    """(could the repeated-block check drop rows?, the file's ``needed`` columns in memory or None).

    :func:`drop_repeated_blocks` without ``step`` drops rows only when the table has an even,
    non-zero height and its first half equals its second half row for row; each test below is
    implied by that, so when one fails nothing can be dropped. A text file (jsonl, csv) is read
    once, the ``needed`` columns only (equal halves on every column imply equal halves on these),
    and reduced from memory instead of being parsed a second time; only when those halves are equal
    is every column read for the full check. A parquet file is not read for the check:
    its height (from the footer) and two rows, row 0 and the first row of the second half, decide
    whether the full check must run (step-range reduction and its memory bound are kept). TRL's
    per-step check and plans with derived columns or a row filter take the full check."""
    if (plan.layout == "trl" or plan.derived or plan.row_filter is not None
            or not set(needed) <= set(plan.dedupe)):
        return True, None
    if src.fmt == "parquet":
        height = int(_collect(src, lf.select(pl.len())).item())
        if height % 2 or not height:
            return False, None
        table = lf.select(plan.dedupe)
        first = _collect(src, table.slice(0, 1))
        return first.equals(_collect(src, table.slice(height // 2, 1))), None
    held = _collect(src, lf.select(list(dict.fromkeys(needed))))
    half = held.height // 2
    return bool(half) and held.height % 2 == 0 and held.head(half).equals(held.tail(half)), held


CHUNK_ROWS = 10_000_000
"""A step-ordered parquet log with more rows than this is reduced in step ranges of about this
many rows: one group-by over 80M rows and 5M groups peaked at 1.5 GB, eight over ranges of
10M rows at 0.66 GB, and ran twice as fast (benchmarks/README.md)."""


def step_ranges(src: Source, plan: ColumnMap) -> list[pl.Expr] | None:
    """Filters cutting a large parquet log into step ranges of about ``CHUNK_ROWS`` rows, or None.

    Ranges are taken only when the file's row-group statistics show its steps in order (a log
    written step by step), so each range reads only its own row groups; any step values are
    still reduced correctly, since the ranges (plus null steps) cover every row exactly once.
    """
    if src.fmt != "parquet" or not plan.step or not plan.has_groups:
        return None
    if not src.schema[plan.step].is_integer():
        return None
    try:  # the row count is in the footer: no data read, and no pyarrow import for small files
        if src.lf.select(pl.len()).collect().item() <= CHUNK_ROWS:
            return None
    except POLARS_ERRORS:
        return None
    import pyarrow.parquet as pq

    try:
        meta = pq.ParquetFile(src.local).metadata
    except (OSError, ValueError):
        return None
    if meta.num_rows <= CHUNK_ROWS:
        return None
    names = [meta.schema.column(i).path for i in range(meta.num_columns)]
    if plan.step not in names:
        return None
    column = names.index(plan.step)
    groups = []  # (min step, max step, rows, nulls) per row group
    for i in range(meta.num_row_groups):
        rg = meta.row_group(i)
        stats = rg.column(column).statistics
        if stats is None or not stats.has_min_max:
            return None
        groups.append((stats.min, stats.max, rg.num_rows, stats.null_count))
    if any(b[0] < a[1] for a, b in pairwise(groups)):
        return None  # steps out of order: one pass reads the file once
    starts, rows = [groups[0][0]], 0
    for lo, _, n, _ in groups:
        if rows >= CHUNK_ROWS and lo > starts[-1]:
            starts.append(lo)
            rows = 0
        rows += n
    if len(starts) == 1:
        return None
    step = pl.col(plan.step)
    cuts = starts[1:]
    ranges = [step < cuts[0], *((step >= a) & (step < b) for a, b in pairwise(cuts)), step >= cuts[-1]]
    if any(g[3] is None or g[3] > 0 for g in groups):
        ranges.append(step.is_null())
    return ranges


MIN_REPEATED_BLOCK = 8
"""Without a sample-naming column, a repeated block must hold at least this many rows (and two
different ones) to count as written twice: a tiny log repeats itself by chance."""


def drop_repeated_blocks(df: pl.DataFrame, step: str | None, distinct: bool = False,
                         steps_col: str | None = None) -> tuple[pl.DataFrame, int]:
    """Drop a step's rows that were written twice (TRL; or a whole log appended to itself), returning
    (rows kept, rows dropped).

    A step's block counts as written twice when its second half repeats its first half row
    for row. A plain ``unique()`` would be wrong: two samples of a group can legitimately be
    identical (same short completion, same reward, same advantage). With ``distinct`` (any log
    but TRL's, whose rows need not name a sample: e.g. step, prompt, reward) a repeat counts only
    on strong evidence: the repeated half holds at least :data:`MIN_REPEATED_BLOCK` rows and either
    every one of its rows differs (rows name their samples) or it spans two or more steps of
    ``steps_col`` (a run's whole sequence of steps cannot recur by chance). A step of all-wrong
    groups written in round-robin order repeats its first half by nature and is kept whole.
    """
    parts = df.partition_by(step, maintain_order=True) if step else [df]
    kept, dropped = [], 0
    for part in parts:
        while part.height % 2 == 0 and part.height:
            half = part.height // 2
            first = part.head(half)
            if not first.equals(part.tail(half)):
                break
            if distinct and not (half >= MIN_REPEATED_BLOCK and (
                    first.n_unique() == half or (steps_col is not None and first[steps_col].n_unique() > 1))):
                break
            dropped += half
            part = first
        kept.append(part)
    return pl.concat(kept), dropped


def reduce_lists(src: Source, plan: ColumnMap, threshold: float | None, file_index: int) -> Partial:
    """Grouped layouts: each row is a group with a list of rewards."""
    lf = _prepared(src, plan)
    x = pl.element().cast(pl.Float64)
    valid, correct, bad = reward_flags(x, threshold)
    col = pl.col(plan.reward)
    keys = list(dict.fromkeys(c for c in (plan.step, *plan.prompt) if c))
    rows = lf.with_row_index("__row").select(
        *keys, pl.col("__row"),
        col.list.eval(valid).list.sum().fill_null(0).alias("n"),
        col.list.eval(correct).list.sum().fill_null(0).alias("k"),
        col.list.eval(~valid).list.sum().fill_null(0).alias("missing"),
        col.list.len().fill_null(0).alias("rows"),
        col.list.eval(bad).list.sum().fill_null(0).alias("bad"),
        *(col.list.eval(agg).list.first().alias(agg.meta.output_name()) for agg in _spread(x.filter(valid), threshold)))
    df = _collect(src, rows)
    if df["bad"].sum():
        flat = lf.select(col.explode().cast(pl.Float64).alias("x"))
        sample = _collect(src, flat.filter(reward_flags(pl.col("x"), threshold)[2]).unique(maintain_order=True)
                          .head(5)).to_series().to_list()
        raise non_binary_error(sorted(sample), plan.reward, str(src.path))
    gid = pl.format(f"{file_index}:{{}}", pl.col("__row"))
    return Partial.of([_finish(src, plan, df, gid)], 0)


def _row_location(src: Source, index: int) -> str:
    if src.fmt == "csv":
        return f"{src.path}:{csv_skip_rows(src.local) + 2 + index}"
    return f"{src.path}: row {index + 1}"


def _refuse_percentages(src: Source, lf: pl.LazyFrame, column: str, scale: float | None, where: str) -> None:
    """The error for pass rates above 1 that all fit in [0, 100]: they look like percentages."""
    if scale is not None:
        return
    rate = pl.col(column).cast(pl.Float64)
    low, high = _collect(src, lf.select(rate.min().alias("low"), rate.max().alias("high"))).row(0)
    if low is not None and low >= 0 and 1 < high <= 100:
        raise SchemaError(f"invalid counts: {column} outside [0, 1] (up to {high:g}): the pass rates look like "
                          "percentages", location=where, remedy="pass --rate-scale 100 to read them as percentages")


def reduce_counts(src: Source, plan: ColumnMap, samples: int | None, rate_scale: float | None = None) -> Partial:
    """Counts layout: n and k (or a pass rate, divided by ``rate_scale`` when given) per row."""
    lf = src.lf.with_row_index("__row")
    n = pl.col(plan.n).cast(pl.Float64) if plan.n else pl.lit(float(samples or 0))
    if plan.k:
        kf = pl.col(plan.k).cast(pl.Float64)
        problem = pl.when(n.is_null() | kf.is_null()).then(None)
    else:
        rate = pl.col(plan.rate).cast(pl.Float64) / (rate_scale or 1.0)
        kf = (rate * n).round(0)
        problem = (pl.when(n.is_null() | rate.is_null() | rate.is_nan()).then(None)
                   .when((rate < 0) | (rate > 1)).then(pl.lit(f"{plan.rate} outside [0, 1]"))
                   .when((rate * n - kf).abs() > RATE_TOLERANCE * n + 1e-9)
                   .then(pl.lit(f"{plan.rate} x n is not a whole number of correct samples "
                               f"(tolerance {RATE_TOLERANCE:g} x n)")))
    # a hand-off row of a group whose rewards were all missing: n = k = 0 and missing_rewards > 0
    carried = (pl.col(HANDOFF_MISSING).cast(pl.Float64).fill_null(0) if HANDOFF_MISSING in src.schema
               else pl.lit(0.0))
    problem = (problem.when(n.is_infinite() | kf.is_infinite() | carried.is_infinite())
               .then(pl.lit("counts are infinite"))
               .when((n != n.round(0)) | (kf != kf.round(0)) | (carried != carried.round(0)))
               .then(pl.lit("counts are not whole numbers"))
               .when(carried < 0).then(pl.lit(f"negative {HANDOFF_MISSING}"))
               .when((n < 1) & ~((n == 0) & (carried > 0))).then(pl.lit("n < 1"))
               .when(kf < 0).then(pl.lit("negative k"))
               .when(kf > n).then(pl.lit("k > n"))
               .otherwise(pl.lit("")))
    first = _collect(src, lf.filter(problem.fill_null("") != "").select(
        pl.col("__row"), problem.alias("why")).head(1))
    if first.height:
        index, why = first.row(0)
        if plan.rate and not plan.k and why.endswith("outside [0, 1]"):
            _refuse_percentages(src, lf, plan.rate, rate_scale, _row_location(src, index))
        raise SchemaError(f"invalid counts: {why}", location=_row_location(src, index),
                          remedy="fix the file, or pick other columns with --n-col/--k-col")
    missing = problem.is_null()
    keys = list(dict.fromkeys(c for c in (plan.step, plan.group, *plan.prompt) if c))
    agg = lf.group_by(keys).agg(
        pl.when(missing).then(0).otherwise(n).sum().alias("n"),
        pl.when(missing).then(0).otherwise(kf).sum().alias("k"),
        (missing.cast(pl.Int64) + carried.cast(pl.Int64)).sum().alias("missing"), pl.len().alias("rows"))
    df = _collect(src, agg)
    return Partial.of([_finish(src, plan, df, pl.col(plan.group) if plan.group else pl.lit(None))], 0)
