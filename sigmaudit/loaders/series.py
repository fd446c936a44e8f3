"""Per-step series: an already-aggregated curve, one row per training step with shares.

Some logs (and papers) keep only the per-step shares, not the groups: e.g. DAPO's published
"proportion of samples with accuracy 1" per step (``step,allcorrect_fraction``). Such a file has
a step column, no prompt, reward or count columns, and one or more share columns named below.
``sigmaudit trend`` shows it as the observed series; there are no groups to forecast from.

Trainer metrics logs are series too (:data:`METRICS`; a metric column wins over a ``reward`` column,
which in a metrics log is the batch's mean reward, not a sample's):

- TRL ``trainer_state.json`` (``transformers.TrainerState.save_to_json``: ``log_history``, one record per
  ``log`` call with ``step``); TRL's ``GRPOTrainer.log`` (huggingface/trl f2cd57710ae345ea6428ae95363267fcf38a3dc8,
  also 1.16.0) logs ``frac_reward_zero_std`` = ``is_std_zero.float().mean()`` over the generation
  batches since the last log (eval records are ``eval_``-prefixed and left aside);
- a W&B chart export (``"Step","<run> - train/frac_reward_zero_std","<run> - ...__MIN","<run> - ...__MAX"``:
  the ``__MIN``/``__MAX`` columns are left aside; several runs are refused, never pooled);
- a TensorBoard scalar export (``Wall time,Step,Value``), the metric named by the file name
  (``run-x-tag-train_frac_reward_zero_std.csv``);
- ROLL's group metrics (alibaba/ROLL 8eb27cc2dc34c4d1310b169d9b86d339004d811a,
  ``roll/utils/metrics/metrics_manager.py`` ``add_group_metrics``: ``group/all_correct_groups_ratio``,
  ``group/all_incorrect_groups_ratio``, ``group/mixed_groups_ratio`` of the batch's groups), in any of
  those exports or verl's file logger;
- verl's file logger (``verl/utils/tracking.py`` ``FileLogger``: lines ``{"step": N, "data": {...}}``,
  volcengine/verl 0f615578bdbd95a1a56a5525479969fa30c7e5fc).
"""

from __future__ import annotations

import polars as pl

from ..errors import SchemaError, few
from .columns import K_NAMES, N_NAMES, PROMPT_NAMES, REWARD_NAMES, STEP_NAMES, find

SERIES_NAMES: dict[str, tuple[str, ...]] = {
    "observed_all_correct": ("allcorrect_fraction", "all_correct_fraction", "all_correct", "allcorrect",
                             "all_correct_share", "all_correct_rate", "solve_all_fraction"),
    "observed_all_wrong": ("allwrong_fraction", "all_wrong_fraction", "all_wrong", "allwrong",
                           "all_wrong_share", "all_wrong_rate", "solve_none_fraction"),
    "observed_silent": ("silent_fraction", "silent", "silent_share", "silent_rate", "zero_std_fraction",
                        "zero_std_ratio", "zero_std_group_ratio", "zero_std_groups_ratio", "silent_group_ratio"),
    "pass_rate": ("pass_rate", "mean_pass_rate", "accuracy", "mean_accuracy", "solve_rate"),
    "observed_mixed": ("mixed_group_ratio", "mixed_groups_ratio", "mixed_fraction", "mixed_ratio"),
}
"""Series fields and the column names that mean them (lower case). The ``*_group_ratio`` names are those of a
per-step table of a DAPO run's group outcomes (``zero_std_group_ratio``, ``all_correct_group_ratio``,
``all_wrong_group_ratio``, ``mixed_group_ratio``, with ``n_groups`` and ``zero_std_groups`` beside them)."""
for _field, _more in (("observed_all_correct", ("all_correct_group_ratio", "all_correct_groups_ratio")),
                      ("observed_all_wrong", ("all_wrong_group_ratio", "all_wrong_groups_ratio",
                                              "all_incorrect_group_ratio", "all_incorrect_groups_ratio"))):
    SERIES_NAMES[_field] = (*SERIES_NAMES[_field], *_more)
GROUP_COUNT_NAMES = ("n_groups", "num_groups", "group_count", "groups", "n_prompts", "num_prompts")
"""A series' column of groups per step (the count its shares are shares of), lower case."""
SILENT_COUNT_NAMES = ("zero_std_groups", "silent_groups", "num_zero_std_groups", "n_zero_std_groups")
"""A series' column of silent groups per step (checked against the share and the group count when all three are
given), lower case."""


PER_PROMPT = "predictions at another G, fidelity, never-solved and extreme shares, and curation need per-prompt data"
"""What a per-step series cannot give (said once, in its detection note)."""


def gen_batches_missing(where: str) -> Exception:
    """What a verl DAPO metrics series without the batch sizes lacks: its ``train/num_gen_batches`` bounds each step's
    silent share only given ``data.train_batch_size`` and ``data.gen_batch_size``."""
    from ..errors import ConfigError

    return ConfigError("train/num_gen_batches bounds each step's silent share among the groups generated only given "
                       "the run's batch sizes (data.train_batch_size, data.gen_batch_size), which the log does not "
                       "hold", location=where, remedy="run 'sigmaudit trend' with --train-batch B and --gen-batch M")


def g_refused(where: str) -> Exception:
    """The refusal of ``-G`` on a per-step series: its shares are the trainer's own, at the group size it ran
    with; a figure "at G = 16" would name a size the file says nothing about."""
    from ..errors import ConfigError

    return ConfigError("a per-step series holds the trainer's own shares at the group size it ran with; "
                       "figures at another G need per-prompt data", location=f"-G ({where})",
                       remedy="drop -G (the logged shares are reported as they are), or give the rollout dump")
METRICS: dict[str, tuple[str, ...]] = {
    "observed_silent": ("frac_reward_zero_std", "train/frac_reward_zero_std"),
    "observed_all_correct": ("group/all_correct_groups_ratio", "train/group/all_correct_groups_ratio"),
    "observed_all_wrong": ("group/all_incorrect_groups_ratio", "train/group/all_incorrect_groups_ratio"),
    "observed_mixed": ("group/mixed_groups_ratio", "train/group/mixed_groups_ratio"),
    "gen_batches": ("train/num_gen_batches",),
}
"""Trainer metrics that are shares of a step's groups (lower case), by field; ``observed_mixed`` is 1 − silent;
``gen_batches`` is verl DAPO's generation batches per step (verl-project/verl-recipe
48ea0a797fa29867ea0ad92aff7d284eec7d4be3 ``dapo/dapo_ray_trainer.py``: ``metrics["train/num_gen_batches"]``), no
share: it bounds the step's silent share given the batch sizes
(:func:`sigmaudit.core.dapo.gen_batches_silent_bounds`)."""
METRIC_STEPS = ("step", "train/global_step", "global_step", "_step", "trainer/global_step")
W_AND_B_EXTRAS = ("__min", "__max", "_step")
"""Suffixes of a W&B chart export's columns beside each run's value."""


def _metric(column: str) -> str:
    """A column's metric name: a W&B export's ``<run> - <metric>`` without the run. The run name is whatever
    precedes the last `` - `` (a run named ``qwen - grpo - lr1e-6`` holds the separator itself; metric names
    are keys such as ``train/frac_reward_zero_std``, which hold none)."""
    return column.rsplit(" - ", 1)[1] if " - " in column else column


def _runs(cols: list[str]) -> list[str]:
    return list(dict.fromkeys(c.rsplit(" - ", 1)[0] for c in cols if " - " in c))


def tensorboard_metric(schema: dict[str, pl.DataType], name: str | None) -> str | None:
    """The field a TensorBoard scalar export (``Wall time,Step,Value``) holds, named by its file name."""
    if name is None or [c.lower() for c in schema] != ["wall time", "step", "value"]:
        return None
    tag = name.lower().split("-tag-")[-1].rsplit(".", 1)[0]
    if "eval" in tag.split("_")[0]:
        return None
    for field, names in METRICS.items():
        if any(tag.endswith(n.replace("/", "_")) for n in names):
            return field
    return None


def metric_columns(schema: dict[str, pl.DataType], step_col: str | None,
                   where: str = "") -> tuple[str, dict[str, str]] | None:
    """(step column, {field: column}) of a trainer metrics log (:data:`METRICS`), else None; a W&B export
    of several runs is refused (their steps would be pooled)."""
    cols = list(schema)
    found = {}
    for field, names in METRICS.items():
        col = next((c for c in cols if _metric(c).lower() in names and schema[c].is_numeric()), None)
        if col is not None:
            found[field] = col
    if not found or find(cols, PROMPT_NAMES) is not None:
        return None
    runs = _runs([c for c in cols if _metric(c).lower() in {n for v in METRICS.values() for n in v}])
    if len(runs) > 1:
        raise SchemaError(f"a W&B export of {len(runs)} runs ({', '.join(runs[:3])}"
                          f"{f' and {len(runs) - 3} more' if len(runs) > 3 else ''}): their steps would be pooled",
                          location=where, remedy="export one run per file (hide the others in the chart)")
    step = step_col or next((c for name in METRIC_STEPS for c in cols if c.lower() == name), None)
    return (step, found) if step is not None else None


def series_columns(schema: dict[str, pl.DataType], step_col: str | None, name: str | None = None,
                   where: str = "", named: tuple[str | None, str | None] = (None, None)
                   ) -> tuple[str, dict[str, str]] | None:
    """(step column, {field: column}) when the schema is a per-step series, else None.

    A series has a step column, at least one share column of :data:`SERIES_NAMES` and no
    prompt, reward or count column (which would make it a log of samples or prompts); or it is a
    trainer metrics log (:func:`metric_columns`), or a TensorBoard export named by its file ``name``.
    A group count column (:data:`GROUP_COUNT_NAMES`) maps to ``groups``, a silent count
    (:data:`SILENT_COUNT_NAMES`) to ``silent_groups``. ``named`` is (``--silent-share-col``,
    ``--group-count-col``): a series whatever its other columns, those columns read as the silent share
    and the groups per step.
    """
    cols = list(schema)
    if named[0] is not None or named[1] is not None:
        return _named_series(schema, step_col, named, where)
    tb = tensorboard_metric(schema, name)
    if tb is not None:
        return cols[1], {tb: cols[2]}
    if name is not None and [c.lower() for c in schema] == ["wall time", "step", "value"]:
        tag = name.split("-tag-")[-1].rsplit(".", 1)[0]
        silent_names = ", ".join(n.replace("/", "_") for n in METRICS["observed_silent"][1:])
        raise SchemaError(f"columns match no layout: a TensorBoard scalar export of {tag!r}, which is no share of a "
                          f"step's groups (a series reads {silent_names}"
                          f" and ROLL's group ratios)", location=where,
                          remedy="export the share's tag, or name its column with --silent-share-col Value")
    metrics = metric_columns(schema, step_col, where)
    if metrics is not None:
        return metrics
    step = step_col or find(cols, STEP_NAMES)
    if step is None:
        return None
    if any(find(cols, names, exclude=(step,)) for names in (PROMPT_NAMES, REWARD_NAMES, N_NAMES, K_NAMES)):
        return None
    mapping = {}
    for field, names in SERIES_NAMES.items():
        col = find(cols, names, exclude=(step, *mapping.values()))
        if col is not None and schema[col].is_numeric():
            mapping[field] = col
    if not mapping:
        return None
    for field, names in (("groups", GROUP_COUNT_NAMES), ("silent_groups", SILENT_COUNT_NAMES)):
        col = find(cols, names, exclude=(step, *mapping.values()))
        if col is not None and schema[col].is_numeric():
            mapping[field] = col
    return step, mapping


def _named_series(schema: dict[str, pl.DataType], step_col: str | None, named: tuple[str | None, str | None],
                  where: str) -> tuple[str, dict[str, str]]:
    """The series ``--silent-share-col`` / ``--group-count-col`` name (SchemaError for a column not there, not
    numeric, or a file without a step column)."""
    silent, count = named
    cols = list(schema)
    if silent is None:
        raise SchemaError("--group-count-col names the groups behind a share: it needs --silent-share-col",
                          location="--group-count-col", remedy="add --silent-share-col with the step's silent share")
    for flag, col in (("--silent-share-col", silent), ("--group-count-col", count)):
        if col is not None and col not in schema:
            raise SchemaError(f"column {col!r} not found; columns: {few(cols, 8)}", location=f"{where}: {flag}",
                              remedy=f"pass {flag} with one of the listed columns")
        if col is not None and not schema[col].is_numeric():
            raise SchemaError(f"column {col!r} holds {schema[col]} values, not numbers",
                              location=f"{where}: column {col}", remedy=f"pass {flag} with a numeric column")
    step = step_col or find(cols, STEP_NAMES) or next((c for name in METRIC_STEPS for c in cols if c.lower() == name),
                                                      None)
    if step is None:
        raise SchemaError(f"no step column (a per-step series needs one); columns: {few(cols, 8)}", location=where,
                          remedy="pass --step-col")
    mapping = {"observed_silent": silent}
    if count is not None:
        mapping["groups"] = count
    return step, mapping


SHARE_FIELDS = ("observed_all_correct", "observed_all_wrong", "observed_silent", "pass_rate", "observed_mixed")
"""The fields of a series that hold shares in [0, 1]."""


def read_series(lf: pl.LazyFrame, step: str, mapping: dict[str, str], where: str) -> pl.DataFrame:
    """The series as ``step`` plus one Float64 column per share field (and ``groups``, Int64, when a group
    count is given), sorted by step; shares checked in [0, 1], a mixed share against the silent one, a silent
    count against share x groups."""
    from .readers import POLARS_ERRORS
    from .reduce import fractional_step_error

    try:
        if err := fractional_step_error(lf.select(pl.col(step)).collect().to_series(), step, where):
            raise err
        df = lf.select(pl.col(step).cast(pl.Int64).alias("step"),
                       *(pl.col(col).cast(pl.Float64).alias(field) for field, col in mapping.items())).collect()
    except POLARS_ERRORS as exc:
        raise SchemaError(f"step column {step!r} or a share column is not numeric (steps must be whole numbers)",
                          location=f"{where}: column {step}", remedy="pass --step-col with an integer column") from exc
    shares = [f for f in mapping if f in SHARE_FIELDS]
    # a metrics log's records without these metrics (eval records, the run's summary) are not steps of it
    logged = pl.any_horizontal(pl.col(f).is_not_null() for f in [*shares, *(["gen_batches"] if "gen_batches" in
                                                                            mapping else [])])
    df = df.filter(pl.col("step").is_not_null() & logged).sort("step")
    if df["step"].is_duplicated().any():
        dup = df.filter(df["step"].is_duplicated())["step"][0]
        raise SchemaError(f"step {dup} is logged twice (a resumed run logging its steps again, or two runs in one "
                          f"file?)", location=where, remedy="keep one record per step")
    if df.height == 0:
        raise SchemaError("no rows with a step value", location=where)
    for field in shares:
        bad = df.filter(~pl.col(field).is_between(0.0, 1.0) & pl.col(field).is_not_null())
        if bad.height:
            raise SchemaError(f"column {mapping[field]} must hold shares in [0, 1], got {bad[field][0]!r} at step "
                              f"{bad['step'][0]}", location=where)
    _check_counts(df, mapping, where)
    for whole in ("groups", "gen_batches"):
        if whole in df.columns:
            df = df.with_columns(pl.col(whole).cast(pl.Int64))
    if "observed_mixed" in df.columns:  # the rest of the groups are silent
        if "observed_silent" not in df.columns:
            df = df.with_columns((1.0 - pl.col("observed_mixed")).alias("observed_silent"))
        df = df.drop("observed_mixed")
    return df.drop("silent_groups", strict=False)


COUNT_TOLERANCE = 1e-6
"""Two shares of one step's groups that must add to 1 (silent + mixed), or a count and share x groups, may differ
by this much (a share written with 6 decimals); further apart, the columns are not what their names say."""


def _check_counts(df: pl.DataFrame, mapping: dict[str, str], where: str) -> None:
    """Refuse a series whose columns contradict each other: silent + mixed ≠ 1, a group count that is no whole
    number, or a silent count ≠ share x groups (beyond rounding of the share to ``1/(2 groups)``)."""
    def first(bad: pl.Expr, what: str) -> None:
        rows = df.filter(bad)
        if rows.height:
            raise SchemaError(f"{what} at step {rows['step'][0]}", location=where,
                              remedy="check what the columns hold, or name the silent share with --silent-share-col")

    if "observed_mixed" in df.columns and "observed_silent" in df.columns:
        first((pl.col("observed_silent") + pl.col("observed_mixed") - 1.0).abs() > COUNT_TOLERANCE,
              f"{mapping['observed_silent']} + {mapping['observed_mixed']} is not 1 (every group is silent or mixed)")
    for whole, what in (("groups", "groups"), ("gen_batches", "generation batches")):
        if whole in df.columns:
            first((pl.col(whole) < 1) | (pl.col(whole) != pl.col(whole).round(0)),
                  f"{mapping[whole]} is not a whole number of {what} >= 1")
    if "groups" in df.columns:
        if "silent_groups" in df.columns and "observed_silent" in df.columns:
            first((pl.col("silent_groups") - pl.col("observed_silent") * pl.col("groups")).abs() > 0.5,
                  f"{mapping['silent_groups']} is not {mapping['observed_silent']} x {mapping['groups']}")


def merge_series(parts: list[tuple[str, pl.DataFrame]], where: str) -> tuple[pl.DataFrame, int]:
    """One series from several files' (``where``, series) of one run: the union of their steps and fields, a
    step's field given by several files kept once when their values are equal; two values for one step and
    field are refused naming both files (two runs, or a checkpoint of an abandoned attempt beside a resumed
    one's). Also the number of (step, field) values given again and dropped."""
    if len(parts) == 1:
        return parts[0][1], 0
    fields = list(dict.fromkeys(c for _, df in parts for c in df.columns if c != "step"))
    long = pl.concat([df.select("step", *(pl.col(f).cast(pl.Float64) if f in df.columns else
                                          pl.lit(None, pl.Float64).alias(f) for f in fields))
                      .with_columns(pl.lit(i).alias("_file")) for i, (_, df) in enumerate(parts)])
    long = long.unpivot(fields, index=["step", "_file"], variable_name="field").drop_nulls("value")
    spread = long.group_by("step", "field").agg(pl.col("value").n_unique().alias("values"),
                                                pl.col("_file").min().alias("a"), pl.col("_file").max().alias("b"),
                                                pl.len().alias("given"))
    clash = spread.filter(pl.col("values") > 1).sort("step", "field")
    if clash.height:
        step, field = clash["step"][0], clash["field"][0]
        at = long.filter((pl.col("step") == step) & (pl.col("field") == field)).unique("value", keep="first",
                                                                                        maintain_order=True)
        (fa, va), (fb, vb) = ((parts[f][0], v) for f, v in zip(at["_file"][:2], at["value"][:2], strict=True))
        raise SchemaError(f"step {step} holds {field.removeprefix('observed_')} {va!r} in {fa} and {vb!r} in {fb}: "
                          f"two runs, or an abandoned attempt's checkpoint beside a resumed run's", location=where,
                          remedy="point at one run's folder, or remove the checkpoints of the abandoned attempt")
    again = int((spread["given"] - 1).sum())
    merged = long.unique(["step", "field"], keep="first").pivot("field", index="step", values="value").sort("step")
    if "groups" in merged.columns:
        merged = merged.with_columns(pl.col("groups").cast(pl.Int64))
    return merged.select("step", *(f for f in fields if f in merged.columns)), again
