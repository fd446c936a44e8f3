"""What the caller may override (:class:`LoadOptions`) and what a load returns (:class:`LoadedCounts`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import polars as pl

LAYOUTS = ("long", "grouped", "counts", "verl", "trl", "open-instruct", "prime-rl", "nemo-rl",
           "areal", "roll", "skyrl", "inspect-ai", "atropos", "series")
FILTER_SOURCES = ("structure", "statistics", "flag")


def length_flag(column: str) -> str:
    """How a length column named with ``--length-col`` reads in the notes and the JSON."""
    return f"column {column} (--length-col)"


@dataclass(frozen=True)
class Filtered:
    """Why a log is read as written after zero-variance filtering (a post-filter dump)."""

    source: str
    """``structure`` (the dump carries a marker), ``statistics`` (too few silent groups for the
    pass rates) or ``flag`` (the user said so with ``--post-filter``)."""
    message: str
    """One line: what was seen."""

    def __post_init__(self) -> None:
        if self.source not in FILTER_SOURCES:
            raise ValueError(f"filtered source must be one of {FILTER_SOURCES}, got {self.source!r}")


@dataclass(frozen=True)
class Window:
    """The training steps a load was cut to (``--steps A:B``, ``--last-steps N``), or the whole log's."""

    first_step: int
    """First step in the window (inclusive)."""
    last_step: int
    """Last step in the window (inclusive)."""
    steps: int
    """Distinct steps with logged groups in the window."""
    asked: str | None = None
    """The flag that cut it (``--last-steps 10``, ``--steps 5:``); None: the whole log."""

    def span(self) -> str:
        """``steps 91–100`` (``step 7`` for one step)."""
        return f"step {self.first_step}" if self.first_step == self.last_step else \
            f"steps {self.first_step}–{self.last_step}"

    def describe(self) -> str:
        """``steps 91–100 (10 steps, --last-steps 10)`` or ``steps 1–100 (100 steps, whole log)``."""
        return f"{self.span()} ({self.steps:,} step{'s' if self.steps != 1 else ''}, {self.asked or 'whole log'})"


@dataclass(frozen=True)
class LoadOptions:
    """Overrides for layout detection; every field is optional (None = detect)."""

    prompt_col: str | None = None
    """Prompt key column; several columns joined by commas form one key (``run,task_id``)."""
    reward_col: str | None = None
    """Per-sample reward column, or the list column of rewards in a grouped layout."""
    step_col: str | None = None
    """Training-step column."""
    group_col: str | None = None
    """Group-id column (one id per sampled group)."""
    n_col: str | None = None
    """Counts layout: number of samples per prompt."""
    k_col: str | None = None
    """Counts layout: number of correct samples per prompt."""
    rate_col: str | None = None
    """Counts layout: pass-rate column in [0, 1] (needs ``n_col`` or ``samples``)."""
    samples: int | None = None
    """Counts layout with a pass rate: samples per prompt when no n column exists."""
    rate_scale: float | None = None
    """Counts layout: the pass rate's full scale (100: percentages such as a leaderboard's pass@1);
    rates are divided by it. None: rates are in [0, 1]."""
    threshold: float | None = None
    """Reward >= threshold counts as correct; needed for non-binary rewards."""
    subset: tuple[str, str | None] | None = None
    """(column, value): read only the rows whose column, as text, equals value (``--by``); value None:
    the rows where the column is null or missing."""
    keep_duplicates: bool = False
    """Keep rows written twice (a log's block repeated) and byte-for-byte copies of an input file,
    which are dropped by default."""
    length_col: str | None = None
    """Per-rollout column of generated tokens (for logs whose writer's own token field is not read, or
    that have none): the share of generated tokens in silent groups is reported beside the share of rollouts."""
    pool_runs: bool = False
    """Pool several runs whose group keys meet (refused by default: see :mod:`.runs`), each logged
    group, and each run's prompts, kept its own."""
    pool_prompts: bool = False
    """With several runs pooled, a prompt's samples from every run are one prompt's counts (implies
    ``pool_runs``)."""
    shards: bool = False
    """The files of one folder are shards of one log (each holds part of every group): read as one log, their
    groups summed, even where the data cannot prove it (:func:`.runs.shards_of_one_log`)."""
    max_group_size: int | None = None
    """Largest group formed from a (step, prompt) key that is read (:func:`.keys.refuse_oversized`); None: the
    documented default :data:`.keys.MAX_GROUP`."""
    silent_share_col: str | None = None
    """A per-step series' column of each step's silent share (zero-spread groups / groups): the file is read
    as a series whatever its other columns (:mod:`.series`)."""
    group_count_col: str | None = None
    """With ``silent_share_col``: the series' column of groups per step (the count the share is a share of)."""

    @property
    def pooling(self) -> tuple[bool, bool, bool]:
        """(pool runs, pool their prompts, the files are shards of one log): ``pool_prompts`` implies ``pool_runs``."""
        return self.pool_runs or self.pool_prompts, self.pool_prompts, self.shards


PROMPT_CELLS = "prompt_cells"
"""``LoadedCounts.cache`` key of (``per_group``, its :func:`.assemble.prompt_cells`), counted while the per-prompt sums
were (one group-by over the groups instead of two: 1.1 s CPU on 5M groups); they hold only for that very frame."""


@dataclass(frozen=True)
class LoadedCounts:
    """Per-prompt (and, when known, per-group) counts reduced from rollout logs."""

    per_prompt: pl.DataFrame
    """Columns ``prompt`` (Utf8), ``n`` (Int64), ``k`` (Int64): one row per distinct prompt,
    summed over all its samples in all files and steps."""
    per_group: pl.DataFrame | None
    """Columns ``step`` (Int64, null without steps), ``prompt``, ``n``, ``k``: one row per
    logged group; None when group membership is unknown. With ``--threshold`` on the Polars engine also
    ``rmin``, ``rmax`` (Float64): the group's smallest and largest raw reward (zero spread: rmin = rmax).
    When the log carries token counts (``length_source``) also ``tokens`` (Int64: generated tokens of the
    group's rollouts with a reward) and ``tokens_missing`` (Int64: of those rollouts, how many had no length)."""
    layout: str
    """One of ``LAYOUTS``: ``long``, ``grouped``, ``counts``, a trainer (``verl``, ``trl``,
    ``open-instruct``, ``prime-rl``, ``nemo-rl``, ``areal``, ``roll``, ``skyrl``, ``inspect-ai``)
    or ``series`` (a per-step curve of shares, see ``series``)."""
    files: tuple[str, ...]
    """The files read, in order."""
    n_rows: int
    """Samples read (rows of a long log, list entries of a grouped log; rows of a counts file)."""
    missing_rewards: int
    """Null or NaN rewards (rows with a null n/k/rate in a counts file): excluded, never wrong."""
    n_single_sample_prompts: int
    """Prompts with exactly one sample."""
    notes: tuple[str, ...]
    """One-line human notes: what was detected, what was dropped."""
    reward_source: str
    """The column the rewards (or counts) came from."""
    has_steps: bool
    """A step column was found and used."""
    n_null_keys: int = 0
    """Rows dropped because their prompt key is null."""
    series: pl.DataFrame | None = None
    """Layout ``series`` only: the per-step shares (``step`` plus any of ``observed_all_correct``,
    ``observed_all_wrong``, ``observed_silent``, ``pass_rate``); ``per_prompt`` is then empty."""
    cache: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)
    """Derived objects built once per load by the layers above (e.g. the audits' Corpus); the loader puts
    ``per_group``'s (prompt, size) cells there (:data:`PROMPT_CELLS`)."""
    by: str | None = None
    """The ``--by`` column, when the load was split by it (see ``parts``)."""
    parts: tuple[tuple[str, LoadedCounts], ...] = ()
    """With ``by``: (value, counts of the rows with that value) per value, in sorted order."""
    missing_at: pl.DataFrame | None = field(default=None, compare=False, repr=False)
    """``step``, ``prompt``, ``missing``: where the missing rewards were (for the counts hand-off)."""
    filtered: Filtered | None = None
    """Set when the dump itself shows it was written after zero-variance filtering (source
    ``structure``); None otherwise. Audits may add the ``statistics``/``flag`` sources."""
    window: Window | None = None
    """The steps the counts cover (see :mod:`.window`): set for a log with steps, None without."""
    length_source: str | None = None
    """Where each rollout's generated-token count came from (``--length-col x``, a writer's field such as
    ``calls[].usage.completion_tokens``); None: the log carries none (``per_group`` has no ``tokens``)."""



@dataclass(frozen=True)
class FileCounts:
    """One input file read and reduced on its own (the unit an engine distributes for a dump whose
    framework reader restructures each file in Python): its partial counts and what the load needs
    to know of it. ``error`` is the error the file raised (``phase`` ``open``: detecting its layout or
    reading it; ``reduce``: counting it), for the load to raise or skip exactly as it would locally."""

    path: Any
    """The file (a ``Path``)."""
    plan: Any = None
    """Its ``ColumnMap`` without Polars expressions (``derived``, ``row_filter``); None if it failed to open."""
    frame: pl.DataFrame | None = None
    """``reduce.PARTIAL_SCHEMA`` rows (None in transit)."""
    rows: int = 0
    missing: int = 0
    duplicates: int = 0
    null_keys: int = 0
    framework: bool = False
    """Read by a framework reader (a ``Normalised`` frame)."""
    filtered: Filtered | None = None
    reward_source: str | None = None
    extra_notes: tuple[str, ...] = ()
    missing_at: pl.DataFrame | None = field(default=None, compare=False)
    """Where its missing rewards were (``reduce.Partial.missing_at``)."""
    digest: str | None = None
    """sha256 of the file's bytes, when asked (to drop byte-for-byte copies)."""
    error: Exception | None = None
    phase: str = ""
    length_source: str | None = None
    """Where its rollouts' token counts came from (see :attr:`LoadedCounts.length_source`)."""
