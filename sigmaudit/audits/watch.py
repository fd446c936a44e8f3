"""``sigmaudit watch``: the audit of a run while it is written, one completed step at a time.

:class:`Watch` is fed the per-group counts of everything complete so far (``step, prompt, n, k``,
from :class:`sigmaudit.loaders.follow.Follower`) and reports each training step once, in step order,
when it is **completed**: when a later step appeared in the logs at an earlier poll, or, at the end
(``--once``, ``--until-idle``), when no file changed during the last poll and none ends in a half-written
line. (Not the poll that first shows the later step: a poll reads the files one after another, so it can
read ``a.jsonl`` before step t's last rows reach it and then find step t + 1 in ``b.jsonl``. A trainer writes
step t's rows before step t + 1's, so a poll that starts after step t + 1 was seen holds all of step t.)
For each completed step t it gives, all *observed* unless named a forecast:

- the step's own groups and their silent share (all wrong / all correct), at their logged sizes;
- the same over a rolling window of the last W completed steps (pooled groups);
- the same over every step up to t: exactly ``scan``'s ``observed_silent`` on the logs cut after t;
- the **forecast** for step t + 1 (``forecast`` run on the logs cut after t): every prompt seen so
  far gets P(silent) at its next visit with G samples; the share is the mean over those prompts
  (what step t + 1 would waste if it drew them all), ``expected_silent`` their sum; none before
  the second step (nothing earlier to forecast from). Of the steps already complete at the first
  :meth:`Watch.advance` (a run joined midway), only the last gets a forecast: one per past step would
  replay the history once per step (quadratic in the steps); their other figures are all given;
- the skip list at ``max_p_silent`` and the prompts newly on it (or off it) since step t − 1;
- the live guard: whether the step's observed share exceeds ``max_silent``, and for how many
  consecutive steps; ``failed`` once that reaches ``for_steps``.

A group is silent when its answers all agree (k = 0 or k = n); with shaped rewards (``--threshold``:
the load keeps each group's raw-reward range) when its raw rewards have zero spread, as ``check``
gates it (all-wrong and all-correct stay on correctness).

Rows without a step value are left out (counted in ``unstepped_groups``). A step whose rows arrive
after a later step was reported (an asynchronous trainer, several ranks) is reported when it arrives,
marked ``late``; groups that arrive for a step already reported are in no report. ``late_groups``
counts both. Each call costs one pass over the groups (sums per step, then running sums), plus one
forecast per step forecast: linear in the history.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from .skip_rule import DEFAULT_MAX_P_SILENT

if TYPE_CHECKING:
    import polars as pl

DEFAULT_WINDOW = 5
"""Completed steps pooled in the rolling window."""


@dataclass(frozen=True)
class Shares:
    """Observed silent shares of a set of logged groups (each at its logged size)."""

    groups: int
    """Groups in the set."""
    silent: float
    """Share of them whose answers all agree (k = 0 or k = n)."""
    all_wrong: float
    """Share with k = 0."""
    all_correct: float
    """Share with k = n."""
    tokens: float | None = None
    """Share of the set's generated tokens in silent groups (None: the log carries no lengths, or some
    rollout has none)."""


@dataclass(frozen=True)
class NextStep:
    """The forecast for the step after a completed one (``sigmaudit forecast`` on the logs cut there)."""

    step: int
    """The step forecast (the completed step + 1)."""
    G: int
    """Group size forecast (``-G``, else the most common logged group size so far)."""
    prompts: int
    """Prompts seen so far (each gets a forecast)."""
    silent: float
    """Mean P(silent) over those prompts: a prediction, not an observation."""
    expected_silent: float
    """Σ P(silent): silent groups expected if every prompt seen were drawn once more."""
    half_life: float | None
    """Half-life of the visit history in steps (None: no down-weighting)."""


@dataclass(frozen=True)
class StepReport:
    """One completed step (one line of ``watch``, one ``--events`` object)."""

    step: int
    """The training step."""
    G: int
    """Most common logged group size at this step."""
    observed: Shares
    """This step's groups."""
    window: Shares
    """The groups of the last ``window_steps`` completed steps (this one included)."""
    window_steps: int
    """Completed steps in the window (fewer than asked at the start of a run)."""
    cumulative: Shares
    """Every group up to this step: ``scan``'s ``observed_silent`` on the logs cut after this step."""
    prompts: int
    """Distinct prompts seen up to this step."""
    forecast: NextStep | None
    """The next step's forecast; None at the first step."""
    skip_threshold: float
    """P(silent) above which a prompt is on the skip list."""
    skipped: int
    """Prompts on the skip list after this step."""
    newly_skipped: tuple[str, ...]
    """Prompts on the skip list now but not after the previous step."""
    no_longer_skipped: tuple[str, ...]
    """Prompts on it after the previous step but not now."""
    over_limit: bool | None
    """This step's observed silent share exceeds ``max_silent`` (None without ``max_silent``)."""
    streak: int
    """Consecutive completed steps over the limit, ending here."""
    failed: bool
    """The guard tripped here: ``streak`` reached ``for_steps``."""
    late: bool = False
    """Its rows arrived after a later step was reported (then ``cumulative`` and ``window`` are the
    logs cut after it as they were when it arrived, and there is no forecast: its next step is logged)."""

    def to_dict(self) -> dict[str, Any]:
        """The ``--events`` object: field names are the keys."""
        return asdict(self) | {"newly_skipped": list(self.newly_skipped),
                               "no_longer_skipped": list(self.no_longer_skipped)}


@dataclass(frozen=True)
class WatchSummary:
    """What a watch saw, when it ends."""

    steps: int
    """Completed steps reported."""
    first_step: int | None
    last_step: int | None
    cumulative: Shares | None
    """Every reported step's groups pooled (None before the first step)."""
    steps_over_limit: int
    """Reported steps whose observed share exceeded ``max_silent``."""
    longest_streak: int
    """Longest run of consecutive steps over the limit."""
    failed_at: int | None
    """The step at which the guard tripped (None: it did not)."""
    skipped: int
    """Prompts on the skip list at the end."""
    unreported_step: int | None
    """A step seen but not completed when the watch ended (still being written), else None."""
    late_groups: int
    """Groups that arrived after a later step was reported: those of late steps (reported, marked late)
    and those for a step already reported (in no report)."""
    unstepped_groups: int
    """Groups without a step value (left out)."""
    ended_by: str
    """once, idle, guard, interrupt (Ctrl-C), terminate (SIGTERM) or eof (every input stream ended)."""
    late_steps: tuple[int, ...] = ()
    """Steps reported late."""
    late_step_groups: int = 0
    """Of ``late_groups``, those of the steps reported late."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def shares(n: np.ndarray, k: np.ndarray) -> Shares:
    """Observed silent shares of groups with sizes ``n`` and right answers ``k``."""
    groups = int(n.size)
    if groups == 0:
        return Shares(0, float("nan"), float("nan"), float("nan"))
    wrong, right = k == 0, k == n
    return Shares(groups, float((wrong | right).sum() / groups), float(wrong.sum() / groups),
                  float(right.sum() / groups))


@dataclass
class Watch:
    """Feed :meth:`advance` the complete per-group counts at each poll; it returns the steps it completes."""

    G: int | None = None
    """Group size of the forecasts (None: the most common logged group size so far)."""
    window: int = DEFAULT_WINDOW
    max_p_silent: float = DEFAULT_MAX_P_SILENT
    max_silent: float | None = None
    for_steps: int = 1
    forecast: bool = True
    """Forecast the next step (costs a replay of the logs so far at each step)."""
    reports: list[StepReport] = field(default_factory=list)
    skip_table: pl.DataFrame | None = None
    """The latest per-prompt forecast table (``forecast``'s columns, with ``skip``)."""
    _groups_at: dict[int, int] = field(default_factory=dict)
    """Groups of each reported step when it was reported."""
    _late: int = 0
    _late_steps: list[int] = field(default_factory=list)
    _late_in_reports: int = 0
    _unstepped: int = 0
    _pending_step: int | None = None
    _seen_last: int | None = None
    """The highest step any earlier poll held (:meth:`saw`, :meth:`advance`)."""
    _started: bool = False
    _last_skip: set[str] = field(default_factory=set)
    _totals: Shares | None = None

    def __post_init__(self) -> None:
        from ..errors import ConfigError

        if self.window < 1:
            raise ConfigError(f"must be at least 1, got {self.window}", location="window")
        if self.for_steps < 1:
            raise ConfigError(f"must be at least 1, got {self.for_steps}", location="for_steps")
        for name in ("max_p_silent", "max_silent"):
            v = getattr(self, name)
            if v is not None and not 0.0 <= v <= 1.0:
                raise ConfigError(f"must lie in [0, 1], got {v:g}", location=name)

    @property
    def failed(self) -> bool:
        """The guard has tripped."""
        return any(r.failed for r in self.reports[-1:])

    def advance(self, per_group: pl.DataFrame | None, final: bool = False) -> list[StepReport]:
        """Report every step completed in ``per_group`` and not reported yet (see the module
        docstring); ``final``: the logs stopped changing, so the last step is completed too.
        Stops after the step at which the guard trips."""
        import polars as pl

        if per_group is None or per_group.height == 0:
            return []
        self._unstepped = int(per_group["step"].null_count())
        frame = per_group.filter(pl.col("step").is_not_null() & (pl.col("n") > 0))
        if frame.height == 0:
            return []
        table = _by_step(frame)
        steps = table["step"]
        self._count_late(table)
        last = steps[-1]
        safe = self._seen_last  # a step below it was written whole before the poll before this one ended
        self._seen_last = int(last) if safe is None else max(safe, int(last))
        todo = [i for i, s in enumerate(steps.tolist())
                if s not in self._groups_at and (final or (safe is not None and s < safe))]
        self._pending_step = None if final or int(last) in self._groups_at else int(last)
        history = not self._started  # the steps already complete when the watch started
        self._started = True
        top = max(self._groups_at, default=None)
        out = []
        for j, i in enumerate(todo):
            if self.failed:
                break
            late = top is not None and int(steps[i]) < top
            report = self._report(frame, table, i, forecast=not late and (not history or j == len(todo) - 1),
                                  late=late)
            top = report.step if top is None else max(top, report.step)
            self.reports.append(report)
            out.append(report)
        if top is not None:  # the steps reported so far (with groups that came late), not the step pending
            self._totals = _shares_at(table, int(np.searchsorted(steps, top, side="right")) - 1, 0)
        return out

    def saw(self, per_group: pl.DataFrame | None) -> None:
        """A poll whose steps are not reported (``watch --once`` before its last poll): only the highest step
        it holds is kept, for :meth:`advance`'s rule of completion."""
        if per_group is None or per_group.height == 0:
            return
        import polars as pl

        top = per_group.filter(pl.col("n") > 0)["step"].max()
        if top is not None:
            self._seen_last = int(top) if self._seen_last is None else max(self._seen_last, int(top))

    def advance_series(self, series: pl.DataFrame | None, source: str | None = None) -> list[StepReport]:
        """Report every step of a per-step series of shares (a trainer's metrics: each row is logged once its
        step is done) not reported yet: the observed shares only (no groups, no forecast, no skip list).
        ConfigError (naming ``source``, the series' file) when no step has a silent share."""
        from .trend import trend_from_series

        if series is None or series.height == 0:
            return []
        every = trend_from_series(series).rows
        rows = [r for r in every if r.observed_silent is not None]
        if every and not rows:  # e.g. only an all-correct share: no step could be reported or trip the guard
            from ..errors import ConfigError

            raise ConfigError("the per-step series holds no silent share (nor both the all-wrong and the all-correct "
                              "share) for any step: watch follows each step's silent share", location=source,
                              remedy="give the rollout dump, or a series with a silent-share column; "
                                     "'sigmaudit trend' reads this one")
        last = self.reports[-1].step if self.reports else None
        out = []
        for i, r in enumerate(rows):
            if self.failed:
                break
            if last is not None and r.step <= last:
                continue
            window = [x.observed_silent for x in rows[max(0, i + 1 - self.window): i + 1]]
            upto = [x.observed_silent for x in rows[: i + 1]]
            over = None if self.max_silent is None else r.observed_silent > self.max_silent  # type: ignore[operator]
            streak = (self.reports[-1].streak if self.reports else 0) + 1 if over else 0
            nan = float("nan")
            report = StepReport(
                step=r.step, G=0, observed=Shares(0, float(r.observed_silent),  # type: ignore[arg-type]
                                                  nan if r.observed_all_wrong is None else r.observed_all_wrong,
                                                  nan if r.observed_all_correct is None else r.observed_all_correct),
                window=Shares(0, float(np.mean(window)), nan, nan), window_steps=len(window),
                cumulative=Shares(0, float(np.mean(upto)), nan, nan), prompts=0, forecast=None,
                skip_threshold=self.max_p_silent, skipped=0, newly_skipped=(), no_longer_skipped=(),
                over_limit=over, streak=streak, failed=bool(over) and streak >= self.for_steps)
            self.reports.append(report)
            out.append(report)
        return out

    def _count_late(self, table: pl.DataFrame) -> None:
        """Groups that arrived for already-reported steps since they were reported, plus the groups of
        steps reported late."""
        if not self._groups_at:
            return
        now = dict(zip(table["step"].tolist(), table["groups"].tolist(), strict=True))
        added = sum(max(0, now.get(s, 0) - c) for s, c in self._groups_at.items())
        self._late = added + self._late_in_reports

    def _report(self, frame: pl.DataFrame, table: dict[str, np.ndarray], i: int, forecast: bool = True,
                late: bool = False) -> StepReport:
        """Step ``table[i]``: its shares from the per-step sums, the window's and the cumulative ones from
        their running sums (no pass over the groups), the forecast from the logs cut after it."""
        import polars as pl

        step = int(table["step"][i])
        observed = _shares_at(table, i, i)
        self._groups_at[step] = observed.groups
        if late:
            self._late_steps.append(step)
            self._late_in_reports += observed.groups
            self._late += observed.groups
        first = max(0, i - self.window + 1)
        prefix = frame.filter(pl.col("step") <= step) if forecast and i >= 1 else None
        nxt, skip = self._next(prefix, step, i + 1 if prefix is not None else 0)
        newly, gone = self._skip_changes(skip)
        over = None if self.max_silent is None else observed.silent > self.max_silent
        streak = (self.reports[-1].streak if self.reports else 0) + 1 if over else 0
        return StepReport(
            step=step, G=int(table["G"][i]), observed=observed, window=_shares_at(table, i, first),
            window_steps=i - first + 1, cumulative=_shares_at(table, i, 0), prompts=int(table["prompts"][i]),
            forecast=nxt, skip_threshold=self.max_p_silent, skipped=len(skip), newly_skipped=newly,
            no_longer_skipped=gone, over_limit=over, streak=streak, failed=bool(over) and streak >= self.for_steps,
            late=late,
        )

    def _next(self, prefix: pl.DataFrame | None, step: int, completed: int) -> tuple[NextStep | None, set[str]]:
        """The forecast for ``step`` + 1 from the logs cut after ``step``, and its skip list."""
        import polars as pl

        from ..fmt import none_if_nan
        from .forecast import forecast

        if not self.forecast or completed < 2 or prefix is None:
            return None, (set() if self.skip_table is None else self._skipped())
        G = self.G if self.G is not None else _logged_size(prefix)
        result = forecast(prefix, G, max_p_silent=self.max_p_silent)
        self.skip_table = result.table
        nxt = NextStep(step=int(step) + 1, G=int(G), prompts=result.prompts,
                       silent=result.expected_silent / result.prompts if result.prompts else float("nan"),
                       expected_silent=result.expected_silent, half_life=none_if_nan(result.half_life))
        return nxt, set(result.table.filter(pl.col("skip"))["prompt"].to_list())

    def _skipped(self) -> set[str]:
        import polars as pl

        assert self.skip_table is not None
        return set(self.skip_table.filter(pl.col("skip"))["prompt"].to_list())

    def _skip_changes(self, skip: set[str]) -> tuple[tuple[str, ...], tuple[str, ...]]:
        before, self._last_skip = self._last_skip, skip
        return tuple(sorted(skip - before)), tuple(sorted(before - skip))

    def summary(self, ended_by: str) -> WatchSummary:
        """What the watch saw, for its last lines."""
        over = [r for r in self.reports if r.over_limit]
        cumulative = None if not self.reports else self._totals or self.reports[-1].cumulative  # a series: its last
        return WatchSummary(
            steps=len(self.reports), first_step=self.reports[0].step if self.reports else None,
            last_step=max((r.step for r in self.reports), default=None), cumulative=cumulative,
            steps_over_limit=len(over), longest_streak=max((r.streak for r in self.reports), default=0),
            failed_at=next((r.step for r in self.reports if r.failed), None),
            skipped=self.reports[-1].skipped if self.reports else 0, unreported_step=self._pending_step,
            late_groups=self._late, late_steps=tuple(self._late_steps), late_step_groups=self._late_in_reports,
            unstepped_groups=self._unstepped,
            ended_by=ended_by,
        )


def _by_step(frame: pl.DataFrame) -> dict[str, np.ndarray]:
    """One row per step, in step order: its groups, silent / all-wrong / all-correct groups (silent: zero
    spread where the load kept each group's reward range, as ``check`` counts it), its most common group
    size (the smallest among ties), and the distinct prompts seen up to it; plus running sums (``c_``)."""
    import polars as pl

    silent = (pl.col("rmin") == pl.col("rmax")).fill_null(False) if "rmin" in frame.columns else \
        (pl.col("k") == 0) | (pl.col("k") == pl.col("n"))
    tokens = "tokens" in frame.columns  # the groups' generated tokens, where the log carries lengths
    sums = frame.group_by("step").agg(
        pl.len().alias("groups"), silent.sum().alias("silent"), (pl.col("k") == 0).sum().alias("wrong"),
        (pl.col("k") == pl.col("n")).sum().alias("right"),
        *((pl.col("tokens").sum().alias("tok"), pl.col("tokens").filter(silent).sum().alias("tok_silent"),
           pl.col("tokens_missing").sum().alias("tok_missing")) if tokens else ()))
    sizes = (frame.group_by("step", "n").len().sort(["step", "len", "n"], descending=[False, True, False])
             .group_by("step", maintain_order=True).first().select("step", pl.col("n").alias("G")))
    firsts = frame.group_by("prompt").agg(pl.col("step").min()).group_by("step").len(name="new_prompts")
    table = (sums.join(sizes, on="step").join(firsts, on="step", how="left").sort("step")
             .with_columns(pl.col("new_prompts").fill_null(0)))
    counts = ("groups", "silent", "wrong", "right", *(("tok", "tok_silent", "tok_missing") if tokens else ()))
    table = table.with_columns(*(pl.col(c).cum_sum().alias(f"c_{c}") for c in counts),
                               pl.col("new_prompts").cum_sum().alias("prompts"))
    return {c: table[c].to_numpy() for c in table.columns}


def _shares_at(table: dict[str, np.ndarray], i: int, first: int) -> Shares:
    """The shares of the steps ``table[first..i]`` pooled, from the running sums."""
    def total(c: str) -> int:
        return int(table[f"c_{c}"][i]) - (int(table[f"c_{c}"][first - 1]) if first > 0 else 0)

    groups = total("groups")
    if groups == 0:
        return Shares(0, float("nan"), float("nan"), float("nan"))
    known = "c_tok" in table and total("tok_missing") == 0 and total("tok") > 0
    return Shares(groups, total("silent") / groups, total("wrong") / groups, total("right") / groups,
                  total("tok_silent") / total("tok") if known else None)


def _logged_size(per_group: pl.DataFrame) -> int:
    """The most common group size (the smallest among ties), as ``forecast`` defaults -G."""
    counts = per_group.group_by("n").len().sort(["len", "n"], descending=[True, False])
    return int(counts["n"][0])
