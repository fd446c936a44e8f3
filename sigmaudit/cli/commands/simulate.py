"""``sigmaudit simulate``: the controlled training run (no model, CPU, seconds).

JSON contract (``--format json``), besides ``schema_version``:

- ``rules``: the simulated rules, in order.
- ``config``: ``prompts``, ``G``, ``steps``, ``lr``, ``seed``, ``budget_rollouts`` (prompts × G × steps: what
  every arm may generate), ``init``
  (``source`` beta-mixture|corpus, ``description``, ``mean_p``, ``corpus_prompts``,
  ``corpus_excluded``, ``resampled``).
- ``r2_silent``: R² of the forecast mean silent(p, G) against the measured silent fraction over
  steps, GRPO arm (null without it).
- Arms (the keys below): every rule asked, and with drgrpo also ``drgrpo-matched`` (Dr. GRPO at the lr
  matched to GRPO's expected first step). ``hard_quartile_initial``; ``hard_quartile_final``: ``{arm: mean p
  of the initially hardest quarter after the arm's last step}``.
- ``dapo_oversampling``: DAPO's rollouts generated per rollout trained (verl's loop: whole chunks; null
  without a DAPO arm).
- ``samples``: ``{arm: rollouts generated}``.
- ``summary``: ``{arm: {rule, comparison, lr, steps, rollouts_generated, rollouts_trained, r2_silent,
  silent_measured_mean, silent_forecast_mean, extreme_share_mean, extreme_share_forecast_mean,
  hard_quartile_final, mean_p_final, groups_drawn, groups_used, samples, oversampling,
  draws_per_used_group}}`` (``comparison``: what the arm is compared at; DAPO runs until its generated
  rollouts reach the budget, so ``steps`` is the steps it paid for).
- ``series``: ``{arm: {silent_measured, silent_forecast, hard_quartile, mean_p, extreme_share,
  extreme_share_forecast}}``, lists of length ``steps`` (DAPO: the steps it ran); entry i is step i + 1
  (silent and extreme-share values at the p the step drew with; hard_quartile and mean_p after its update).

``--format csv`` writes the per-step series as one long table (step, rule, ...).

``--log-out run.parquet`` (or .csv, .jsonl) also writes the first rule's run as a rollout log in
the long layout: ``step`` (1..steps), ``prompt``, ``reward`` (0/1, one row per answer) and
``true_p`` (the pass rate the group was drawn at; loaders ignore it). DAPO's log holds each prompt's
group of the step's first chunk (before the filter). ``forecast`` and ``backtest`` read it like any log;
tests check them against ``true_p``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ..options import FormatOpt, OutputOpt, emit_result, group_size_option, steps_option

SIMULATE_MAX_G = 65_536
"""simulate's own bound on -G (its cost, like --prompts and --steps): the shared -G rule is the core's."""


def _check_options(G: int, log_out: Path | None) -> None:
    """Refuse a -G beyond simulate's cost bound, and a --log-out file type it cannot write, before any work."""
    from ...errors import ConfigError
    from ...writers import table_suffix

    if G > SIMULATE_MAX_G:
        raise ConfigError(f"simulate draws every group's answers, so its time grows with G: at most "
                          f"{SIMULATE_MAX_G:,}, got {G:,}", location="-G/--group-size",
                          remedy="use 'sigmaudit calc' for the closed forms at a larger G")
    if log_out is not None:
        table_suffix(log_out, "--log-out")


def _rules(value: str) -> str:
    from ...audits.simulate import parse_rules

    try:
        return ",".join(parse_rules(value))
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from None


def _positive(value: float) -> float:
    import math

    if not (value > 0 and math.isfinite(value)):
        raise typer.BadParameter(f"must be a finite number > 0, got {value:g}")
    return value


DEFAULT_STEPS = 150


def _step_count(num_steps: int | None, steps: str | None) -> int:
    """``--num-steps``, or the deprecated ``--steps N`` (a count, with a warning); a window ``A:B`` is refused:
    a simulated run has no log to cut."""
    from ..output import note

    if steps is None:
        return DEFAULT_STEPS if num_steps is None else num_steps
    if num_steps is not None:
        raise typer.BadParameter("give --num-steps only (--steps is its deprecated name)", param_hint="'--steps'")
    if not steps.isdigit() or not 1 <= int(steps) <= 1_000_000:
        raise typer.BadParameter(f"{steps!r}: simulate's --steps is a count (deprecated: use --num-steps N, "
                                 "1 to 1,000,000); a simulated run has no step window", param_hint="'--steps'")
    note(f"warning: simulate --steps {steps} is deprecated (in every other command --steps A:B is a window); "
         f"use --num-steps {steps}")
    return int(steps)


def simulate(
    prompts: Annotated[int | None, typer.Option("--prompts", min=1, max=10_000_000, show_default=False,
                                                help="Simulated prompts M [default: 6000; with --init-from: "
                                                     "every usable corpus prompt, else resampled to M].")] = None,
    G: Annotated[int, group_size_option("Group size G.", show_default=True)] = 8,
    num_steps: Annotated[int | None, typer.Option(
        "--num-steps", min=1, max=1_000_000, metavar="INT", show_default=False,
        help="Training steps to simulate [default: 150].")] = None,
    steps: Annotated[str | None, steps_option(
        "Deprecated here: the old name of --num-steps (a count; in every other command --steps A:B is a window). "
        "Still read, with a warning, for one release.", metavar="INT", show_default=False)] = None,
    lr: Annotated[float, typer.Option("--lr", callback=_positive, help="Step size on the logit θ (> 0).")] = 0.5,
    seed: Annotated[int, typer.Option("--seed", help="Seed of every random draw.")] = 0,
    rules: Annotated[str, typer.Option("--rules", callback=_rules, help="Comma-separated rules: grpo, drgrpo, dapo, "
                                                                        "rloo, sign.")] = "grpo,drgrpo,dapo",
    init_from: Annotated[list[Path] | None, typer.Option("--init-from", show_default=False,
                                                         help="Logs whose pass rates k/n (0 < k < n, clipped to "
                                                              "[0.02, 0.98]) give the initial difficulty "
                                                              "(repeatable) [default: a Beta mixture].")] = None,
    log_out: Annotated[Path | None, typer.Option(
        "--log-out", dir_okay=False, show_default=False,
        help="Also write the first rule's run as a rollout log (.parquet, .csv or .jsonl; long layout: step, "
             "prompt, reward, and true_p, the pass rate each group was drawn at).")] = None,
    fmt: FormatOpt = None,
    output: OutputOpt = None,
) -> None:
    """Controlled training run on Bernoulli-logit prompts p = sigmoid(θ): GRPO vs Dr. GRPO vs DAPO.

    Each step every prompt draws k ~ Binomial(G, p); θ moves by lr · gain (σ, σ², σ²·G/(G−1), sign p + (k/G)(1 − 2p)).
    DAPO runs verl's loop until it has generated the others' rollouts; drgrpo-matched: the lr matching GRPO's step.
    Per arm: what it is compared at, rollouts generated and trained, silent fraction, extreme share, hard quarter.

    \b
    Example:
      sigmaudit simulate --num-steps 60 --rules grpo,dapo,sign
    """
    from ...audits.simulate import SeriesReport
    from ...audits.simulate import simulate as run_simulate
    from ...render import Format
    from ..inputs import load_inputs
    from ..output import note, resolve_format

    _check_options(G, log_out)
    steps = _step_count(num_steps, steps)
    counts = None
    if init_from:
        pp = load_inputs(list(init_from), series_ok=False).per_prompt
        counts = (pp["n"].to_numpy(), pp["k"].to_numpy())
    result = run_simulate(prompts=prompts, G=G, steps=steps, lr=lr, seed=seed, rules=rules, init_counts=counts,
                          init_label=", ".join(map(str, init_from or [])), record=log_out is not None)
    if log_out is not None:
        _write_log(result, log_out, G, steps)
    init = result.config.init
    if init_from and init.corpus_excluded:
        note(f"--init-from: {init.corpus_excluded:,} prompts with k/n ∈ {{0, 1}} left out (no gradient to follow), "
             f"{init.corpus_prompts:,} used")
    emit_result(SeriesReport(result) if resolve_format(fmt, output) is Format.csv else result, fmt, output)


def _write_log(result, log_out: Path, G: int, steps: int) -> None:
    """``--log-out``: the first rule's run as a long rollout log, refused when it holds no rollout."""
    from ...audits.simulate import rollout_log
    from ...writers import write_table
    from ..output import note

    log = rollout_log(result)
    if log.height == 0:  # DAPO's first step alone can take more rollouts than the others' whole budget
        from ...errors import ConfigError

        raise ConfigError(f"the {result.runs[0].rule} run completed no step within the budget "
                          f"({result.config.prompts:,} prompts × G = {G} × {steps:,} steps), so its log "
                          "would hold no rollout", location="--log-out",
                          remedy="raise --num-steps, or list another rule first in --rules")
    write_table(log, log_out, "--log-out")
    note(f"wrote {log_out}: the {result.runs[0].rule} run, {log.height:,} rollouts (long layout)")
