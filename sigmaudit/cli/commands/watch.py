"""``sigmaudit watch``: follow a run folder while the trainer writes it, one line per completed step.

A step is *completed* when a later step appears in the logs, or, at the end (``--once``,
``--until-idle``), when no file changed during the last ``--interval`` and none ends in a
half-written line (see :mod:`sigmaudit.audits.watch`). Reading is incremental: a file whose size,
modification time and inode did not change is not read again; nothing read is lost when a file is
truncated, rewritten or rotated (:mod:`sigmaudit.loaders.follow`).

``--events FILE`` gets one JSON object per completed step: ``step``, ``G``, ``observed``,
``window`` and ``cumulative`` (each ``{groups, silent, all_wrong, all_correct}``), ``window_steps``,
``prompts``, ``forecast`` (null at the first step, else ``{step, G, prompts, silent,
expected_silent, half_life}``), ``skip_threshold``, ``skipped``, ``newly_skipped``,
``no_longer_skipped``, ``over_limit``, ``streak``, ``failed``, ``late`` (the step's rows arrived after
a later step was reported), and with ``--train-batch`` ``dapo`` (``{p_step_raises, gen_batches_per_step,
generated_per_trained, warn_at, warning}``: DAPO's loop as verl runs it at the next step's forecast,
:func:`sigmaudit.audits.dapo.watch_event`). The file is one of the command's outputs
(:class:`~sigmaudit.writers.LiveFile`): in place at the first step, never an input, never read back as a log.
``--format json`` prints the same
objects on stdout, then ``{"summary": {...}}``. ``-o`` writes the summary (JSON for .json, else text).

Exit codes: 0 (ended by --once, --until-idle, Ctrl-C or SIGTERM), 1 (the --max-silent guard
tripped), 2 (could not run).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from ...audits.skip_rule import DEFAULT_MAX_P_SILENT
from ..inputs import (
    GroupColOpt,
    GroupCountColOpt,
    KeepDuplicatesOpt,
    LengthColOpt,
    PathsArg,
    PromptColOpt,
    QuietOpt,
    RewardColOpt,
    SilentShareColOpt,
    StepColOpt,
    ThresholdOpt,
)
from ..options import (
    GenBatchOpt,
    MaxGenBatchesOpt,
    TrainBatchOpt,
    WarnPRaisesOpt,
    WatchEventsOpt,
    WatchFormatOpt,
    WatchForOpt,
    WatchIntervalOpt,
    WatchMaxPSilentOpt,
    WatchMaxSilentOpt,
    WatchOnceOpt,
    WatchOutputOpt,
    WatchSkipOutOpt,
    WatchUntilIdleOpt,
    WatchWindowOpt,
    dapo_settings,
    group_size_option,
)

if TYPE_CHECKING:
    from ...audits.watch import StepReport, Watch
    from ...loaders.follow import Follower


class _Stop(Exception):
    """A second Ctrl-C or SIGTERM: stop now, not after the step being reported."""


class _Signals:
    """Ctrl-C and SIGTERM end the watch between two polls, never halfway through a step's outputs
    (its line, --events object and --skip-out file go out together); a second one stops at once."""

    def __init__(self) -> None:
        import threading

        self.how: str | None = None
        self.wake = threading.Event()

    def handler(self, signum: int, frame: object) -> None:
        import signal

        if self.how is not None:
            raise _Stop
        self.how = "interrupt" if signum == signal.SIGINT else "terminate"
        self.wake.set()


# long: one parameter per option (a Typer command); the work is in _follow and _Live
def watch(
    paths: PathsArg,
    G: Annotated[int | None, group_size_option(
        "Group size of the next-step forecast (default: the most common logged group size so far).")] = None,
    window: WatchWindowOpt = 5,
    max_p_silent: WatchMaxPSilentOpt = DEFAULT_MAX_P_SILENT,
    max_silent: WatchMaxSilentOpt = None,
    for_steps: WatchForOpt = 1,
    once: WatchOnceOpt = False,
    interval: WatchIntervalOpt = 5.0,
    until_idle: WatchUntilIdleOpt = None,
    events: WatchEventsOpt = None,
    skip_out: WatchSkipOutOpt = None,
    fmt: WatchFormatOpt = None,
    output: WatchOutputOpt = None,
    quiet: QuietOpt = False,
    prompt_col: PromptColOpt = None,
    reward_col: RewardColOpt = None,
    step_col: StepColOpt = None,
    group_col: GroupColOpt = None,
    threshold: ThresholdOpt = None,
    length_col: LengthColOpt = None,
    keep_duplicates: KeepDuplicatesOpt = False,
    silent_share_col: SilentShareColOpt = None,
    group_count_col: GroupCountColOpt = None,
    train_batch: TrainBatchOpt = None,
    gen_batch: GenBatchOpt = None,
    max_gen_batches: MaxGenBatchesOpt = 0,
    warn_p_raises: WarnPRaisesOpt = 0.05,
) -> None:
    """Follow a run while it is written: one line per completed step.

    Each line: the step's groups, their observed silent share (all-wrong / all-correct), the share over
    the last --window steps, the next step's forecast silent share (the mean forecast P(silent) over
    the prompts seen; a prediction), and the prompts newly on the skip list (P(silent) > --max-p-silent).
    A half-written last line or a file still growing is waited for. A step is completed when a later
    step appears (or, with --once / --until-idle, when the files stop changing). Object stores (s3://,
    gs://, ...) are polled by listing. Ctrl-C or SIGTERM ends the watch with a summary (exit 0);
    --max-silent T --for K exits 1 when K consecutive steps exceed T. --train-batch: DAPO's P(next step raises).

    \b
    Example:
      sigmaudit watch checkpoints/rollout_data --max-silent 0.6 --for 3 \\
          --events watch.jsonl --skip-out skip.csv
    """
    from ...audits.watch import Watch
    from ...errors import SigmauditError
    from ...loaders import LoadOptions
    from ...loaders.follow import Follower
    from ...render import Format
    from ..output import resolve_format

    chosen = resolve_format(fmt, None, Format.table, (Format.table, Format.json))
    _check_outputs(output, skip_out, events, max_silent, for_steps)
    outputs = {Path(p): flag for p, flag in ((events, "--events"), (skip_out, "--skip-out"), (output, "-o"))
               if p is not None and str(p) != "-"}
    opts = LoadOptions(prompt_col=prompt_col, reward_col=reward_col, step_col=step_col, group_col=group_col,
                       threshold=threshold, length_col=length_col, keep_duplicates=keep_duplicates,
                       silent_share_col=silent_share_col, group_count_col=group_count_col)
    state = Watch(G=G, window=window, max_p_silent=max_p_silent, max_silent=max_silent, for_steps=for_steps)
    live = _Live(chosen is Format.json, events, skip_out, quiet)
    live.dapo, live.warn_at = dapo_settings(train_batch, gen_batch, max_gen_batches, 100), warn_p_raises
    with _Streams(paths) as streams, Follower(streams.paths, opts, outputs=outputs) as follower, live:
        live.rename = streams.named
        try:
            ended_by = _follow(follower, state, live, once=once, interval=interval, until_idle=until_idle,
                               streams=streams)
        except SigmauditError as exc:  # a stream's copy named by its source
            exc.message = streams.named(exc.message)
            exc.location = None if exc.location is None else streams.named(exc.location)
            raise
    summary = state.summary(ended_by)
    live.finish(summary, output, max_silent, for_steps)
    if state.failed:
        raise typer.Exit(1)


def _check_outputs(output: Path | None, skip_out: Path | None, events: Path | None, max_silent: float | None,
                   for_steps: int) -> None:
    """Refuse impossible options before anything is read."""
    from ...errors import ConfigError
    from ...writers import table_suffix

    if skip_out is not None:
        table_suffix(skip_out, "--skip-out")
    if events is not None and str(events) == "-":
        raise ConfigError("cannot go to standard output (the step lines do)", location="--events -",
                          remedy="name a file, or use --format json: it prints the same objects on standard output")
    if for_steps != 1 and max_silent is None:
        raise ConfigError("--for needs --max-silent", location="--for", remedy="add --max-silent T")
    if output is not None and str(output) != "-" and output.suffix.lower() not in (".json", ".txt"):
        raise ConfigError(f"cannot tell the format from the suffix {output.suffix or '(none)'!r}",
                          location=f"-o {output}", remedy="name the summary file .json or .txt")


def _follow(follower: Follower, state: Watch, live: _Live, *, once: bool, interval: float,
            until_idle: float | None, streams: _Streams) -> str:
    """Poll until the end; returns what ended the watch (once, idle, guard, interrupt, terminate)."""
    import signal
    import threading

    signals = _Signals()
    previous = {}
    if threading.current_thread() is threading.main_thread():
        previous = {sig: signal.signal(sig, signals.handler) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        return _loop(follower, state, live, signals, once=once, interval=interval, until_idle=until_idle,
                     streams=streams)
    except (KeyboardInterrupt, _Stop):
        return signals.how or "interrupt"
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _loop(follower: Follower, state: Watch, live: _Live, signals: _Signals, *, once: bool, interval: float,
          until_idle: float | None, streams: _Streams) -> str:
    """Poll every ``interval`` seconds. ``--once`` ends at the second poll, ``--until-idle`` once nothing
    changed for that long; either way the last step is completed only if nothing changed since the poll
    before and no file ends in a half-written line. A signal ends the loop after the poll in progress."""
    from ...writers import protect

    last_change = time.monotonic()
    polls = 0
    told = False
    while True:
        snap = follower.poll()
        polls += 1
        protect(follower.local_files())  # the logs read are never written over
        live.notes(snap.new_notes)
        if snap.files and not snap.has_steps:
            from ...audits.forecast import NO_STEPS, STEPS_REMEDY
            from ...errors import SchemaError

            raise SchemaError(NO_STEPS, remedy=STEPS_REMEDY)
        if snap.changed:
            last_change = time.monotonic()
        ended = streams.ended() and not snap.changed  # every stream read to its end, and read here
        end = (once and polls >= 2) or ended or (
            until_idle is not None and polls >= 2 and time.monotonic() - last_change >= until_idle)
        settled = end and not snap.changed and not snap.pending and signals.how is None
        # --once reports at its second poll only: the steps there are one history, forecast once
        if snap.layout == "series":
            source = next((str(f) for f in follower.local_files()), None)
            if state.G is not None:
                from ...loaders.series import g_refused

                raise g_refused(source or "the followed files")
            reports = [] if once and not end else state.advance_series(snap.series, source)
        else:
            if once and not end:
                state.saw(snap.per_group)
            reports = [] if once and not end else state.advance(snap.per_group, final=settled)
        for report in reports:
            live.step(report, state)
        if state.failed:
            return "guard"
        if signals.how is not None:
            return signals.how
        if end:
            live.notes(tuple(f"still being written when the watch ended: {w}" for w in snap.waiting))
            return "once" if once else "eof" if ended else "idle"
        if not told and not snap.files:
            told = True
            live.notes((_waiting_for(follower, snap, interval),))
        signals.wake.wait(interval)


def _waiting_for(follower: Follower, snap: Any, interval: float) -> str:
    """What a watch that has read nothing yet is waiting for (said once)."""
    where = ", ".join(str(p) for p in follower.paths)
    if snap.waiting:
        what = f"{snap.waiting[0]}" + (f" (and {len(snap.waiting) - 1} more)" if len(snap.waiting) > 1 else "")
    else:
        what = f"the first rollout file in {where} (none there yet)"
    return f"waiting for {what}; polling every {interval:g} s, Ctrl-C ends"


class _Streams:
    """``-`` (standard input) and pipe paths (``<(zcat log.jsonl.gz)``, a FIFO) followed as files: each copied,
    as it arrives, into a file of a private temp folder (named by its first bytes, as ``scan -`` names it),
    which the follower follows; notes and errors name the source. Once every stream has ended, the watch
    ends as soon as it has read everything (``ended_by`` eof)."""

    def __init__(self, paths: list[str]) -> None:
        from ..inputs import is_pipe

        self.sources = [p for p in paths if str(p) == "-" or is_pipe(p)]
        self.paths: list[str] = list(paths)
        self.names: dict[str, str] = {}
        self._threads: list[Any] = []
        self._stack: Any = None

    def __enter__(self) -> _Streams:
        if not self.sources:
            return self
        import contextlib
        import threading

        from ...loaders.tempdirs import run_folder
        from ..inputs import STDIN_NAME

        self._stack = contextlib.ExitStack()
        folder = self._stack.enter_context(run_folder())
        for i, p in enumerate(self.paths):
            if p not in self.sources:
                continue
            name = STDIN_NAME if str(p) == "-" else str(p)
            where = folder / f"stream{i}"
            where.mkdir()
            self.names[str(where)] = name
            self.paths[i] = str(where)
            thread = threading.Thread(target=_copy_stream, args=(p, name, where), daemon=True)
            thread.start()
            self._threads.append(thread)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._stack is not None:
            self._stack.close()

    def ended(self) -> bool:
        """Every stream read to its end (False without streams)."""
        return bool(self._threads) and not any(t.is_alive() for t in self._threads)

    def named(self, text: str) -> str:
        """``text`` naming each stream by its source, not its copy."""
        for tmp, name in self.names.items():
            text = text.replace(tmp, name)
        return text


def _copy_stream(source: str, name: str, folder: Path) -> None:
    """Append what ``source`` (``-`` or a pipe) gives to ``folder/<name>.<suffix>`` as it arrives; the suffix
    from its first bytes (a stream that gives nothing leaves no file)."""
    import os

    from ...loaders.inputs import stdin_suffix

    fd = sys.stdin.fileno() if source == "-" else os.open(source, os.O_RDONLY)
    out = None
    head = b""
    try:
        while chunk := os.read(fd, 1 << 16):
            if out is None:
                head += chunk
                if len(head) < 64 and not head.endswith(b"\n"):
                    continue
                try:
                    suffix = stdin_suffix(head, name)
                except Exception:  # noqa: BLE001 - the follower reads the bytes and says what is wrong
                    suffix = ".jsonl"
                out = open(folder / f"stream{suffix}", "ab")  # noqa: SIM115 - closed in finally
                chunk, head = head, b""
            out.write(chunk)
            out.flush()
        if out is None and head.strip():
            with open(folder / f"stream{stdin_suffix(head, name)}", "ab") as fh:
                fh.write(head)
    except (OSError, ValueError):
        pass
    finally:
        if out is not None:
            out.close()
        if source != "-":
            os.close(fd)


class _Live:
    """Where each completed step goes: stdout (a line, or a JSON object), --events, --skip-out."""

    def __init__(self, as_json: bool, events: Path | None, skip_out: Path | None, quiet: bool) -> None:
        self.as_json, self.events_path, self.skip_out, self.quiet = as_json, events, skip_out, quiet
        self._events: Any = None
        self.rename: Any = str  # names a stream's copy by its source (_Streams.named)
        self.dapo: Any = None  # DapoSettings with --train-batch (the next step's P(raises) warning)
        self.warn_at = 0.05
        self._legend = self._history = False  # said once, before the first step's line that needs them

    def __enter__(self) -> _Live:
        if self.events_path is not None:
            from ...writers import LiveFile

            self._events = LiveFile(self.events_path, "--events")  # in place at the first step, not before
        return self

    def __exit__(self, *exc: object) -> None:
        if self._events is not None:
            self._events.close()

    def notes(self, lines: tuple[str, ...]) -> None:
        if self.quiet:
            return
        from ..output import note

        for line in lines:
            note(self.rename(line))

    def step(self, report: StepReport, state: Watch) -> None:
        """Send one completed step everywhere it goes (skip list first: a reader of the line finds it current).
        Its JSON object is built only for a reader of it (--events, -f json, --train-batch's warning): at
        8,000 steps of ``watch --once`` building it for every step cost a tenth of the run (issue 45)."""
        wanted = self._events is not None or self.as_json or self.dapo is not None
        data = _jsonable(report.to_dict() | self._dapo(report)) if wanted else {}
        if self.skip_out is not None and state.skip_table is not None:
            from ...writers import write_table

            write_table(state.skip_table, self.skip_out, "--skip-out", staged=False)  # kept current while watching
        if self._events is not None:
            self._events.write(json.dumps(data, ensure_ascii=False) + "\n")
        if self.as_json:
            sys.stdout.write(json.dumps(data, ensure_ascii=False) + "\n")
        else:
            from ...views.watch import HISTORY_NOTE, is_history, legend_lines, step_line

            if not self._legend:  # to stderr, as notes: stdout stays one line per step
                self._legend = True
                self.notes(legend_lines(state.window, state.max_p_silent))
            if is_history(report) and not self._history:
                self._history = True
                self.notes((HISTORY_NOTE,))
            sys.stdout.write(step_line(report) + "\n")
            if data.get("dapo", {}).get("warning"):
                from ...views.dapo import watch_warning

                sys.stdout.write(watch_warning(report.step, data["dapo"], self.dapo) + "\n")
        sys.stdout.flush()

    def _dapo(self, report: StepReport) -> dict[str, Any]:
        """The ``dapo`` event key with --train-batch (:func:`sigmaudit.audits.dapo.watch_event`), else nothing."""
        if self.dapo is None:
            return {}
        from ...audits.dapo import watch_event

        f = report.forecast
        return {"dapo": watch_event(None if f is None else f.silent, 0 if f is None else f.prompts, self.dapo,
                                    report.G if f is None else f.G, self.warn_at)}

    def finish(self, summary: Any, output: Path | None, max_silent: float | None, for_steps: int) -> None:
        """The summary: on stdout after the lines (a JSON object with --format json), and to -o."""
        from ...views.watch import summary_lines
        from ..output import emit

        data = {"summary": _jsonable(summary.to_dict())}
        text = "\n".join(summary_lines(summary, max_silent, for_steps)) + "\n"
        if self.as_json:
            sys.stdout.write(json.dumps(data, ensure_ascii=False) + "\n")
        else:
            sys.stdout.write(text)
        sys.stdout.flush()
        if output is not None and str(output) != "-":
            emit(json.dumps(data, indent=2) + "\n" if output.suffix.lower() == ".json" else text, output)


def _jsonable(obj: Any) -> Any:
    """NaN and ±inf as null (the JSON renderer's rule)."""
    from ...fmt import none_if_nan

    if isinstance(obj, dict):
        return {k: _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, float):
        return none_if_nan(obj)
    return obj
