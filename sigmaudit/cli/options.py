"""Options shared by every command, and the one way a command emits its result."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from typer.models import OptionInfo

from ..render import Format


def unit_interval(value: float | None) -> float | None:
    """Typer callback: a probability or rate in [0, 1] (None passes; NaN and ±inf are refused)."""
    from ..core._validate import as_prob

    if value is not None:
        try:
            as_prob(value, "value")
        except ValueError as exc:
            raise typer.BadParameter(str(exc).removeprefix("value ")) from exc
    return value


def open_unit_interval(value: float | None) -> float | None:
    """Typer callback: ε in [EPS_MIN, 1) (the core's one ε check; ε feeds the exact group-size search)."""
    from ..core._validate import EPS_MIN, as_eps

    if value is None:
        return None
    try:
        as_eps(value, minimum=EPS_MIN)
    except ValueError as exc:
        raise typer.BadParameter(str(exc).removeprefix("eps ")) from exc
    return value


from ..audits.arguments import DEFAULT_RUN_STEPS, MAX_GROUP_SIZE, MAX_REPLICATES, MIN_REPLICATES  # noqa: E402  (one rule for the CLI and the API)

# MAX_GROUP_SIZE: the largest ``-G`` any command takes (the core's rule: larger values wrap around in 64-bit
# integers). Before it was declared once, ``plan -G 1e20`` overflowed, ``check -G 1e20`` passed and only
# ``simulate`` had a bound (65,536: its own cost, which it still checks).


def group_size_bound(value: int | list[int] | None) -> int | list[int] | None:
    """Typer callback of ``-G``: every value at most :data:`MAX_GROUP_SIZE` (Typer checks >= 1)."""
    for v in value if isinstance(value, list) else [] if value is None else [value]:
        if v > MAX_GROUP_SIZE:
            raise typer.BadParameter(f"must be at most 2**62, got {v}")
    return value

# Each flag below is declared here once and used by every command that takes it (the architecture test
# refuses a flag declared twice). A factory takes the command's own help text where the flag's meaning
# there is narrower (``-G``: the sizes to report, the run's size, the next visit's size); ``extra`` passes
# a command's help panel, callback or ``dir_okay`` through.


def group_size_option(help: str, **extra: Any) -> OptionInfo:
    """``-G/--group-size``: a whole number in [1, :data:`MAX_GROUP_SIZE`] (repeatable when the command's
    parameter is a list)."""
    return typer.Option("-G", "--group-size", min=1, callback=group_size_bound, metavar="INT", help=help,
                        **{"show_default": False} | extra)


def steps_option(help: str, **extra: Any) -> OptionInfo:
    """``--steps``: the steps of a log to read (``A:B``, a window) or, in ``simulate``, how many to run."""
    return typer.Option("--steps", help=help, **extra)


def g_main_option(help: str) -> OptionInfo:
    """``--g-main``: the G of wasted compute, finite-G mass and the group-size check."""
    return typer.Option("--g-main", min=1, callback=group_size_bound, show_default=False, metavar="INT", help=help)


def max_silent_option(help: str, **extra: Any) -> OptionInfo:
    """``--max-silent``: a silent rate in [0, 1] (a gate's threshold, or a target)."""
    return typer.Option("--max-silent", callback=unit_interval, show_default=False, metavar="FLOAT", help=help,
                        **extra)


def min_fidelity_option(help: str, **extra: Any) -> OptionInfo:
    """``--min-fidelity``: a mean fidelity φ in [0, 1] (a gate's threshold, or a target)."""
    return typer.Option("--min-fidelity", callback=unit_interval, show_default=False, metavar="FLOAT", help=help,
                        **extra)


def max_p_silent_option(help: str, **extra: Any) -> OptionInfo:
    """``--max-p-silent``: a forecast P(silent) in [0, 1] above which a prompt is skipped."""
    return typer.Option("--max-p-silent", callback=unit_interval, metavar="FLOAT", help=help,
                        **{"show_default": False} | extra)


def skip_out_option(help: str, **extra: Any) -> OptionInfo:
    """``--skip-out``: the per-prompt skip table (.csv, .parquet or .jsonl)."""
    return typer.Option("--skip-out", dir_okay=False, metavar="FILE", show_default=False, help=help, **extra)


def eps_option(help: str = "Fidelity shortfall ε for the group-size law (φ ≥ 1 − ε).", **extra: Any) -> OptionInfo:
    """``--eps``: ε in [EPS_MIN, 1) (checked by the core's one ε check unless ``extra`` says otherwise)."""
    return typer.Option("--eps", help=help, **{"callback": open_unit_interval} | extra)


def format_option(help: str = "Output format: table (terminal), json, markdown, csv or html. Default: from -o's "
                              "suffix, else table.", offered: tuple[Format | str, ...] = tuple(Format),
                  **extra: Any) -> OptionInfo:
    """``-f/--format``: one of :class:`~sigmaudit.render.Format` (``reduce``: a table format); ``offered``, the
    formats the command writes, is what ``--help`` lists (tests/test_global_flags.py checks it)."""
    values = [str(getattr(f, "value", f)) for f in offered]

    def complete(incomplete: str) -> list[str]:  # Tab offers exactly what the command accepts
        return [v for v in values if v.startswith(incomplete.lower())]

    return typer.Option("--format", "-f", help=help, case_sensitive=False, show_default=False,
                        metavar=f"<{'|'.join(values)}>", autocompletion=complete, **extra)


def output_option(help: str = "Write the report to this file (atomically, after success); its suffix picks the "
                              "format; - is stdout.", **extra: Any) -> OptionInfo:
    """``-o/--output``: the command's one output (``-`` is stdout)."""
    return typer.Option("--output", "-o", help=help, **{"show_default": False} | extra)


def drop_out_option(help: str, **extra: Any) -> OptionInfo:
    """``--drop-out``: the per-prompt drop list a command writes (.csv, .parquet or .jsonl)."""
    return typer.Option("--drop-out", dir_okay=False, show_default=False, help=help, **extra)


_TRAINER = "Trainer conventions"
AdvantageOpt = Annotated[str, typer.Option(
    "--advantage", rich_help_panel=_TRAINER, metavar="NAME",
    help="Advantage estimator of the run: grpo, drgrpo or rloo.")]
StdOpt = Annotated[str, typer.Option(
    "--std", rich_help_panel=_TRAINER, metavar="NAME",
    help="GRPO's std: sample (Bessel, G − 1: TRL's and verl's) or population (G).")]


def check_conventions(advantage: str, std: str) -> None:
    """``--advantage`` and ``--std`` name an estimator and a convention (ConfigError naming the flag)."""
    from ..core.update import ADVANTAGES, STD_CONVENTIONS
    from ..errors import ConfigError

    if advantage not in ADVANTAGES:
        raise ConfigError(f"--advantage {advantage!r} is not an estimator", location="--advantage",
                          remedy=f"choose one of {', '.join(ADVANTAGES)}")
    if std not in STD_CONVENTIONS:
        raise ConfigError(f"--std {std!r} is not a convention", location="--std",
                          remedy=f"choose one of {', '.join(STD_CONVENTIONS)}")


ESTIMATOR_HELP = ("auto (default: silent rates unbiased where every prompt has n ≥ G, else bayes; everything else "
                  "bayes), bayes (posterior under the corpus prior), unbiased, or plugin (p̂ = k/n). The same rule in "
                  "scan, plan, check, report and trend.")


def estimator_option(help: str = ESTIMATOR_HELP) -> OptionInfo:
    """``--estimator``: one of the estimator rules (:func:`check_estimator`)."""
    return typer.Option("--estimator", callback=check_estimator, metavar="NAME", help=help)


EpsOpt = Annotated[float, eps_option()]
PostFilterOpt = Annotated[
    bool,
    typer.Option("--post-filter", help="The log was written after zero-variance filtering (DAPO-style): "
                                       "say so in the output (JSON key 'filtered', source 'flag')."),
]
FormatOpt = Annotated[Format | None, format_option()]
OutputOpt = Annotated[Path | None, output_option()]


def emit_result(result: object, fmt: Format | None, output: Path | None, *, default: Format = Format.table,
                offered: tuple[Format, ...] = tuple(Format)) -> Format:
    """Build the result's view, render it in the chosen format and send it to stdout or ``output``;
    returns the format written."""
    from ..render import render
    from ..views import build_view
    from .output import emit, is_stdout, resolve_format, stdout_is_terminal
    from .settings import use_color

    chosen = resolve_format(fmt, output, default, offered)
    to_stdout = chosen is Format.table and is_stdout(output)
    terminal = to_stdout and stdout_is_terminal()
    color = to_stdout and use_color(terminal)
    width = None  # not a terminal: COLUMNS when set, else as wide as the tables need (the renderer decides)
    if terminal:
        import shutil

        width = shutil.get_terminal_size((100, 24)).columns
    from .settings import current

    emit(render(build_view(result), chosen, color=color, width=width, full=current.full), output)
    return chosen


def check_estimator(value: str) -> str:
    """Typer callback: one of the estimator rules, named in a person's words when it is not."""
    from ..core.estimates import ESTIMATOR_CHOICES

    if value not in ESTIMATOR_CHOICES:
        raise typer.BadParameter(f"{value!r} is not an estimator; choose one of {', '.join(ESTIMATOR_CHOICES)}")
    return value


def check_level(value: float | None) -> float | None:
    """Typer callback: an interval level or confidence in (0, 1) (None passes)."""
    if value is not None and not 0.0 < value < 1.0:
        raise typer.BadParameter(f"must lie strictly between 0 and 1 (e.g. 0.9), got {value:g}")
    return value



def check_replicates(value: int) -> int:
    """Typer callback: ``--bootstrap`` is 0 (no intervals) or from :data:`MIN_REPLICATES` to :data:`MAX_REPLICATES`."""
    if value > MAX_REPLICATES:
        raise typer.BadParameter(f"must be at most {MAX_REPLICATES:,} (the percentile's Monte Carlo error there is "
                                 f"far below the bootstrap's own; more only costs memory), got {value:,}")
    if 0 < value < MIN_REPLICATES:
        raise typer.BadParameter(f"must be 0 (no intervals) or at least {MIN_REPLICATES} (a percentile interval "
                                 f"from {value} replicates is noise), got {value}")
    return value


EstimatorOpt = Annotated[str, estimator_option()]
BootstrapOpt = Annotated[
    int,
    typer.Option("--bootstrap", min=0, metavar="INT", callback=check_replicates,
                 help="Bootstrap replicates over prompts behind the intervals (each refits the prior); 0: none."),
]
LevelOpt = Annotated[
    float,
    typer.Option("--level", callback=check_level, metavar="FLOAT", help="Two-sided level of the intervals."),
]


# --------------------------------------------------------------------------- watch

_WATCH_GUARD = "Guard (exit 1)"
_WATCH_OUT = "Live outputs"

WatchIntervalOpt = Annotated[
    float,
    typer.Option("--interval", min=0.01, metavar="SECONDS",
                 help="Seconds between two polls of the paths (also how long --once waits to see that no file "
                      "still grows)."),
]
WatchOnceOpt = Annotated[
    bool,
    typer.Option("--once", help="Report what is there and exit (cron, CI): every step a later step follows, and "
                                "the last one too when no file changed during one --interval."),
]
WatchUntilIdleOpt = Annotated[
    float | None,
    typer.Option("--until-idle", min=0.0, metavar="SECONDS", show_default=False,
                 help="Exit once no file has changed for this long (the last step then counts as completed)."),
]
WatchWindowOpt = Annotated[
    int,
    typer.Option("--window", min=1, metavar="INT", help="Completed steps pooled in the rolling silent share."),
]
WatchMaxPSilentOpt = Annotated[
    float,
    max_p_silent_option("A prompt is on the skip list when its forecast P(silent) at the next visit exceeds this.",
                        show_default=True),
]
WatchMaxSilentOpt = Annotated[
    float | None,
    max_silent_option("Exit 1 when a completed step's observed silent share exceeds this in --for consecutive steps.",
                      rich_help_panel=_WATCH_GUARD),
]
WatchForOpt = Annotated[
    int,
    typer.Option("--for", min=1, metavar="INT", rich_help_panel=_WATCH_GUARD,
                 help="Consecutive steps over --max-silent that trip the guard."),
]
WatchEventsOpt = Annotated[
    Path | None,
    typer.Option("--events", dir_okay=False, metavar="FILE", show_default=False, rich_help_panel=_WATCH_OUT,
                 help="Write one JSON object per completed step to FILE (jsonl, flushed per step; the old file "
                      "is replaced at the first step, never an input log)."),
]
WatchFormatOpt = Annotated[Format | None, format_option(
    "Output format: table (one line per completed step, then the summary) or json (one object per step, then "
    '{"summary": ...}).', offered=(Format.table, Format.json))]
WatchOutputOpt = Annotated[Path | None, output_option(
    "Also write the summary here when the watch ends (atomically): JSON for .json, else text (.txt).")]
WatchSkipOutOpt = Annotated[
    Path | None,
    skip_out_option(rich_help_panel=_WATCH_OUT,
                    help="Keep FILE (.csv, .parquet or .jsonl) up to date, atomically after each step, with the next "
                         "step's per-prompt forecast: every prompt with p_silent, expected_useful_rollouts and skip."),
]


def check_objective(value: str | None) -> str | None:
    """Typer callback: one of the plan's objectives (None passes: the default applies)."""
    from ..audits.objective import OBJECTIVE_NAMES

    if value == "update":
        raise typer.BadParameter("'update' (the expected update size) is the step size under SGD at a fixed learning "
                                 "rate, not an objective: AdamW, verl's and TRL's default, divides a constant "
                                 "rescaling out (--full shows it); choose one of " + ", ".join(OBJECTIVE_NAMES))
    if value is not None and value not in OBJECTIVE_NAMES:
        raise typer.BadParameter(f"{value!r} is not an objective; choose one of {', '.join(OBJECTIVE_NAMES)}")
    return value


ObjectiveOpt = Annotated[
    str | None,
    typer.Option(
        "--objective", callback=check_objective, metavar="NAME", show_default=False,
        help="Without a target, how G is chosen at the fixed rollouts per step R (docs/theory.md): snr (default: "
             "the step's signal-to-noise ratio with between-prompt and per-rollout noise; the G within --tolerance "
             "of the best for every --between-prompt-share of the band, keeping the run's G when it is one), or a "
             "view recommending the smallest G within --tolerance of its best: informative (informative groups), "
             "rollouts (rollouts inside informative groups), knapsack (Knapsack-RL's value, arXiv:2509.25849).",
    ),
]


_WINDOW = "Step window (a training run moves)"
StepsOpt = Annotated[
    str | None,
    steps_option("Use only the groups logged at steps A to B (inclusive; A: or :B leave a side open). "
                 "Every figure, observed or predicted, is then the window's; JSON key 'window'.",
                 metavar="A:B", rich_help_panel=_WINDOW, show_default=False),
]
LastStepsOpt = Annotated[
    int | None,
    typer.Option("--last-steps", min=1, metavar="N", rich_help_panel=_WINDOW, show_default=False,
                 help="Use only the groups of the last N logged steps (the run's current difficulty)."),
]


# --------------------------------------------------------------------------- DAPO as verl runs it (plan, check, watch)

_DAPO = "DAPO as verl runs it (verl's names)"
def train_batch_option(help: str) -> OptionInfo:
    """``--train-batch B``: verl's ``data.train_batch_size`` (the command's ``help`` says what it adds)."""
    return typer.Option("--train-batch", min=1, metavar="B", rich_help_panel=_DAPO, show_default=False, help=help)


def gen_batch_option(help: str) -> OptionInfo:
    """``--gen-batch M``: verl's ``data.gen_batch_size``."""
    return typer.Option("--gen-batch", min=1, metavar="M", rich_help_panel=_DAPO, show_default=False, help=help)


TrainBatchOpt = Annotated[int | None, train_batch_option(
    "data.train_batch_size: prompts a DAPO step trains on. Adds DAPO's loop as verl runs it: chunks per step, "
    "rollouts generated per trained, informative rollouts truncated, P(a step raises); JSON key 'dapo'.")]
GenBatchOpt = Annotated[int | None, gen_batch_option(
    "data.gen_batch_size: prompts per generation chunk [default: --train-batch, as verl].")]
MaxGenBatchesOpt = Annotated[
    int,
    typer.Option("--max-gen-batches", metavar="K", rich_help_panel=_DAPO,
                 help="algorithm.filter_groups.max_num_gen_batches: a step that kept fewer than B prompts after K "
                      "chunks raises 'Generated too many'; K ≤ 0: no limit (verl's default 0)."),
]
RunStepsOpt = Annotated[
    int,
    typer.Option("--run-steps", min=1, metavar="S", rich_help_panel=_DAPO,
                 help="S in 'P(a run of S steps raises)', every step at the difficulty read."),
]

DatasetSizeOpt = Annotated[
    int | None,
    typer.Option("--dataset-size", min=1, metavar="D", rich_help_panel=_DAPO, show_default=False,
                 help="Prompts in the training set verl draws from: corrects DAPO's figures for drawing without "
                      "replacement within an epoch (a step reading a large share of D varies less; "
                      "docs/theory.md); a --gen-batch larger than D is refused (verl's loader yields no batch)."),
]


def dapo_settings(train_batch: int | None, gen_batch: int | None, max_gen_batches: int, run_steps: int,
                  dataset_size: int | None = None) -> Any:
    """:class:`~sigmaudit.audits.dapo.DapoSettings` from the DAPO flags (None without ``--train-batch``;
    ConfigError when another DAPO flag is given without it)."""
    from ..errors import ConfigError

    if train_batch is None:
        if (gen_batch is not None or max_gen_batches != 0 or run_steps != DEFAULT_RUN_STEPS
                or dataset_size is not None):
            raise ConfigError("the DAPO flags need --train-batch", location="--gen-batch/--max-gen-batches/"
                              "--run-steps/--dataset-size", remedy="add --train-batch B (verl's data.train_batch_size)")
        return None
    from ..audits.dapo import DapoSettings

    return DapoSettings(train_batch, train_batch if gen_batch is None else gen_batch, max_gen_batches, run_steps,
                        dataset_size)
WarnPRaisesOpt = Annotated[
    float,
    typer.Option("--warn-p-raises", metavar="P", rich_help_panel=_DAPO, callback=unit_interval,
                 help="watch: warn (a line, and the event key dapo.warning) when the next step's P(a step raises) "
                      "passes P."),
]
