"""``sigmaudit simulate``: the controlled training run (no model, CPU, seconds).

JSON contract (``--format json``), besides ``schema_version``:

- ``rules``: the simulated rules, in order.
- ``config``: ``prompts``, ``G``, ``steps``, ``lr``, ``seed``, ``dapo_max_tries``, ``init``
  (``source`` beta-mixture|corpus, ``description``, ``mean_p``, ``corpus_prompts``,
  ``corpus_excluded``, ``resampled``).
- ``r2_silent``: R² of the forecast mean silent(p, G) against the measured silent fraction over
  steps, GRPO arm (null without it).
- ``hard_quartile_initial``; ``hard_quartile_final``: ``{rule: mean p of the initially hardest
  quarter after the last step}``.
- ``dapo_oversampling``: DAPO's samples relative to one group per prompt per step, i.e. groups
  drawn / (prompts × steps), between 1 and ``dapo_max_tries`` (null without a DAPO arm).
- ``samples``: ``{rule: answers sampled}``.
- ``summary``: ``{rule: {r2_silent, silent_measured_mean, silent_forecast_mean, extreme_share_mean,
  extreme_share_forecast_mean, hard_quartile_final, mean_p_final, groups_drawn, groups_used, samples,
  oversampling, draws_per_used_group}}`` (``draws_per_used_group``: groups drawn per group that
  produced an update).
- ``series``: ``{rule: {silent_measured, silent_forecast, hard_quartile, mean_p, extreme_share,
  extreme_share_forecast}}``, lists of length ``steps``; entry i is step i + 1 (silent and
  extreme-share values at the p the step drew with; hard_quartile and mean_p after its update).

``--format csv`` writes the per-step series as one long table (step, rule, ...).

``--log-out run.parquet`` (or .csv, .jsonl) also writes the first rule's run as a rollout log in
the long layout: ``step`` (1..steps), ``prompt``, ``reward`` (0/1, one row per answer) and
``true_p`` (the pass rate the group was drawn at; loaders ignore it). DAPO's log holds the group
it kept. ``forecast`` and ``backtest`` read it like any log; tests check them against ``true_p``.
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


def simulate(
    prompts: Annotated[int | None, typer.Option("--prompts", min=1, max=10_000_000, show_default=False,
                                                help="Simulated prompts M [default: 6000; with --init-from: "
                                                     "every usable corpus prompt, else resampled to M].")] = None,
    G: Annotated[int, group_size_option("Group size G.", show_default=True)] = 8,
    steps: Annotated[int, steps_option("Training steps.", min=1, max=1_000_000)] = 150,
    lr: Annotated[float, typer.Option("--lr", callback=_positive, help="Step size on the logit θ (> 0).")] = 0.5,
    seed: Annotated[int, typer.Option("--seed", help="Seed of every random draw.")] = 0,
    dapo_max_tries: Annotated[int, typer.Option("--dapo-max-tries", min=1, max=1_000,
                                                help="DAPO draws at most this many groups per prompt and step.")] = 4,
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

    Every step each prompt draws k ~ Binomial(G, p) and moves θ by lr · gain (σ, σ², DAPO's σ after redrawing silent
    groups, RLOO σ²·G/(G−1), or the sign rule p + (k/G)(1 − 2p)). Reports the measured silent fraction against the
    forecast mean silent(p, G), the gradient share on extreme prompts, the pass rate of the initially hardest
    quarter, and samples used.

    \b
    Example:
      sigmaudit simulate --steps 60 --rules grpo,dapo,sign
    """
    from ...audits.simulate import SeriesReport, rollout_log
    from ...audits.simulate import simulate as run_simulate
    from ...render import Format
    from ...writers import write_table
    from ..inputs import load_inputs
    from ..output import note, resolve_format

    _check_options(G, log_out)

    counts = None
    if init_from:
        pp = load_inputs(list(init_from), series_ok=False).per_prompt
        counts = (pp["n"].to_numpy(), pp["k"].to_numpy())
    result = run_simulate(prompts=prompts, G=G, steps=steps, lr=lr, seed=seed, dapo_max_tries=dapo_max_tries,
                          rules=rules, init_counts=counts, init_label=", ".join(map(str, init_from or [])),
                          record=log_out is not None)
    if log_out is not None:
        log = rollout_log(result)
        write_table(log, log_out, "--log-out")
        note(f"wrote {log_out}: the {result.runs[0].rule} run, {log.height:,} rollouts (long layout)")
    init = result.config.init
    if init_from and init.corpus_excluded:
        note(f"--init-from: {init.corpus_excluded:,} prompts with k/n ∈ {{0, 1}} left out (no gradient to follow), "
             f"{init.corpus_prompts:,} used")
    emit_result(SeriesReport(result) if resolve_format(fmt, output) is Format.csv else result, fmt, output)
