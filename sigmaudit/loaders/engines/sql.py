"""The reduction (rows -> counts per (step, group, prompt)) as one SQL statement.

Written once from a detected :class:`~sigmaudit.loaders.columns.ColumnMap` and run by DuckDB and by
Spark SQL; it gives the columns of ``reduce.PARTIAL_SCHEMA`` plus ``missing``, ``rows`` and
``bad`` (valid rewards that are not 0/1/±1 when no threshold is set). The two dialects differ only
in list lambdas, identifier quoting and the string type, which :class:`Dialect` holds.

The rules are the local engine's (:mod:`..reduce`, :mod:`..rewards`): a reward is *missing* when
null or NaN, *correct* when it equals 1 (or is >= the threshold), and any other valid value than
0, 1, -1 is refused without a threshold; the prompt key is the prompt column, or several columns
cast to text and joined by `` | `` (nulls skipped).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass

from ...errors import ConfigError
from ..columns import ColumnMap
from ..options import LoadOptions


@dataclass(frozen=True)
class Dialect:
    """What differs between the SQL engines."""

    name: str
    quote: str
    """Identifier quote character."""
    text: str
    """The string type."""
    lambda_: str
    """A lambda over one list element ``e`` with body ``{body}``."""
    row_id: str
    """An expression unique per input row (ids a group of a grouped layout)."""

    def ident(self, name: str) -> str:
        """A quoted identifier: the column called ``name``, dots and all (``prompt.id`` is a column)."""
        q = self.quote
        return f"{q}{name.replace(q, q + q)}{q}"

    def field(self, path: str) -> str:
        """The field of a struct column: ``a.b`` is the field ``b`` of column ``a``."""
        return ".".join(self.ident(part) for part in path.split("."))

    def count_where(self, array: str, pred: str) -> str:
        """How many elements ``e`` of ``array`` satisfy ``pred``, 0 for a null list."""
        return f"COALESCE({self.size}({self.filter}({array}, {self.lambda_.format(body=pred)})), 0)"

    def transform(self, array: str, body: str) -> str:
        """``array`` mapped through ``body`` (an expression of ``e``)."""
        return f"{self.map}({array}, {self.lambda_.format(body=body)})"

    def same(self, a: str, b: str) -> str:
        """Null-safe equality (null equals null)."""
        return f"{a} <=> {b}" if self.name == "spark" else f"{a} IS NOT DISTINCT FROM {b}"

    @property
    def levels(self) -> str:
        """A one-column relation ``j`` holding 1..MAX_HALVINGS."""
        if self.name == "spark":
            return f"(SELECT explode(sequence(1, {MAX_HALVINGS})) AS j)"
        return f"(SELECT range AS j FROM range(1, {MAX_HALVINGS + 1}))"

    @property
    def size(self) -> str:
        return "size" if self.name == "spark" else "len"

    @property
    def filter(self) -> str:
        return "filter" if self.name == "spark" else "list_filter"

    @property
    def map(self) -> str:
        return "transform" if self.name == "spark" else "list_transform"


MAX_HALVINGS = 30
"""A step's block may be written up to 2**30 times over (more would need more levels)."""
FILE, ROW = "__file", "__row"
"""Columns an engine adds for layouts that need row order: the file, and the row's index in it."""

SPARK = Dialect("spark", "`", "STRING", "e -> {body}", "monotonically_increasing_id()")
DUCKDB = Dialect("duckdb", '"', "VARCHAR", "lambda e: {body}", "row_number() OVER ()")


def refuse(plan: ColumnMap, engine: str, why: str) -> ConfigError:
    """The one-line refusal for a layout an engine cannot reduce."""
    return ConfigError(f"the {plan.layout} layout cannot run on --engine {engine}: {why}",
                       location="--engine", remedy="use --engine polars (the default)")


def _flags(x: str, threshold: float | None) -> tuple[str, str, str]:
    """(valid, correct, bad) SQL predicates on the DOUBLE reward expression ``x``."""
    valid = f"({x} IS NOT NULL AND NOT isnan({x}))"
    if threshold is None:
        return valid, f"({valid} AND {x} = 1.0)", f"({valid} AND {x} NOT IN (0.0, 1.0, -1.0))"
    return valid, f"({valid} AND {x} >= {float(threshold)!r})", "FALSE"


def _prompt(plan: ColumnMap, d: Dialect, types: dict[str, str]) -> str:
    """The prompt key: the column itself when it is one text column, else the joined text."""
    if len(plan.prompt) == 1 and types.get(plan.prompt[0]) == "text":
        return d.ident(plan.prompt[0])
    return joined_key([d.ident(c) for c in plan.prompt], d)


def joined_key(exprs: list[str], d: Dialect) -> str:
    """reduce.prompt_key in SQL: one expression cast to text; several joined past their nulls; NULL when every
    part is NULL (concat_ws gives '' there, which would pool the rows into one prompt '')."""
    if len(exprs) == 1:
        return f"CAST({exprs[0]} AS {d.text})"
    parts = ", ".join(f"CAST({e} AS {d.text})" for e in exprs)
    nulls = " AND ".join(f"{e} IS NULL" for e in exprs)
    return f"CASE WHEN {nulls} THEN NULL ELSE concat_ws(' | ', {parts}) END"


def _derived(plan: ColumnMap, opts: LoadOptions, d: Dialect, engine: str) -> dict[str, str]:
    """SQL for the ColumnMap's derived columns: the struct fields and trace rewards of prime-rl."""
    out = {}
    for name, _ in plan.derived:
        if name == "__rewards" and plan.layout == "prime-rl":
            field = opts.reward_col or "reward"
            out[name] = d.transform(d.ident("traces"), f"e.{d.ident(field)}")
        elif name.startswith("group.") and name.count(".") == 1:
            out[name] = d.field(name)
        else:
            raise refuse(plan, engine, f"it derives column {name!r} in a way only the polars engine knows")
    return out


def reduce_sql(plan: ColumnMap, opts: LoadOptions, d: Dialect, table: str,
               types: dict[str, str], engine: str | None = None) -> str:
    """SELECT step, gid, prompt, n, k, missing, rows, bad FROM ``table``, one row per
    (step, group, prompt) -- or per row for grouped layouts, per (step, prompt) for counts.

    ``types`` maps column names to ``"text"``, ``"int"``, ``"float"``, ``"bool"`` or ``"other"``
    (from the sample the layout was detected on).
    """
    engine = engine or d.name
    if plan.row_filter is not None:
        raise refuse(plan, engine, "it filters rows in a way only the polars engine knows")
    if plan.dedupe and plan.layout != "trl":
        raise refuse(plan, engine, "its check for a log appended to itself runs on the polars engine only")
    if plan.dedupe:
        table = f"({kept_rows_sql(plan, d, table)}) kept"
    derived = _derived(plan, opts, d, engine)

    def col(name: str) -> str:
        return derived.get(name) or d.ident(name)

    # the step as read (0.5 and 1.5 stay two steps): labelled as an integer after the query, as the
    # polars engine labels its groups (reduce._finish), or refused there as it refuses them
    step = col(plan.step) if plan.step else "CAST(NULL AS BIGINT)"
    prompt_cols = {c: col(c) for c in plan.prompt}
    if any(c in derived for c in plan.prompt):
        prompt = joined_key(list(prompt_cols.values()), d)
    else:
        prompt = _prompt(plan, d, types)
    if plan.layout == "counts":
        return _counts_sql(plan, opts, d, table, step, prompt, col)
    if plan.length is not None and (plan.list_rewards or plan.layout == "counts"):
        raise refuse(plan, engine, "a length column needs one row per rollout")
    if plan.list_rewards:
        if opts.threshold is not None:
            raise refuse(plan, engine, "with --threshold it counts each group's reward spread (zero-spread groups) "
                                       "on the polars engine only")
        x = "CAST(e AS DOUBLE)"
        valid, correct, bad = _flags(x, opts.threshold)
        rewards = col(plan.reward or "")
        return (
            f"SELECT {step} AS step, CAST({d.row_id} AS {d.text}) AS gid, {prompt} AS prompt,\n"
            f"  {d.count_where(rewards, valid)} AS n,\n"
            f"  {d.count_where(rewards, correct)} AS k,\n"
            f"  {d.count_where(rewards, 'NOT ' + valid)} AS missing,\n"
            f"  COALESCE({d.size}({rewards}), 0) AS rows,\n"
            f"  {d.count_where(rewards, bad)} AS bad\n"
            f"FROM {table}")
    return _samples_sql(plan, opts, d, table, step, prompt, col)


def _samples_sql(plan: ColumnMap, opts: LoadOptions, d: Dialect, table: str, step: str, prompt: str,
                 col: Callable[[str], str]) -> str:
    """Long and trainer layouts: one row per sample, grouped per (step, group, prompt)."""
    grouped = plan.has_groups
    gid = (f"CAST({col(plan.group)} AS {d.text})" if plan.group and grouped
           else f"CAST(NULL AS {d.text})")
    if not grouped:
        step = "CAST(NULL AS BIGINT)"
    x = f"CAST({col(plan.reward or '')} AS DOUBLE)"
    valid, correct, bad = _flags("x", opts.threshold)
    # with --threshold, each group's raw reward range (zero spread: no gradient at all), as reduce._spread
    spread = (f"  MIN(CASE WHEN {valid} THEN x END) AS rmin,\n  MAX(CASE WHEN {valid} THEN x END) AS rmax,\n"
              if opts.threshold is not None else "")
    length = f", CAST({col(plan.length)} AS DOUBLE) AS len" if plan.length else ""
    return (
        f"SELECT step, gid, prompt,\n{spread}{_tokens_sql(valid) if plan.length else ''}"
        f"  SUM(CASE WHEN {valid} THEN 1 ELSE 0 END) AS n,\n"
        f"  SUM(CASE WHEN {correct} THEN 1 ELSE 0 END) AS k,\n"
        f"  SUM(CASE WHEN {valid} THEN 0 ELSE 1 END) AS missing,\n"
        f"  COUNT(*) AS rows,\n"
        f"  SUM(CASE WHEN {bad} THEN 1 ELSE 0 END) AS bad\n"
        f"FROM (SELECT {step} AS step, {gid} AS gid, {prompt} AS prompt, {x} AS x{length} FROM {table}) s\n"
        f"GROUP BY step, gid, prompt")


def _tokens_sql(valid: str) -> str:
    """A group's ``tokens``, ``tokens_missing`` and ``bad_length`` from the DOUBLE length ``len``, as
    ``reduce._lengths``: tokens of the rollouts with a reward and a length, the rollouts with a reward and no
    length, and the lengths that are no token count (negative, fractional, infinite)."""
    known = f"({valid} AND len IS NOT NULL AND NOT isnan(len))"
    odd = "(len < 0 OR NOT (len - len = 0) OR len <> ROUND(len, 0))"  # len - len is NaN for an infinite len
    return (f"  CAST(SUM(CASE WHEN {known} THEN len ELSE 0 END) AS BIGINT) AS tokens,\n"
            f"  SUM(CASE WHEN {valid} AND NOT {known} THEN 1 ELSE 0 END) AS tokens_missing,\n"
            f"  SUM(CASE WHEN {known} AND {odd} THEN 1 ELSE 0 END) AS bad_length,\n")


RATE_TOLERANCE = 5e-5  # the local engine's (reduce.RATE_TOLERANCE), kept here to avoid importing reduce


def _counts_sql(plan: ColumnMap, opts: LoadOptions, d: Dialect, table: str, step: str, prompt: str,
                col) -> str:  # noqa: ANN001
    n = f"CAST({col(plan.n)} AS DOUBLE)" if plan.n else f"CAST({float(opts.samples or 0)!r} AS DOUBLE)"
    if plan.k:
        k = f"CAST({col(plan.k)} AS DOUBLE)"
        missing = "(n IS NULL OR k IS NULL)"
        rate_checks = ""
    else:
        rate = f"CAST({col(plan.rate or '')} AS DOUBLE)"
        k = f"ROUND({rate} * {n}, 0)"
        missing = "(n IS NULL OR r IS NULL OR isnan(r))"
        rate_checks = (
            f"    WHEN r < 0 OR r > 1 THEN '{plan.rate} outside [0, 1]'\n"
            f"    WHEN abs(r * n - k) > {RATE_TOLERANCE!r} * n + 1e-9 THEN '{plan.rate} x n is not a whole "
            f"number of correct samples (tolerance {RATE_TOLERANCE:g} x n)'\n")
    gid = f"CAST({col(plan.group)} AS {d.text})" if plan.group else f"CAST(NULL AS {d.text})"
    rcol = f"CAST({col(plan.rate)} AS DOUBLE)" if plan.rate and not plan.k else "CAST(NULL AS DOUBLE)"
    return (
        f"SELECT step, gid, prompt,\n"
        f"  CAST(SUM(CASE WHEN why IS NULL OR why <> '' THEN 0 ELSE n END) AS BIGINT) AS n,\n"
        f"  CAST(SUM(CASE WHEN why IS NULL OR why <> '' THEN 0 ELSE k END) AS BIGINT) AS k,\n"
        f"  SUM(CASE WHEN why IS NULL THEN 1 ELSE 0 END) AS missing,\n"
        f"  COUNT(*) AS rows,\n"
        f"  MAX(why) AS bad\n"
        f"FROM (SELECT step, gid, prompt, n, k, CASE\n"
        f"    WHEN {missing} THEN NULL\n"
        f"{rate_checks}"
        f"    WHEN abs(n) > {sys.float_info.max!r} OR abs(k) > {sys.float_info.max!r} THEN 'counts are infinite'\n"
        f"    WHEN n <> ROUND(n, 0) OR k <> ROUND(k, 0) THEN 'counts are not whole numbers'\n"
        f"    WHEN n < 1 THEN 'n < 1'\n"
        f"    WHEN k < 0 THEN 'negative k'\n"
        f"    WHEN k > n THEN 'k > n'\n"
        f"    ELSE '' END AS why\n"
        f"  FROM (SELECT {step} AS step, {gid} AS gid, {prompt} AS prompt, {n} AS n, {k} AS k, {rcol} AS r\n"
        f"        FROM {table}) s) t\n"
        f"GROUP BY step, gid, prompt")


def bad_values_sql(plan: ColumnMap, opts: LoadOptions, d: Dialect, table: str) -> str:
    """Up to five distinct non-binary reward values (for the error message)."""
    derived = _derived(plan, opts, d, d.name)
    rewards = derived.get(plan.reward or "") or d.ident(plan.reward or "")
    if plan.list_rewards:
        element = "explode" if d.name == "spark" else "unnest"
        source = f"(SELECT CAST({element}({rewards}) AS DOUBLE) AS x FROM {table}) s"
    else:
        source = f"(SELECT CAST({rewards} AS DOUBLE) AS x FROM {table}) s"
    bad = _flags("x", opts.threshold)[2]
    return f"SELECT DISTINCT x FROM {source} WHERE {bad} LIMIT 5"


def kept_rows_sql(plan: ColumnMap, d: Dialect, table: str) -> str:
    """``table``'s rows without the step blocks written twice (or 2**m times) over: the rule of
    :func:`..reduce.drop_repeated_blocks`, per file and step in row order (``FILE``, ``ROW``).

    A block of h rows is halved while h is even and its first half equals its second half row for row
    (null equals null), on every column of ``plan.dedupe``. Level j (1, 2, ...) compares row ``pos``
    with row ``pos + h / 2**j`` for ``pos < h / 2**j``; the block keeps its first h / 2**m rows, m
    being the last level of an unbroken run from 1. Adds column ``dup`` (rows dropped in the block,
    repeated on each kept row) for the duplicate count.
    """
    step = d.ident(plan.step) if plan.step else "CAST(NULL AS BIGINT)"
    cols = [d.ident(c) for c in plan.dedupe]
    same = " AND ".join(d.same(f"a.{c}", f"b.{c}") for c in cols)
    numbered = (f"SELECT *, {step} AS __step, "
                f"row_number() OVER (PARTITION BY {FILE}, {step} ORDER BY {ROW}) - 1 AS __pos, "
                f"count(*) OVER (PARTITION BY {FILE}, {step}) AS __h FROM {table}")
    half = "CAST(a.__h / power(2, l.j) AS BIGINT)"
    checks = (f"SELECT a.{FILE} AS f, a.__step AS s, l.j AS j, "
              f"min(CASE WHEN b.__pos IS NOT NULL AND {same} THEN 1 ELSE 0 END) AS ok "
              f"FROM numbered a CROSS JOIN {d.levels} l "
              f"LEFT JOIN numbered b ON b.{FILE} = a.{FILE} AND {d.same('b.__step', 'a.__step')} "
              f"AND b.__pos = a.__pos + {half} "
              f"WHERE a.__h % CAST(power(2, l.j) AS BIGINT) = 0 AND a.__pos < {half} "
              f"GROUP BY a.{FILE}, a.__step, l.j")
    # m = the number of levels 1, 2, ... that hold without a break
    depth = (f"SELECT f, s, count(*) AS m FROM checks c WHERE ok = 1 AND NOT EXISTS ("
             f"SELECT 1 FROM checks e WHERE e.f = c.f AND {d.same('e.s', 'c.s')} AND e.j < c.j AND e.ok = 0) "
             f"GROUP BY f, s")
    return (f"WITH numbered AS ({numbered}), checks AS ({checks}), depth AS ({depth}) "
            f"SELECT n.*, n.__h - CAST(n.__h / power(2, COALESCE(depth.m, 0)) AS BIGINT) AS dup "
            f"FROM numbered n LEFT JOIN depth ON depth.f = n.{FILE} AND {d.same('depth.s', 'n.__step')} "
            f"WHERE n.__pos < CAST(n.__h / power(2, COALESCE(depth.m, 0)) AS BIGINT)")


def duplicates_sql(plan: ColumnMap, d: Dialect, table: str) -> str:
    """The number of rows :func:`kept_rows_sql` drops (one ``dup`` per file and step)."""
    return (f"SELECT COALESCE(SUM(dup), 0) AS dup FROM (SELECT {FILE}, __step, max(dup) AS dup "
            f"FROM ({kept_rows_sql(plan, d, table)}) k GROUP BY {FILE}, __step) t")
